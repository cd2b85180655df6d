"""Validate many checkpoints on every core the process may use: a fork pool for cold runs, so that a
release-size tree (thousands of files, each parsed and recomputed in pure Python) takes the time of
one core's share. Small batches, one usable core, or a platform without fork run in this process."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from kit.results.checkpoint import CheckpointState, validate_summary
from kit.results.keys import PairState

MIN_FILES = 200          # below this a pool costs more than it saves
MAX_WORKERS = 8

# (path, validate_checkpoint keyword arguments), set before the fork: children read it, nothing is pickled in
_JOBS: list[tuple[Path, dict[str, Any]]] = []
_KEEP_DATA = True
_COMPLIANCE = False


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not Linux
        return max(1, os.cpu_count() or 1)


def validate_many(jobs: list[tuple[Path, dict[str, Any]]], *, keep_data: bool = True,
                  compliance: bool = False) -> list[CheckpointState]:
    """validate_checkpoint(path, **kwargs) for each job, without predictions but with their item outcomes
    (unless `keep_data` is False: then without any section), in order; on a pool of forked workers when
    there are enough files and cores. With `compliance`, each complete or stale checkpoint also carries its
    MLLOG compliance findings (CheckpointState.compliance), checked in the same worker that read it."""
    import multiprocessing

    global _KEEP_DATA, _COMPLIANCE
    _KEEP_DATA, _COMPLIANCE = keep_data, compliance
    workers = min(usable_cores(), MAX_WORKERS, len(jobs) // (MIN_FILES // 2) or 1)
    if workers < 2 or len(jobs) < MIN_FILES or "fork" not in multiprocessing.get_all_start_methods():
        return [_validate(path, kwargs) for path, kwargs in jobs]
    # Jobs grouped by language: a worker then reads the benchmark data (ids, answers) of the languages
    # its chunks hold, in parallel with the others, instead of this process reading all of them first.
    order = sorted(range(len(jobs)), key=lambda i: _language(jobs[i][1]))
    global _JOBS
    _JOBS = [jobs[i] for i in order]
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            states = pool.map(_job, range(len(jobs)), chunksize=max(1, len(jobs) // (workers * 16)))
    finally:
        _JOBS = []
    out: list[CheckpointState] = [None] * len(jobs)   # type: ignore[list-item]   # each filled below
    for position, index in enumerate(order):
        out[index] = states[position]
    return out


def _language(kwargs: dict[str, Any]) -> str:
    language = kwargs.get("language") or getattr(kwargs.get("expect"), "language", None)
    return language if isinstance(language, str) else ""


def _job(index: int) -> CheckpointState:
    path, kwargs = _JOBS[index]
    return _validate(path, kwargs)


def _validate(path: Path, kwargs: dict[str, Any]) -> CheckpointState:
    state = validate_summary(path, **kwargs, outcomes=_KEEP_DATA)
    if _COMPLIANCE and state.state in (PairState.COMPLETE, PairState.STALE) and state.data is not None:
        state = replace(state, compliance=_compliance(path, state.data))
    return state if _KEEP_DATA else replace(state, data=None)   # less to send back from a worker


def _compliance(path: Path, data: dict[str, Any]) -> tuple[tuple[str, str, str, str], ...] | None:
    from kit.errors import MissingExtraError
    from kit.results.check import compliance_findings   # the checker's imports only where a report asks

    try:
        return compliance_findings(path, data)
    except MissingExtraError:   # the page says so itself, when it asks again
        return None
