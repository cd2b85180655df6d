"""The dev-service scripts (scripts/dev/*.sh) bring up real services, and those services work.

Each service is started through its script by a session-scoped fixture (idempotent: a service that
already runs costs well under a second) and then used for something real:

- dockerd answers ``docker info``;
- Slurm runs a job with ``--gres=gpu:1`` to COMPLETED (``sacct -c``);
- OAR runs a ``-t night`` job with Grid'5000's GPU filter to Terminated, submitted as user ``kit``;
- the ``kit-frontend`` ssh alias runs ``true`` as ``kit``, and ``oarstat`` over a ControlMaster.

Needs root on Debian (the scripts install Debian packages and start daemons); skipped elsewhere.
Services are left running for later tests; ``scripts/dev/<name>.sh stop`` stops one.

Measured cost on a 2-core Debian 12 machine with other load, package downloads included: about
1 minute fresh (docker.io + dockerd ~9 s, Slurm ~8 s, PostgreSQL + OAR ~32 s, sshd < 1 s since
oar-node already pulls in openssh-server, the jobs ~6 s); about 12 s when the services already run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "scripts" / "dev"
START_TIMEOUT = 600  # a fresh machine downloads packages; minutes are plenty
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"


def _skip_reason() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root: the dev-service scripts install Debian packages and start daemons"
    if not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
        return "needs Debian (apt-get, /etc/debian_version): the scripts install Debian packages"
    return None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if "/usr/sbin" not in env.get("PATH", "").split(":"):
        env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":" + SBIN
    return env


def run(cmd: list[str], *, timeout: float = 120, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=kw.pop("env", _env()),
        stdin=subprocess.DEVNULL, **kw,
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}",
            pytrace=False,
        )
    return proc


def as_kit(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    """Run cmd as the ordinary user kit, from its home (oarsub takes the job directory from $PWD)."""
    home = "/home/kit"
    env = _env() | {"HOME": home, "USER": "kit", "LOGNAME": "kit", "PWD": home}
    return run(["runuser", "-u", "kit", "--", *cmd], cwd=home, env=env, **kw)


def start_service(name: str) -> float:
    """Start one service through scripts/dev/NAME.sh; return the seconds it took.

    Skips (per test, so that the suite's CI=true rule turns the skip into a failure) where the
    scripts cannot run."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(DEV / f"{name}.sh"), "start"], capture_output=True, text=True,
        timeout=START_TIMEOUT, env=_env(), stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/dev/{name}.sh start exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}",
            pytrace=False,
        )
    return time.monotonic() - t0


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}", pytrace=False)
        time.sleep(interval)


# ---------------------------------------------------------------- fixtures (one per service)


@pytest.fixture(scope="session")
def dockerd() -> str:
    start_service("dockerd")
    docker = shutil.which("docker", path=_env()["PATH"])
    assert docker, "dockerd.sh start succeeded but no docker client is on PATH"
    return docker


@pytest.fixture(scope="session")
def slurm() -> None:
    start_service("slurm")


@pytest.fixture(scope="session")
def oar() -> None:
    start_service("oar")


@pytest.fixture(scope="session")
def sshd() -> None:
    start_service("sshd")


# ---------------------------------------------------------------- tests


def test_dockerd_answers_docker_info(dockerd: str) -> None:
    out = run([dockerd, "info", "--format", "{{json .ServerVersion}}"]).stdout.strip()
    assert json.loads(out), f"docker info gave no server version: {out!r}"


def test_slurm_runs_a_gpu_job_to_completed(slurm: None, tmp_path: Path) -> None:
    name = f"kit-test-{uuid.uuid4().hex[:8]}"
    out_file = tmp_path / "job.out"
    # --wait: sbatch returns when the job ends, with its exit code.
    run(
        ["sbatch", "--wait", "--parsable", "--gres=gpu:1", "-J", name, "-o", str(out_file),
         "--wrap", "echo gpu=$CUDA_VISIBLE_DEVICES"],
        timeout=180,
    )
    assert out_file.read_text().startswith("gpu="), out_file.read_text()

    def state() -> str | None:
        rows = run(["sacct", "-c", "--parsable2", "-n", "-o", "JobName,State,ExitCode"]).stdout
        for row in rows.splitlines():
            fields = row.split("|")
            if fields[0] == name:
                return "|".join(fields[1:])
        return None

    assert wait_for(state, 20, f"job {name} in sacct -c") == "COMPLETED|0:0"


def test_oar_runs_a_night_gpu_job_to_terminated_as_kit(oar: None) -> None:
    name = f"kittest{uuid.uuid4().hex[:8]}"
    sub = as_kit(
        ["oarsub", "-t", "night", "-n", name, "-l", "host=1/gpu=1,walltime=0:05",
         "-p", "gpu_compute_capability_major>=7 AND gpu_mem>=23040", "echo ok"]
    )
    ids = [line.split("=", 1)[1] for line in sub.stdout.splitlines() if line.startswith("OAR_JOB_ID=")]
    assert len(ids) == 1, sub.stdout
    job = ids[0]

    def state() -> str | None:
        out = as_kit(["oarstat", "-s", "-j", job], check=False).stdout.strip()
        st = out.split(": ", 1)[1] if ": " in out else ""
        return st if st in ("Terminated", "Error") else None

    assert wait_for(state, 180, f"OAR job {job} to end") == "Terminated"
    info = json.loads(as_kit(["oarstat", "-f", "-J", "-j", job]).stdout)[job]
    assert info["owner"] == "kit"
    assert info["types"] == ["night"]
    assert str(info["exit_code"]).split()[0] == "0", info["exit_code"]
    assert Path(f"/home/kit/OAR.{name}.{job}.stdout").read_text().strip() == "ok"


def test_ssh_alias_kit_frontend_runs_true(sshd: None) -> None:
    run(["ssh", "kit-frontend", "true"], timeout=60)
    assert run(["ssh", "kit-frontend", "whoami"], timeout=60).stdout.strip() == "kit"


def test_ssh_frontend_runs_oarstat_over_a_control_master(sshd: None, oar: None, tmp_path: Path) -> None:
    control = f"/tmp/kit-cm-{uuid.uuid4().hex[:8]}"
    opts = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}", "-o", "ControlPersist=60"]
    try:
        run(["ssh", *opts, "kit-frontend", "oarstat"], timeout=60)
        assert Path(control).is_socket()
        run(["ssh", *opts, "kit-frontend", "oarstat", "-u", "kit"], timeout=60)
    finally:
        subprocess.run(["ssh", "-o", f"ControlPath={control}", "-O", "exit", "kit-frontend"],
                       capture_output=True, timeout=30, env=_env())
