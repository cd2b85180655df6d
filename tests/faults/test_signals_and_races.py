"""The fault suite (issue 12, item 6): crash and signal windows. SIGTERM, from a plain `kill` and
from the real Slurm (scancel) and OAR (`kit cancel`) clusters, stops `kit shard` cleanly; a read-only
or full results folder is refused before any model loads, and a disk that fills mid-run fails pairs
in one line; concurrent `kit run`s keep every submission record; two workers on the same pairs
compute each pair once.

The workers are the real `kit shard` with a stub engine (tests/faults/stub_worker.py): no model, and
each pair can be held in flight until the test releases it. The cluster cases are marked integration
(real services, root on Debian; about 15 s for Slurm, 30 s for OAR)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from services import let_kit_run_this_python, start_service

from kit.demo.dataset import write_demo_benchmark
from kit.weights.manifest import build_manifest, local_sizes, write_manifest

REV = "0123456789abcdef0123456789abcdef01234567"
STUB = Path(__file__).with_name("stub_worker.py")
REPO = Path(__file__).resolve().parents[2]
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"
LANGS = ("de", "en", "fr")
ROOT_ON_DEBIAN = os.geteuid() == 0 and Path("/etc/debian_version").is_file() and shutil.which("apt-get") is not None


def make_project(root: Path) -> Path:
    """The demo benchmark (de, en, fr), a roster of one run (one batch per pair) and its staged snapshot."""
    write_demo_benchmark(root / "data")
    (root / "roster.toml").write_text(f'benchmark = "{root / "data"}"\n\n[[run]]\nmodel = "org/model-a"\n'
                                      f'revision = "{REV}"\nbackend = "transformers-5.17"\nbatch_size = 64\n')
    snapshot = root / "hub" / "models--org--model-a" / "snapshots" / REV
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"\x02" + b"\x00" * 7 + b"{}")   # no tensors
    write_manifest(root / "hub", build_manifest(snapshot, "org/model-a", REV, local_sizes(snapshot)))   # as staged
    return root


@pytest.fixture
def project(tmp_path) -> Path:
    make_project(tmp_path)
    (tmp_path / "stub").mkdir()
    return tmp_path


def shard_argv(project: Path, results: Path) -> list[str]:
    return [sys.executable, str(STUB), "shard", "--roster", str(project / "roster.toml"), "--results", str(results),
            "--cache-dir", str(project / "hub")]


def start_worker(project: Path, results: Path, stub: Path, wait_for: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "STUB_DIR": str(stub), "STUB_WAIT_FOR": str(wait_for or "")}
    return subprocess.Popen(shard_argv(project, results), cwd=project, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def worker(project: Path, results: Path, stub: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "STUB_DIR": str(stub)}
    return subprocess.run(shard_argv(project, results), cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)


def wait_for_file(path: Path, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the worker ended before {path.name}: {proc.communicate()}")
        assert time.monotonic() < end, f"no {path} after {timeout}s"
        time.sleep(0.05)


def pairs_evaluated(stub: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in stub.glob("pairs-*"))


def leftovers(results: Path) -> list[Path]:
    """Temporary files a clean stop must not leave (claim files are meant to stay)."""
    return sorted(p for p in results.rglob("*") if p.name.endswith(".tmp"))


def checkpoints(results: Path) -> list[str]:
    return sorted(p.parent.name for p in results.glob("*/org__model-a.json"))


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "Logging error" not in text, text[-3000:]


# ------------------------------------------------------------------ SIGTERM


def test_sigterm_stops_the_worker_cleanly_saying_which_pairs_are_left(project):
    results, stub = project / "results", project / "stub"
    proc = start_worker(project, results, stub, wait_for=project / "never")
    wait_for_file(stub / "started", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, out, err)
    no_traceback(out, err)
    assert ("terminated by SIGTERM: 3 pair(s) left: org/model-a [de], org/model-a [en], org/model-a [fr]"
            in err), err
    assert "0 written" in out and "3 not run (terminated by SIGTERM)" in out, out
    assert "  left    org/model-a [fr]" in out
    assert checkpoints(results) == [] and leftovers(results) == []
    # the pair in flight logged its end as aborted
    stops = [json.loads(line.split(" ", 1)[1]) for line in (results / "de" / "org__model-a.mllog").read_text().splitlines()
             if '"run_stop"' in line]
    assert [s["metadata"]["status"] for s in stops] == ["aborted"]
    # nothing torn: a rerun finds every pair to do, and its claim left by the stopped worker blocks nothing
    again = worker(project, results, stub)
    assert again.returncode == 0, again.stderr
    assert "3 written" in again.stdout and checkpoints(results) == list(LANGS)


def test_sigterm_as_json_reports_terminated_and_the_pairs_left(project):
    results, stub = project / "results", project / "stub"
    env = {**os.environ, "STUB_DIR": str(stub), "STUB_WAIT_FOR": str(project / "never")}
    proc = subprocess.Popen([*shard_argv(project, results), "--json"], cwd=project, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_file(stub / "started", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    data = json.loads(out)
    assert data["status"] == "failed" and data["data"]["terminated"] == "SIGTERM"
    assert [p["language"] for p in data["data"]["left"]] == list(LANGS)


SLOW_MODULE = """from pathlib import Path
import os, time
here = Path(os.environ["STUB_DIR"])
(here / "importing").touch()
while not (here / "go").exists():
    time.sleep(0.02)
