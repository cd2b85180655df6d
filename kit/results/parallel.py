"""Work on every core the process may use: a fork pool (fork_map) for cold validation, so that a
release-size tree (thousands of files, each parsed and recomputed in pure Python) takes the time of
one core's share, and for a report's pages and intervals. Small batches, one usable core, or a
platform without fork run in this process."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from kit.results.checkpoint import CheckpointState, validate_summary
from kit.results.keys import PairState
from kit.results.shared_values import shared_json

MIN_FILES = 200          # below this a pool costs more than it saves
MAX_WORKERS = 8
T = TypeVar("T")
R = TypeVar("R")

# fork_map's function and items, set before the fork: children read them, nothing is pickled in
_TASK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None
_KEEP_DATA = True
# the function that finds a checkpoint's MLLOG compliance findings (kit.results.check.compliance_findings),
# when asked for: passed in, so that this module imports nothing of the checks that use it
_COMPLIANCE: "Callable[[Path, dict[str, Any]], tuple[tuple[str, str, str, str], ...]] | None" = None
# a validation's strings and nested objects, one object each (kit.results.shared_values): the pickle back
# then holds each once
_STRINGS: dict[Any, Any] = {}


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not Linux
        return max(1, os.cpu_count() or 1)


def validate_many(jobs: list[tuple[Path, dict[str, Any]]], *, keep_data: bool = True,
                  compliance: Callable[[Path, dict[str, Any]], tuple[tuple[str, str, str, str], ...]] | None = None,
                  then: Callable[[CheckpointState], CheckpointState] | None = None) -> list[CheckpointState]:
    """validate_checkpoint(path, **kwargs) for each job, without predictions but with their item outcomes
    (unless `keep_data` is False: then without any section), in order; on a pool of forked workers when
    there are enough files and cores. With `compliance` (kit.results.check.compliance_findings), each complete
    or stale checkpoint also carries its MLLOG compliance findings (CheckpointState.compliance; None when
    the checker is not installed), checked in the same worker that read it. `then`
    is applied here to each state as it comes back (see fork_map)."""
    global _KEEP_DATA, _COMPLIANCE, _STRINGS
    _KEEP_DATA, _COMPLIANCE, _STRINGS = keep_data, compliance, {}
    # Jobs grouped by language: a worker then reads the benchmark data (ids, answers) of the languages
    # its chunks hold, in parallel with the others, instead of this process reading all of them first.
    order = sorted(range(len(jobs)), key=lambda i: _language(jobs[i][1]))
    ordered = [jobs[i] for i in order]
    try:
        # a chunk never holds the end of one language and the start of the next: each language is then
        # read by one worker, not by each worker that took a part of it
        states = fork_map(_validate_job, ordered, then=then, group=lambda job: _language(job[1]))
    finally:
        _STRINGS = {}
    out: list[CheckpointState] = [None] * len(jobs)   # type: ignore[list-item]   # each filled below
    for position, index in enumerate(order):
        out[index] = states[position]
    return out


def fork_map(function: Callable[[T], R], items: Sequence[T], *, min_items: int | None = None,
             then: Callable[[R], R] | None = None, group: Callable[[T], Any] | None = None) -> list[R]:
    """[then(function(item)) for item in items], in order: `function` on a pool of forked workers when there
    are at least `min_items` items (MIN_FILES by default) and two usable cores (the function and the items
    are inherited by the fork, never pickled; each result is pickled back), else in this process; `then`
    (none: the result as it is) always here, on each result as it arrives, so that what it makes of the
    results (sharing their strings) never waits for all of them to be held at once. With `group`, a
    worker's chunk of consecutive items ends where group(item) changes (and at the chunk size)."""
    import multiprocessing

    after = then if then is not None else _as_is
    min_items = MIN_FILES if min_items is None else min_items
    workers = min(usable_cores(), MAX_WORKERS, len(items) // max(1, min_items // 2) or 1)
    if workers < 2 or len(items) < min_items or not fork_available():
        return [after(function(item)) for item in items]
    global _TASK
    _TASK = (function, items)
    size = max(1, len(items) // (workers * 16))
    chunks = chunk_bounds(items, size, group)
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=ignore_interrupts) as pool:
            return [after(result) for results in pool.imap(_run_chunk, chunks) for result in results]
    finally:
        _TASK = None


def chunk_bounds(items: Sequence[T], size: int, group: Callable[[T], Any] | None = None) -> list[tuple[int, int]]:
    """(start, end) of consecutive chunks of `items` covering them in order, each at most `size` long; with
    `group`, whole runs of items of the same group(item) share a chunk, and a run longer than `size` has
    chunks of its own."""
    count = len(items)
    if group is None:
        return [(at, min(at + size, count)) for at in range(0, count, size)]
    if not count:
        return []
    keys = [group(item) for item in items]
    runs = [at for at in range(1, count) if keys[at] != keys[at - 1]]
    bounds: list[tuple[int, int]] = []
    begun: int | None = None   # where the chunk being filled begins
    for first, end in zip([0, *runs], [*runs, count]):
        if end - first >= size:   # a long run: the chunk being filled ends before it
            if begun is not None:
                bounds.append((begun, first))
                begun = None
            bounds += [(at, min(at + size, end)) for at in range(first, end, size)]
        elif begun is not None and end - begun > size:
            bounds.append((begun, first))
            begun = first
        elif begun is None:
            begun = first
    if begun is not None:
        bounds.append((begun, count))
    return bounds


def ignore_interrupts() -> None:
    """In a forked helper process: leave Ctrl-C to the command's own process, which ends its helpers and
    says it was interrupted in one line (each helper would otherwise print a traceback of its own)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def fork_available() -> bool:
    """Whether this platform can fork a worker (Linux, macOS; not Windows)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _as_is(value: R) -> R:
    return value


def _run_chunk(bounds: tuple[int, int]) -> list[Any]:
    assert _TASK is not None   # set before the fork
    function, items = _TASK
    return [function(items[at]) for at in range(*bounds)]


def _language(kwargs: dict[str, Any]) -> str:
    language = kwargs.get("language") or getattr(kwargs.get("expect"), "language", None)
    return language if isinstance(language, str) else ""


def _validate_job(job: tuple[Path, dict[str, Any]]) -> CheckpointState:
    return _validate(*job)


def _validate(path: Path, kwargs: dict[str, Any]) -> CheckpointState:
    state = validate_summary(path, **kwargs, outcomes=_KEEP_DATA)
    if _COMPLIANCE is not None and state.state in (PairState.COMPLETE, PairState.STALE) and state.data is not None:
        state = replace(state, compliance=_compliance(_COMPLIANCE, path, state.data))
    if not _KEEP_DATA:
        return replace(state, data=None)   # less to send back from a worker
    return replace(state, data=shared_json(state.data, _STRINGS)) if state.data is not None else state


def _compliance(findings: Callable[[Path, dict[str, Any]], tuple[tuple[str, str, str, str], ...]], path: Path,
                data: dict[str, Any]) -> tuple[tuple[str, str, str, str], ...] | None:
    from kit.errors import MissingExtraError

    try:
        return findings(path, data)
    except MissingExtraError:   # the page says so itself, when it asks again
        return None
