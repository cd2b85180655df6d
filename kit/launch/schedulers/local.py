"""The `local` scheduler: runs each array task of a job script here, one after the other.

For workstations, CI and `kit demo`. The job runs in a clean environment (like `env -i`)
holding only the allow-listed variables; its output goes to the console and to
`<root>/logs/<job id>.out`. Its walltime holds as a cluster's does: at the limit the job's processes
get SIGTERM (the worker stops with its checkpoints whole), and SIGKILL KILL_WAIT seconds later if
any still runs (Slurm's KillWait default). Example::

    [site.local]
    scheduler = "local"
    runtime = "host"
    results = "results"
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kit.launch.request import JobRequest
from kit.launch.schedulers.base import Scheduler, Submission, register_scheduler


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_WAIT = 30   # seconds between the SIGTERM at the walltime and the SIGKILL


@contextmanager
def forward_signals(proc: subprocess.Popen) -> Iterator[list[int]]:
    """While the job runs, SIGTERM, SIGINT and SIGHUP sent to kit go to the job's process group
    instead of ending kit at once: the job stops as on a cluster's cancel, kit reads its last
    output and then exits 128 + the signal. Yields the signals received (none: the job ended)."""
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:   # the job has just ended
            pass

    try:
        previous = {sig: signal.signal(sig, forward) for sig in STOP_SIGNALS}
    except ValueError:   # not the main thread: signals stay as they are
        previous = {}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def default_stop_signals() -> None:
    """In the job's process, before bash starts: the stop signals back to their default actions and
    unblocked. A shell started with a signal ignored cannot trap it, and kit may itself have been
    started with SIGINT and SIGHUP ignored (`nohup`, `cmd &` in a non-interactive shell), which its
    children would inherit: the job's trap must see the signal kit passes on."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@register_scheduler("local")
class LocalScheduler(Scheduler):
    """Synchronous execution with bash; array index in KIT_ARRAY_INDEX (0-based)."""

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """`bash SCRIPT` (run once per array task with KIT_ARRAY_INDEX set)."""
        return ["bash", str(script)]

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str]) -> Submission:
        """Run every array task now; job ids are local-<time>-<pid>_<index>."""
        base = f"local-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}"
        ids, codes = [], {}
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        for index in range(request.array_size):
            job_id = f"{base}_{index}" if request.array_size > 1 else base
            task_env = {**env, "KIT_ARRAY_INDEX": str(index), "KIT_JOB_ID": job_id}
            log = Path(log_dir) / f"{job_id}.out"
            with open(log, "wb") as out:
                # its own process group, so that a signal to kit reaches every process of the job; its output
                # goes to its log itself, so that a job whose kit was killed runs on, its log whole
                proc = subprocess.Popen(
                    self.submit_argv(request, script, log_dir), env=task_env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=default_stop_signals,
                )
            with forward_signals(proc) as received:
                codes[job_id] = _follow(log, proc, request.walltime_s)
            ids.append(job_id)
            if received:   # the job has stopped as the worker does on a signal (its checkpoints are whole):
                # recorded as it ended, and no further task started
                return Submission(self.site.name, ids, self.submit_argv(request, script, log_dir), script,
                                  exit_codes=codes, stopped_by=received[0])
        return Submission(self.site.name, ids, self.submit_argv(request, script, log_dir), script, exit_codes=codes)


def _follow(log: Path, proc: subprocess.Popen, walltime_s: int | float | None = None) -> int:
    """Show the job's log on stderr as it grows, until the job ends; its exit status. A job still running
    at its walltime is stopped as a scheduler stops it (SIGTERM, then SIGKILL after KILL_WAIT)."""
    deadline = time.monotonic() + walltime_s if walltime_s else None
    terminated = False
    with open(log, "rb") as follow:
        while True:
            ended = proc.poll() is not None
            chunk = follow.read()
            if chunk:
                sys.stderr.write(chunk.decode("utf-8", "replace"))
                sys.stderr.flush()
            if ended:
                return proc.wait()
            if deadline is not None and time.monotonic() >= deadline:
                sent = "SIGKILL" if terminated else "SIGTERM, as a scheduler does"
                sys.stderr.write(f"kit: the job reached its walltime ({walltime_s:g} s): sent {sent}\n")
                sys.stderr.flush()
                try:
                    os.killpg(proc.pid, signal.SIGKILL if terminated else signal.SIGTERM)
                except ProcessLookupError:   # it has just ended
                    pass
                deadline = None if terminated else deadline + KILL_WAIT
                terminated = True
            time.sleep(0.1)