(here / "imported").touch()
"""


def start_importing_worker(project: Path) -> tuple[subprocess.Popen, Path]:
    """A worker whose model load imports a module that waits, inside its import, for STUB_DIR/go."""
    results, stub = project / "results", project / "stub"
    (stub / "slow_engine_lib.py").write_text(SLOW_MODULE)
    # each pair then waits for a file that never comes: the stop lands in the first pair, not after it
    env = {**os.environ, "STUB_DIR": str(stub), "STUB_IMPORT": "slow_engine_lib", "STUB_WAIT_FOR": str(project / "never")}
    proc = subprocess.Popen(shard_argv(project, results), cwd=project, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_file(stub / "importing", proc)
    return proc, stub


def test_sigterm_during_an_import_waits_for_it_then_says_the_pairs_left(project):
    proc, stub = start_importing_worker(project)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert proc.poll() is None, "the signal cut the import short"
    (stub / "go").touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, out, err)
    no_traceback(out, err)
    assert (stub / "imported").exists(), "the module was left half imported"
    assert "terminated by SIGTERM: 3 pair(s) left" in err and "3 not run (terminated by SIGTERM)" in out, (out, err)


def test_a_second_signal_during_an_import_stops_at_once(project):
    proc, stub = start_importing_worker(project)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, out, err)
    no_traceback(out, err)
    assert not (stub / "imported").exists()
    assert "3 not run (terminated by SIGTERM)" in out, out


def test_a_claim_left_by_a_killed_worker_blocks_nothing(project):
    results, stub = project / "results", project / "stub"
    proc = start_worker(project, results, stub, wait_for=project / "never")
    wait_for_file(stub / "started", proc)
    proc.kill()
    proc.communicate(timeout=30)
    assert (results / "de" / ".org__model-a.claim").exists()
    again = worker(project, results, stub)
    assert again.returncode == 0 and "3 written" in again.stdout, again.stdout + again.stderr


def test_a_folder_at_a_checkpoint_path_fails_that_pair_before_its_log_claims_it(project):
    results, stub = project / "results", project / "stub"
    (results / "de" / "org__model-a.json").mkdir(parents=True)
    r = subprocess.run([*shard_argv(project, results), "--force"], cwd=project, env={**os.environ, "STUB_DIR": str(stub)},
                       capture_output=True, text=True, timeout=120)   # --force: replace what is there
    assert r.returncode != 0 and "holds a folder (or a device), not a file" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr and not (results / "de" / "org__model-a.mllog").exists()
    assert (results / "en" / "org__model-a.json").is_file() and (results / "fr" / "org__model-a.json").is_file()


# ------------------------------------------------------------------ two workers on the same pairs


def test_two_workers_on_the_same_pairs_compute_each_pair_once(project):
    results, first_stub, second_stub = project / "results", project / "stub", project / "stub2"
    second_stub.mkdir()
    first = start_worker(project, results, first_stub, wait_for=project / "go")
    wait_for_file(first_stub / "started", first)            # the first worker is on de
    second = worker(project, results, second_stub)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "2 written" in second.stdout and "1 left to another kit process" in second.stdout, second.stdout
    assert "skipped org/model-a [de]: another kit process is running it" in second.stdout
    (project / "go").touch()
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    assert "1 written" in out and "2 left to another kit process" in out, out
    assert "skipped org/model-a [en]: another kit process wrote its checkpoint after this one planned it" in out
    assert pairs_evaluated(first_stub) == 1 and pairs_evaluated(second_stub) == 2
    assert checkpoints(results) == list(LANGS)
    status = subprocess.run([sys.executable, "-m", "kit", "status", str(results), "--roster", "roster.toml", "--json"],
                            cwd=project, capture_output=True, text=True, timeout=60)
    assert json.loads(status.stdout)["data"]["counts"] == {"complete": 3}, status.stdout + status.stderr


# ------------------------------------------------------------------ read-only and full results folders


def mount_tmpfs(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


@pytest.fixture
def mounts():
    """Mount points to unmount after the test."""
    made: list[Path] = []
    yield made
    for path in reversed(made):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def read_only_results(project, mounts) -> Path:
    """A results folder this process cannot write: a read-only mount as root (root ignores modes), mode 555 otherwise."""
    results = project / "results"
    if os.geteuid() == 0:
        mount_tmpfs(results, "ro,size=1m")
        mounts.append(results)
    else:
        results.mkdir()
        results.chmod(0o555)
    yield results
    if os.geteuid() != 0:
        results.chmod(0o755)


def test_a_read_only_results_folder_is_one_line_before_any_model_loads(project, read_only_results):
    r = worker(project, read_only_results, project / "stub")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    no_traceback(r.stdout, r.stderr)
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("kit: error:")]
    assert f"cannot write to the results folder {read_only_results}" in line
    assert ("Read-only file system" in line or "Permission denied" in line) and "fix:" in line, line
    assert not (project / "stub" / "loaded").exists()


def test_an_output_on_a_read_only_folder_is_refused_before_any_checkpoint_is_read(project, read_only_results):
    """Every command that writes an output (report, release, export, collect, reproduce) asks
    kit.outputs.check_output first: a place it cannot write is one line before the work, not after it."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
    from conftest_checkpoints import make_checkpoint, predictions_of

    make_checkpoint(project / "tree", "org/m", "en", predictions_of([("yes", "yes"), ("no", "yes")]))
    r = subprocess.run([sys.executable, "-m", "kit", "report", "tree", "-o", str(read_only_results / "report")],
                       cwd=project, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    no_traceback(r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert "the report cannot be written" in line and "fix:" in line, line
    assert "Read-only file system" in line or "Permission denied" in line, line


def test_a_file_where_the_system_descriptions_go_is_one_line_before_any_model_loads(project):
    results = project / "results"
    results.mkdir(exist_ok=True)
    (results / "systems").write_text("my notes")
    r = worker(project, results, project / "stub")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    no_traceback(r.stdout, r.stderr)
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("kit: error:")]
    assert f"{results / 'systems'} is a file, not a folder" in line, line
    assert not (project / "stub" / "loaded").exists() and (results / "systems").read_text() == "my notes"


@pytest.fixture
def small_disk(project, mounts) -> Path:
    """A 256 KiB file system as the results folder (root only: it is a tmpfs mount)."""
    if os.geteuid() != 0:
        pytest.skip("a small file system needs a tmpfs mount: root only")
    results = project / "results"
    mount_tmpfs(results, "size=256k")
    mounts.append(results)
    return results


def fill(folder: Path) -> None:
    """Write zeros until the file system is full."""
    with open(folder / "filler", "wb", buffering=0) as fh:
        try:
            while fh.write(b"\0" * 4096):
                pass
        except OSError:
            pass


def test_a_full_results_folder_is_one_line_before_any_model_loads(project, small_disk):
    fill(small_disk)
    r = worker(project, small_disk, project / "stub")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    no_traceback(r.stdout, r.stderr)
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("kit: error:")]
    assert "No space left on device" in line and "free space" in line, line
    assert not (project / "stub" / "loaded").exists()


