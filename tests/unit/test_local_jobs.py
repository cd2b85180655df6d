"""A job the `local` scheduler runs is live to kit while it runs: recorded when it starts, `running` to
`kit status` (its later array tasks `pending`) and owned for a second `kit run`, also once the `kit run`
that started it was killed (then `failed` when it is gone); and its walltime holds without kit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kit.config.sites import Site
from kit.launch.schedulers.base import JobState, LiveJob
from kit.launch.schedulers.local import LocalScheduler, process_start

NAME = "kit-local-model-a-0123456789ab"

# a `kit run` stand-in: submits an array of `size` tasks under `walltime` s and prints the ids it is given
# before the first task starts (KILL_WAIT as the test asks)
RUNNER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from kit.config.sites import Site
    from kit.launch.request import JobRequest
    from kit.launch.schedulers import local

    script, logs, size, walltime, local.KILL_WAIT = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \\
        float(sys.argv[5])
    said = []

    def started(sub):
        if not said:
            print(json.dumps(sub.job_ids), flush=True)
            said.append(True)

    local.LocalScheduler(Site(name="local", scheduler="local")).submit(
        JobRequest("%s", 0, walltime, array_size=size), script, logs, {"PATH": "/usr/bin:/bin"}, started=started)
""" % NAME)


def _scheduler() -> LocalScheduler:
    return LocalScheduler(Site(name="local", scheduler="local"))


