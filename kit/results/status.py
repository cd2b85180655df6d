"""Checkpoint-side status: each planned pair is complete, stale, pending or invalid.

Completion is decided by checkpoints alone; schedulers only explain what is missing
(that merge happens in kit.launch)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.roster import run_from_stem
from kit.plan import Pair
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint
from kit.results.identity import Expected
from kit.results.store import checkpoint_path, iter_checkpoint_files


@dataclass
class PairStatus:
    """One pair's state, the checkpoint it was read from, and why when not complete."""

    pair: Pair
    state: str
    path: Path
    reasons: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    job: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready form for --json output."""
        return {
            "run": self.pair.run,
            "language": self.pair.language,
            "state": self.state,
            "path": str(self.path),
            "reasons": list(self.reasons),
            "job": self.job,
        }


def pair_states(
    results: Path,
    pairs: Iterable[Pair],
    expect: Callable[[Pair], Expected] | None = None,
) -> list[PairStatus]:
    """State of every planned pair from its checkpoint: complete, stale, pending (no file) or invalid,
    judged against `expect` (kit.results.identity.PlanExpectations) when given."""
    out = []
    for pair in sorted(pairs):
        path = checkpoint_path(results, pair.run, pair.language)
        st = validate_checkpoint(path, run=pair.run, language=pair.language,
                                 expect=expect(pair) if expect is not None else None)
        state = keys.PENDING if st.state == "missing" else st.state
        out.append(PairStatus(pair, state, path, list(st.reasons), list(st.notices)))
    return out


def scan_results(results: Path) -> list[PairStatus]:
    """Without a plan: every checkpoint file found, validated on its own."""
    out = []
    for path in iter_checkpoint_files(results):
        pair = Pair(run_from_stem(path.stem), path.parent.name)
        st = validate_checkpoint(path)
        out.append(PairStatus(pair, st.state, path, list(st.reasons), list(st.notices)))
    return out


def count_states(statuses: Iterable[PairStatus]) -> dict[str, int]:
    """state -> number of pairs, for the count line."""
    return dict(sorted(Counter(s.state for s in statuses).items()))