def test_a_disk_that_fills_mid_run_fails_the_pairs_in_one_line_each(project, small_disk):
    stub = project / "stub"
    proc = start_worker(project, small_disk, stub, wait_for=project / "go")
    wait_for_file(stub / "started", proc)
    fill(small_disk)
    (project / "go").touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, (out, err)
    no_traceback(out, err)
    assert "0 written" in out and "3 failed" in out, out
    failed = [line for line in out.splitlines() if line.startswith("  failed  ")]
    assert len(failed) == 3 and all("No space left on device" in line for line in failed), failed
    # the pairs after the one in flight fail at once, before their model time is spent
    assert pairs_evaluated(stub) == 1
    assert all(f"cannot write to the results folder {small_disk}/" in line for line in failed[1:]), failed
    assert checkpoints(small_disk) == [] and leftovers(small_disk) == []


# ------------------------------------------------------------------ concurrent `kit run` records


def _record_many(state_dir: str, worker_no: int, count: int, barrier) -> None:
    from kit.launch.tracking import SubmissionRecord, append_record

    barrier.wait()
    for i in range(count):
        job = f"{worker_no}-{i}"
        append_record(Path(state_dir), SubmissionRecord(
            site="ci", scheduler="slurm", job_ids=[job], slots=[0], shard_count=1, pairs=[["org/m", job]],
            plan_file="plan.json", script="job.sh", command=["sbatch", "job.sh"]))


