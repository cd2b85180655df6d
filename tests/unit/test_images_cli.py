"""`kit images`: help without heavy imports, one-line errors with the right exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("build", "convert", "save", "verify", "lint", "locks", "defs")


def kit(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_subcommand_help_imports_neither_docker_nor_spython():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from kit.cli.main import cli\n"
        f"for c in {SUBCOMMANDS!r}:\n"
        "    r = CliRunner().invoke(cli, ['images', c, '--help'])\n"
        "    assert r.exit_code == 0 and 'Usage:' in r.output, (c, r.output)\n"
        "print(','.join(m for m in ('docker', 'spython', 'uv', 'torch', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


@pytest.mark.parametrize("args,words", [
    (("images", "build", "sglang"), ["images.toml", "'sglang'", "gguf"]),
    (("images", "build", "gguf", "--variant", "rocm"), ["'rocm'", "variant", "cpu"]),   # names the variants there are
    (("images", "verify", "nope"), ["'nope'"]),
])
def test_bad_names_exit_2_naming_the_file_and_choices(args, words):
    r = kit(*args)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: error: ") and "; fix: " in line
    for w in words:
        assert w in line


def test_corrupt_lock_is_bad_input_and_missing_build_names_the_make_target(tmp_path):
    bad = tmp_path / "images.lock.json"
    bad.write_text("{not json")
    r = kit("images", "lint", "gguf", "--lock-file", str(bad))
    assert r.returncode == 2 and str(bad) in r.stderr
    r = kit("images", "convert", "gguf", "--lock-file", str(tmp_path / "none.json"))
    assert r.returncode == 1 and "make image-gguf" in r.stderr


def test_committed_definitions_are_current():
    pytest.importorskip("spython", reason="spython is not installed (pip install spython)")
    r = kit("images", "defs", "--check")
    assert r.returncode == 0, r.stderr


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_make_image_builds_the_variant_that_was_built_here_unless_told():
    """`make image-NAME` (scripts/images/image.sh): an image's registry-free cuda variant where images.toml
    has one, its registry Dockerfile otherwise; VARIANT=... chooses, an unknown variant is refused."""
    import subprocess

    from kit.images.spec import all_targets

    repo = Path(__file__).resolve().parents[2]

    def chosen(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(repo / "scripts/images/image.sh"), "--print", *args], cwd=repo,
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "KIT_WHEELHOUSE": "/w"})

    with_cuda = {t.name for t in all_targets(repo / "containers" / "images.toml") if t.variant == "cuda"}
    assert with_cuda == {"gguf", "vllm", "transformers-5.17"}
    for name in ("gguf", "vllm", "transformers-5.17", "transformers-5.11", "gliner2", "gliclass"):
        expected = (f".venv/bin/kit images build {name} --variant cuda --wheelhouse /w" if name in with_cuda
                    else f".venv/bin/kit images build {name}")
        assert chosen(name).stdout.strip() == expected, name
    assert chosen("gguf", "registry").stdout.strip() == ".venv/bin/kit images build gguf"
    assert chosen("gguf", "cpu").stdout.strip() == "bash scripts/images/cpu-images.sh gguf"
    # Volta's build (CUDA 11.8) is gguf's alone
    assert chosen("gguf", "cuda11").stdout.strip() == ".venv/bin/kit images build gguf --variant cuda11 --wheelhouse /w"
    assert "has no variant cuda11" in (lambda r: r.stdout + r.stderr)(chosen("vllm", "cuda11"))
    refused = chosen("gliner2", "cuda")
    assert refused.returncode != 0 and "has no variant cuda" in refused.stdout + refused.stderr


@pytest.mark.parametrize("bundle,said", [
    ("/dev/zero", "not a regular file"), ("gone/missing.pem", "a folder in it does not exist"), ("folder", "is a directory"),
    ("empty.pem", "holds no PEM certificate"), ("with-key.pem", "holds a private key"),
    ("missing.pem", "its folder is there, the file"),
])
def test_a_ca_bundle_pip_could_not_read_is_refused_before_any_build(tmp_path, bundle, said):
    """--ca-bundle is checked before a build starts (its downloads take minutes): a device, a folder, a
    missing file, one with no certificate or one holding a private key (a build takes no credential in) is
    one line, exit 2, and no Docker engine is asked."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.pem").write_text("not a certificate\n")
    (tmp_path / "with-key.pem").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
                                           "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n")
    path = bundle if bundle.startswith("/") else str(tmp_path / bundle)
    r = kit("images", "build", "gguf", "--variant", "cpu", "--ca-bundle", path,
            "--lock-file", str(tmp_path / "images.lock.json"))
    assert r.returncode == 2 and said in r.stderr and "Docker" not in r.stderr, r.stderr


