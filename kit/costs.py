"""Pure cost planning for `kit run --walltime auto`: each pending pair's predicted GPU seconds
from the times earlier checkpoints recorded, shards packed by predicted cost, and the walltime
that holds the longest shard.

Prediction, for a pair (run R, language L):
- L measured for R before (a stale or superseded checkpoint): that time;
- else R's median time x L's factor, where L's factor is the median, over the other runs that
  measured L, of their time for L over their own median (languages cost alike across models: a
  long script or a language the model rambles in is slow for most of them);
- else R's slowest measured time (nothing says L is cheap).
A run with no measured pair at all cannot be predicted: it needs a calibration job first.

Packing keeps a run's pairs together where it can (each run in a job loads its model once) and
takes the better of two rules: McNaughton's wrap-around (runs poured into the shards in turn, each
filled to its fair share, so a run is split only where a shard ends) and longest-processing-time
first over pieces of runs (a run longer than the fair share split evenly, then the pieces longest
first onto the least-loaded shard). For a single run the second is plain LPT, which keeps the
longest shard within 4/3 of the best possible."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kit.plan import Pair

# A job's walltime holds its shards' predicted time times a margin, 1.3 for a single pair, falling
# towards 1.15 with more pairs: the prediction is a median-based estimate, and a job killed at its
# walltime loses its pair in flight.
MARGIN_FLOOR = 1.15
MARGIN_ONE_PAIR_EXTRA = 0.15
# Job start before the first model loads (node set-up, a cold image cache, CUDA initialisation);
# each model's recorded load time counts on top. The seed measured 3-8 min of set-up per job, most
# of it the environment sync kit's images remove: 5 min is kept for the rest.
START_SECONDS = 300
# No job gets less: a short walltime is all start-up risk.
MIN_WALLTIME_SECONDS = 900
ROUND_TO_SECONDS = 300
# A recorded time longer than this is damage, not a measurement (1e308 s would overflow the packing's
# sums): it counts as unknown, as a missing one does.
MAX_MEASURED_SECONDS = 365 * 24 * 3600


@dataclass(frozen=True)
class PairTime:
    """What one earlier checkpoint measured: its pair's inference seconds and its model load."""

    run: str
    language: str
    seconds: float
    load_seconds: float = 0.0


@dataclass(frozen=True)
class Prediction:
    """Predicted seconds per pair, the pairs of runs that have no measurement, and each run's load time."""

    seconds: dict[Pair, float]
    unmeasured: list[Pair]
    load_seconds: dict[str, float]


def predict(pairs: Iterable[Pair], history: Iterable[PairTime]) -> Prediction:
    """Predicted GPU seconds of each pair from earlier measurements (see the module's rules)."""
    by_run: dict[str, dict[str, float]] = {}
    loads: dict[str, float] = {}
    for t in history:
        if _plausible(t.seconds):
            by_run.setdefault(t.run, {})[t.language] = t.seconds
            loads[t.run] = max(loads.get(t.run, 0.0), t.load_seconds if _plausible(t.load_seconds) else 0.0)
    medians = {run: statistics.median(times.values()) for run, times in by_run.items()}
    factors: dict[str, list[float]] = {}
    for run, times in by_run.items():
        for language, seconds in times.items():
            factors.setdefault(language, []).append(seconds / medians[run])
    seconds: dict[Pair, float] = {}
    unmeasured: list[Pair] = []
    for pair in sorted(set(pairs)):
        times = by_run.get(pair.run)
        if not times:
            unmeasured.append(pair)
        elif pair.language in times:
            seconds[pair] = times[pair.language]
        else:
            others = factors.get(pair.language)
            seconds[pair] = (medians[pair.run] * statistics.median(others)) if others else max(times.values())
    return Prediction(seconds, unmeasured, {run: loads.get(run, 0.0) for run in by_run})


def _plausible(seconds: float) -> bool:
    """Whether a recorded time is a measurement: positive, finite, at most MAX_MEASURED_SECONDS."""
    return 0 < seconds <= MAX_MEASURED_SECONDS   # NaN and infinities fail the comparisons


def pack(costs: Mapping[Pair, float], count: int, load_of: Mapping[str, float] | None = None) -> list[list[Pair]]:
    """`count` shards of the pairs, each sorted: the better (shorter longest shard, model loads from
    `load_of` included) of two packings, runs wrapped around the shards in turn and longest-first
    pieces of runs (see the module)."""
    if count < 1:
        raise ValueError("count must be at least 1")
    candidates = [_wrapped(costs, count, load_of or {}), _pieces(costs, count, load_of or {})]
    return min(candidates, key=lambda shards: max(shard_loads(shards, costs, load_of)))


def _by_run(costs: Mapping[Pair, float]) -> dict[str, list[Pair]]:
    """Each run's pairs, longest first."""
    out: dict[str, list[Pair]] = {}
    for pair in sorted(costs, key=lambda p: (-costs[p], p)):
        out.setdefault(pair.run, []).append(pair)
    return out


