"""Stopping the worker cleanly when the scheduler says so.

Slurm sends SIGTERM at the walltime and on `scancel` (then SIGKILL after KillWait); kit asks OAR
for SIGTERM before the walltime (`--checkpoint`) and on `kit cancel` (`oardel --signal`). Python's
default action for SIGTERM kills the process without running any cleanup; under
`stop_on_signals` the signal raises `Terminated` in the worker instead, so the pair in progress
logs an aborted run_stop, temporary files are removed, engines are closed, and `kit shard`
says which pairs are left and exits 128 + the signal number.

A signal that arrives while a module is being imported waits for the import to end: an exception
raised inside an import leaves the module half made (numpy half imported fails every later use, and
once aborted the process), so the pairs left could not be said. The import is polled on SIGALRM
every RETRY_S; a second stop signal does not wait."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# SIGHUP too (a closed terminal or ssh session, and what `kit run` passes on when its own is closed),
# unless the worker was started ignoring it (nohup): then it stays ignored
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
RETRY_S = 0.05
_IMPORT_MACHINERY = ("<frozen importlib._bootstrap", "<frozen importlib._bootstrap_external")


class Terminated(BaseException):
    """A stop signal arrived. A BaseException, so the per-pair `except Exception` lets it through."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"terminated by {self.name}")

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process the signal killed (SIGTERM: 143)."""
        return 128 + self.signum


@contextmanager
def stop_on_signals(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Within the block, the first of `signals` raises Terminated (once no import is in progress, see
    the module); later ones are ignored so that the cleanup the first one started (closing an engine,
    writing the log) is not cut short."""
    stopping = False
    pending: int | None = None

    def stop(signum: int) -> None:
        nonlocal stopping
        stopping = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise Terminated(signum)

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal pending
        if stopping:
            return
        if pending is None and importing(frame):
            pending = signum
            signal.setitimer(signal.ITIMER_REAL, RETRY_S, RETRY_S)
            return
        stop(pending or signum)

    def retry(signum: int, frame: FrameType | None) -> None:
        if pending is not None and not stopping and not importing(frame):
            stop(pending)

    # SIGHUP stays ignored when this process was started ignoring it (nohup: the user asked to outlive the
    # terminal); SIGTERM and SIGINT always stop it (a background shell's `cmd &` starts it ignoring SIGINT)
    old = {s: signal.signal(s, handler) for s in signals
           if s != signal.SIGHUP or signal.getsignal(s) is not signal.SIG_IGN}
    old[signal.SIGALRM] = signal.signal(signal.SIGALRM, retry)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, previous in old.items():
            signal.signal(s, previous)


def importing(frame: FrameType | None) -> bool:
    """Whether `frame` (where a signal interrupted the program) is inside an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_MACHINERY):
            return True
        frame = frame.f_back
    return False