def _start(tmp_path: Path, body: str, size: int = 1, walltime: int = 60, kill_wait: float = 30) -> tuple[subprocess.Popen, list[str]]:
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    kit = subprocess.Popen([sys.executable, "-c", RUNNER, str(script), str(tmp_path / "logs"), str(size), str(walltime),
                            str(kill_wait)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           start_new_session=True)
    assert kit.stdout is not None
    return kit, json.loads(kit.stdout.readline())


def _wait_for(check, what: str, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"{what}: not after {timeout}s"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    return process_start(pid) is not None


def test_a_running_task_is_running_its_later_ones_pending_and_they_outlive_a_killed_kit_run(tmp_path):
    """What `kit status` and a second `kit run` ask of the local scheduler (poll, live_jobs) while a job
    runs; after `kill -9` of its kit run the task that runs goes on (running), the one it would have
    started next never will (failed), and once the task is gone it is failed too."""
    release, pid_file = tmp_path / "release", tmp_path / "pid"
    kit, ids = _start(tmp_path, f"""\
        echo $$ > {pid_file}
        while [ ! -e {release} ]; do sleep 0.05; done
    """, size=2)
    try:
        assert len(ids) == 2 and all(j.startswith(f"local-{kit.pid}-{process_start(kit.pid)}-") for j in ids)
        _wait_for(pid_file.exists, "the first task started")
        scheduler = _scheduler()
        states = scheduler.poll(ids)
        assert [states[j].state for j in ids] == [JobState.RUNNING, JobState.PENDING]
        assert states[ids[0]].name == NAME   # kit's job name, as Slurm and OAR report it
        live = scheduler.live_jobs()
        assert {j: live[j] for j in ids} == {ids[0]: LiveJob(NAME, JobState.RUNNING, 0),
                                            ids[1]: LiveJob(NAME, JobState.PENDING, 1)}

        kit.kill()
        kit.wait(10)
        states = scheduler.poll(ids)
        assert states[ids[0]].state == JobState.RUNNING   # in its own session, it runs on
        assert states[ids[1]].state == JobState.FAILED and f"its kit run (pid {kit.pid}) ended" in states[ids[1]].reason
        assert ids[1] not in scheduler.live_jobs() and scheduler.live_jobs()[ids[0]].state == JobState.RUNNING

        release.touch()
        shell = int(pid_file.read_text(encoding="utf-8"))
        _wait_for(lambda: not _alive(shell), "the task ended")
        _wait_for(lambda: scheduler.poll(ids[:1])[ids[0]].state == JobState.FAILED, "the task is no longer running")
        assert ids[0] not in scheduler.live_jobs()
    finally:
        release.touch()
        if kit.poll() is None:
            kit.kill()


def test_a_reused_pid_is_not_taken_for_the_kit_run_of_a_task(tmp_path):
    """A job id names its kit run by pid and start time: this process's pid with another start time is not it."""
    me = os.getpid()
    ids = [f"local-{me}-{process_start(me)}-0_1", f"local-{me}-{process_start(me) + 1}-0_1"]
    states = _scheduler().poll(ids)
    assert [states[j].state for j in ids] == [JobState.PENDING, JobState.FAILED]


@pytest.mark.slow   # two jobs run to their one-second walltime
@pytest.mark.parametrize("traps", [True, False], ids=["stops on SIGTERM", "ignores SIGTERM"])
def test_a_local_job_whose_kit_run_was_killed_still_stops_at_its_walltime(tmp_path, traps):
    """The walltime is the job's own (it runs under `timeout`): SIGTERM at it, SIGKILL KILL_WAIT later,
    with no kit left to send them."""
    marker, pid_file = tmp_path / "trapped", tmp_path / "pid"
    kit, _ = _start(tmp_path, f"""\
        trap '{"echo trapped > " + str(marker) + "; exit 143" if traps else ""}' TERM
        echo $$ > {pid_file}
        for i in $(seq 200); do sleep 0.1; done
    """, walltime=1, kill_wait=0.5)
    try:
        _wait_for(pid_file.exists, "the job started")
        kit.send_signal(signal.SIGKILL)
        kit.wait(10)
        shell = int(pid_file.read_text(encoding="utf-8"))
        _wait_for(lambda: not _alive(shell), "the job stopped at its walltime", timeout=10)   # (unstopped: 20 s)
        assert marker.exists() == traps
    finally:
        if kit.poll() is None:
            kit.kill()


def _project(root: Path, release: Path, pid_file: Path) -> None:
    """The demo benchmark, one run with its staged snapshot, and a local site whose worker (its `python`)
    holds its job until `release` exists."""
    from kit.demo.dataset import write_demo_benchmark
    from kit.weights.manifest import build_manifest, local_sizes, write_manifest

    rev = "0123456789abcdef0123456789abcdef01234567"
    write_demo_benchmark(root / "data")
    (root / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/model-a"\nrevision = "{rev}"\n'
                                      'backend = "transformers-5.17"\n', encoding="utf-8")
    snapshot = root / "hub" / "models--org--model-a" / "snapshots" / rev
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"\x02" + b"\x00" * 7 + b"{}")
    write_manifest(root / "hub", build_manifest(snapshot, "org/model-a", rev, local_sizes(snapshot)))
    worker = root / "worker"
    worker.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nwhile [ ! -e {release} ]; do sleep 0.05; done\n")
    worker.chmod(0o755)
    (root / "sites.toml").write_text(f'[site.local]\nscheduler = "local"\nruntime = "host"\npython = "{worker}"\n'
                                     'root = "jobs"\nresults = "results"\nweights = "hub"\nwalltime = "1h"\n',
                                     encoding="utf-8")


@pytest.mark.slow   # five kit commands around a job: 5 s
def test_kit_status_and_a_second_kit_run_see_a_local_job_while_it_runs_and_after_its_kit_run_is_killed(tmp_path):
    """The probe's case: `kit run --site local` recorded its job when it started, so `kit status --site
    local` says its pairs are running (not unclaimed) and `kit run --dry-run` plans none of them again;
    after `kill -9` of the first kit run, both still see the job run on."""
    release, pid_file = tmp_path / "release", tmp_path / "pid"
    _project(tmp_path, release, pid_file)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def kit(*args: str) -> dict:
        r = subprocess.run([sys.executable, "-m", "kit", *args, "--json"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode in (0, 1), r.stderr
        return json.loads(r.stdout)["data"]

    def seen_live(state: str) -> None:
        pairs = kit("status", "--site", "local")["pairs"]
        assert {p["state"] for p in pairs} == {state} and len(pairs) == 3, pairs
        plan = kit("run", "--site", "local", "--dry-run")
        assert plan["pending"] == 0 and len(plan["owned"]) == 3 and plan["jobs"] == [], plan

    first = subprocess.Popen([sys.executable, "-m", "kit", "run", "--site", "local"], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for(pid_file.exists, "the job started", timeout=60)
        seen_live("running")
        first.kill()
        first.wait(10)
        seen_live("running")
        release.touch()
        worker = int(pid_file.read_text(encoding="utf-8"))
        _wait_for(lambda: not _alive(worker), "the job ended")
        time.sleep(0.5)
        pairs = kit("status", "--site", "local")["pairs"]
        assert {p["state"] for p in pairs} == {"failed"}, pairs
        assert "without recording how it ended" in pairs[0]["reasons"][0], pairs
    finally:
        release.touch()
        if first.poll() is None:
            first.kill()
