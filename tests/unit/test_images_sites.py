"""Images at the sites: `kit images push` (copied only when missing or different, resumed from a partial
copy, hashed there, refused on a space or quota shortfall), `kit images status`, `kit images prune`, and
`kit run`'s images preflight. The sites here are local (their frontend is this machine, the same
commands an ssh frontend runs); tests/integration/test_images_push.py runs them through sshd."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from kit.images.built import Artifact, BuiltImage, ImagesLock, save_lock
from inprocess import kit_in_process

REPO = Path(__file__).resolve().parents[2]
REV = "0" * 40
IMAGE_ID = "sha256:0123456789ab" + "c" * 52
SIF = "kit-gguf-cpu-0123456789ab.sif"
SQSH = "kit-gguf-cpu-0123456789ab.sqsh"
SIZE = 300_000


def _built(artifacts: dict) -> BuiltImage:
    return BuiltImage(backend="gguf", tag="kit/gguf:test-cpu", image_id=IMAGE_ID, dockerfile_sha256="d" * 64,
                      lock_sha256="l" * 64, base="kit/base:bookworm", kit_version="0.1.0",
                      built_at="2026-12-01T00:00:00+00:00", variant="cpu", artifacts=artifacts)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A lock with gguf's SIF and sqsh (their files in build/images), a roster of one gguf run, and
    local sites reading the SIF (appt), the sqsh (enr) and a docker image (dock)."""
    from kit.demo.dataset import write_demo_benchmark

    out = tmp_path / "build" / "images"
    out.mkdir(parents=True)
    arts = {}
    for form, name in (("sif", SIF), ("sqsh", SQSH)):
        data = os.urandom(SIZE)
        (out / name).write_bytes(data)
        arts[form] = Artifact(file=name, sha256=hashlib.sha256(data).hexdigest(), bytes=SIZE)
    save_lock(ImagesLock(images={"gguf": _built(arts)}), tmp_path / "images.lock.json")
    bench = write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "{bench}"\n[[run]]\nmodel = "kit-test/g"\nrevision = "{REV}"\nbackend = "gguf"\n'
        'task = "generate"\noptions = { gguf_file = "m.gguf" }\n')
    sites = ""
    for name, runtime in (("appt", "apptainer"), ("enr", "enroot"), ("dock", "docker")):
        sites += (f'[site.{name}]\nscheduler = "local"\nruntime = "{runtime}"\nroot = "."\nresults = "results"\n'
                  f'images = "at-{name}"\ngpus_per_node = 0\nwalltime = "30m"\n')
    (tmp_path / "sites.toml").write_text(sites)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KIT_IMAGES_LOCK", "images.lock.json")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def kit(*args: str):
    return kit_in_process(*args, cwd=Path.cwd())


