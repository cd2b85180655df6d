"""Pure planning: pairs (run x language), deterministic shards and weighted site slots.

The same inputs give the same plan on every node, so shards computed independently are
disjoint and complete. Used alike by the launcher (`kit plan`, `kit run`) and the worker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

from kit.config.names import language_key
from kit import safejson
from kit.errors import ConfigError
from kit.files import read_regular_file

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.config.roster import Roster, Run

_SHARD = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*\Z")


@dataclass(frozen=True, order=True)
class Pair:
    """The unit of work: one run on one language; one checkpoint file."""

    run: str
    language: str

    def __str__(self) -> str:
        return f"{self.run} [{self.language}]"


# Pair's own order (run, then language) as a sort key compared in C: a sweep sorts tens of thousands
PAIR_ORDER = attrgetter("run", "language")


def plan_pairs(run_languages: Iterable[tuple[str, Iterable[str]]]) -> list[Pair]:
    """All (run, language) pairs, sorted by run then language, duplicates removed."""
    return sorted({Pair(run, lang) for run, langs in run_languages for lang in langs}, key=PAIR_ORDER)


def shard_pairs(pairs: Sequence[Pair], index: int, count: int) -> list[Pair]:
    """Shard `index` of `count`: the pairs whose position in the sorted list is index mod count."""
    check_shard(index, count)
    ordered = sorted(pairs, key=PAIR_ORDER)
    return [p for i, p in enumerate(ordered) if i % count == index]


def check_shard(index: int, count: int) -> None:
    """A ConfigError unless 0 <= index < count."""
    if count < 1 or not 0 <= index < count:
        raise ConfigError(
            f"shard {index}/{count} is out of range",
            fix="write INDEX/COUNT with 0 <= INDEX < COUNT, e.g. --shard 0/4",
        )


def parse_shard(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4)."""
    m = _SHARD.match(text or "")
    if not m:
        raise ConfigError(f"--shard {text!r} is not INDEX/COUNT", fix="write e.g. --shard 0/4 (shards count from 0)")
    index, count = int(m.group(1)), int(m.group(2))
    check_shard(index, count)
    return index, count


def site_slots(weights: Sequence[tuple[str, int]]) -> tuple[dict[str, list[int]], int]:
    """Give each site consecutive shard slots by weight, in config order.

    [("nancy", 2), ("grenoble", 1)] -> ({"nancy": [0, 1], "grenoble": [2]}, 3).
    """
    slots: dict[str, list[int]] = {}
    nxt = 0
    for name, weight in weights:
        if weight < 1:
            raise ConfigError(f"site {name!r} has weight {weight}", fix="give every site a weight of 1 or more")
        if name in slots:
            raise ConfigError(f"site {name!r} is listed twice", fix="name each site once")
        slots[name] = list(range(nxt, nxt + weight))
        nxt += weight
    return slots, nxt


def spread_slots(count: int, weights: Sequence[tuple[str, int]]) -> dict[str, list[int]]:
    """`count` shard slots split over sites by weight, consecutive, in config order (largest
    remainders first); a site may get none when there are fewer slots than sites.

    spread_slots(6, [("nancy", 2), ("grenoble", 1)]) -> {"nancy": [0, 1, 2, 3], "grenoble": [4, 5]}."""
    total = sum(w for _, w in weights)
    shares = [count * w / total for _, w in weights]
    given = [int(s) for s in shares]
    for i in sorted(range(len(weights)), key=lambda i: (given[i] - shares[i], i))[:count - sum(given)]:
        given[i] += 1
    out, nxt = {}, 0
    for (name, _), n in zip(weights, given):
        out[name] = list(range(nxt, nxt + n))
        nxt += n
    return out


def group_by_run(pairs: Iterable[Pair]) -> dict[str, list[str]]:
    """run -> its languages, in plan order (so each model loads once)."""
    out: dict[str, list[str]] = {}
    for p in sorted(pairs, key=PAIR_ORDER):
        out.setdefault(p.run, []).append(p.language)
    return out


def as_benchmark_languages(benchmark: "Dataset", written: Sequence[str]) -> list[str]:
    """Each language code as the benchmark spells it when one of its languages is that code written in
    another case or with '_' for '-' (pt_br -> pt-BR); a code it has no spelling of stays as written."""
    spelled = {language_key(lang): lang for lang in benchmark.languages}
    return [spelled.get(language_key(code), code) for code in written]


def run_languages(run: "Run", benchmark: "Dataset", selected: Sequence[str] | None) -> list[str]:
    """The languages a run covers: its own list (if any) intersected with the selection."""
    selected = as_benchmark_languages(benchmark, selected) if selected else selected
    if run.languages:
        own = as_benchmark_languages(benchmark, run.languages)
        unknown = [lang for lang in own if lang not in benchmark.languages]
        if unknown:
            raise ConfigError(
                f"run {run.name!r} lists languages the benchmark manifest does not: {', '.join(unknown)}",
                fix="remove them from the run's languages or use another benchmark",
            )
        langs = [lang for lang in own if not selected or lang in set(selected)]
        return benchmark.resolve_languages(langs) if langs else []
    return benchmark.resolve_languages(list(selected) if selected else None)


