"""The OAR scheduler and the ssh frontend against the real services: OAR 2.5.9 on this machine
(scripts/dev/oar.sh) and the local sshd (scripts/dev/sshd.sh, alias `kit-frontend` = user kit).

Submissions go through `kit-frontend`, so they are made by user kit (OAR refuses root). One
module fixture submits every scenario at once (a 2-job array, an exit 3, a job deleted with
oardel, a walltime kill, a held job) and waits for them together: about 35 s on 2 cores.
Needs root on Debian (the scripts install packages and start daemons); skipped elsewhere."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from services import start_service

from kit.config.sites import Site
from kit.errors import SubmitError
from kit.launch.frontend import Frontend
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import JobState
from kit.launch.schedulers.oar import OarScheduler, parse_oarstat

pytestmark = [pytest.mark.integration, pytest.mark.slow]

if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
    pytest.skip("needs root on Debian: scripts/dev/oar.sh and sshd.sh install packages and start daemons",
                allow_module_level=True)


@pytest.fixture(scope="module")
def frontend() -> Frontend:
    start_service("oar")
    start_service("sshd")
    return Frontend("kit-frontend", timeout_s=60)


@pytest.fixture(scope="module")
def folder(frontend):
    """A folder user kit owns (job scripts and logs)."""
    path = Path(tempfile.mkdtemp(prefix="kit-oar-it-", dir="/tmp"))
    shutil.chown(path, "kit", "kit")
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def site(**kw) -> Site:
    return Site.model_validate({"name": "ci-it", "scheduler": "oar", "runtime": "host", "python": "python3",
                                "frontend": "kit-frontend",
                                "root": "/tmp", "results": "/tmp", **kw})


def submit(frontend: Frontend, folder: Path, name: str, body: str, **req) -> list[str]:
    script = folder / "jobs" / f"{name}.sh"
    frontend.write_text(script, f"#!/bin/bash\n{body}\n", mode=0o755)
    request = JobRequest(**{"name": name, "gpus": 1, "walltime_s": 300, **req})
    sched = OarScheduler(site(), frontend)
    return sched.submit(request, script, str(folder / "logs"), {"PATH": "/usr/bin:/bin"}).job_ids


def wait_finished(frontend: Frontend, ids: list[str], timeout: float = 120) -> dict[str, dict]:
    end = time.monotonic() + timeout
    while True:
        res = frontend.run(["oarstat", "-f", "-J", *[a for j in ids for a in ("-j", j)]])
        records = parse_oarstat(res.stdout)
        if all(records.get(j, {}).get("state") in ("Terminated", "Error") for j in ids):
            return records
        if time.monotonic() > end:
            pytest.fail(f"jobs not finished after {timeout}s: { {j: r.get('state') for j, r in records.items()} }")
        time.sleep(1)


@pytest.fixture(scope="module")
def scenarios(frontend, folder):
    """Every scenario submitted at once, then polled to the end; returns ids and kit's view of them."""
    t0 = time.monotonic()
    ids = {
        "array": submit(frontend, folder, "arr", 'echo "index=$OAR_ARRAY_INDEX"', array_size=2),
        "exit3": submit(frontend, folder, "exit3", "exit 3"),
        "deleted": submit(frontend, folder, "deleted", "sleep 300"),
        "walltime": submit(frontend, folder, "walltime", "sleep 300", walltime_s=10),
        # the request kit makes for a torch image (CUDA 13: compute capability 7.5 and newer) on Grid'5000's
        # default filter: this OAR's resources say gpu_compute_capability '8.6', as an A40 node would
        "torch": submit(frontend, folder, "torch", "true", gpu_filter=_narrowed("7.5;8.0;8.6;9.0;10.0;12.0")),
    }
    # a job that waits for another (oarsub -a) stays Waiting; oarhold then puts it in Hold
    res = frontend.run(["oarsub", "-l", "core=1,walltime=0:05", "-a", ids["deleted"][0], "-d", str(folder),
                        "-O", f"{folder}/logs/OAR.%jobid%.stdout", "-E", f"{folder}/logs/OAR.%jobid%.stderr", "true"],
                       check=True)
    held = [line.split("=")[1] for line in res.stdout.splitlines() if line.startswith("OAR_JOB_ID=")]
    frontend.run(["oarhold", held[0]], check=True)
    # oarhold only queues a hold event; OAR's server applies it on its next pass (seconds on a loaded machine)
    sched = OarScheduler(site(), frontend)
    hold_by = time.monotonic() + 60
    held_status = sched.poll(held)[held[0]]
    while "Hold" not in (held_status.reason or "") and time.monotonic() < hold_by:
        time.sleep(0.5)
        held_status = sched.poll(held)[held[0]]
    end = time.monotonic() + 60
    while sched.poll(ids["deleted"])[ids["deleted"][0]].state == JobState.PENDING and time.monotonic() < end:
        time.sleep(0.5)
    # a plain oardel (OAR's SIGKILL); kit's cancel, which sends SIGTERM first, is tests/faults/test_signals_and_races.py
    frontend.run(["oardel", *ids["deleted"], *held], check=True)
    every = [j for group in ids.values() for j in group]
    records = wait_finished(frontend, every + held)
    statuses = sched.poll(every)
    print(f"\nOAR scenarios: {len(every) + 1} jobs submitted and finished in {time.monotonic() - t0:.1f}s")
    return ids, statuses, records, held_status


def test_array_jobs_come_back_in_index_order_and_complete(scenarios, folder):
    ids, statuses, records, _ = scenarios
    assert [records[j]["array_index"] for j in ids["array"]] == [1, 2]
    assert all(statuses[j].state == JobState.COMPLETED for j in ids["array"])
    assert (folder / "logs" / f"OAR.{ids['array'][1]}.stdout").read_text().strip() == "index=2"
    assert records[ids["array"][0]]["types"] == ["night"]
    assert "gpu_mem>=23040" in records[ids["array"][0]]["properties"]


