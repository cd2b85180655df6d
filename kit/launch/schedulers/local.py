"""The `local` scheduler: runs each array task of a job script here, one after the other.

For workstations, CI and `kit demo`. The job runs in a clean environment (like `env -i`)
holding only the allow-listed variables; its output goes to the console and to
`<root>/logs/<job id>.out`. Its walltime holds as a cluster's does, also once the `kit run` that started
it is gone: the job runs under coreutils' `timeout`, so at the limit its processes get SIGTERM (the
worker stops with its checkpoints whole), and SIGKILL KILL_WAIT seconds later if any still runs
(Slurm's KillWait default; as after scancel, a stop signal kit passes on is followed by it too). Example::

    [site.local]
    scheduler = "local"
    runtime = "host"
    results = "results"

A job id is `local-<pid>-<start>-<n>[_<task>]`: the `kit run` process that runs it (its pid and its
start time, /proc/PID/stat's field 22, so that a reused pid is never taken for it), its n-th submission
and the array task. This machine's processes are the scheduler's queue: a task runs while a session
leader of yours whose environment holds its id lives, and waits (pending) while its `kit run` lives.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kit.errors import ConfigError, SubmitError
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import JobState, JobStatus, LiveJob, Scheduler, Submission, register_scheduler


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_WAIT = 30   # seconds between the SIGTERM at the walltime and the SIGKILL
PREFIX = "local-"
# what a job's leader holds in its environment besides KIT_JOB_ID: which job it is, and its array's size
JOB_NAME, ARRAY_SIZE = "KIT_JOB_NAME", "KIT_ARRAY_SIZE"
_submissions = itertools.count()


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


def _stat(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields from the third (state) on; None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()   # after the command's name, which may hold ") "
    return None if not fields or fields[0] == b"Z" else fields


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat field 22); None when it is
    gone or a zombie."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def running_tasks() -> dict[str, dict[str, str]]:
    """{job id: the environment it was started with} of every local job task running on this machine:
    each a live session leader of yours whose environment holds a local job id. A SubmitError when this
    system has no /proc to ask."""
    if process_start(os.getpid()) is None:
        raise SubmitError("the local scheduler reads its jobs from /proc, which this system does not have",
                          fix="pass --resubmit to submit without asking")
    found: dict[str, dict[str, str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            fields = _stat(entry.name)
            if not fields or int(fields[3]) != int(entry.name):   # gone, or not a session leader
                continue
            raw = Path(entry.path, "environ").read_bytes()
        except (OSError, ValueError, IndexError):   # ended meanwhile, or not readable
            continue
        env = dict(item.decode("utf-8", "replace").partition("=")[::2] for item in raw.split(b"\0") if item)
        if env.get("KIT_JOB_ID", "").startswith(PREFIX):
            found[env["KIT_JOB_ID"]] = env
    return found


def runner_of(job_id: str) -> tuple[int, int] | None:
    """(pid, start time) of the `kit run` that runs a local job id; None for an id of another form."""
    parts = job_id[len(PREFIX):].partition("_")[0].split("-")
    if not job_id.startswith(PREFIX) or len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def runner_alive(job_id: str) -> bool:
    """Whether the `kit run` that runs this local job (and will start its later array tasks) still runs."""
    runner = runner_of(job_id)
    return runner is not None and process_start(runner[0]) == runner[1]


@register_scheduler("local")
class LocalScheduler(Scheduler):
    """Synchronous execution with bash; array index in KIT_ARRAY_INDEX (0-based)."""

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """`bash SCRIPT` (run once per array task with KIT_ARRAY_INDEX set) under `timeout`, which holds
        the walltime: SIGTERM at it, SIGKILL KILL_WAIT seconds later."""
        limit = ["timeout", "--signal=TERM", f"--kill-after={KILL_WAIT}s", "--preserve-status",
                 f"{request.walltime_s}s"] if request.walltime_s else []
        return [*limit, "bash", str(script)]

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str],
               started: Callable[[Submission], None] | None = None) -> Submission:
        """Run every array task now, one after the other; `started` is called with the submission before
        the first task starts and again as each ends (its exit code known), so that it is recorded while
        it runs."""
        argv = self.submit_argv(request, script, log_dir)
        if argv[0] == "timeout" and shutil.which("timeout") is None:
            raise ConfigError("the local scheduler needs coreutils' `timeout` to hold a job's walltime, and it "
                              "is not on PATH", fix="install coreutils")
        me = os.getpid()
        base = f"{PREFIX}{me}-{process_start(me) or 0}-{next(_submissions)}"
        ids = [f"{base}_{index}" for index in range(request.array_size)] if request.array_size > 1 else [base]
        codes: dict[str, int] = {}
        if started:
            started(Submission(self.site.name, list(ids), argv, script))
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        for index, job_id in enumerate(ids):
            task_env = {**env, "KIT_ARRAY_INDEX": str(index), "KIT_JOB_ID": job_id, JOB_NAME: request.name,
                        ARRAY_SIZE: str(request.array_size)}
            log = Path(log_dir) / f"{job_id}.out"
            begun = time.monotonic()
            with open(log, "wb") as out:
                # its own process group, so that a signal to kit reaches every process of the job; its output
                # goes to its log itself, so that a job whose kit was killed runs on, its log whole
                proc = subprocess.Popen(argv, env=task_env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=default_stop_signals)
            with forward_signals(proc) as received:
                codes[job_id] = _follow(log, proc, request.walltime_s, begun)
            if received:   # the job has stopped as the worker does on a signal (its checkpoints are whole):
                # recorded as it ended, and no further task started
                return Submission(self.site.name, ids[:index + 1], argv, script, exit_codes=codes,
                                  stopped_by=received[0])
            if started and index + 1 < len(ids):
                started(Submission(self.site.name, list(ids), argv, script, exit_codes=dict(codes)))
        return Submission(self.site.name, ids, argv, script, exit_codes=codes)

    def poll(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """Running while its task runs here, pending while the `kit run` that will start it runs; else ended
        with no exit status recorded (its `kit run` was stopped before it could record one)."""
        try:
            live = running_tasks()
        except SubmitError as exc:
            return {j: JobStatus(j, JobState.UNKNOWN, reason=exc.one_line(), unasked=True) for j in job_ids}
        out = {}
        for job in job_ids:
            if job in live:
                out[job] = JobStatus(job, JobState.RUNNING, name=live[job].get(JOB_NAME))
            elif runner_alive(job):
                out[job] = JobStatus(job, JobState.PENDING, reason="its kit run starts it when the task before "
                                     "it ends (local tasks run one after the other)")
            else:
                runner = runner_of(job)
                by = f" (pid {runner[0]})" if runner else ""
                out[job] = JobStatus(job, JobState.FAILED, reason=f"it is not running, and its kit run{by} ended "
                                     "without recording how it ended")
        return out

    def cancel_argv(self, job_ids: list[str]) -> list[str]:
        """Refused: a local job is stopped through the `kit run` that runs it (a ConfigError saying how)."""
        runners = sorted({str(r[0]) for j in job_ids if (r := runner_of(j))})
        raise ConfigError("the local scheduler cannot cancel jobs",
                          fix=f"stop the kit run that runs them (Ctrl-C in its terminal, or kill -TERM {' '.join(runners)}): "
                              "it passes the signal on to its job" if runners else "stop the kit run that runs them")

    def live_jobs(self) -> dict[str, LiveJob]:
        """The local jobs running here (with the later tasks of their arrays, pending while their `kit run`
        lives); a SubmitError without /proc."""
        out = {}
        for job, env in running_tasks().items():
            name, pos = env.get(JOB_NAME, ""), env.get("KIT_ARRAY_INDEX", "0")
            size = env.get(ARRAY_SIZE, "1")
            if not (pos.isdigit() and size.isdigit()):
                continue
            out[job] = LiveJob(name, JobState.RUNNING, int(pos))
            if runner_alive(job):
                base = job.partition("_")[0]
                out.update({f"{base}_{later}": LiveJob(name, JobState.PENDING, later)
                            for later in range(int(pos) + 1, int(size))})
        return out


def _follow(log: Path, proc: subprocess.Popen, walltime_s: int | float | None = None,
            begun: float | None = None) -> int:
    """Show the job's log on stderr as it grows, until the job ends; its exit status. A job still running
    at its walltime is stopped as a scheduler stops it (SIGTERM, then SIGKILL after KILL_WAIT): by the
    `timeout` it runs under, which this says when the time comes."""
    due = [] if not walltime_s else [((begun or time.monotonic()) + walltime_s, "SIGTERM, as a scheduler does"),
                                     ((begun or time.monotonic()) + walltime_s + KILL_WAIT, "SIGKILL")]
    with open(log, "rb") as follow:
        while True:
            code = proc.poll()
            chunk = follow.read()
            if chunk:
                sys.stderr.write(chunk.decode("utf-8", "replace"))
                sys.stderr.flush()
            # (`begun` is taken before the job starts, so its own limit never comes before this one's)
            while due and time.monotonic() >= due[0][0] and (code is None or len(due) == 2 or code == -signal.SIGKILL):
                sys.stderr.write(f"kit: the job reached its walltime ({walltime_s:g} s): sent {due.pop(0)[1]}\n")
                sys.stderr.flush()
            if code is not None:
                return code
            time.sleep(0.1)
