"""The Slurm + Apptainer job script, run for real with Apptainer 1.4 (in the helper image that
scripts/dev/apptainer-image.sh builds, since Debian 12 ships no Apptainer).

The SIF is kit/base:bookworm plus a stub `kit` that records its argv and environment (the
real backend SIFs come from the images work; this checks the script, not the worker). The
rendered script runs as uid 1000 inside the helper with a stub `srun` that just runs its
command (no Slurm daemons in there) and SLURM_* set as a batch job would have them; this
machine has no /dev/fuse, so APPTAINER_UNSQUASH=1 makes Apptainer unpack the SIF instead
of mounting it (a property of this machine, not of the script).

A second test gets the SIF to the "cluster" the way a user does: `kit images push` through the
local ssh frontend (scripts/dev/sshd.sh), the run preflight asked over ssh, the job reading the
pushed file, and a SIF damaged after the push refused by the job before the worker starts.

Cost: the stub SIF is built once and cached in /var/tmp/kit-test-cache (about 30 s); a run
takes about 8 s. Needs root, Debian and Docker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kit.demo.dataset import write_demo_benchmark
from kit.launch.run import RunRequest, prepare_kit_run

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HELPER = "kit/apptainer:sid"
CACHE = Path("/var/tmp/kit-test-cache")
EXEC_OPTS = ["--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
             "--security-opt", "systempaths=unconfined"]
STUB_KIT = r"""#!/bin/sh
# stub kit: records its argv and environment next to the results it was given
out= prev=
for a in "$@"; do [ "$prev" = "--results" ] && out=$a; prev=$a; done
{ printf 'ARG %s\n' "$@"; env | sort | sed 's/^/ENV /'
  [ -r "${HF_TOKEN_PATH:-/nonexistent}" ] && echo TOKEN_READABLE || true; } > "$out/stub-kit.txt"
