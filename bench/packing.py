"""Shard packing and `--walltime auto`, simulated on the seed's own timing table (lrb's sweep of
2026-09-27: per-language GPU seconds, median and max over 85 languages, by run; 3 to 8 minutes of
set-up per job). No anchor exists for this part, so the yardstick is pure compute: the GPU-hours of
the pairs alone.

The sweep is the one a reviewer reruns: every pair was measured once before (its stale checkpoint
is the history `--walltime auto` reads), and this time each pair takes its old time within +-20%.
Languages cost alike across models (one shared factor per language, scaled per run so that each
run's median and maximum match the table). Strategies, all on the same pairs and set-up draws:
- one job per pair (what LRB_LANGUAGES lists of one language amount to);
- kit's index shards at the site's walltime: --array N with the N a user would pick (total over
  walltime minus set-up), each shard every N-th pair;
- kit's cost-packed shards with the walltime sized by kit.costs (--walltime auto).
A job killed at its walltime loses its pair in flight, and its unfinished pairs go to a new job.
Makespan is on a pool of GPUs, jobs taken in submission order by the first free GPU.

    python -m bench.packing [--gpus 16]
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
from dataclasses import dataclass

from kit.costs import PairTime, fewest_shards, job_walltime, predict
from kit.plan import Pair

LANGUAGES = 85
# run, engine (pairs of one engine may share a job), median and max GPU seconds per language
SEED_TABLE = (
    ("LFM2.5-1.2B-Instruct@sglang", "vllm", 1, 11),
    ("LFM2.5-1.2B-Instruct+DSpark", "vllm", 1, 11),
    ("LFM2.5-VL-3B", "transformers", 3.5, 10),
    ("LFM2.5-VL-3B@sglang", "vllm", 3.5, 10),
    ("LFM2.5-VL-3B+DSpark", "vllm", 3.5, 10),
    ("LFM2.5-8B-A1B+DSpark", "vllm", 121, 214),
    ("LFM2.5-8B-A1B@sglang", "vllm", 176, 476),
    ("LFM2.5-2.6B+DSpark", "vllm", 210, 421),
    ("LFM2.5-2.6B@sglang", "vllm", 492, 606),
)
SETUP_S = (180, 480)          # per job: environment sync, weights, CUDA graphs (the seed: 3-8 min)
MODEL_LOAD_S = 90             # each further model a job loads
RERUN_DRIFT = 0.2             # this sweep's time of a pair vs the one recorded before


@dataclass(frozen=True)
class Job:
    """A job: its pairs in run order and its walltime."""

    pairs: tuple[Pair, ...]
    walltime_s: int


@dataclass(frozen=True)
class Outcome:
    """What a strategy cost."""

    strategy: str
    jobs: int
    gpu_hours: float
    makespan_h: float
    killed: int


def sweep_times(seed: int = 0) -> tuple[dict[Pair, float], dict[Pair, float], dict[str, str]]:
    """(recorded seconds, this sweep's seconds, engine of each run) for every pair of the table."""
    rng = random.Random(seed)
    factors = sorted(rng.lognormvariate(0, 0.6) for _ in range(LANGUAGES))
    factors = [f / statistics.median(factors) for f in factors]
    rng.shuffle(factors)
    top = max(factors)
    before, now, engine = {}, {}, {}
    for run, eng, median, most in SEED_TABLE:
        engine[run] = eng
        power = math.log(most / median) / math.log(top)   # the run's slowest language is its table max
        for i, factor in enumerate(factors):
            pair = Pair(run, f"l{i:02d}")
            before[pair] = median * factor ** power * rng.uniform(0.9, 1.1)
            now[pair] = before[pair] * rng.uniform(1 - RERUN_DRIFT, 1 + RERUN_DRIFT)
    return before, now, engine


def index_jobs(pairs: list[Pair], before: dict[Pair, float], walltime_s: int) -> list[Job]:
    """--array N at a fixed walltime, N as a user would pick it from the recorded total."""
    usable = walltime_s - SETUP_S[1]
    n = max(1, min(len(pairs), math.ceil(sum(before[p] for p in pairs) / usable)))
    ordered = sorted(pairs)
    return [Job(tuple(ordered[i::n]), walltime_s) for i in range(n)]


def packed_jobs(pairs: list[Pair], before: dict[Pair, float], cap_s: int) -> list[Job]:
    """--walltime auto: kit.costs on the recorded history."""
    history = [PairTime(p.run, p.language, before[p], MODEL_LOAD_S) for p in pairs]
    prediction = predict(pairs, history)
    loads = prediction.load_seconds
    _, shards = fewest_shards(prediction.seconds, cap_s, loads)
    walltime = job_walltime(shards, prediction.seconds, loads)
    return [Job(tuple(s), walltime) for s in shards if s]


def run_jobs(jobs: list[Job], now: dict[Pair, float], rng: random.Random, gpus: int) -> tuple[float, float, int, int]:
    """Play the jobs (and the reruns of killed ones): GPU seconds used, makespan, jobs, kills."""
    queue = list(jobs)
    free = [0.0] * gpus
    heapq.heapify(free)
    used, end, count, killed = 0.0, 0.0, 0, 0
    while queue:
        job = queue.pop(0)
        count += 1
        start = heapq.heappop(free)
        clock, loaded, left = rng.uniform(*SETUP_S), None, list(job.pairs)
        while left:
            pair = left[0]
            step = (MODEL_LOAD_S if loaded not in (None, pair.run) else 0.0) + now[pair]
            if clock + step > job.walltime_s:   # killed: the pair in flight is lost, the rest rerun
                killed += 1
                clock = job.walltime_s
                queue.append(Job(tuple(left), job.walltime_s))
                break
            clock += step
            loaded = pair.run
            left.pop(0)
        used += clock
        end = max(end, start + clock)
        heapq.heappush(free, start + clock)
    return used, end, count, killed


def simulate(walltime_s: int = 4 * 3600, gpus: int = 16, seed: int = 0) -> tuple[float, list[Outcome]]:
    """Pure compute GPU-hours and each strategy's outcome, per engine group as kit groups jobs."""
    before, now, engine = sweep_times(seed)
    groups: dict[str, list[Pair]] = {}
    for pair in sorted(now):
        groups.setdefault(engine[pair.run], []).append(pair)
    strategies = {
        "one job per pair": lambda pairs: [Job((p,), walltime_s) for p in pairs],
        f"kit index shards, walltime {walltime_s / 3600:g} h": lambda pairs: index_jobs(pairs, before, walltime_s),
        f"kit cost-packed, --walltime auto (cap {walltime_s / 3600:g} h)":
            lambda pairs: packed_jobs(pairs, before, walltime_s),
    }
    out = []
    for name, make in strategies.items():
        jobs = [job for pairs in groups.values() for job in make(pairs)]
        used, end, count, killed = run_jobs(jobs, now, random.Random(seed + 1), gpus)
        out.append(Outcome(name, count, used / 3600, end / 3600, killed))
    return sum(now.values()) / 3600, out


def table(walltimes: tuple[int, ...] = (4 * 3600, 5400), gpus: int = 16) -> str:
    """The Markdown table of every strategy at each walltime cap."""
    lines = ["| strategy | jobs | GPU-hours | vs pure compute | makespan on "
             f"{gpus} GPUs | jobs killed at walltime |", "| --- | --- | --- | --- | --- | --- |"]
    for walltime in walltimes:
        compute, outcomes = simulate(walltime, gpus)
        lines.append(f"| pure compute ({len(SEED_TABLE)} runs x {LANGUAGES} languages) | - | {compute:.1f} | 1.00 | - | - |")
        for o in outcomes:
            lines.append(f"| {o.strategy} | {o.jobs} | {o.gpu_hours:.1f} | {o.gpu_hours / compute:.3f} | "
                         f"{o.makespan_h:.2f} h | {o.killed} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the packing table."""
    parser = argparse.ArgumentParser(prog="python -m bench.packing", description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=16, help="GPUs in the pool the makespan is played on")
    args = parser.parse_args(argv)
    print(table(gpus=args.gpus))


if __name__ == "__main__":
    main()
