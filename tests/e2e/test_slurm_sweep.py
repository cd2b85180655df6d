"""A tiny-model sweep through the real single-machine Slurm (scripts/dev/slurm.sh): array jobs,
status from squeue/sacct, a task killed mid-run and resumed, a walltime kill.

The cluster is started once per session (about 15 s on a fresh Debian machine, under a
second when it already runs) and left running. Jobs run `python -m kit shard` through the
host runtime with this interpreter (sys.executable). The walltime test slows its worker
with the site's own `python` setting pointing at a wrapper that sleeps first: no test hook
in kit. Needs root on Debian; skipped elsewhere (a failure under CI=true, see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sites import sites_toml

from kit.config.sites import Site
from kit.demo.run import DEMO_VERSION

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"
MODEL = "kit-demo/tiny-llama"
LIVE = ("queued", "running")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if "/usr/sbin" not in env.get("PATH", "").split(":"):
        env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":" + SBIN
    return env


def slurm_site(ws: Path, name: str, **fields: Any) -> Site:
    """A site on the dev cluster's debug partition: its root `name`, its results `name`/results, the
    demo's hub in workspace `ws` as its weights and `ws`/scratch as its scratch."""
    return Site(name=name, scheduler="slurm", partition="debug", root=name, results=f"{name}/results",
                weights=f"{ws}/cache/demo-{DEMO_VERSION}/hub", scratch=f"{ws}/scratch", **fields)


def sweep_sites(ws: Path, slow_python: Path) -> list[Site]:
    """The workspace's three host-runtime sites: ci-slurm and ci-slurm-kill, and ci-slurm-slow, whose
    worker (`slow_python`) outlives its 1-minute walltime."""
    host = dict(runtime="host", gpus_per_node=1)
    return [slurm_site(ws, "ci-slurm", walltime="10m", python=sys.executable, **host),
            slurm_site(ws, "ci-slurm-kill", walltime="10m", python=sys.executable, **host),
            slurm_site(ws, "ci-slurm-slow", walltime="1m", python=str(slow_python), **host)]