def _wrapped(costs: Mapping[Pair, float], count: int, load_of: Mapping[str, float]) -> list[list[Pair]]:
    """McNaughton's wrap-around: the runs, longest first, poured into the shards in turn, each shard
    filled to the fair share (one pair over when that ends nearer to it), so a run is split only
    where a shard ends."""
    runs = _by_run(costs)
    fair = (sum(costs.values()) + sum(load_of.get(run, 0.0) for run in runs)) / count
    shards: list[list[Pair]] = [[] for _ in range(count)]
    i, load = 0, 0.0
    for run in sorted(runs, key=lambda r: (-sum(costs[p] for p in runs[r]), r)):
        for pair in runs[run]:
            step = costs[pair] + (0.0 if any(p.run == run for p in shards[i]) else load_of.get(run, 0.0))
            if shards[i] and i < count - 1 and load + step - fair > fair - load:
                i, load = i + 1, 0.0
                step = costs[pair] + load_of.get(run, 0.0)
            shards[i].append(pair)
            load += step
    return [sorted(s) for s in shards]


def _pieces(costs: Mapping[Pair, float], count: int, load_of: Mapping[str, float]) -> list[list[Pair]]:
    """A run in one piece unless it is longer than a shard's fair share, then in that many even
    pieces; the pieces longest first onto the least-loaded shard (plain LPT for a single run)."""
    runs = _by_run(costs)
    fair = (sum(costs.values()) + sum(load_of.get(run, 0.0) for run in runs)) / count
    pieces: list[tuple[float, list[Pair]]] = []
    for run, pairs in sorted(runs.items()):
        parts = max(1, min(len(pairs), math.ceil(sum(costs[p] for p in pairs) / fair - 1e-9)))
        for piece in _longest_first(pairs, parts, costs):
            pieces.append((sum(costs[p] for p in piece) + load_of.get(run, 0.0), piece))
    shards: list[list[Pair]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for cost, piece in sorted(pieces, key=lambda x: (-x[0], x[1])):
        i = min(range(count), key=lambda k: (loads[k], k))
        loads[i] += cost
        shards[i].extend(piece)
    return [sorted(s) for s in shards]


def _longest_first(pairs: Sequence[Pair], parts: int, costs: Mapping[Pair, float]) -> list[list[Pair]]:
    """`parts` groups of the pairs, longest first onto the least-loaded group."""
    groups: list[list[Pair]] = [[] for _ in range(parts)]
    loads = [0.0] * parts
    for pair in sorted(pairs, key=lambda p: (-costs[p], p)):
        i = min(range(parts), key=lambda k: (loads[k], k))
        loads[i] += costs[pair]
        groups[i].append(pair)
    return [g for g in groups if g]


def shard_loads(shards: Sequence[Sequence[Pair]], costs: Mapping[Pair, float],
                load_of: Mapping[str, float] | None = None) -> list[float]:
    """Each shard's predicted seconds: its pairs and one model load per run in it."""
    load_of = load_of or {}
    return [sum(costs[p] for p in shard) + sum(load_of.get(run, 0.0) for run in {p.run for p in shard})
            for shard in shards]


def walltime_margin(pairs: int) -> float:
    """How much longer than predicted a shard of `pairs` pairs may run: 1.3 for one pair, towards
    1.15 for many (their errors partly cancel; a whole run on a slower GPU does not)."""
    return MARGIN_FLOOR + MARGIN_ONE_PAIR_EXTRA / math.sqrt(max(1, pairs))


def job_walltime(shards: Sequence[Sequence[Pair]], costs: Mapping[Pair, float],
                 load_of: Mapping[str, float] | None = None) -> int:
    """The walltime that holds every shard (predicted pairs x margin, model loads, job start),
    rounded up to 5 minutes."""
    need = max((START_SECONDS + sum(load_of.get(r, 0.0) for r in {p.run for p in shard} if load_of)
                + sum(costs[p] for p in shard) * walltime_margin(len(shard))) for shard in shards if shard)
    return max(MIN_WALLTIME_SECONDS, int(math.ceil(need / ROUND_TO_SECONDS) * ROUND_TO_SECONDS))


def fewest_shards(costs: Mapping[Pair, float], cap_s: int, load_of: Mapping[str, float] | None = None, *,
                  most: int | None = None) -> tuple[int, list[list[Pair]]]:
    """The fewest shards (at most `most`, and never more than pairs) whose packing fits a walltime of
    `cap_s`, and that packing; when none fits (one pair alone is longer), the most."""
    top = max(1, min(most or len(costs), len(costs)))
    total = sum(shard_loads([list(costs)], costs, load_of))
    budget = max(1.0, (cap_s - START_SECONDS) / MARGIN_FLOOR)
    count = max(1, min(top, math.ceil(total / budget)))
    while True:
        shards = pack(costs, count, load_of)
        if job_walltime(shards, costs, load_of) <= cap_s or count >= top:
            return count, shards
        count += 1
