"""Digest trees, the verify rules, Enroot's files, the SIF header reader and the build context,
on synthetic inputs (no Docker)."""

from __future__ import annotations

import hashlib
import io
import struct
import tarfile
from pathlib import Path

import pytest

from kit.errors import ImageError
from kit.images import spec
from kit.images.context import write_context
from kit.images.digest_tree import Entry, add_tar, compare
from kit.images.sif import _DESCR, _HEADER, primary_partition
from kit.images.sqsh import enroot_files, filter_export
from kit.images.verify import EMPTY, check

REPO = Path(__file__).resolve().parents[2]


def tar_of(*members) -> tarfile.TarFile:
    """A readable tar from (name, kind, payload) triples."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            info.mode = 0o755 if kind == "dir" else 0o644
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "file":
                info.size = len(payload)
                t.addfile(info, io.BytesIO(payload))
            else:
                info.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE}[kind]
                info.linkname = payload
                t.addfile(info)
    buf.seek(0)
    return tarfile.open(fileobj=buf, mode="r")


def test_layers_apply_in_order_with_whiteouts_and_opaque_folders():
    tree: dict[str, Entry] = {}
    add_tar(tree, tar_of(("etc", "dir", ""), ("etc/a", "file", b"1"), ("etc/b", "file", b"2"),
                         ("opt", "dir", ""), ("opt/x", "file", b"x"), ("opt/y", "file", b"y")), whiteouts=True)
    add_tar(tree, tar_of(("etc/.wh.a", "file", b""), ("opt/.wh..wh..opq", "file", b""),
                         ("opt/z", "file", b"z"), ("etc/b", "file", b"changed")), whiteouts=True)
    assert sorted(tree) == ["etc", "etc/b", "opt", "opt/z"]
    assert tree["etc/b"].content == hashlib.sha256(b"changed").hexdigest()


def test_hard_links_become_the_file_they_name_and_symlinks_keep_targets():
    tree: dict[str, Entry] = {}
    add_tar(tree, tar_of(("bin", "dir", ""), ("bin/a", "file", b"data"), ("bin/b", "hardlink", "bin/a"),
                         ("bin/c", "symlink", "/usr/share/Főtanúsítvány.crt")))
    assert tree["bin/b"].kind == "file" and tree["bin/b"].content == tree["bin/a"].content
    assert tree["bin/c"].content == "/usr/share/Főtanúsítvány.crt"


def test_compare_reports_each_differing_path_and_owners_only_when_asked():
    a = {"x": Entry("file", 0o644, 0, 0, "h1"), "y": Entry("file", 0o644, 0, 42, "h2")}
    b = {"x": Entry("file", 0o755, 0, 0, "h1"), "y": Entry("file", 0o644, 0, 0, "h2"), "z": Entry("dir", 0o755, 0, 0)}
    assert [d.path for d in compare(a, b)] == ["x", "y", "z"]
    assert [d.path for d in compare(a, b, owners=False)] == ["x", "z"]


def f(content: str = EMPTY, kind: str = "file") -> Entry:
    return Entry(kind, 0o644, 0, 0, content)


def test_verify_rules_ignore_runtime_metadata_only():
    image = {"etc/hostname": f("abc"), "etc/fstab": f("debian"), "usr/bin/python3": f("py"), "dev/null": f("1:3", "char")}
    sqsh = {"etc/hostname": f(), "etc/fstab": f("enroot"), "etc/rc": f("rc"), "usr/bin/python3": f("py"),
            "etc/mtab": Entry("symlink", 0o777, 0, 0, "/proc/mounts")}
    assert check("sqsh", image, sqsh, "x.sqsh").differences == []
    # a non-empty hostname is not a mount point any more: reported
    sqsh["etc/hostname"] = f("other")
    sqsh["usr/bin/python3"] = f("tampered")
    assert [d.path for d in check("sqsh", image, sqsh, "x.sqsh").differences] == ["etc/hostname", "usr/bin/python3"]
    sif = {**image, ".singularity.d": f(kind="dir"), ".singularity.d/runscript": f("r"),
           "singularity": Entry("symlink", 0o777, 0, 0, ".singularity.d/runscript"), "etc/hosts": f()}
    assert check("sif", image, sif, "x.sif").differences == []
    sif["singularity"] = Entry("symlink", 0o777, 0, 0, "/elsewhere")  # not Apptainer's link: reported
    sif["etc/rc"] = f("rc")  # Enroot's files are only expected in a sqsh
    assert [d.path for d in check("sif", image, sif, "x.sif").differences] == ["etc/rc", "singularity"]


def test_enroot_files_follow_the_image_config():
    files = enroot_files({"Config": {"Env": ["PATH=/opt/venv/bin:/usr/bin", "A=b c"], "Cmd": ["kit", "--help"],
                                     "Labels": {"kit.backend": "gguf"}, "Volumes": {"/data": {}}}}, "dockerd://sha256:1")
    rc = files["etc/rc"]
    assert rc.startswith("# enroot-provenance: dockerd://sha256:1\n# kit.backend gguf\n")
    assert 'exec "$@"' in rc and "exec kit --help" in rc and ". /etc/rc.local" in rc
    assert files["etc/environment"] == "PATH=/opt/venv/bin:/usr/bin\nA=b c\n"
    assert files["etc/fstab"] == "${ENROOT_ROOTFS}/data /data none x-create=dir,bind,rw,nosuid,nodev\n"
    ep = enroot_files({"Config": {"Entrypoint": ["/init"], "Cmd": ["serve"]}}, "u")["etc/rc"]
    assert 'exec /init "$@"' in ep and "exec /init serve" in ep


def test_exported_rootfs_loses_what_enroot_drops_and_gains_its_files():
    src = tar_of((".dockerenv", "file", b""), ("dev", "dir", ""), ("dev/console", "file", b""),
                 ("etc", "dir", ""), ("etc/environment", "file", b"OLD=1\n"), ("etc/passwd", "file", b"root"))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as dst:
        filter_export(src, dst, {"etc/environment": "NEW=1\n", "etc/rc": "rc\n"})
    out.seek(0)
    with tarfile.open(fileobj=out) as t:
        names = t.getnames()
        assert names == ["dev", "etc", "etc/passwd", "etc/environment", "etc/rc"]
        assert t.extractfile("etc/environment").read() == b"NEW=1\n"


def fake_sif(path: Path, part_offset: int, part_size: int, fstype: int = 1, parttype: int = 2) -> None:
    header = _HEADER.pack(b"#!/usr/bin/env run-singularity\n", b"SIF_MAGIC\0", b"01\0", b"02\0", b"\0" * 16,
                          0, 0, 0, 2, 128, 2 * _DESCR.size, 4096, part_size)
    deffile = _DESCR.pack(0x4001, True, 1, 0, 0, 3000, 10, 10, 0, 0, 0, 0, b"def", b"")
    extra = struct.pack("<ii3s", fstype, parttype, b"02\0")
    part = _DESCR.pack(0x4004, True, 2, 0, 0, part_offset, part_size, part_size, 0, 0, 0, 0, b"rootfs", extra)
    data = bytearray(part_offset + part_size)
    data[:len(header)] = header
    data[128:128 + 2 * _DESCR.size] = deffile + part
    data[part_offset:part_offset + 4] = b"hsqs"
    path.write_bytes(bytes(data))


def test_sif_reader_finds_the_primary_squashfs_partition(tmp_path):
    fake_sif(tmp_path / "x.sif", 8192, 4096)
    part = primary_partition(tmp_path / "x.sif")
    assert (part.offset, part.size) == (8192, 4096)
    fake_sif(tmp_path / "y.sif", 8192, 4096, fstype=4)  # a raw data partition is not a system image
    with pytest.raises(ImageError):
        primary_partition(tmp_path / "y.sif")
    (tmp_path / "z.sif").write_bytes(b"not a sif" * 40)
    with pytest.raises(ImageError) as exc:
        primary_partition(tmp_path / "z.sif")
    assert "not a SIF" in exc.value.one_line()


def test_build_context_holds_only_kit_the_dockerfile_locks_and_build_inputs(tmp_path):
    t = spec.target("transformers-5.17", "cpu", REPO / "containers" / "images.toml")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n")
    (tmp_path / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"wheel")
    ctx, again = io.BytesIO(), io.BytesIO()
    write_context(t, ctx, ca_bundle=tmp_path / "ca.pem", wheels=[tmp_path / "six-1.17.0-py2.py3-none-any.whl"])
    write_context(t, again, ca_bundle=tmp_path / "ca.pem", wheels=[tmp_path / "six-1.17.0-py2.py3-none-any.whl"])
    assert ctx.getvalue() == again.getvalue()  # deterministic: Docker's cache hits on unchanged inputs
    ctx.seek(0)
    with tarfile.open(fileobj=ctx) as tar:
        names = set(tar.getnames())
        assert {t.spec.dockerfile, t.spec.lock, "pyproject.toml", "README.md", "kit/__init__.py",
                ".kit-build/ca.pem", ".kit-build/wheels/six-1.17.0-py2.py3-none-any.whl"} <= names
        assert not any(n.startswith((".git", ".venv", "tests/", "results")) or "__pycache__" in n for n in names)
        assert "kit/_commit.txt" not in names
        assert {m.uid for m in tar.getmembers()} == {0} and {m.mtime for m in tar.getmembers()} == {0}


def test_wheelhouse_selects_files_by_the_locks_hashes(tmp_path):
    from kit.images import wheelhouse

    house = tmp_path / "house"
    house.mkdir()
    (house / "a-1.0-py3-none-any.whl").write_bytes(b"a")
    (house / "a-0.9-py3-none-any.whl").write_bytes(b"old a")
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"a==1.0 \\\n    --hash=sha256:{hashlib.sha256(b'a').hexdigest()}\n    # via x\n"
                    f"b[extra]==2.0 \\\n    --hash=sha256:{'0' * 64}\n")
    assert wheelhouse.lock_hashes(lock) == {"a==1.0": {hashlib.sha256(b"a").hexdigest()}, "b[extra]==2.0": {"0" * 64}}
    assert wheelhouse.missing([lock], house) == ["b[extra]==2.0"]
    t = spec.Target("x", None, spec.target("gliclass", None, REPO / "containers" / "images.toml").spec, tmp_path)
    t = spec.Target("x", None, t.spec.model_copy(update={"lock": "requirements.lock", "build_locks": []}), tmp_path)
    assert [p.name for p in wheelhouse.select(t, house)] == ["a-1.0-py3-none-any.whl"]


def test_a_conversion_is_up_to_date_only_for_the_same_image_and_the_recorded_bytes(tmp_path):
    from kit.files import file_sha256
    from kit.images.built import Artifact, BuiltImage
    from kit.images.convert import artifact_name, up_to_date

    built = BuiltImage(backend="transformers-5.17", tag="kit/t:cpu", image_id="sha256:" + "1" * 64,
                       dockerfile_sha256="d", lock_sha256="l", base="b", kit_version="0", built_at="t", variant="cpu")
    dest = tmp_path / artifact_name(built, "sif")
    assert not up_to_date(built, "sif", dest)                     # nothing recorded
    dest.write_bytes(b"sif bytes")
    built.artifacts["sif"] = Artifact(file=dest.name, sha256=file_sha256(dest), image_id=built.image_id)
    assert up_to_date(built, "sif", dest)
    assert not up_to_date(built, "sqsh", dest)                    # another form
    other = built.model_copy(update={"image_id": "sha256:" + "2" * 64})
    assert not up_to_date(other, "sif", dest)                     # rebuilt image
    dest.write_bytes(b"sif bytes, edited")
    assert not up_to_date(built, "sif", dest)                     # the file changed
    dest.unlink()
    assert not up_to_date(built, "sif", dest)                     # the file is gone


def test_a_tree_without_git_takes_its_commit_from_kit_commit(tmp_path, monkeypatch):
    monkeypatch.delenv("KIT_COMMIT", raising=False)
    assert spec.kit_commit(tmp_path) == "unknown"
    monkeypatch.setenv("KIT_COMMIT", "0123abc")
    assert spec.kit_commit(tmp_path) == "0123abc"
    assert spec.kit_commit(Path(__file__).resolve().parents[2]) != "0123abc"   # git metadata wins where it exists
