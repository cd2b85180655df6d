"""Checkpoint-side status: each planned pair is complete, stale, pending or invalid.

Completion is decided by checkpoints alone; schedulers only explain what is missing
(that merge happens in kit.launch)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import ConfigError
from kit.config.names import same_language, same_run
from kit.plan import PAIR_ORDER, Pair
from kit.results import keys
from kit.results.keys import PairState
from kit.results.benchmark_rule import validate_held
from kit.results.checkpoint import ValidateAll, recorded_metadata, validate_each
from kit.results.identity import Expected, PlanExpectations
from kit.results.records import file_run
from kit.results.store import (checkpoint_paths, collection_of, file_language, iter_checkpoint_files,
                               language_folder)


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
            "notices": list(self.notices),
            "job": self.job,
        }


def pair_states(
    results: Path,
    pairs: Iterable[Pair],
    expect: Callable[[Pair], Expected] | None = None,
    validate_all: ValidateAll = validate_each,
) -> list[PairStatus]:
    """State of every planned pair from its checkpoint: complete, stale, pending (no file) or invalid,
    judged against `expect` (kit.results.identity.PlanExpectations) when given; the files are read by
    `validate_all` (kit.results.checkpoint.ValidateAll: one at a time, or a cache's)."""
    out = []
    ordered = sorted(pairs, key=PAIR_ORDER)   # Pair's own order, compared in C
    paths = checkpoint_paths(results, [(pair.run, pair.language) for pair in ordered])
    states = validate_all([(path, {"run": pair.run, "language": pair.language,
                                   "expect": expect(pair) if expect is not None else None})
                           for pair, path in zip(ordered, paths)])
    for pair, path, st in zip(ordered, paths, states):
        state = PairState.PENDING if st.state == "missing" else st.state
        out.append(PairStatus(pair, state, path, list(st.reasons), list(st.notices)))
    return out


def scan_results(results: Path, validate_all: ValidateAll = validate_each,
                 benchmark: PlanExpectations | None = None) -> list[PairStatus]:
    """Without a plan: every checkpoint file found (RESULTS/archive/ left out, as lrb's discovery does),
    validated on its own (with `validate_all`, as pair_states) and, with `benchmark`, held to it by the
    rule every command follows (kit.results.benchmark_rule)."""
    out = []
    paths = iter_checkpoint_files(results)
    root = Path(results)   # one object: the rule finds each folder's language once per tree (by its identity)
    for path, st in zip(paths, validate_held([(path, root) for path in paths], validate_all, benchmark)):
        metadata = (st.data or {}).get(keys.METADATA)
        # only the metadata says which "__" of org__a__b is the "/", and the language of a file outside a
        # language folder (at the top, in a batch folder), which counts wherever it lies
        if metadata is None and st.state in (PairState.COMPLETE, PairState.STALE) \
                and (path.stem.count("__") > 1 or language_folder(root, path) is None):
            metadata = recorded_metadata(path, st)
        pair = Pair(file_run(path, metadata), file_language(results, path, metadata))
        out.append(PairStatus(pair, st.state, path, list(st.reasons), list(st.notices)))
    return out


def counted_twice(results: Path, statuses: Iterable[PairStatus]) -> list[dict[str, Any]]:
    """The pairs that more than one complete or stale file of one collection counts for ({run, language,
    files}): lrb's layouts can hold one pair at the top and in its language folder (a batch folder is a
    collection of its own, with its own leaderboard), and kit report and kit compare refuse a tree that does."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for s in statuses:
        if s.state in (PairState.COMPLETE, PairState.STALE) and s.path is not None:
            key = (collection_of(results, s.path, s.pair.language), s.pair.run, s.pair.language)
            found.setdefault(key, []).append(str(s.path))
    return [{"run": run, "language": language, "files": sorted(files)}
            for (_, run, language), files in sorted(found.items()) if len(files) > 1]


def twice_note(twice: list[dict[str, Any]]) -> str | None:
    """counted_twice's pairs in one line (None when there are none)."""
    if not twice:
        return None
    shown = "; ".join(f"{t['run']} {t['language']}: {', '.join(t['files'])}" for t in twice[:3])
    more = f" and {len(twice) - 3} more" if len(twice) > 3 else ""
    return (f"{len(twice)} pair(s) counted by more than one file ({shown}{more}): kit report and kit compare "
            "refuse such a tree; move one file aside, or point the command at one folder (a batch)")


def select_found(statuses: list[PairStatus], runs: Iterable[str], languages: Iterable[str] | None,
                 results: Path) -> list[PairStatus]:
    """The pairs found by scan_results of these runs (every one when none is given) and languages (every
    one when None); a ConfigError for a run or language that no checkpoint found has, naming those found."""
    out = statuses
    for asked, of, what, same in ((list(runs), lambda s: s.pair.run, "run", same_run),
                                  (list(languages or ()), lambda s: s.pair.language, "language", same_language)):
        if not asked:
            continue
        found = sorted({of(s) for s in statuses})
        missing = [name for name in asked if not any(same(name, f) for f in found)]
        if missing:
            listed = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
            raise ConfigError(f"no checkpoint in {results} is of {what} {missing[0]!r}",
                              fix=f"pick among: {listed or '(none found)'}, or give the roster that plans it "
                                  "(--roster)")
        out = [s for s in out if any(same(name, of(s)) for name in asked)]
    return out


def count_states(statuses: Iterable[PairStatus]) -> dict[str, int]:
    """state -> number of pairs, for the count line."""
    return dict(sorted(Counter(s.state for s in statuses).items()))
