"""`kit images push`, `status`, `prune` and the `kit run` images preflight through the local ssh
frontend (scripts/dev/sshd.sh: kit-frontend logs in as the ordinary user kit), as on a cluster:
a stopped copy resumed from its partial file, a file with another sha256 replaced, a shortfall
refused before a byte moves (a user quota that `quota` reports on the frontend, a full small
filesystem), and a half copy refused by the preflight. The artifacts are random bytes: what is
checked is the copy, not the image (tests/integration/test_slurm_apptainer.py runs a job from a
pushed SIF).

Needs root on Debian (sshd, a tmpfs mount); about 10 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from services import start_service

from kit.images.built import Artifact, BuiltImage, ImagesLock, save_lock

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SIF = "kit-gguf-cpu-0123456789ab.sif"
SIZE = 700_000
REV = "0" * 40


@pytest.fixture(scope="module")
def cluster():
    """A folder the user kit owns (the cluster's home), a lock of one SIF, the SIF here, and a site
    reached through kit-frontend whose images folder is in that home."""
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
        pytest.skip("needs root on Debian: scripts/dev/sshd.sh installs and starts the ssh frontend")
    start_service("sshd")
    home = Path(tempfile.mkdtemp(prefix="kit-images-cluster-", dir="/tmp"))
    here = Path(tempfile.mkdtemp(prefix="kit-images-here-", dir="/tmp"))
    home.chmod(0o755)
    shutil.chown(home, "kit", "kit")
    data = os.urandom(SIZE)
    (here / "build").mkdir()
    (here / "build" / SIF).write_bytes(data)
    built = BuiltImage(backend="gguf", tag="kit/gguf:test-cpu", image_id="sha256:0123456789ab" + "c" * 52,
                       dockerfile_sha256="d" * 64, lock_sha256="l" * 64, base="kit/base:bookworm",
                       kit_version="0.1.0", built_at="2026-12-01T00:00:00+00:00", variant="cpu",
                       artifacts={"sif": Artifact(file=SIF, sha256=hashlib.sha256(data).hexdigest(), bytes=SIZE)})
    save_lock(ImagesLock(images={"gguf": built}), here / "images.lock.json")
    from kit.demo.dataset import write_demo_benchmark

    bench = write_demo_benchmark(here / "data")
    (here / "roster.toml").write_text(f'benchmark = "{bench}"\n[[run]]\nmodel = "kit-test/g"\nrevision = "{REV}"\n'
                                      'backend = "gguf"\ntask = "generate"\noptions = { gguf_file = "m.gguf" }\n')
    sites = ""
    for name, images in (("ssh", f"{home}/kit-images"), ("small", f"{home}/small/kit-images")):
        sites += (f'[site.{name}]\nscheduler = "slurm"\nruntime = "apptainer"\nfrontend = "kit-frontend"\n'
                  f'root = "{home}/kit"\nresults = "{home}/results"\nimages = "{images}"\n'
                  'gpus_per_node = 1\nwalltime = "30m"\n\n')
    (here / "sites.toml").write_text(sites)
    yield home, here, data
    subprocess.run(["umount", str(home / "small")], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(here, ignore_errors=True)


def kit(here: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KIT_IMAGES_LOCK": str(here / "images.lock.json"), "KIT_CACHE_DIR": str(here / "cache")}
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=here, capture_output=True, text=True,
                          env=env, timeout=300)


def as_kit(*paths: Path) -> None:
    for path in paths:
        for p in [path, *path.rglob("*")]:
            shutil.chown(p, "kit", "kit")


def push(here: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    r = kit(here, "images", "push", "--lock-file", "images.lock.json", "--out", "build", "--json", *args)
    return r, (json.loads(r.stdout)["data"] if r.returncode == 0 else None)


def test_push_resumes_a_stopped_copy_and_replaces_another_build_checked_on_the_frontend(cluster):
    home, here, data = cluster
    images = home / "kit-images"
    (images / ".kit-parts").mkdir(parents=True)
    (images / ".kit-parts" / SIF).write_bytes(data[:SIZE // 4])     # a push killed a quarter through
    as_kit(images)
    r, out = push(here, "--site", "ssh", "gguf")
    assert r.returncode == 0, r.stderr
    (p,) = out["pushed"]
    assert (p["resumed_bytes"], p["sent_bytes"]) == (SIZE // 4, SIZE - SIZE // 4)
    assert "checking sha256 of " + SIF + " at frontend kit-frontend" in r.stderr
    assert (images / SIF).read_bytes() == data and (images / SIF).owner() == "kit"
    assert oct((images / SIF).stat().st_mode & 0o777) == "0o644" and not (images / ".kit-parts").exists()
    r, out = push(here, "--site", "ssh")                              # the roster's backends
    assert [(p["state"], p["sent_bytes"]) for p in out["pushed"]] == [("present", 0)]
    (images / SIF).write_bytes(os.urandom(SIZE))                      # another build under that name
    r, out = push(here, "--site", "ssh", "gguf")
    assert (out["pushed"][0]["state"], out["pushed"][0]["replaced"]) == ("pushed", True)
    assert (images / SIF).read_bytes() == data


def test_a_quota_the_frontend_reports_is_checked_before_a_byte_moves(cluster):
    """`quota` in ~kit/bin (on the login PATH of Debian's ~/.profile) reports 200 KiB left on the
    filesystem of the images folder: the push is refused with the numbers and copies nothing."""
    home, here, _ = cluster
    kit_home = Path(pwd.getpwnam("kit").pw_dir)
    (kit_home / "bin").mkdir(exist_ok=True)
    quota = kit_home / "bin" / "quota"
    quota.write_text("#!/bin/sh\n"
                     f"dev=$(df -Pk {home} | awk 'NR==2 {{print $1}}')\n"
                     "echo 'Disk quotas for user kit (uid 1000):'\n"
                     "echo '     Filesystem  blocks   quota   limit   grace   files   quota   limit   grace'\n"
                     "echo \"$dev 800 1000 1100 0 12 0 0\"\n")
    quota.chmod(0o755)
    as_kit(kit_home / "bin")
    try:
        seen = subprocess.run(["ssh", "kit-frontend", "bash -lc 'command -v quota'"], capture_output=True, text=True)
        assert seen.stdout.strip() == str(quota), f"~kit/bin is not on kit's login PATH: {seen.stdout}{seen.stderr}"
        shutil.rmtree(home / "kit-images", ignore_errors=True)
        r, _ = push(here, "--site", "ssh", "gguf")
        assert r.returncode == 1, r.stderr
        (line,) = [x for x in r.stderr.splitlines() if "kit: error" in x]
        assert f"need 700.0 kB more in {home}/kit-images, which has 204.8 kB left" in line
        assert "quota 1.0 MB with 819.2 kB used (`quota`)" in line
        assert "nothing was copied" in line and "kit images prune --site ssh" in line
        assert not (home / "kit-images").exists()
        r = kit(here, "images", "status", "--site", "ssh", "--no-sync", "--lock-file", "images.lock.json", "--json")
        assert json.loads(r.stdout)["data"]["sites"][0]["quota_bytes_left"] == 200 * 1024
    finally:
        quota.unlink()


def test_a_full_small_filesystem_is_refused_with_its_free_space(cluster):
    home, here, _ = cluster
    small = home / "small"
    small.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(small)], check=True)
    as_kit(small)
    r, _ = push(here, "--site", "small", "gguf")
    assert r.returncode == 1
    assert f"need 700.0 kB more in {small}/kit-images, which has 262.1 kB left (262.1 kB free on its filesystem)" \
        in r.stderr, r.stderr
    assert not (small / "kit-images").exists()


def test_status_prune_and_the_run_preflight_through_the_frontend(cluster):
    from kit.errors import SubmitError
    from kit.launch.images_check import preflight_images
    from kit.launch.run import RunRequest, prepare_kit_run

    home, here, data = cluster
    images = home / "kit-images"
    shutil.rmtree(images, ignore_errors=True)
    images.mkdir()
    (images / SIF).write_bytes(data[: SIZE // 2])                    # a half copy made by hand (cp, rsync)
    (images / "kit-gguf-cpu-eeeeeeeeeeee.sif").write_bytes(b"old")     # an older build
    as_kit(images)
    plan = prepare_kit_run(RunRequest(here / "sites.toml", ("ssh",), here / "roster.toml", dry_run=True,
                                      images_lock=here / "images.lock.json")).plan
    with pytest.raises(SubmitError) as err:
        preflight_images(plan, images_lock=here / "images.lock.json")
    assert f"{images}/{SIF} has {SIZE // 2} bytes, the lock records {SIZE}" in err.value.message
    assert err.value.fix == f"kit images push --site ssh --lock-file {here}/images.lock.json gguf"
    r = kit(here, "images", "status", "--site", "ssh", "--lock-file", "images.lock.json", "--json")
    assert r.returncode == 0, r.stderr      # the site's results mirror is refreshed first (none there yet)
    entries = {e["file"]: e["state"] for e in json.loads(r.stdout)["data"]["sites"][0]["entries"]}
    assert entries == {SIF: "mismatch", "kit-gguf-cpu-eeeeeeeeeeee.sif": "stale"}
    r = kit(here, "images", "prune", "--site", "ssh", "--lock-file", "images.lock.json", "--yes")
    assert r.returncode == 0 and "removed kit-gguf-cpu-eeeeeeeeeeee.sif" in r.stdout, r.stderr
    assert sorted(p.name for p in images.iterdir()) == [SIF]
    r, _ = push(here, "--site", "ssh", "gguf")
    assert r.returncode == 0, r.stderr
    assert [c.state for c in preflight_images(plan, images_lock=here / "images.lock.json").checks] == ["ok"]
