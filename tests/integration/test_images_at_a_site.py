"""README's "Images at the sites", run as written on this machine's real parts: a site named lyon that
is the single-machine Slurm (scripts/dev/slurm.sh) behind the local ssh frontend (scripts/dev/sshd.sh,
user kit), the CPU build of the transformers-5.17 image converted to SIF, and the demo's tiny model.

The block's commands run in order with the demo's model for the README's: the dry run names the SIF
`kit run` checks at lyon (a `kit run` then is refused with the push command: no job is submitted), the
push puts the SIF in lyon's images folder through the frontend, status calls it current, the run is
submitted (sbatch as kit, over ssh), the job hashes the pushed SIF and runs the worker in it, and its
checkpoints name the SIF's sha256; prune then keeps it (the lock and the results need it).

Debian 12 has no apptainer: the job's `apptainer` is a stand-in on its PATH (the site's `setup`) that
runs the same command in the Apptainer helper image (kit/apptainer:sid), as the job's own user, who is
put in the docker group for it. Needs root on Debian and Docker; about 2 minutes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from services import let_kit_run_this_python, let_kit_use_docker, start_service
from sites import sites_toml

from kit.config.sites import Site
from kit.demo.run import DEMO_VERSION

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
README_MODEL, MODEL = "LiquidAI/LFM2.5-2.6B", "kit-demo/tiny-llama"
CACHE = Path("/var/tmp/kit-test-cache")    # world-readable: the site's weights, read by user kit
EXEC_OPTS = "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined"
STANDIN = """#!/bin/sh
# apptainer for a host without one (tests only): the same command in the helper image, as the job's user,
# with the job's APPTAINERENV_* variables, the workspace at its own path and the host's accounts (Apptainer
# looks its user up); APPTAINER_UNSQUASH=1: no /dev/fuse for that user here (test_slurm_apptainer.py)
set -eu
envs=$(env | sed -n 's/^\\(APPTAINERENV_[A-Za-z0-9_]*\\)=.*/-e \\1/p' | tr '\\n' ' ')
# shellcheck disable=SC2086
exec docker run --rm --user "$(id -u):$(id -g)" {opts} --tmpfs /tmp:rw,exec,size=8g,mode=1777 \\
  -v /etc/passwd:/etc/passwd:ro -v /etc/group:/etc/group:ro -v {ws}:{ws} -v {cache}:{cache}:ro \
  -e APPTAINER_UNSQUASH=1 $envs kit/apptainer:sid apptainer "$@"
"""

if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
    pytest.skip("needs root on Debian: the dev scripts install packages and start daemons", allow_module_level=True)


def readme_block() -> list[str]:
    """The commands of README's block that pushes images to lyon, as written."""
    blocks = re.findall(r"^```bash\n(.*?)^```", (REPO / "README.md").read_text(encoding="utf-8"), re.S | re.M)
    (block,) = [b for b in blocks if "\nkit images push --site lyon" in "\n" + b]
    return [line.strip() for line in block.splitlines() if line.strip()]