def test_concurrent_runs_keep_every_submission_record(tmp_path):
    from kit.launch.tracking import latest_jobs, load_records
    from kit.plan import Pair

    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_record_many, args=(str(tmp_path), n, 25, barrier)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    records = load_records(tmp_path, "ci")
    assert len(records) == 100
    wanted = [Pair("org/m", f"{n}-{i}") for n in range(4) for i in range(25)]
    owners = latest_jobs(records, wanted)
    assert {p: job for p, (job, _) in owners.items()} == {p: p.language for p in wanted}   # no pair unclaimed


# ------------------------------------------------------------------ the real clusters


def cluster_workspace(owner: str | None) -> Path:
    """A project under /tmp (traversable by every user), with a `python` wrapper that runs the stub
    worker: the job script execs it, and it execs python, so the job's signal reaches the worker."""
    root = Path(tempfile.mkdtemp(prefix="kit-faults-", dir="/tmp"))
    root.chmod(0o755)
    make_project(root)
    (root / "stub").mkdir()
    wrapper = root / "stub-python"
    path = f" PYTHONPATH={os.environ['PYTHONPATH']}" if os.environ.get("PYTHONPATH") else ""   # a checkout under test
    wrapper.write_text(f'#!/bin/sh\nexport STUB_DIR={root}/stub STUB_WAIT_FOR={root}/never{path}\n'
                       f'exec {sys.executable} {STUB} "$@"\n')
    wrapper.chmod(0o755)
    if owner:
        for p in [root, *root.rglob("*")]:
            shutil.chown(p, owner, owner)
        let_kit_run_this_python()
    return root


def site_toml(root: Path, scheduler: str, extra: str) -> str:
    return (f'[site.ci-term]\nscheduler = "{scheduler}"\nruntime = "host"\npython = "{root}/stub-python"\n'
            f'root = "{root}/jobs"\nresults = "{root}/results"\nweights = "{root}/hub"\nwalltime = "10m"\n{extra}')


def wait_until(check, what: str, timeout: float = 120):
    end = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < end, f"{what}: not after {timeout}s"
        time.sleep(0.3)
    return got


def second_run_submits_nothing(root: Path, run, job: str) -> None:
    """`run()` (a kit run --json of the same pairs) while `job` runs, with this machine's submission
    records set aside: every pair is owned by the live job, found at the scheduler; nothing is submitted."""
    records = root / ".kit"
    records.rename(root / ".kit-aside")
    try:
        r = run()
        assert r.returncode == 0, r.stdout + r.stderr
        data = json.loads(r.stdout)["data"]
        assert data["submitted"] == [] and data["pending"] == 0, data
        assert {o["job"] for o in data["owned"]} == {f"ci-term:{job}"} and len(data["owned"]) == 3, data["owned"]
    finally:
        (root / ".kit-aside").rename(records)


