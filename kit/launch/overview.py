"""`kit plan`: what a sweep consists of and what is already done, before any model loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kit.config.project import Project
from kit.config.roster import Run
from kit.plan import Pair, select_pairs, shard_pairs
from kit.results.keys import PairState
from kit.results.identity import PlanExpectations
from kit.results.status import PairStatus, count_states


@dataclass
class PlanOverview:
    """The plan of a sweep, with dataset digests checked and checkpoint states counted."""

    runs: list[str]
    languages: list[str]
    prompts_per_language: dict[str, int]
    digests: dict[str, str]
    whole_set: tuple[str, str]
    pairs: int
    shard: tuple[int, int]
    assigned: list[Pair]
    states: list[PairStatus] = field(default_factory=list)
    prompt_digests: dict[str, str] = field(default_factory=dict)
    prompt_files: dict[str, str] = field(default_factory=dict)     # the same keys: the file each was read from
    prompts_unread: list[str] = field(default_factory=list)        # prompt files there that no lookup reads

    @property
    def counts(self) -> dict[str, int]:
        """complete / pending / invalid counts over the assigned pairs."""
        return {"complete": 0, "pending": 0, "stale": 0, "invalid": 0, **count_states(self.states)}

    @property
    def total_prompts(self) -> int:
        """Prompts over all assigned pairs."""
        return sum(self.prompts_per_language[p.language] for p in self.assigned)

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "runs": self.runs, "languages": self.languages, "prompts_per_language": self.prompts_per_language,
            "file_sha256": self.digests, "whole_set": {"status": self.whole_set[0], "detail": self.whole_set[1]},
            "prompt_sha256": self.prompt_digests, "prompt_files": self.prompt_files,
            "prompts_unread": self.prompts_unread, "pairs": self.pairs, "shard": f"{self.shard[0]}/{self.shard[1]}",
            "assigned": [[p.run, p.language] for p in self.assigned], "assigned_prompts": self.total_prompts,
            "checkpoints": self.counts,
            "invalid": [s.as_dict() for s in self.states if s.state == PairState.INVALID],
            "stale": [s.as_dict() for s in self.states if s.state == PairState.STALE],
        }


def plan_overview(
    project: Project, runs: list[Run], languages: list[str] | None, shard: tuple[int, int], results: Path,
) -> PlanOverview:
    """Plan pairs, check each selected language file against the manifest, count checkpoint states."""
    bench = project.benchmark
    if runs:
        pairs = select_pairs(runs, bench, languages)
        langs = sorted({p.language for p in pairs})
    else:
        pairs = []
        langs = bench.resolve_languages(languages)
    loaded = {lang: bench.load_language(lang) for lang in langs}
    assigned = shard_pairs(pairs, *shard) if pairs else []
    states = []
    if assigned:
        from kit.results.tree import ResultsTree

        with ResultsTree(results) as tree:
            states = tree.pair_states(assigned, PlanExpectations(bench, runs))
    # each run's own prompt (lrb gives each kind of model its own); with no run, every prompt the benchmark has
    prompts = ({r.name: bench.prompt_for(r) for r in runs} if runs else dict(sorted(bench.prompts.items())))
    unread = getattr(bench, "unread_prompt_files", None)
    return PlanOverview(
        runs=[r.name for r in runs],
        languages=langs,
        prompts_per_language={lang: len(d.items) for lang, d in loaded.items()},
        digests={lang: d.file_sha256 for lang, d in loaded.items()},
        whole_set=bench.whole_set_status(),
        pairs=len(pairs),
        shard=shard,
        assigned=assigned,
        states=states,
        prompt_digests={name: p.sha256 for name, p in prompts.items()},
        prompt_files={name: str(p.path) for name, p in prompts.items()},
        prompts_unread=unread() if unread is not None else [],
    )