def select_pairs(runs: Sequence["Run"], benchmark: "Dataset", languages: Sequence[str] | None) -> list[Pair]:
    """Every (run, language) pair of the selected runs, sorted."""
    if languages:
        languages = as_benchmark_languages(benchmark, languages)
        benchmark.resolve_languages(list(languages))
    every = None   # the runs without their own list share one resolution (a stat per language file)
    out = []
    for run in runs:
        if run.languages:
            out.append((run.name, run_languages(run, benchmark, languages)))
        else:
            every = every if every is not None else run_languages(run, benchmark, languages)
            out.append((run.name, every))
    if languages and runs and not any(langs for _, langs in out):
        covered = sorted({lang for run in runs for lang in (run.languages or benchmark.languages)})
        shown = ", ".join(covered[:12]) + (f", ... ({len(covered)} in all)" if len(covered) > 12 else "")
        raise ConfigError(f"none of the selected runs covers {', '.join(languages)}: they run {shown}",
                          fix="pick languages the runs list (their languages = [...] in the roster), or select "
                              "other runs with --model")
    return plan_pairs(out)


def left_out_by_selection(every_run: Sequence["Run"], benchmark: "Dataset",
                          selected: Sequence[Pair]) -> frozenset[Pair]:
    """The pairs the whole roster plans that a --model or --languages selection leaves out: a command that
    works on the selection neither checks nor takes their files, and finds no fault in them."""
    return frozenset(select_pairs(every_run, benchmark, None)) - frozenset(selected)


def plan_text(pairs: list[Pair], shards: Sequence[Sequence[Pair]] | None = None) -> str:
    """The plan file `kit run` writes for its jobs: the sorted pair list and, when packed by cost,
    each shard's pairs (without them, shard i of n is every n-th pair from i)."""
    body: dict = {"kit_plan_version": PLAN_VERSION, "pairs": [[p.run, p.language] for p in sorted(pairs)],
                  "runs": sorted({p.run for p in pairs})}
    if shards is not None:
        body["shards"] = [[[p.run, p.language] for p in sorted(shard)] for shard in shards]
    return json.dumps(body, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class PlanFile:
    """A plan file's pairs, and its shards when `kit run` packed them by predicted cost."""

    pairs: list[Pair]
    shards: list[list[Pair]] | None = None

    def shard(self, index: int, count: int) -> list[Pair]:
        """The pairs of shard `index` of `count`: the packed shard, or every count-th pair from index."""
        if self.shards is None:
            return shard_pairs(self.pairs, index, count)
        check_shard(index, count)
        if count != len(self.shards):
            raise ConfigError(f"shard {index}/{count}: the plan file packs {len(self.shards)} shards, not {count}",
                              fix=f"run its shards as INDEX/{len(self.shards)}, as the job script `kit run` wrote does")
        return list(self.shards[index])


PLAN_LIMIT_BYTES = 256 << 20   # far above any plan kit writes; a bound on what a bad path can cost


def read_plan(path: Path, text: str | None = None) -> list[Pair]:
    """Pairs from a plan file written by `kit run` (its `text` when already read)."""
    return read_plan_file(path, text).pairs


# the layout of plan files: a job reads the plan kit wrote when it submitted it
PLAN_VERSION = 1


def read_plan_file(path: Path, text: str | None = None) -> PlanFile:
    """A plan file written by `kit run` (its `text` when already read): pairs and packed shards."""
    try:
        if text is None:
            text = read_regular_file(path, "a plan file", PLAN_LIMIT_BYTES,
                                     fix="pass the plan file `kit run` wrote").decode("utf-8")
        body = safejson.loads(text)
        version = body.get("kit_plan_version")
        if version != PLAN_VERSION:
            raise ConfigError(f"{path}: kit_plan_version {version!r}; this kit reads version {PLAN_VERSION}",
                              fix="submit again with this kit (`kit run`), which writes the plan its jobs read")
        pairs = sorted(Pair(str(r), str(lang)) for r, lang in body["pairs"])
        shards = body.get("shards")
        if shards is not None:
            shards = [sorted(Pair(str(r), str(lang)) for r, lang in shard) for shard in shards]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a kit plan file ({exc})", fix="pass the plan file `kit run` wrote") from None
    if shards is not None and sorted(p for shard in shards for p in shard) != pairs:
        raise ConfigError(f"{path}: its shards do not hold each of its pairs exactly once",
                          fix="pass the plan file `kit run` wrote, unedited")
    return PlanFile(pairs, shards)


def job_pairs(roster: "Roster", benchmark: "Dataset", models: Sequence[str], languages: Sequence[str] | None,
              plan_file: Path | None) -> tuple[list["Run"], PlanFile]:
    """The runs and the plan one worker invocation is given: its job's plan file (narrowed to `models`
    when named), or the roster's pairs of `models` and `languages`."""
    runs = roster.select(tuple(models))
    if plan_file is None:
        return runs, PlanFile(select_pairs(runs, benchmark, languages))
    plan = read_plan_file(plan_file)
    unknown = sorted({p.run for p in plan.pairs} - {r.name for r in roster.run})
    if unknown:
        raise ConfigError(f"{plan_file}: runs not in the roster: {', '.join(unknown)}",
                          fix="submit again with the current roster")
    if models:
        keep = {r.name for r in runs}
        plan = PlanFile([p for p in plan.pairs if p.run in keep],
                        None if plan.shards is None else [[p for p in s if p.run in keep] for s in plan.shards])
    return [r for r in roster.run if r.name in {p.run for p in plan.pairs}], plan
