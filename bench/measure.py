"""Time and peak memory of a child process: wall seconds from start to exit, and the child's peak
resident set (ru_maxrss from os.wait4), best of N runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    """One measured command: best wall time (s), the peak RSS of that run (MB), and its exit status."""

    seconds: float
    rss_mb: float
    returncode: int


def run_child(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Sample:
    """Run argv once (stdout and stderr discarded) and return its wall time, peak RSS and exit status."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here: keep Popen from waiting again
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"bench: {' '.join(argv)} exited {proc.returncode}:\n{err.decode(errors='replace')[-2000:]}\n")
    return Sample(seconds, usage.ru_maxrss / 1024, proc.returncode)


def best_of(argv: list[str], cwd: Path, repeat: int, env: dict[str, str] | None = None,
            before=lambda: None) -> Sample:
    """The fastest of `repeat` runs (calling `before()` ahead of each), with that run's peak RSS."""
    samples = []
    for _ in range(max(1, repeat)):
        before()
        samples.append(run_child(argv, cwd, env))
    return min(samples, key=lambda s: s.seconds)