def docker_site(ws: Path) -> Site:
    """The site of test_docker_runtime_sweep: the same sweep in the transformers-5.17 image, CPU only."""
    return slurm_site(ws, "ci-slurm-docker", runtime="docker", gpus_per_node=0, walltime="10m")


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Start (or find running) the dev cluster through scripts/dev/slurm.sh."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not Path("/etc/debian_version").is_file():
        pytest.skip("needs root on Debian: scripts/dev/slurm.sh installs Slurm and starts its daemons")
    t0 = time.monotonic()
    r = subprocess.run(["bash", str(REPO / "scripts/dev/slurm.sh"), "start"], capture_output=True, text=True,
                       timeout=600, env=_env(), stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        pytest.fail(f"scripts/dev/slurm.sh start exited {r.returncode}\n{r.stdout}\n{r.stderr}", pytrace=False)
    print(f"slurm cluster ready in {time.monotonic() - t0:.1f}s")


@pytest.fixture(scope="module")
def workspace(slurm_cluster, tmp_path_factory) -> Path:
    """Demo model and benchmark (built once here), a roster and a sites file with three Slurm sites."""
    root = tmp_path_factory.mktemp("slurm-sweep")
    root.chmod(0o755)
    env = {**_env(), "KIT_CACHE_DIR": str(root / "cache")}
    code = "import sys; from kit.demo.run import prepare_demo; prepare_demo(sys.argv[1])"
    r = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    slow = root / "slow-python"
    slow.write_text(f"#!/bin/sh\n# a worker that outlives any 1-minute walltime\nsleep 600\nexec {sys.executable} \"$@\"\n")
    slow.chmod(0o755)
    (root / "sites.toml").write_text(sites_toml(*sweep_sites(root, slow)))
    return root


def kit(ws: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = [sys.executable, "-m", "kit", *args, "--sites-file", str(ws / "sites.toml"), "--roster", str(ws / "roster.toml")]
    return subprocess.run(full, cwd=ws, capture_output=True, text=True, timeout=300, env=env or _env())


def submit(ws: Path, site: str, *args: str) -> list[str]:
    r = kit(ws, "run", "--site", site, "--model", MODEL, "--json", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    subs = json.loads(r.stdout)["data"]["submitted"]
    return [j for s in subs for j in s["job_ids"]]


def status(ws: Path, site: str, env: dict | None = None) -> dict[str, dict]:
    r = kit(ws, "status", "--site", site, "--model", MODEL, "--json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return {p["language"]: p for p in json.loads(r.stdout)["data"]["pairs"]}


def wait_settled(ws: Path, site: str, timeout: float = 240) -> dict[str, dict]:
    """Poll `kit status` until no pair is queued or running."""
    end = time.monotonic() + timeout
    while True:
        st = status(ws, site)
        if not any(p["state"] in LIVE for p in st.values()):
            return st
        assert time.monotonic() < end, f"still live after {timeout}s: {st}"
        time.sleep(2)


def squeue_state(job: str) -> str:
    out = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], capture_output=True, text=True,
                         env=_env()).stdout.split()
    return out[0] if out else ""


def predictions(ws: Path, site: str) -> dict[str, list]:
    files = sorted((ws / site / "results").glob("*/kit-demo__tiny-llama.json"))
    return {f.parent.name: json.loads(f.read_text())["predictions"] for f in files}


@pytest.fixture(scope="module")
def slow_job(workspace) -> tuple[list[str], float]:
    """The walltime job, submitted first so its minute runs while the sweeps do."""
    return submit(workspace, "ci-slurm-slow", "--languages", "de"), time.monotonic()


def test_array_sweep_completes_every_pair(workspace, slow_job):
    t0 = time.monotonic()
    jobs = submit(workspace, "ci-slurm", "--array", "3")
    assert len(jobs) == 3 and all(j.endswith(f"_{i}") for i, j in enumerate(jobs)), jobs
    st = wait_settled(workspace, "ci-slurm")
    assert {lang: p["state"] for lang, p in st.items()} == {"de": "complete", "en": "complete", "fr": "complete"}
    script = next((workspace / "ci-slurm" / "jobs").glob("*.sh")).read_text()
    assert "#SBATCH --array=0-2" in script and "#SBATCH --gres=gpu:1" in script
    log = (workspace / "ci-slurm" / "logs").glob(f"*-{jobs[0]}.out")
    assert any("shard 0/3" in p.read_text() for p in log)
    again = kit(workspace, "run", "--site", "ci-slurm", "--model", MODEL)
    assert again.returncode == 0 and "nothing to submit" in again.stdout
    print(f"array sweep of 3 pairs: {time.monotonic() - t0:.1f}s")


def test_a_killed_task_is_reported_then_resubmitted_alone(workspace):
    t0 = time.monotonic()
    jobs = submit(workspace, "ci-slurm-kill", "--array", "3")
    victim = jobs[1]                                      # shard 1 of the sorted pairs de, en, fr: en
    end = time.monotonic() + 240
    while squeue_state(victim) != "RUNNING":
        assert time.monotonic() < end and squeue_state(victim) in ("PENDING", "RUNNING"), squeue_state(victim)
        time.sleep(0.3)
    dry = kit(workspace, "cancel", "--site", "ci-slurm-kill", "--model", MODEL, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert victim in json.loads(dry.stdout)["data"]["jobs"]
    subprocess.run(["scancel", victim], check=True, env=_env())
    st = wait_settled(workspace, "ci-slurm-kill")
    assert st["en"]["state"] == "cancelled" and st["en"]["job"] == victim, st["en"]
    assert st["de"]["state"] == "complete" and st["fr"]["state"] == "complete"

    # no scheduler answer: unknown, with the reason, not a crash; said for the site, status `error`, exit 1
    r = kit(workspace, "status", "--site", "ci-slurm-kill", "--model", MODEL, "--json",
            env={**_env(), "PATH": f"{Path(sys.executable).parent}:/nonexistent"})
    envelope = json.loads(r.stdout)
    assert r.returncode == 1 and envelope["status"] == "error", r.stdout + r.stderr
    assert any("the scheduler could not be asked" in e and "squeue" in e for e in envelope["errors"]), envelope
    st = {p["language"]: p for p in envelope["data"]["pairs"]}
    assert st["en"]["state"] == "unknown" and "squeue" in " ".join(st["en"]["reasons"]), st["en"]

    rerun = kit(workspace, "run", "--site", "ci-slurm-kill", "--model", MODEL, "--array", "3", "--json")
    assert rerun.returncode == 0, rerun.stderr
    data = json.loads(rerun.stdout)["data"]
    assert data["pending"] == 1 and data["jobs"][0]["pairs"] == 1 and data["jobs"][0]["array_size"] == 1
    st = wait_settled(workspace, "ci-slurm-kill")
    assert {p["state"] for p in st.values()} == {"complete"}
    assert predictions(workspace, "ci-slurm-kill") == predictions(workspace, "ci-slurm")
    print(f"kill and resume: {time.monotonic() - t0:.1f}s")


def test_the_job_sees_the_allow_list_and_its_own_exports_only(slurm_cluster, tmp_path, monkeypatch):
    from kit.launch.jobscript import JobScript, allow_listed_env, render_job_script
    from kit.launch.request import JobRequest
    from kit.launch.schedulers.slurm import SlurmScheduler

    monkeypatch.setenv("PATH", _env()["PATH"])
    site = Site(name="ci-env", scheduler="slurm", partition="debug", gpus_per_node=0, forward_env=("KIT_TEST_WANTED",))
    sched = SlurmScheduler(site)
    out = tmp_path / "env.txt"
    spec = JobScript(job_name="kit-env", worker_argv=("sh", "-c", 'env > "$0"', str(out)), shard_slots=(0,),
                     shard_count=1, env={"KIT_SITE": "ci-env"})
    request = JobRequest(name="kit-env", gpus=0, walltime_s=300)
    script = tmp_path / "job.sh"
    script.write_text(render_job_script(sched.job_script(spec, request, str(tmp_path / "logs"))))
    caller = {**_env(), "LEAK_CANARY": "from-the-callers-shell", "KIT_TEST_WANTED": "forwarded"}
    job = sched.submit(request, script, str(tmp_path / "logs"), allow_listed_env(caller, site.forward_env)).job_ids[0]
    end = time.monotonic() + 120
    while squeue_state(job) not in ("COMPLETED", "FAILED", "CANCELLED") and time.monotonic() < end:
        time.sleep(0.5)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert "LEAK_CANARY" not in env
    assert env["KIT_TEST_WANTED"] == "forwarded" and env["KIT_SITE"] == "ci-env" and env["KIT_SHARD_INDEX"] == "0"
    assert env["SLURM_EXPORT_ENV"] == "ALL" and env["KIT_JOB_ID"] == job


def test_finished_plain_job_is_read_from_the_jobcomp_file(slurm_cluster, tmp_path):
    from kit.launch.schedulers.slurm import SlurmScheduler

    r = subprocess.run(["sbatch", "--parsable", "--wait", "-o", "/dev/null", "--wrap", "exit 3"], capture_output=True,
                       text=True, env=_env(), timeout=120)
    job = r.stdout.strip()
    sched = SlurmScheduler(Site(name="ci", scheduler="slurm"))
    end = time.monotonic() + 20
    while (got := sched._accounting([job]).get(job)) is None and time.monotonic() < end:
        time.sleep(0.5)                                   # jobcomp is written when the job record completes
    assert got is not None and got.state == "failed" and got.exit_code == 3, got
    assert sched.poll([job])[job].state == "failed"


def test_a_finished_array_task_from_the_sites_accounting(slurm_cluster):
    """With slurmdbd (WITH_DBD=1) sacct names array tasks; with jobcomp only kit says it cannot."""
    from kit.launch.schedulers.slurm import SlurmScheduler

    r = subprocess.run(["sbatch", "--parsable", "--wait", "--array=0-1", "-o", "/dev/null", "--wrap",
                        '[ "$SLURM_ARRAY_TASK_ID" = 1 ] && exit 4; exit 0'], capture_output=True, text=True,
                       env=_env(), timeout=120)
    task = f"{r.stdout.strip()}_1"
    dbd = subprocess.run(["sacct", "-X", "-n", "-j", task], capture_output=True, env=_env()).returncode == 0
    got = SlurmScheduler(Site(name="ci", scheduler="slurm"))._accounting([task])[task]   # as if squeue had purged it
    if dbd:
        assert got.state == "failed" and got.exit_code == 4, got
    else:
        assert got.state == "unknown" and "slurmdbd" in got.reason and "sacct -c" in got.reason, got


def test_a_job_past_its_walltime_shows_as_timeout(workspace, slow_job):
    jobs, started = slow_job
    st = wait_settled(workspace, "ci-slurm-slow", timeout=max(30.0, 200 - (time.monotonic() - started)))
    assert st["de"]["state"] == "timeout" and st["de"]["job"] == jobs[0], st["de"]
    script = next((workspace / "ci-slurm-slow" / "jobs").glob("*.sh")).read_text()
    assert "#SBATCH --time=0:01:00" in script
    print(f"walltime kill seen {time.monotonic() - started:.1f}s after submission")


def test_docker_runtime_sweep(workspace, cpu_image_env):
    """The same sweep in the transformers-5.17 image (its CPU variant, built for the session)."""
    sites = workspace / "sites.toml"
    if "[site.ci-slurm-docker]" not in sites.read_text():
        sites.write_text(sites.read_text() + "\n" + sites_toml(docker_site(workspace)))
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "ci-slurm-docker", "--model", MODEL, "--array", "2",
                        "--sites-file", str(sites), "--roster", str(workspace / "roster.toml")],
                       cwd=REPO, capture_output=True, text=True, env={**_env(), **cpu_image_env}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    st = wait_settled(workspace, "ci-slurm-docker", timeout=400)
    assert {p["state"] for p in st.values()} == {"complete"}, st
