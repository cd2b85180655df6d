"""Stopping the worker cleanly when the scheduler says so.

Slurm sends SIGTERM at the walltime and on `scancel` (then SIGKILL after KillWait); kit asks OAR
for SIGTERM before the walltime (`--checkpoint`) and on `kit cancel` (`oardel --signal`). Python's
default action for SIGTERM kills the process without running any cleanup; under
`stop_on_signals` the signal raises `Terminated` in the worker instead, so the pair in progress
logs an aborted run_stop, temporary files are removed, engines are closed, and `kit shard`
says which pairs are left and exits 128 + the signal number."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
    """Within the block, the first of `signals` raises Terminated; later ones are ignored so that
    the cleanup the first one started (closing an engine, writing the log) is not cut short."""
    stopping = False

    def handler(signum: int, frame: object) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Terminated(signum)

    old = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, previous in old.items():
            signal.signal(s, previous)
