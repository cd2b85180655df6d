"""What a checkpoint must say about itself to count: its identity against the roster run and the
benchmark as they are now (a mismatch makes it stale), and its metadata against the job's own
provenance record in the same file (a mismatch means it was edited: invalid).

Identity is what changes the predictions: the model and its revision, the backend, task, dtype,
decoding and token budget, the seed, the options that reach the engine, remote code, the language
file's digest and the prompt's. Throughput settings (batch size and the options in
THROUGHPUT_OPTIONS) are left out: changing them must not throw away a sweep; `kit reproduce`
is where their effect on the numbers is measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.config.kinds import get_kind
from kit.results import keys

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.config.roster import Run
    from kit.plan import Pair

# Engine options that decide speed or placement, not predictions.
THROUGHPUT_OPTIONS = frozenset({
    "attention_heads", "kv_heads", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager",
    "n_threads", "n_batch",
})

# metadata key -> the provenance path the job recorded the same fact under
_RECORDED_TWICE = {
    keys.MODEL_ID: ("model", "id"),
    keys.MODEL_REVISION: ("model", "revision"),
    keys.BACKEND: ("image", "backend"),
    keys.BENCHMARK_SHA256: ("data", "file_sha256"),
    keys.MANIFEST_SHA256: ("data", "manifest_sha256"),
    keys.PROMPT_SHA256: ("data", "prompt_sha256"),
}


@dataclass(frozen=True)
class Expected:
    """What a planned pair's checkpoint must hold to count now; None leaves that part unchecked."""

    item_ids: tuple[str, ...] | None = None
    answers: Mapping[str, Any] | None = None      # item id -> the benchmark's expected answer
    identity: Mapping[str, Any] | None = None     # metadata key -> value


def prediction_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The run options that can change predictions (all but THROUGHPUT_OPTIONS)."""
    return {k: v for k, v in sorted(options.items()) if k not in THROUGHPUT_OPTIONS}


def run_identity(run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
    """The metadata a checkpoint of (run, language) must record to be current (see the module doc)."""
    return {
        keys.MODEL_ID: run.model_id, keys.RUN: run.name, keys.MODEL_REVISION: run.revision,
        keys.BACKEND: run.backend, keys.TASK: run.task, keys.DTYPE: run.dtype,
        keys.MAX_NEW_TOKENS: run.max_new_tokens, keys.SEED: run.seed,
        keys.OPTIONS: prediction_options(run.options), keys.TRUST_REMOTE_CODE: run.trust_remote_code,
        **get_kind(dataset.kind, str(dataset.root)).results_part().pair_identity(run, language, dataset),
    }


def stale_reasons(metadata: Mapping[str, Any], identity: Mapping[str, Any], *, legacy: bool) -> list[str]:
    """One line per identity key whose recorded value is not today's. A legacy lrb file (no provenance
    block) is compared on the keys it records; a kit checkpoint that lacks one is stale."""
    out = []
    for key, want in identity.items():
        if key not in metadata:
            if not legacy:
                out.append(f"metadata.{key} is not recorded; the run now has {_short(want)}")
            continue
        got = metadata[key]
        if key == keys.OPTIONS and isinstance(got, Mapping):
            got = prediction_options(got)
        if got != want:
            out.append(f"metadata.{key} is {_short(got)}; the run now has {_short(want)}")
    return out


def edit_reasons(data: Mapping[str, Any]) -> list[str]:
    """Metadata that differs from the job's provenance record of the same fact (the file was edited).
    A checkpoint without a provenance block (lrb's own) has nothing to compare."""
    prov, meta = data.get(keys.PROVENANCE), data.get(keys.METADATA, {})
    if not isinstance(prov, Mapping):
        return []
    out = []
    for key, (section, field) in _RECORDED_TWICE.items():
        block = prov.get(section)
        recorded = block.get(field) if isinstance(block, Mapping) else None
        if recorded != meta.get(key):
            out.append(f"metadata.{key} {_short(meta.get(key))} differs from provenance.{section}.{field} "
                       f"{_short(recorded)} (the file was edited after the job wrote it)")
    return out


def answer_reasons(predictions: list[Mapping[str, Any]], answers: Mapping[str, Any]) -> list[str]:
    """Predictions whose expected answer is not the benchmark's for that item (first offender named)."""
    wrong = [(i, p) for i, p in enumerate(predictions)
             if p.get(keys.ITEM_ID) in answers and p.get(keys.EXPECTED) != answers[p[keys.ITEM_ID]]]
    if not wrong:
        return []
    at, first = wrong[0]
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    return [f"{keys.PREDICTIONS}[{at}].{keys.EXPECTED} {_short(first.get(keys.EXPECTED))} is not the benchmark's "
            f"{_short(answers[first[keys.ITEM_ID]])} for item {first[keys.ITEM_ID]!r}{more}"]


class PlanExpectations:
    """Expected facts of the planned pairs of one benchmark (and roster runs, when given): item ids and
    answers read once per language, identity per pair."""

    def __init__(self, dataset: "Dataset", runs: list["Run"] | None = None) -> None:
        self.dataset = dataset
        self.runs = {r.name: r for r in runs or []}
        self._languages: dict[str, tuple[tuple[str, ...], Mapping[str, Any] | None]] = {}

    def covers(self, pair: "Pair") -> bool:
        """True when the pair's run is one of the runs and its language one of the benchmark's."""
        return pair.run in self.runs and pair.language in self.dataset.languages

    def __call__(self, pair: "Pair") -> Expected:
        """The expectation of one planned pair."""
        if pair.language not in self._languages:
            answers = self.dataset.expected_answers(pair.language)
            self._languages[pair.language] = (tuple(self.dataset.item_ids(pair.language)), answers)
        ids, answers = self._languages[pair.language]
        run = self.runs.get(pair.run)
        identity = run_identity(run, pair.language, self.dataset) if run is not None else None
        return Expected(ids, answers, identity)


def data_expectation(dataset: "Dataset", language: str) -> Expected | None:
    """What any checkpoint of `language` must hold on this benchmark, whatever its run: the language
    file's digest, ids and answers (None for a language the benchmark does not define)."""
    if language not in dataset.languages:
        return None
    return Expected(tuple(dataset.item_ids(language)), dataset.expected_answers(language),
                    {keys.BENCHMARK_SHA256: dataset.pinned_sha256(language)})


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
