"""A results tree read through its validated-checkpoint cache: the one way commands ask where the
checkpoints of a tree stand. The tree owns the cache's life (opened with the tree, saved when the
`with` block ends), so no caller opens or saves a cache or passes its methods around."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kit.plan import Pair
from kit.results.cache import CheckpointCache
from kit.results.checkpoint import CheckpointState
from kit.results.collector import collector_paused
from kit.results.identity import Expected, PlanExpectations
from kit.results.status import PairStatus, pair_states, scan_results


class ResultsTree:
    """One results tree (RESULTS/<language>/<run>.json) and its cache. `sections` is True for readers
    of a checkpoint's sections (reports); status and verify need only the verdicts.

        with ResultsTree(results) as tree:
            statuses = tree.pair_states(pairs, PlanExpectations(benchmark, runs))
    """

    def __init__(self, root: Path, *, sections: bool = False) -> None:
        self.root = Path(root)
        with collector_paused():
            self._cache = CheckpointCache.open(self.root, sections=sections)

    def __enter__(self) -> ResultsTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.save()

    def save(self) -> None:
        """Keep what was validated for the next command (never an error: kit.results.cache)."""
        self._cache.save()

    @property
    def from_cache(self) -> int:
        """How many verdicts this tree took from the cache so far (status says so)."""
        return self._cache.hits

    def validate_all(self, jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
        """Each (checkpoint path, validate_checkpoint keywords) job validated, in order, from the cache
        where nothing it depended on changed (kit.results.checkpoint.ValidateAll). A reader of sections
        (a report) saves the cache then and lets go of these entries, which its records now hold."""
        with collector_paused():
            states = self._cache.validate_all(jobs)
        if self._cache.sections:
            self._cache.forget([path for path, _ in jobs])
        return states

    def pair_states(self, pairs: Iterable[Pair], expect: Callable[[Pair], Expected] | None = None) -> list[PairStatus]:
        """Every planned pair's state from its checkpoint (kit.results.status.pair_states)."""
        with collector_paused():
            return pair_states(self.root, pairs, expect, self._cache.validate_all)

    def scan(self, benchmark: PlanExpectations | None = None) -> list[PairStatus]:
        """Every checkpoint file of the tree, each validated on its own (no plan), and held to `benchmark`
        when given (kit.results.benchmark_rule)."""
        with collector_paused():
            return scan_results(self.root, self._cache.validate_all, benchmark)
