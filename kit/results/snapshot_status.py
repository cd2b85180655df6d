"""SNAPSHOT_STATUS.md of a release, as lrb writes it: complete or in progress, and each run's coverage.

The states come from kit's status code (kit.results.status): with a roster, every planned pair is
judged against it (missing pairs are pending, stale ones are named); without one, the expected pairs
are every run found times every language found, as lrb's snapshot_status.py counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kit.results.keys import PairState
from kit.results.status import PairStatus
from kit.results.tables import md_code, md_text


@dataclass
class Coverage:
    """One run's pairs by state: how many of its languages are complete, and which are not."""

    run: str
    complete: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)   # language -> state (pending, invalid, stale)

    @property
    def done(self) -> bool:
        """True when every expected language of the run is complete."""
        return not self.other

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"run": self.run, "complete": sorted(self.complete), "missing": dict(sorted(self.other.items())),
                "state": "complete" if self.done else "in progress"}


def coverage(statuses: list[PairStatus]) -> list[Coverage]:
    """Per run, sorted by run: its complete languages and the state of the others."""
    by_run: dict[str, Coverage] = {}
    for s in statuses:
        cov = by_run.setdefault(s.pair.run, Coverage(s.pair.run))
        if s.state == PairState.COMPLETE:
            cov.complete.append(s.pair.language)
        else:
            cov.other[s.pair.language] = s.state
    return [by_run[run] for run in sorted(by_run)]


def unplanned_statuses(results: Path, found: list[PairStatus]) -> list[PairStatus]:
    """Without a roster: the found pairs plus a pending one for each (run found, language found) not there."""
    from kit.plan import Pair
    from kit.results.store import checkpoint_path

    have = {(s.pair.run, s.pair.language) for s in found}
    runs = sorted({s.pair.run for s in found})
    languages = sorted({s.pair.language for s in found})
    missing = [PairStatus(Pair(run, lang), PairState.PENDING, checkpoint_path(results, run, lang))
               for run in runs for lang in languages if (run, lang) not in have]
    return sorted([*found, *missing], key=lambda s: (s.pair.run, s.pair.language))


def snapshot_status_text(benchmark_name: str, covered: list[Coverage], planned: bool) -> str:
    """The Markdown of SNAPSHOT_STATUS.md."""
    total = sum(len(c.complete) + len(c.other) for c in covered)
    complete = sum(len(c.complete) for c in covered)
    languages = sorted({lang for c in covered for lang in (*c.complete, *c.other)})
    done = complete == total
    basis = "the roster's planned pairs" if planned else "every run found times every language found"
    lines = [
        "# Snapshot status",
        "",
        f"- Benchmark: {md_code(benchmark_name)}",
        f"- Status: {'complete' if done else 'in progress; not the final release'}.",
        f"- Completed run-language pairs: {complete:,} of {total:,} (expected: {basis})",
        f"- Runs complete: {sum(c.done for c in covered)} of {len(covered)}",
        f"- Languages: {len(languages)} ({', '.join(map(md_code, languages))})",
        "",
        "## Runs",
    ]
    for c in covered:
        n = len(c.complete) + len(c.other)
        state = "complete" if c.done else "in progress"
        missing = "" if c.done else "; not complete: " + ", ".join(f"{md_code(lang)} ({md_text(st)})"
                                                                   for lang, st in sorted(c.other.items()))
        lines.append(f"- {md_code(c.run)}: {state}, {len(c.complete)}/{n} languages{missing}")
    lines += [
        "",
        "This snapshot holds only the complete checkpoints (valid, metrics recomputed from their predictions)",
        "available when it was made. Each run file keeps its exact run metadata; kit's checkpoints keep their provenance.",
    ]
    return "\n".join(lines) + "\n"