"""
REV = "0123456789abcdef0123456789abcdef01234567"


def sh(argv: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/local/sbin:/usr/sbin:/sbin"
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL, **kw)
    if r.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
    return r


@pytest.fixture(scope="session")
def stub_sif() -> Path:
    """A SIF of kit/base:bookworm with the stub kit (cached by the stub image's id)."""
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("docker") is None:
        pytest.skip("needs root, Debian and docker (the Apptainer helper is a Docker image)")
    sh(["bash", str(REPO / "scripts/dev/apptainer-image.sh"), HELPER])
    sh(["bash", str(REPO / "scripts/bootstrap-base.sh"), "bookworm", "kit/base:bookworm"])
    with tempfile.TemporaryDirectory() as ctx:
        (Path(ctx) / "kit").write_text(STUB_KIT)
        (Path(ctx) / "kit").chmod(0o755)
        (Path(ctx) / "Dockerfile").write_text("FROM kit/base:bookworm\nCOPY kit /usr/local/bin/kit\n")
        # the classic builder: the docker CLI first in PATH may lack buildx
        sh(["env", "DOCKER_BUILDKIT=0", "docker", "build", "-q", "-t", "kit/test-stub-kit:latest", ctx])
    image_id = sh(["docker", "image", "inspect", "-f", "{{.Id}}", "kit/test-stub-kit:latest"]).stdout.strip()
    CACHE.mkdir(parents=True, exist_ok=True)
    sif = CACHE / f"stub-kit-{image_id.split(':')[-1][:12]}.sif"
    if not sif.is_file():
        work = Path(tempfile.mkdtemp(dir=CACHE))
        try:
            sh(["docker", "save", "kit/test-stub-kit:latest", "-o", str(work / "x.tar")])
            sh(["docker", "run", "--rm", "-v", f"{work}:/w", HELPER, "apptainer", "build", "/w/x.sif",
                "docker-archive:///w/x.tar"])
            os.replace(work / "x.sif", sif)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    sif.chmod(0o644)
    return sif


@pytest.fixture
def box(stub_sif):
    """A world-traversable folder (uid 1000 in the helper must reach it), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="kit-apptainer-", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_slurm_apptainer_script_runs_the_worker_in_the_sif(stub_sif, box):
    import hashlib

    art = "kit-transformers-5.17-stub.sif"
    (box / "images").mkdir()
    shutil.copy(stub_sif, box / "images" / art)
    write_demo_benchmark(box / "data")
    (box / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/m"\nrevision = "{REV}"\n'
                                     'backend = "transformers-5.17"\n')
    token = box / "hf_token"
    token.write_text("hf_not_a_real_token\n")
    token.chmod(0o600)
    os.chown(token, 1000, 1000)
    for d in ("kit", "kit/results", "scratch", "hub"):
        (box / d).mkdir(parents=True, exist_ok=True)
        (box / d).chmod(0o777)
    lock = {"images": {"transformers-5.17": {
        "backend": "transformers-5.17", "tag": "kit/test-stub-kit:latest", "image_id": "sha256:" + "a" * 64,
        "dockerfile_sha256": "b" * 64, "lock_sha256": "c" * 64, "base": "kit/base:bookworm", "kit_version": "0",
        "built_at": "2026-11-29T00:00:00Z",
        "artifacts": {"sif": {"file": art, "sha256": hashlib.sha256(stub_sif.read_bytes()).hexdigest()}}}}}
    (box / "images.lock.json").write_text(json.dumps(lock))
    (box / "sites.toml").write_text(
        '[site.box]\nscheduler = "slurm"\nruntime = "apptainer"\nroot = "kit"\nresults = "kit/results"\n'
        f'images = "images"\nscratch = "{box}/scratch"\nweights = "hub"\ngpus_per_node = 1\n'
        f'hf_token_file = "{token}"\n')
    # a dry run: the same job, and no refusal for the weights this test never stages
    plan = prepare_kit_run(RunRequest(box / "sites.toml", ("box",), box / "roster.toml", array=2,
                                      images_lock=box / "images.lock.json", dry_run=True)).plan
    sp = plan.sites[0]
    sp.scheduler.frontend.write_text(sp.plan_path, sp.plan_text)
    sp.scheduler.frontend.write_text(sp.script_path, sp.script_text, mode=0o755)
    (box / "bin").mkdir()
    (box / "bin" / "srun").write_text('#!/bin/sh\nexec "$@"\n')     # a job step without slurmstepd
    (box / "bin" / "srun").chmod(0o755)
    run = subprocess.run(
        ["docker", "run", "--rm", "--user", "1000:1000", *EXEC_OPTS, "-v", f"{box}:{box}",
         "-e", f"PATH={box}/bin:/usr/local/bin:/usr/bin:/bin", "-e", "APPTAINER_UNSQUASH=1",
         "-e", "SLURM_JOB_ID=4242", "-e", "SLURM_ARRAY_TASK_ID=1", "-e", "CUDA_VISIBLE_DEVICES=1",
         "-e", "LEAK_CANARY=must-not-enter", HELPER, "bash", str(sp.script_path)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    record = (box / "kit" / "results" / "stub-kit.txt").read_text().splitlines()
    args = [line[4:] for line in record if line.startswith("ARG ")]
    env = dict(line[4:].split("=", 1) for line in record if line.startswith("ENV ") and "=" in line)
    assert args[0] == "shard" and args[-2:] == ["--shard", "1/2"]
    assert args[args.index("--results") + 1] == str(box / "kit" / "results")
    assert env["KIT_SHARD_INDEX"] == "1" and env["KIT_JOB_ID"] == "4242" and env["KIT_RUNTIME"] == "apptainer"
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HUB_CACHE"] == str(box / "hub")
    assert env["HF_HOME"] == f"{box}/scratch/kit-cache-4242/hf" and env["KIT_IMAGE_ARTIFACT"] == "sif"
    assert "HF_TOKEN_PATH" not in env and "TOKEN_READABLE" not in record   # jobs run offline: no token
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    assert "LEAK_CANARY" not in env and "SLURM_JOB_ID" not in env          # --cleanenv: named variables only
    assert "hf_not_a_real_token" not in run.stdout + run.stderr + sp.script_text


def test_a_job_reads_the_sif_kit_images_push_put_at_the_site_and_refuses_a_damaged_one(stub_sif, box):
    """The SIF reaches the cluster through `kit images push` over the ssh frontend (as the user kit),
    the run preflight finds it there, and the job script reads it; a SIF damaged after the push
    stops the job before the worker starts, naming the push that mends it."""
    import hashlib
    import sys

    from services import start_service

    from kit.launch.images_check import preflight_images

    start_service("sshd")
    art = "kit-transformers-5.17-stub-0123456789ab.sif"
    (box / "build").mkdir()
    shutil.copy(stub_sif, box / "build" / art)
    write_demo_benchmark(box / "data")
    (box / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/m"\nrevision = "{REV}"\n'
                                     'backend = "transformers-5.17"\n')
    for d in ("cluster/results", "scratch", "hub", "pushed"):
        (box / d).mkdir(parents=True, exist_ok=True)
        shutil.chown(box / d, "kit", "kit")
    for d in ("cluster", "cluster/results", "scratch"):   # the job runs as uid 1000 of the helper image
        (box / d).chmod(0o777)
    lock = {"images": {"transformers-5.17": {
        "backend": "transformers-5.17", "tag": "kit/test-stub-kit:latest", "image_id": "sha256:" + "a" * 64,
        "dockerfile_sha256": "b" * 64, "lock_sha256": "c" * 64, "base": "kit/base:bookworm", "kit_version": "0",
        "built_at": "2026-11-29T00:00:00Z",
        "artifacts": {"sif": {"file": art, "sha256": hashlib.sha256(stub_sif.read_bytes()).hexdigest(),
                              "bytes": stub_sif.stat().st_size}}}}}
    (box / "images.lock.json").write_text(json.dumps(lock))
    (box / "sites.toml").write_text(
        '[site.far]\nscheduler = "slurm"\nruntime = "apptainer"\nfrontend = "kit-frontend"\n'
        f'root = "{box}/cluster"\nresults = "{box}/cluster/results"\nimages = "{box}/pushed"\nscratch = "{box}/scratch"\n'
        f'weights = "{box}/hub"\ngpus_per_node = 1\n')
    env = {**os.environ, "KIT_IMAGES_LOCK": str(box / "images.lock.json")}
    push = subprocess.run([sys.executable, "-m", "kit", "images", "push", "--site", "far", "--out", "build"],
                          cwd=box, capture_output=True, text=True, env=env, timeout=300)
    assert push.returncode == 0, push.stderr
    pushed = box / "pushed" / art
    assert pushed.owner() == "kit" and pushed.read_bytes() == stub_sif.read_bytes()
    plan = prepare_kit_run(RunRequest(box / "sites.toml", ("far",), box / "roster.toml",
                                      images_lock=box / "images.lock.json", dry_run=True)).plan
    assert [c.state for c in preflight_images(plan, images_lock=box / "images.lock.json").checks] == ["ok"]
    sp = plan.sites[0]
    assert f"{box}/pushed/{art}" in sp.script_text
    from kit.launch.remote import upload_inputs

    upload_inputs(sp.where.frontend, sp.inputs)      # as `kit run` does: the roster and benchmark, over ssh
    script = box / "job.sh"
    script.write_text(sp.script_text)
    (box / "bin").mkdir()
    (box / "bin" / "srun").write_text('#!/bin/sh\nexec "$@"\n')     # a job step without slurmstepd
    (box / "bin" / "srun").chmod(0o755)

    def job() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["docker", "run", "--rm", "--user", "1000:1000", *EXEC_OPTS, "-v", f"{box}:{box}",
             "-e", f"PATH={box}/bin:/usr/local/bin:/usr/bin:/bin", "-e", "APPTAINER_UNSQUASH=1",
             "-e", "SLURM_JOB_ID=4343", HELPER, "bash", str(script)], capture_output=True, text=True, timeout=300)

    run = job()
    assert run.returncode == 0, run.stdout + run.stderr
    record = (box / "cluster" / "results" / "stub-kit.txt").read_text().splitlines()
    assert "ARG shard" in record and "ENV KIT_IMAGE_ARTIFACT=sif" in record
    (box / "cluster" / "results" / "stub-kit.txt").unlink()
    with pushed.open("r+b") as fh:          # a byte flipped on the cluster's filesystem
        fh.seek(100)
        byte = fh.read(1)
        fh.seek(100)
        fh.write(bytes([byte[0] ^ 0xFF]))
    run = job()
    assert run.returncode == 2 and "push the lock's image again: kit images push --site far" in run.stderr, run.stderr
    assert not (box / "cluster" / "results" / "stub-kit.txt").exists()
