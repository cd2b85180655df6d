"""A job script cleans its node-local caches up however the job ends (issue 13.3), and still
passes the scheduler's SIGTERM on to the worker and exits with the worker's own status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.launch.jobscript import JobScript, render_job_script

WORKER = r'''
import os, signal, sys, time
open(os.environ["STARTED"], "w").write(os.environ["HF_HOME"])
signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
time.sleep(float(sys.argv[1])) if sys.argv[1] != "fail" else sys.exit(3)
'''


def script(tmp_path: Path, how: str) -> Path:
    (tmp_path / "worker.py").write_text(WORKER)
    spec = JobScript(job_name="kit-t", worker_argv=(sys.executable, str(tmp_path / "worker.py"), how), shard_slots=(0,),
                     shard_count=1, cache_root=str(tmp_path / "scratch"), cleanup=("echo cleaned >> \"$CLEANED\"",))
    path = tmp_path / "job.sh"
    # the worker ignores the --shard argument kit adds; python reads only argv[1]
    path.write_text(render_job_script(spec))
    return path


def start(tmp_path: Path, how: str) -> subprocess.Popen:
    env = {**os.environ, "STARTED": str(tmp_path / "started"), "CLEANED": str(tmp_path / "cleaned"), "KIT_JOB_ID": "7"}
    return subprocess.Popen(["bash", str(script(tmp_path, how))], env=env, stderr=subprocess.PIPE, text=True)


def wait_started(tmp_path: Path) -> Path:
    for _ in range(200):
        if (tmp_path / "started").is_file() and (tmp_path / "started").read_text():
            return Path((tmp_path / "started").read_text())
        time.sleep(0.05)
    raise AssertionError("the worker never started")


@pytest.mark.parametrize("how,code", [("0", 0), ("fail", 3)])
def test_the_worker_exit_status_is_the_jobs_and_the_caches_are_removed(tmp_path, how, code):
    p = start(tmp_path, how)
    assert p.wait(timeout=30) == code, p.stderr.read()
    hf_home = wait_started(tmp_path)
    assert hf_home.parent.name == "kit-cache-7" and not hf_home.parent.exists()
    assert (tmp_path / "cleaned").read_text() == "cleaned\n"


def test_sigterm_reaches_the_worker_and_the_cleanup_still_runs(tmp_path):
    p = start(tmp_path, "60")
    hf_home = wait_started(tmp_path)
    assert hf_home.is_dir()
    p.send_signal(signal.SIGTERM)          # what Slurm and OAR send to the job's shell
    assert p.wait(timeout=30) == 143, p.stderr.read()
    assert not hf_home.parent.exists() and (tmp_path / "cleaned").is_file()