def run_line(line: str, ws: Path, env: dict) -> subprocess.CompletedProcess:
    """One README line with the demo's model for the README's, as kit's CLI from this checkout."""
    argv = re.sub(r"\s+#.*$", "", line).replace(README_MODEL, MODEL).split()
    assert argv[0] == "kit", line
    return subprocess.run([sys.executable, "-m", "kit", *argv[1:]], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture
def lyon(cpu_image_env, tmp_path_factory):
    """A workspace (under /var/tmp, user kit's) whose sites.toml names lyon: Slurm through kit-frontend,
    runtime apptainer, CPU only, the demo's hub as its weights; the CPU image's SIF in the lock."""
    for name in ("slurm", "sshd"):
        start_service(name)
    r = subprocess.run(["bash", str(REPO / "scripts/dev/apptainer-image.sh")], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    let_kit_use_docker()
    env = {**os.environ, **cpu_image_env}
    r = subprocess.run([sys.executable, "-m", "kit", "images", "convert", "transformers-5.17", "--to", "sif"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ws = Path(tempfile.mkdtemp(prefix="kit-images-at-a-site-", dir="/var/tmp"))
    ws.chmod(0o755)
    CACHE.mkdir(parents=True, exist_ok=True)
    CACHE.chmod(0o755)
    let_kit_run_this_python(ws)
    env["KIT_CACHE_DIR"] = str(CACHE)      # the demo's assets, built once per machine
    code = "import sys; from kit.demo.run import prepare_demo; prepare_demo(sys.argv[1])"
    r = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    for d in ("cluster", "cluster/results", "images", "scratch", "bin"):
        (ws / d).mkdir(parents=True, exist_ok=True)
        shutil.chown(ws / d, "kit", "kit")
    (ws / "bin" / "apptainer").write_text(STANDIN.format(opts=EXEC_OPTS, ws=ws, cache=CACHE))
    (ws / "bin" / "apptainer").chmod(0o755)
    site = Site(name="lyon", scheduler="slurm", runtime="apptainer", frontend="kit-frontend", partition="debug",
                gpus_per_node=0, walltime="15m", root=str(ws / "cluster"), results=str(ws / "cluster" / "results"),
                images=str(ws / "images"), scratch=str(ws / "scratch"),
                weights=str(CACHE / f"demo-{DEMO_VERSION}" / "hub"), setup=(f"export PATH={ws}/bin:$PATH",))
    (ws / "sites.toml").write_text(sites_toml(site))
    env.update(KIT_SITES_FILE=str(ws / "sites.toml"), KIT_ROSTER=str(ws / "roster.toml"))
    yield ws, env
    shutil.rmtree(ws, ignore_errors=True)


def job_logs(ws: Path) -> str:
    """The end of each Slurm log of the workspace's jobs."""
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in (ws / "cluster").rglob("*.out"))


def wait_complete(ws: Path, env: dict, timeout: float = 900) -> list[dict]:
    end = time.monotonic() + timeout
    while True:
        r = subprocess.run([sys.executable, "-m", "kit", "status", "--site", "lyon", "--model", MODEL, "--json"],
                           cwd=ws, env=env, capture_output=True, text=True, timeout=300)
        pairs = json.loads(r.stdout)["data"]["pairs"]
        if pairs and not any(p["state"] in ("queued", "running") for p in pairs):
            return pairs
        if time.monotonic() > end:
            pytest.fail(f"still live after {timeout}s: {pairs}\n{job_logs(ws)}")
        time.sleep(5)


def test_the_readme_block_pushes_the_sif_and_the_slurm_job_runs_in_it(lyon, cpu_image_env):
    from kit.images.built import load_lock

    ws, env = lyon
    art = load_lock(Path(cpu_image_env["KIT_IMAGES_LOCK"])).images["transformers-5.17"].artifacts["sif"]
    pushed = ws / "images" / art.file
    lines = readme_block()
    assert [line.split("  #")[0].split()[:3] for line in lines] == [
        ["kit", "run", "--site"], ["kit", "images", "push"], ["kit", "images", "status"], ["kit", "run", "--site"],
        ["kit", "images", "prune"]]
    dry, push, status, run, prune = lines

    r = run_line(dry, ws, env)     # no ssh: it says what `kit run` checks at lyon before submitting
    assert r.returncode == 0 and f"checked on kit-frontend before submitting: {pushed}" in r.stdout, r.stdout + r.stderr
    refused = run_line(run, ws, env)        # before the push: nothing is submitted
    assert refused.returncode == 1 and "fix: kit images push --site lyon" in refused.stderr, refused.stderr
    assert not list((ws / "cluster").rglob("*.out"))

    r = run_line(push, ws, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert pushed.owner() == "kit" and pushed.stat().st_size == art.bytes
    r = run_line(status, ws, env)
    assert r.returncode == 0 and "current" in r.stdout, r.stdout

    r = run_line(run, ws, env)
    assert r.returncode == 0 and "job ids" in r.stdout, r.stdout + r.stderr
    pairs = wait_complete(ws, env)
    assert {p["state"] for p in pairs} == {"complete"}, (pairs, job_logs(ws))
    from kit.results.store import iter_checkpoint_files

    checkpoints = [json.loads(p.read_text()) for p in iter_checkpoint_files(ws / "cluster" / "results")]
    assert len(checkpoints) == len(pairs)
    for c in checkpoints:
        image, job = c["provenance"]["image"], c["provenance"]["job"]
        assert image["artifact"] == "sif" and image["artifact_sha256"] == art.sha256, image
        assert job["scheduler"] == "slurm" and job["runtime"] == "apptainer", job

    r = run_line(prune, ws, env)
    assert r.returncode == 0 and pushed.is_file(), r.stdout + r.stderr