def job_log_says_terminated(text: str) -> None:
    no_traceback(text)
    assert "terminated by SIGTERM: 3 pair(s) left: org/model-a [de], org/model-a [en], org/model-a [fr]" in text, text
    assert "3 not run (terminated by SIGTERM)" in text, text


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not ROOT_ON_DEBIAN, reason="needs root on Debian: scripts/dev/slurm.sh installs Slurm")
def test_kit_cancel_of_a_running_slurm_job_stops_its_worker_cleanly():
    t0 = time.monotonic()
    start_service("slurm")
    root = cluster_workspace(None)
    try:
        (root / "sites.toml").write_text(site_toml(root, "slurm", 'partition = "debug"\ngpus_per_node = 0\n'))
        env = {**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin") + ":" + SBIN}
        kit = [sys.executable, "-m", "kit"]
        common = ["--site", "ci-term", "--sites-file", str(root / "sites.toml"), "--roster", str(root / "roster.toml")]
        r = subprocess.run([*kit, "run", *common, "--json"], cwd=root, env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        (job,) = json.loads(r.stdout)["data"]["submitted"][0]["job_ids"]
        wait_for_file(root / "stub" / "started")
        # a second kit run, from a machine without this one's records, submits nothing: squeue says who owns it
        second_run_submits_nothing(root, lambda: subprocess.run([*kit, "run", *common, "--json"], cwd=root, env=env,
                                                                capture_output=True, text=True, timeout=120), job)
        r = subprocess.run([*kit, "cancel", *common], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and f"cancelled 1 job(s): scancel {job}" in r.stdout, r.stdout + r.stderr
        logs = root / "jobs" / "logs"
        text = wait_until(lambda: "not run (terminated" in (t := "".join(p.read_text() for p in logs.glob("*.out")))
                          and t, "the job log's summary")
        job_log_says_terminated(text)
        assert checkpoints(root / "results") == [] and leftovers(root / "results") == []
        def finished() -> str:
            out = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], env=env, capture_output=True,
                                 text=True).stdout.strip()
            return out if out not in ("", "RUNNING", "COMPLETING") else ""

        assert wait_until(finished, "the job's end") == "CANCELLED"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nSlurm: kit cancel of a running worker, clean stop in {time.monotonic() - t0:.1f}s")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not ROOT_ON_DEBIAN, reason="needs root on Debian: scripts/dev/oar.sh installs OAR")
def test_kit_cancel_of_a_running_oar_job_stops_its_worker_cleanly():
    t0 = time.monotonic()
    start_service("oar")
    root = cluster_workspace("kit")      # OAR refuses root: user kit submits and cancels
    try:
        (root / "sites.toml").write_text(site_toml(root, "oar", "policy_checks = []\n"))
        shutil.chown(root / "sites.toml", "kit", "kit")
        env = ["HOME=/home/kit", "USER=kit", "LOGNAME=kit", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
               *([f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else [])]
        common = ["--site", "ci-term", "--sites-file", str(root / "sites.toml"), "--roster", str(root / "roster.toml")]

        def as_kit(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(["runuser", "-u", "kit", "--", "env", "-i", *env, sys.executable, "-m", "kit", *args,
                                   *common], cwd=root, capture_output=True, text=True, timeout=180,
                                  stdin=subprocess.DEVNULL)

        r = as_kit("run", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        (job,) = json.loads(r.stdout)["data"]["submitted"][0]["job_ids"]
        wait_for_file(root / "stub" / "started")
        second_run_submits_nothing(root, lambda: as_kit("run", "--json"), job)   # oarstat -u says who owns it
        r = as_kit("cancel")
        assert r.returncode == 0 and f"cancelled 1 job(s): oardel {job}" in r.stdout, r.stdout + r.stderr
        text = (root / "jobs" / "logs" / f"OAR.{job}.stderr").read_text()
        text += (root / "jobs" / "logs" / f"OAR.{job}.stdout").read_text()
        job_log_says_terminated(text)
        assert checkpoints(root / "results") == [] and leftovers(root / "results") == []
        st = as_kit("status", "--json")
        pairs = json.loads(st.stdout)["data"]["pairs"]
        assert {p["state"] for p in pairs} == {"cancelled"}, pairs
        assert "SIGTERM" in pairs[0]["reasons"][0], pairs[0]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nOAR: kit cancel of a running worker, clean stop in {time.monotonic() - t0:.1f}s")


def test_a_job_run_here_that_a_signal_stopped_is_recorded_and_said(tmp_path, monkeypatch):
    """kit run --site local stopped by SIGINT: the submission is recorded with its exit status (kit status
    then knows the job), the --json envelope is printed, status failed, and kit exits 128 + N."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
    from inprocess import kit_in_process
    from kit.launch.schedulers.base import Submission
    from kit.launch.schedulers.local import LocalScheduler

    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/model-a"\n'
                                          f'revision = "{"0" * 40}"\nbackend = "transformers-5.17"\n')
    (tmp_path / "sites.toml").write_text('[site.local]\nscheduler = "local"\nruntime = "host"\n')

    def stopped(self, request, script, log_dir, env, started=None):
        return Submission(self.site.name, ["local-1"], ["bash", str(script)], script, exit_codes={"local-1": 130},
                          stopped_by=signal.SIGINT)

    monkeypatch.setattr(LocalScheduler, "submit", stopped)
    # (the weights' and images' pre-flight checks are their own tests: this one is about the submission)
    from kit.launch import images_check, weights_check

    monkeypatch.setattr(weights_check, "preflight_weights", lambda *args, **kwargs: weights_check.WeightsPreflight())
    monkeypatch.setattr(images_check, "preflight_images", lambda *args, **kwargs: images_check.ImagesPreflight())
    r = kit_in_process("run", "--site", "local", "--languages", "de", "--json", cwd=tmp_path)
    assert r.returncode == 130, r.stderr
    envelope = json.loads(r.stdout)
    assert envelope["status"] == "failed" and envelope["data"]["submitted"][0]["exit_codes"] == {"local-1": 130}
    records = [json.loads(line) for line in (tmp_path / ".kit" / "jobs" / "local.jsonl").read_text().splitlines()]
    assert records[-1]["job_ids"] == ["local-1"] and records[-1]["exit_codes"] == {"local-1": 130}


def test_the_worker_stops_on_sighup_unless_it_was_started_ignoring_it():
    """A closed terminal's SIGHUP stops a pair as SIGTERM does; under nohup (SIGHUP ignored) it stays ignored."""
    from kit.worker.signals import Terminated, stop_on_signals

    before = signal.getsignal(signal.SIGHUP)
    try:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        with pytest.raises(Terminated) as stop:
            with stop_on_signals():
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(1)
        assert stop.value.exit_code == 129
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with stop_on_signals():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)   # ignored: nothing raised
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        # SIGINT started ignored (a background `cmd &`, nohup) still stops it: only SIGHUP keeps nohup's wish
        before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            with pytest.raises(Terminated):
                with stop_on_signals():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(1)
        finally:
            signal.signal(signal.SIGINT, before_int)
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_pair_that_meets_a_full_disk_is_failed_with_the_fix_every_pair_gets():
    """The first pair to hit ENOSPC gets the one line with its fix (kit.errors.disk_error), not a bare
    OSError; the next pair still runs."""
    import errno

    from kit.worker.shard import ShardReport, run_each

    def run_pair(lang: str) -> None:
        if lang == "de":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/r/de/.x.mllog.tmp")

    report, said = ShardReport(), []
    run_each(report, "org/m", ["de", "en"], said.append, run_pair)
    assert [str(p) for p in report.written] == ["org/m [en]"]
    (pair, why), = report.failed
    assert why == f"/r/de/.x.mllog.tmp: {os.strerror(errno.ENOSPC)}; fix: free space, or write to a folder on a disk you can write"