def test_a_damaged_lock_is_refused_before_a_build_not_after_it(tmp_path):
    bad = tmp_path / "images.lock.json"
    bad.write_text('{"images": {"gguf": ')
    r = kit("images", "build", "gguf", "--variant", "cpu", "--lock-file", str(bad))
    assert r.returncode == 2 and "not a valid images lock" in r.stderr and "Docker" not in r.stderr, r.stderr


def test_defs_renders_every_definition_before_writing_one(tmp_path):
    """A Dockerfile that cannot be read stops `kit images defs` with the others as they were (not half of
    apptainer/ rewritten); an images file outside a containers/ folder is refused, not read from the wrong root."""
    import shutil

    pytest.importorskip("spython", reason="spython is not installed (pip install spython)")
    copy = tmp_path / "repo"
    for part in ("containers", "apptainer"):
        shutil.copytree(REPO / part, copy / part)
    for dockerfile in REPO.glob("Dockerfile.*"):
        shutil.copy(dockerfile, copy / dockerfile.name)
    (copy / "Dockerfile.vllm").unlink()
    stale = copy / "apptainer" / "gguf.def"
    stale.write_text("stale\n")
    r = kit("images", "defs", "--images-file", str(copy / "containers" / "images.toml"))
    assert r.returncode == 2 and "Dockerfile.vllm" in r.stderr, r.stderr
    assert stale.read_text() == "stale\n"
    shutil.copy(copy / "containers" / "images.toml", tmp_path / "images.toml")
    r = kit("images", "defs", "--check", "--images-file", str(tmp_path / "images.toml"))
    assert r.returncode == 2 and "outside a containers/ folder" in r.stderr, r.stderr


def test_a_variant_the_lock_records_and_images_toml_lacks_is_blamed_on_the_lock(tmp_path):
    import json

    image = {"backend": "gguf", "tag": "kit/gguf:1", "image_id": "sha256:" + "0" * 64, "dockerfile_sha256": "aa",
             "lock_sha256": "bb", "base": "debian:12", "kit_version": "0.1", "built_at": "2026-01-01T00:00:00Z",
             "variant": "nope"}
    lock = tmp_path / "images.lock.json"
    lock.write_text(json.dumps({"kit_images_lock_version": 1, "images": {"gguf": image}}))
    r = kit("images", "verify", "gguf", "--lock-file", str(lock))
    line = r.stderr.strip()
    assert r.returncode == 2 and line.startswith(f"kit: error: {lock}: image 'gguf' was recorded as variant 'nope'"), line
    assert "--variant" not in line.split("; fix: ")[0] or "leave --variant out" not in line


@pytest.mark.parametrize(("artifacts", "to", "said", "not_said"), [
    ({"sif": "kit-gguf.sif"}, None, "sif artifact not found", "sqsh"),       # a SIF-only site: its SIF is checked
    ({"sif": "kit-gguf.sif"}, "sqsh", "has no sqsh artifact", None),           # asked for, never made
    ({}, None, "has no sif or sqsh artifact to verify", None),
])
def test_images_verify_checks_the_forms_the_lock_records_unless_told(tmp_path, artifacts, to, said, not_said):
    import json

    image = {"backend": "gguf", "tag": "kit/gguf:1", "image_id": "sha256:" + "0" * 64, "dockerfile_sha256": "aa",
             "lock_sha256": "bb", "base": "debian:12", "kit_version": "0.1", "built_at": "2026-01-01T00:00:00Z",
             "artifacts": {form: {"file": name, "sha256": "c" * 64} for form, name in artifacts.items()}}
    lock = tmp_path / "images.lock.json"
    lock.write_text(json.dumps({"kit_images_lock_version": 1, "images": {"gguf": image}}))
    r = kit("images", "verify", "gguf", "--lock-file", str(lock), "--out", str(tmp_path),
            *(("--to", to) if to else ()))
    line = r.stderr.strip()
    assert r.returncode == 1 and len(line.splitlines()) == 1 and said in line, line
    assert not_said is None or not_said not in line.split("; fix: ")[0], line


def test_an_image_name_the_file_does_not_define_names_those_it_does(tmp_path):
    """An images file with no image says so in its fix, instead of an empty list of names."""
    from kit.errors import ConfigError
    from kit.images.spec import target

    folder = tmp_path / "containers"
    folder.mkdir()
    (folder / "images.toml").write_text("")
    with pytest.raises(ConfigError) as exc:
        target("vllm", images_file=folder / "images.toml")
    assert "defines no image" in exc.value.fix
    (folder / "images.toml").write_text('[image.gguf]\ndockerfile = "D"\nlock = "l"\nbase = "b"\n')
    with pytest.raises(ConfigError) as exc:
        target("vllm", images_file=folder / "images.toml")
    assert exc.value.fix == "use one of gguf"