def refused(r) -> str:
    """The one error line of a run refused as bad input (exit 2, no traceback)."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    (line,) = [x for x in r.stderr.splitlines() if "error" in x]
    return line


def _lock_sha(project: Path, form: str = "sif") -> str:
    return json.loads((project / "images.lock.json").read_text())["images"]["gguf"]["artifacts"][form]["sha256"]


def _push(*args: str):
    r = kit("images", "push", "--lock-file", "images.lock.json", "--json", *args)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def test_push_copies_the_form_each_runtime_reads_and_leaves_a_checked_copy_alone(project):
    r, out = _push("--sites", "appt,enr")          # no NAME: the roster's backends
    assert r.returncode == 0, r.stderr
    assert [(p["site"], p["file"], p["state"], p["sent_bytes"]) for p in out["data"]["pushed"]] == [
        ("appt", SIF, "pushed", SIZE), ("enr", SQSH, "pushed", SIZE)]
    assert (project / "at-appt" / SIF).read_bytes() == (project / "build/images" / SIF).read_bytes()
    assert (project / "at-enr" / SQSH).read_bytes() == (project / "build/images" / SQSH).read_bytes()
    assert not (project / "at-appt" / ".kit-parts").exists()
    r, out = _push("--site", "appt", "gguf")
    assert [(p["state"], p["sent_bytes"]) for p in out["data"]["pushed"]] == [("present", 0)]


def test_a_stopped_copy_resumes_from_its_partial_file(project):
    parts = project / "at-appt" / ".kit-parts"
    parts.mkdir(parents=True)
    whole = (project / "build/images" / SIF).read_bytes()
    (parts / SIF).write_bytes(whole[:SIZE // 3])
    r, out = _push("--site", "appt", "gguf")
    assert r.returncode == 0, r.stderr
    (p,) = out["data"]["pushed"]
    assert (p["resumed_bytes"], p["sent_bytes"]) == (SIZE // 3, SIZE - SIZE // 3)
    assert (project / "at-appt" / SIF).read_bytes() == whole


def test_a_file_of_that_name_with_another_sha256_is_replaced(project):
    (project / "at-appt").mkdir()
    (project / "at-appt" / SIF).write_bytes(os.urandom(SIZE))      # same size, another build
    r, out = _push("--site", "appt", "gguf")
    (p,) = out["data"]["pushed"]
    assert (p["state"], p["replaced"]) == ("pushed", True)
    assert hashlib.sha256((project / "at-appt" / SIF).read_bytes()).hexdigest() == _lock_sha(project)


def test_a_corrupt_partial_copy_is_removed_and_the_next_push_sends_it_whole(project):
    parts = project / "at-appt" / ".kit-parts"
    parts.mkdir(parents=True)
    (parts / SIF).write_bytes(os.urandom(SIZE // 2))                # not the start of the file
    r, _ = _push("--site", "appt", "gguf")
    assert r.returncode == 1
    assert "hashed to" in r.stderr and "kit images push --site appt" in r.stderr
    assert not (project / "at-appt" / SIF).exists() and not (parts / SIF).exists()
    r, out = _push("--site", "appt", "gguf")
    assert r.returncode == 0 and out["data"]["pushed"][0]["sent_bytes"] == SIZE


def test_an_artifact_that_is_not_the_locked_one_is_refused_before_copying(project):
    (project / "build/images" / SIF).write_bytes(b"short")
    r, _ = _push("--site", "appt", "gguf")
    assert r.returncode == 1
    assert "has 5 bytes, the lock records 300000" in r.stderr and "kit images convert gguf --force" in r.stderr
    assert not (project / "at-appt").exists()
    (project / "build/images" / SIF).unlink()
    r, _ = _push("--site", "appt", "gguf")
    assert "is not here" in r.stderr and "kit images convert gguf --to sif" in r.stderr


def test_the_room_is_the_lower_of_free_space_and_the_quota_left_on_that_filesystem():
    """`quota -w` as quota(1) prints it (1 KiB blocks, `*` past the soft limit); only the line of the
    images folder's filesystem counts. The refusal itself runs through sshd in the integration tier."""
    from kit.launch.images_site import SiteImages, _quota_room

    text = ("Disk quotas for user kit (uid 1000):\n"
            "     Filesystem  blocks   quota   limit   grace   files   quota   limit   grace\n"
            "      /dev/sdb1  5000000  0  0  0  10  0  0\n"
            "srv:/export/home  900*  800  1200  6days  10  0  0\n")
    left, note = _quota_room(text, "srv:/export/home")
    assert left == 0 and note == "quota 819.2 kB with 921.6 kB used (`quota`)"   # the soft limit binds
    left, _ = _quota_room(text.replace("900*", "300"), "srv:/export/home")
    assert left == 500 * 1024
    assert _quota_room(text, "/dev/sdb1") == (None, "")          # no limit there
    assert _quota_room(text, "/dev/other") == (None, "")
    found = SiteImages("/x", free_bytes=10_000_000, quota_bytes=500 * 1024)
    assert found.room == 500 * 1024
    assert SiteImages("/x", free_bytes=3).room == 3 and SiteImages("/x").room is None