def test_a_non_zero_exit_ends_terminated_and_kit_reads_exit_3_from_the_wait_status(scenarios):
    ids, statuses, records, _ = scenarios
    job = ids["exit3"][0]
    assert records[job]["state"] == "Terminated" and records[job]["exit_code"] == 768
    assert (statuses[job].state, statuses[job].exit_code) == (JobState.FAILED, 3)


def test_oardel_ends_in_error_and_kit_says_cancelled_deleted(scenarios):
    """A user's plain oardel is a cancel, as Slurm's scancel reads (not a failure of the job's own)."""
    ids, statuses, records, _ = scenarios
    job = ids["deleted"][0]
    assert records[job]["state"] == "Error"
    assert statuses[job].state == JobState.CANCELLED and "oardel" in statuses[job].reason


def test_a_walltime_kill_ends_in_error_and_kit_says_timeout(scenarios):
    ids, statuses, records, _ = scenarios
    job = ids["walltime"][0]
    assert records[job]["state"] == "Error"
    assert statuses[job].state == JobState.TIMEOUT


def test_a_held_job_is_pending_with_its_oar_state(scenarios):
    held = scenarios[3]
    assert held.state == JobState.PENDING and "Hold" in held.reason


def test_a_filter_no_resource_satisfies_is_refused_at_once_with_the_fix(frontend, folder):
    t0 = time.monotonic()
    script = folder / "jobs" / "never.sh"
    frontend.write_text(script, "#!/bin/bash\ntrue\n", mode=0o755)
    with pytest.raises(SubmitError) as err:
        OarScheduler(site(gpu_filter="gpu_mem>=999999"), frontend).submit(
            JobRequest("never", 1, 300), script, str(folder / "logs"), {"PATH": "/usr/bin:/bin"})
    assert "not enough resources" in err.value.one_line() and "gpu_filter" in err.value.one_line()
    assert time.monotonic() - t0 < 20


def _narrowed(torch_archs: str | None = None, cmake_archs: str | None = None) -> str:
    """The OAR filter kit asks for a job whose image carries this GPU code, on the site's default filter."""
    from kit.gpus import parse_cmake_archs, parse_torch_archs
    from kit.launch.gpu_arch import fit_image_gpus

    archs = parse_torch_archs(torch_archs) if torch_archs else parse_cmake_archs(cmake_archs)
    fit = fit_image_gpus(site(gpus_per_node=2), "transformers-5.17", archs, 1)
    assert fit.gpu_filter and fit.gpu_filter.startswith(site().gpu_filter + " AND ")
    return fit.gpu_filter


def test_the_compute_capability_term_kit_adds_is_oar_s_grammar_and_selects_the_gpus_that_run_the_image(scenarios):
    ids, statuses, records, _ = scenarios
    job = ids["torch"][0]
    assert "gpu_compute_capability>='7.5'" in records[job]["properties"]
    assert statuses[job].state == JobState.COMPLETED, records[job]


def test_an_image_these_gpus_cannot_run_is_refused_by_oar_at_once_with_kit_s_fix(frontend, folder):
    script = folder / "jobs" / "hopper.sh"
    frontend.write_text(script, "#!/bin/bash\ntrue\n", mode=0o755)
    hopper = _narrowed(cmake_archs="90-real")            # SASS for 9.0 only: no 8.6 GPU runs it
    assert hopper.endswith("gpu_compute_capability IN ('9.0')")
    with pytest.raises(SubmitError) as err:
        OarScheduler(site(), frontend).submit(JobRequest("hopper", 1, 300, gpu_filter=hopper), script,
                                             str(folder / "logs"), {"PATH": "/usr/bin:/bin"})
    assert "not enough resources" in err.value.one_line() and "compute capability the job's image runs on" in \
        err.value.fix


def test_oarstat_J_with_no_current_job_prints_nothing_and_kit_reads_no_job(frontend):
    res = frontend.run(["oarstat", "-J", "-u", "nobody"])
    assert res.returncode == 0 and res.stdout.strip() == ""
    assert parse_oarstat(res.stdout) == {}


@pytest.fixture
def control_dir():
    """A short folder for ControlMaster sockets (a unix socket path holds at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="kcm", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_ssh_frontend_reuses_one_connection_and_writes_files_literally(folder, control_dir):
    fe = Frontend("kit-frontend", control_dir=control_dir)
    target = folder / "we ird $(touch PWNED)" / "f 'x'.txt"
    fe.write_text(target, "a $(b) `c`\n")
    assert target.read_text() == "a $(b) `c`\n" and target.owner() == "kit"
    assert not list(folder.rglob("PWNED"))
    assert [p for p in control_dir.glob("kit-*") if p.is_socket()], "no ControlMaster socket: every command reconnects"
    assert fe.run(["whoami"]).stdout.strip() == "kit"


def test_an_unreachable_frontend_is_one_clear_error(control_dir):
    fe = Frontend("kit-no-such-host.invalid", control_dir=control_dir)
    with pytest.raises(SubmitError) as err:
        OarScheduler(site(frontend="kit-no-such-host.invalid"), fe).poll(["1"])
    assert "cannot reach frontend 'kit-no-such-host.invalid'" in err.value.one_line()
    assert "ssh kit-no-such-host.invalid true" in err.value.one_line()


def test_a_frontend_command_that_hangs_times_out(control_dir):
    fe = Frontend("kit-frontend", timeout_s=2, control_dir=control_dir)
    with pytest.raises(SubmitError) as err:
        fe.run(["sleep", "30"])
    assert "did not answer within 2s" in err.value.one_line()
