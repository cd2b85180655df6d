"""Confidence intervals of F1 for lrb checkpoints: a percentile bootstrap over items, stratified by
language (each language's items are resampled on their own, as the benchmark fixes the languages).

Resampling items with replacement is drawing the five confusion cells from a multinomial with the
checkpoint's own cell frequencies; each draw's F1 is lrb's formula as kit.results.metrics evaluates it
(the same operations in the same order, over arrays: a test holds the two equal bit for bit), and a
run's F1 per draw is the macro mean over its languages, as the leaderboard's. Seeded per checkpoint
name, so the same inputs give the same intervals in any order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from kit.errors import MissingExtraError
from kit.results import keys
from kit.results.records import CheckpointRecord, groups

RESAMPLES = 1000
CONFIDENCE = 0.95
_CELLS = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)
METHOD = (f"{CONFIDENCE:.0%} percentile bootstrap over items, stratified by language, {RESAMPLES} resamples "
          "(seeded per checkpoint); a run's interval resamples every language and takes the macro mean")


@dataclass(frozen=True)
class F1Intervals:
    """F1 intervals: per checkpoint (by record name) and per run (of the macro mean), as (low, high)."""

    pairs: dict[str, tuple[float, float]]
    runs: dict[str, tuple[float, float]]


def f1_intervals(valid: Sequence[CheckpointRecord], resamples: int = RESAMPLES) -> F1Intervals:
    """The bootstrap intervals of F1 for these complete lrb checkpoints and their runs."""
    from importlib.util import find_spec

    from kit.results.parallel import fork_map

    if find_spec("numpy") is None:   # said here, before any worker starts
        _numpy()
    tail = (1 - CONFIDENCE) / 2 * 100

    def of_run(group: list[CheckpointRecord]) -> tuple[list[tuple[str, tuple[float, float]]], tuple[float, float]]:
        # numpy imported where the draws are made: with a pool, in its workers only, so that a report's
        # own process, which holds every record, does not also hold numpy (11 MB)
        np = _numpy()
        # languages in name order: the sum's rounding must not depend on the order files were read
        ordered = sorted(group, key=lambda r: r.name)
        draws = [_draws(np, r, resamples) for r in ordered]   # one run's draws in memory at a time
        return [(r.name, _bounds(np, d, tail)) for r, d in zip(ordered, draws)], _bounds(np, np.mean(draws, axis=0), tail)

    by_run = groups(list(valid), lambda r: r.run)
    pairs: dict[str, tuple[float, float]] = {}
    runs: dict[str, tuple[float, float]] = {}
    # runs on every core when there are results enough to pay for the pool (each run's draws are its own)
    run_groups = [group for _, group in by_run]
    pooled = len(valid) >= POOL_AT_RESULTS
    found = fork_map(of_run, run_groups, min_items=2) if pooled else [of_run(group) for group in run_groups]
    for (run, _), (of_pairs, bounds) in zip(by_run, found):
        pairs.update(of_pairs)
        runs[run] = bounds
    return F1Intervals(pairs, runs)


def _numpy():
    import os

    # the bootstrap draws random numbers and multiplies no matrices: OpenBLAS's threads, one per core
    # started with numpy in each worker, would only spin (a user's own setting is kept)
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        import numpy
    except ImportError as exc:
        raise MissingExtraError("kit report's confidence intervals", "numpy", "report") from exc
    finally:
        if before is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
    return numpy


POOL_AT_RESULTS = 500   # below this many results, one process (a pool costs more than it saves)


def _draws(np, record: CheckpointRecord, resamples: int):
    confusion = record.metrics.get(keys.CONFUSION) or {}
    counts = [int(confusion.get(c) or 0) for c in _CELLS]
    n = sum(counts)
    if n == 0:
        return np.zeros(resamples)
    seed = int.from_bytes(hashlib.sha256(record.name.encode("utf-8", "surrogatepass")).digest()[:8], "big")
    cells = np.random.default_rng(seed).multinomial(n, [c / n for c in counts], size=resamples)
    return f1_of_cells(np, cells)


def f1_of_cells(np, cells):
    """F1 of each row of (true_positive, false_positive, true_negative, false_negative, unparsed)
    counts, as kit.results.metrics.compute_metrics computes it (a zero denominator gives 0.0)."""
    tp, fp, fn = (cells[:, i].astype(float) for i in (0, 1, 3))

    def ratio(num, den):
        return np.divide(num, den, out=np.zeros_like(num), where=den != 0)

    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return ratio(2 * precision * recall, precision + recall)


def _bounds(np, values, tail: float) -> tuple[float, float]:
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