def test_push_refuses_sites_and_names_it_cannot_serve(project):
    assert "reads no SIF or sqsh file" in refused(kit("images", "push", "--site", "dock", "gguf",
                                                      "--lock-file", "images.lock.json"))
    assert "no site given" in refused(kit("images", "push", "gguf"))
    r = kit("images", "push", "--site", "appt", "vllm", "--lock-file", "images.lock.json")
    assert r.returncode == 1 and "make image-vllm" in r.stderr        # known, not built here
    assert "nonsense" in refused(kit("images", "push", "--site", "appt", "nonsense", "--lock-file",
                                     "images.lock.json", "--images-file", str(REPO / "containers/images.toml")))
    line = refused(kit("images", "push", "--site", "nowhere", "gguf"))
    assert "nowhere" in line


def test_a_remote_site_needs_an_absolute_images_folder(project):
    (project / "sites.toml").write_text(
        '[site.far]\nscheduler = "slurm"\nruntime = "apptainer"\nfrontend = "far.example"\nroot = "/home/me/kit"\n'
        'results = "/home/me/kit/results"\nimages = "kit-images"\ngpus_per_node = 1\nwalltime = "30m"\n')
    line = refused(kit("images", "push", "--site", "far", "gguf", "--lock-file", "images.lock.json"))
    assert "is relative" in line and 'images = "/home/<login>/kit/kit-images"' in line


def test_dry_run_connects_to_nothing_and_lists_each_copy(project):
    r, out = _push("--site", "appt", "--dry-run")
    assert r.returncode == 0
    (row,) = out["data"]["copies"]
    assert row["file"] == SIF and row["to"].endswith(f"at-appt/{SIF}") and row["bytes"] == SIZE
    assert not (project / "at-appt").exists()


def _checkpoint_in(results: Path, image_id: str) -> None:
    from conftest_checkpoints import make_checkpoint, predictions_of, rewrite

    path = make_checkpoint(results, "kit-test/old@" + REV, "en", predictions_of([("yes", "yes")]))
    rewrite(path, lambda d: d["provenance"].setdefault("image", {}).update(digest=image_id))


def test_status_and_prune_judge_every_file_against_the_lock_and_the_results(project):
    at = project / "at-appt"
    (at / ".kit-parts").mkdir(parents=True)
    (at / "kit-gguf-cpu-aaaaaaaaaaaa.sif").write_bytes(b"a" * 10)     # an older build: stale
    (at / "kit-gguf-cpu-bbbbbbbbbbbb.sif").write_bytes(b"b" * 20)     # older, a result ran in it: kept
    (at / SQSH).write_bytes(b"q" * 30)                                 # the lock's other form
    (at / "notes.txt").write_text("mine")                              # not kit's: never removed
    (at / SIF).write_bytes(b"s" * 50)                                  # the lock's file, cut short
    (at / ".kit-parts" / "kit-gguf-cpu-dddddddddddd.sif").write_bytes(b"d" * 40)   # an abandoned push
    _checkpoint_in(project / "results", "sha256:bbbbbbbbbbbb" + "0" * 52)
    r = kit("images", "status", "--site", "appt", "--lock-file", "images.lock.json", "--json")
    assert r.returncode == 0, r.stderr
    (site,) = json.loads(r.stdout)["data"]["sites"]
    states = {e["file"]: (e["state"], e["bytes"], e["needed_by_results"]) for e in site["entries"]}
    assert states == {"kit-gguf-cpu-aaaaaaaaaaaa.sif": ("stale", 10, 0),
                      "kit-gguf-cpu-bbbbbbbbbbbb.sif": ("stale", 20, 1),
                      SQSH: ("other", 30, 0), "notes.txt": ("foreign", 4, 0),
                      ".kit-parts/kit-gguf-cpu-dddddddddddd.sif": ("partial", 40, 0),
                      SIF: ("mismatch", 50, 0)}
    r = kit("images", "prune", "--site", "appt", "--lock-file", "images.lock.json", "--json")
    (site,) = json.loads(r.stdout)["data"]["sites"]
    going = sorted(f["file"] for f in site["files"])
    assert going == [".kit-parts/kit-gguf-cpu-dddddddddddd.sif", "kit-gguf-cpu-aaaaaaaaaaaa.sif"]
    assert site["bytes"] == 50 and site["removed"] is False
    assert (at / "kit-gguf-cpu-aaaaaaaaaaaa.sif").exists()           # a dry run by default
    r = kit("images", "prune", "--site", "appt", "--lock-file", "images.lock.json", "--yes")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in at.iterdir()) == [SIF, SQSH, "kit-gguf-cpu-bbbbbbbbbbbb.sif", "notes.txt"]
    (at / SIF).unlink()
    r = kit("images", "status", "--site", "appt", "--lock-file", "images.lock.json")
    assert f"  missing  {SIF}  300.0 kB  gguf" in r.stdout.splitlines()


def test_run_dry_run_shows_the_image_check_and_the_push_it_needs(project):
    r = kit("run", "--site", "appt", "--dry-run", "--json")
    data = json.loads(r.stdout)["data"]
    (check,) = data["images"]["checks"]
    assert (check["site"], check["backend"], check["state"]) == ("appt", "gguf", "missing")
    assert data["images"]["fix"] == "kit images push --site appt gguf"
    r = kit("run", "--site", "appt", "--dry-run")
    assert f"# image of gguf at appt: missing: {project}/at-appt/{SIF} is not there" in r.stdout
    assert "kit run` will refuse" in r.stderr and "kit images push --site appt gguf" in r.stderr
    _push("--site", "appt")
    r = kit("run", "--site", "appt", "--dry-run")
    assert f"# image of gguf at appt: ok: {project}/at-appt/{SIF}, {SIZE} bytes" in r.stdout


def _plan(project: Path, site: str):
    from kit.launch.run import RunRequest, prepare_kit_run

    return prepare_kit_run(RunRequest(Path("sites.toml"), (site,), Path("roster.toml"), None, dry_run=True)).plan


def test_run_preflight_refuses_a_missing_or_half_copied_image_with_the_push_command(project):
    from kit.errors import SubmitError
    from kit.launch.images_check import preflight_images

    plan = _plan(project, "appt")
    with pytest.raises(SubmitError) as exc:
        preflight_images(plan)
    assert "nothing was submitted" in exc.value.message and f"{SIF} is not there" in exc.value.message
    assert exc.value.fix == "kit images push --site appt gguf"
    (project / "at-appt" / ".kit-parts").mkdir(parents=True)
    (project / "at-appt" / SIF).write_bytes(b"x" * 100)
    with pytest.raises(SubmitError) as exc:
        preflight_images(plan)
    assert "has 100 bytes, the lock records 300000" in exc.value.message
    _push("--site", "appt")
    assert [c.state for c in preflight_images(plan).checks] == ["ok"]


def test_a_remote_site_is_not_asked_in_a_dry_run(project):
    (project / "sites.toml").write_text(
        '[site.far]\nscheduler = "slurm"\nruntime = "apptainer"\nfrontend = "far.invalid"\nroot = "/home/me/kit"\n'
        'results = "/home/me/kit/results"\nimages = "/home/me/kit-images"\ngpus_per_node = 1\nwalltime = "30m"\n')
    from kit.launch.images_check import preflight_images

    (check,) = preflight_images(_plan(project, "far"), dry_run=True).checks
    assert check.state == "unchecked"
    assert check.detail == f"checked on far.invalid before submitting: /home/me/kit-images/{SIF}, {SIZE} bytes"
