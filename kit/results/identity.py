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

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kit.errors import KitError, clipped
from kit.results import keys
from kit.results.columns import column

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
    keys.MODEL_ID: (keys.PROV_MODEL, keys.PROV_MODEL_ID),
    keys.MODEL_REVISION: (keys.PROV_MODEL, keys.PROV_MODEL_REVISION),
    keys.BACKEND: (keys.PROV_IMAGE, keys.IMAGE_BACKEND),
    keys.BENCHMARK_SHA256: (keys.PROV_DATA, keys.DATA_FILE_SHA256),
    keys.MANIFEST_SHA256: (keys.PROV_DATA, keys.DATA_MANIFEST_SHA256),
    keys.PROMPT_SHA256: (keys.PROV_DATA, keys.DATA_PROMPT_SHA256),
}


@dataclass(frozen=True)
class Expected:
    """What a planned pair's checkpoint must hold to count now; None leaves that part unchecked.
    It has every member of Expectation (what the checkpoint code and its cache read)."""

    item_ids: tuple[str, ...] | None = None
    answers: Mapping[str, Any] | None = None      # item id -> the benchmark's expected answer
    identity: Mapping[str, Any] | None = None     # metadata key -> value
    identity_key: str | None = None               # text that changes whenever `identity` does; None: derive it

    @property
    def answers_in_order(self) -> list[Any] | None:
        """The answers in the order of the item ids, when known beforehand (None: look each one up)."""
        return None

    @property
    def fingerprint(self) -> str | None:
        """What the ids and answers come from, when it can be named without them (None: use them)."""
        return None


class Expectation(Protocol):
    """What validate_checkpoint and the checkpoint cache read of an expectation: Expected, or a
    planned pair's LazyExpected, whose ids and answers are read only when a file is validated."""

    item_ids: tuple[str, ...] | None
    answers: Mapping[str, Any] | None
    identity: Mapping[str, Any] | None
    identity_key: str | None

    @property
    def answers_in_order(self) -> list[Any] | None: ...

    @property
    def fingerprint(self) -> str | None: ...


def prediction_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The run options that can change predictions (all but THROUGHPUT_OPTIONS)."""
    return {k: v for k, v in sorted(options.items()) if k not in THROUGHPUT_OPTIONS}


def run_identity(run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
    """The metadata a checkpoint of (run, language) must record to be current (see the module doc)."""
    return {**run_part(run), **language_part(run, language, dataset)}


def run_part(run: "Run") -> dict[str, Any]:
    """The part of run_identity that is the same for every language of the run."""
    return {
        keys.MODEL_ID: run.model_id, keys.RUN: run.name, keys.MODEL_REVISION: run.revision,
        keys.BACKEND: run.backend, keys.TASK: run.task, keys.DTYPE: run.dtype,
        keys.MAX_NEW_TOKENS: run.max_new_tokens, keys.SEED: run.seed,
        keys.OPTIONS: prediction_options(run.options), keys.TRUST_REMOTE_CODE: run.trust_remote_code,
    }


def language_part(run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
    """The part of run_identity the benchmark kind adds for one language (data and prompt digests...)."""
    from kit.results.kinds import result_kind

    return result_kind(dataset.kind, str(dataset.root)).pair_identity(run, language, dataset)


def identity_text(identity: Mapping[str, Any] | None) -> str:
    """An identity as canonical JSON text (keys sorted; values JSON does not hold by their repr)."""
    return json.dumps(identity, sort_keys=True, default=repr)


def stale_reasons(metadata: Mapping[str, Any], identity: Mapping[str, Any], *, legacy: bool) -> list[str]:
    """One line per identity key whose recorded value is not today's. A legacy lrb file (no provenance
    block) is compared on the keys it records; a kit checkpoint that lacks one is stale."""
    if legacy:
        metadata = lrb_terms(metadata, identity)
    out = []
    for key, want in identity.items():
        if key not in metadata:
            if not legacy:
                out.append(f"metadata.{key} is not recorded; the run now has {clipped(want, 60)}")
            continue
        got = metadata[key]
        if key == keys.OPTIONS and isinstance(got, Mapping):
            got = prediction_options(got)
        if got != want:
            out.append(f"metadata.{key} is {clipped(got, 60)}; the run now has {clipped(want, 60)}")
    return out


def lrb_terms(metadata: Mapping[str, Any], identity: Mapping[str, Any]) -> Mapping[str, Any]:
    """An lrb file's metadata in kit's terms. lrb marks a scoring run inference "scoring", decoding "none"
    and max_new_tokens 0, where kit records decoding "score" and the run's unused token budget; and it
    names a scorer variant in model_id ("org/name@logprob", run_id ""), where kit's run of that name
    records the model it loads ("org/name")."""
    view = dict(metadata)
    if view.get(keys.LRB_INFERENCE) == "scoring" and view.get(keys.DECODING) == "none":
        view[keys.DECODING] = "score"
        view.pop(keys.MAX_NEW_TOKENS, None)
    model, loads = view.get(keys.MODEL_ID), identity.get(keys.MODEL_ID)
    if isinstance(model, str) and isinstance(loads, str) and model == identity.get(keys.RUN) \
            and model.startswith(f"{loads}@"):
        view[keys.MODEL_ID] = loads
    return view


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
            out.append(f"metadata.{key} {clipped(meta.get(key), 60)} differs from provenance.{section}.{field} "
                       f"{clipped(recorded, 60)} (the file was edited after the job wrote it)")
    return out


def answer_reasons(predictions: list[Mapping[str, Any]], answers: Mapping[str, Any],
                   in_order: list[Any] | None = None) -> list[str]:
    """Predictions whose expected answer is not the benchmark's for that item (first offender named).
    `in_order`: the benchmark's answers in the predictions' order, when their ids are known to be the
    benchmark's, in order (one list comparison then clears them)."""
    try:   # the common case at C speed: every expected label is the benchmark's (or the id is not in it)
        expected = column(predictions, keys.EXPECTED, required=True)
        if expected == in_order:
            return []
        if list(map(answers.get, column(predictions, keys.ITEM_ID, required=True), expected)) == expected:
            return []
    except (KeyError, TypeError, AttributeError):
        pass
    wrong = [(i, p) for i, p in enumerate(predictions)
             if p.get(keys.ITEM_ID) in answers and p.get(keys.EXPECTED) != answers[p[keys.ITEM_ID]]]
    if not wrong:
        return []
    at, first = wrong[0]
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    return [f"{keys.PREDICTIONS}[{at}].{keys.EXPECTED} {clipped(first.get(keys.EXPECTED), 60)} is not the benchmark's "
            f"{clipped(answers[first[keys.ITEM_ID]], 60)} for item {first[keys.ITEM_ID]!r}{more}"]


_UNSET = object()
# the value types a pair's identity part is shared by (PlanExpectations._shared_extra)
_FLAT = frozenset({str, int, float, bool, type(None)})


class PlanExpectations:
    """Expected facts of the planned pairs of one benchmark (and roster runs, when given): item ids and
    answers read once per language, identity per pair."""

    def __init__(self, dataset: "Dataset", runs: list["Run"] | None = None) -> None:
        self.dataset = dataset
        self.runs = {r.name: r for r in runs or []}
        self._languages: dict[str, tuple[tuple[str, ...], Mapping[str, Any] | None]] = {}
        self._fingerprints: dict[str, str | None] = {}
        self._run_parts: dict[str, tuple[dict[str, Any], str]] = {}
        self._in_order: dict[str, list[Any] | None] = {}
        self._digests: dict[str, str] | None = None
        self._kind: Any = None   # the benchmark's ResultKind, found on first use
        self._of_language: dict[str, LazyExpected] = {}
        self._extras: dict[Any, tuple[dict[str, Any], str]] = {}   # see _shared_extra
        self._inputs: dict[str, Any] = {}   # run name -> ResultKind.pair_identity_inputs
        self._by_inputs: dict[tuple[Any, str], tuple[dict[str, Any], str]] = {}   # (inputs, language) -> part
        self._stems: dict[str, str] | None = None   # checkpoint file stem -> run name (run_of_stem)

    def run_of_stem(self, stem: str) -> str:
        """The run whose checkpoint file stem this is: a roster run's own name (which may hold "__"), else
        the name the stem spells (kit.config.names.run_from_stem)."""
        from kit.config.names import run_file_stem, run_from_stem

        if self._stems is None:
            self._stems = {run_file_stem(name): name for name in self.runs}
        return self._stems.get(stem) or run_from_stem(stem)

    def covers(self, pair: "Pair") -> bool:
        """True when the pair's run is one of the runs and its language one of the benchmark's."""
        return pair.run in self.runs and pair.language in self.dataset.languages

    def __call__(self, pair: "Pair") -> "LazyExpected":
        """The expectation of one planned pair (an Expected whose ids and answers are read on first use)."""
        run = self.runs.get(pair.run)
        if run is None:
            return LazyExpected(self, pair.language, None)
        if run.name not in self._run_parts:   # thousands of pairs share a few runs: build their part once
            part = run_part(run)
            self._run_parts[run.name] = (part, identity_text(part))
        part, part_text = self._run_parts[run.name]
        if self._kind is None:
            from kit.results.kinds import result_kind

            self._kind = result_kind(self.dataset.kind, str(self.dataset.root))
        inputs = self._inputs.get(run.name, _UNSET)
        if inputs is _UNSET:
            inputs = self._inputs[run.name] = self._kind.pair_identity_inputs(run, self.dataset)
        if inputs is None:
            extra = self._shared_extra(self._kind.pair_identity(run, pair.language, self.dataset))   # language_part
        else:   # the runs that read the same of themselves share each language's part
            extra = self._by_inputs.get((inputs, pair.language))
            if extra is None:
                extra = self._by_inputs[(inputs, pair.language)] = self._shared_extra(
                    self._kind.pair_identity(run, pair.language, self.dataset))
        return LazyExpected(self, pair.language, part, part_text, *extra)

    def _shared_extra(self, extra: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The language part of a pair's identity and its key text, one object each for the pairs that
        share it (languages x prompts, not pairs): a sweep's expectations are held while it is read."""
        shape: Any = None
        if all(type(v) in _FLAT for v in extra.values()):
            # type-exact, floats by their text: 1, 1.0 and True (and 0.0, -0.0) have key texts of their own
            shape = tuple((k, type(v), repr(v) if type(v) is float else v) for k, v in extra.items())
        known = self._extras.get(shape) if shape is not None else None
        if known is None:
            # repr, not JSON: a few flat values, and the key only has to change when they do
            known = (extra, repr(sorted(extra.items())))
            if shape is not None:
                self._extras[shape] = known
        return known

    def of_language(self, language: str) -> "LazyExpected | None":
        """What any checkpoint of `language` must hold on this benchmark, whatever its run (as
        data_expectation, read lazily); None for a language the benchmark does not define."""
        known = self._of_language.get(language)
        if known is None:   # one per language (a verify of a sweep asks for each of its thousands of files)
            if language not in self.dataset.languages:
                return None
            identity = {keys.BENCHMARK_SHA256: self.dataset.pinned_sha256(language)}
            known = self._of_language[language] = LazyExpected(self, language, identity, identity_text(identity))
        return known

    def language_of_digest(self, digest: object) -> str | None:
        """The language whose data file the benchmark pins with this sha256 (None: no file has it);
        what a checkpoint that names no language (lrb's single-language files) is held to."""
        if self._digests is None:
            self._digests = {}
            for language in self.dataset.languages:
                pinned = self.dataset.pinned_sha256(language)
                if pinned:
                    self._digests.setdefault(pinned, language)
        return self._digests.get(digest) if isinstance(digest, str) else None

    def language_data(self, language: str) -> tuple[tuple[str, ...], Mapping[str, Any] | None]:
        """The benchmark's item ids and answers of a language, read once."""
        if language not in self._languages:
            answers = self.dataset.expected_answers(language)
            ids = tuple(self.dataset.item_ids(language))
            if answers is not None and tuple(answers) == ids:   # the same ids: hold them once
                ids = tuple(answers)
            self._languages[language] = (ids, answers)
        return self._languages[language]

    def answers_in_order(self, language: str) -> list[Any] | None:
        """The benchmark's answers of a language in the order of its item ids (None without answers)."""
        if language not in self._in_order:
            ids, answers = self.language_data(language)
            self._in_order[language] = None if answers is None else [answers.get(i) for i in ids]
        return self._in_order[language]

    def fingerprint(self, language: str) -> str | None:
        """What the ids and answers of a language come from, without reading its file: the manifest's
        digest and the file's pin, path, size, times, inode and device (None for a kind whose data
        files are not named per language: then the ids and answers themselves are the fingerprint)."""
        if language not in self._fingerprints:
            where = getattr(self.dataset, "language_path", None)
            try:
                path = where(language) if where is not None else None
                st = os.stat(path) if path is not None else None
            except (OSError, ValueError, KitError):
                st = None
            self._fingerprints[language] = None if st is None else (
                f"{self.dataset.manifest_sha256}:{self.dataset.pinned_sha256(language)}:{path}:{st.st_size}:"
                f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}")
        return self._fingerprints[language]


class LazyExpected:
    """An Expected (same attributes) of a planned pair whose benchmark ids and answers are read when
    first used, so that a cached verdict (kit.results.cache) needs no language file read; `fingerprint`
    names them without reading (PlanExpectations.fingerprint). Its identity is composed when read from
    a part and its key text shared by the run's pairs and one shared by the pairs of the same language
    data (a sweep's twenty thousand expectations then hold no identity of their own)."""

    __slots__ = ("_plan", "_language", "_part", "_part_key", "_extra", "_extra_key")

    def __init__(self, plan: PlanExpectations, language: str, part: Mapping[str, Any] | None,
                 part_key: str | None = None, extra: Mapping[str, Any] | None = None, extra_key: str = "") -> None:
        self._plan, self._language = plan, language
        self._part, self._part_key, self._extra, self._extra_key = part, part_key, extra, extra_key

    @property
    def identity(self) -> Mapping[str, Any] | None:
        """metadata key -> the value a current checkpoint records (None: not checked)."""
        if self._extra is None:
            return self._part
        return {**(self._part or {}), **self._extra}

    @property
    def identity_key(self) -> str | None:
        """Text that changes whenever `identity` does (kit.results.cache keys verdicts by it); None: derive it."""
        if self._extra is None:
            return self._part_key
        return f"{self._part_key}\0{self._extra_key}"

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The benchmark's item ids of the language, in order."""
        return self._plan.language_data(self._language)[0]

    @property
    def answers(self) -> Mapping[str, Any] | None:
        """item id -> the benchmark's expected answer."""
        return self._plan.language_data(self._language)[1]

    @property
    def language(self) -> str:
        """The language whose data this expectation holds a checkpoint to."""
        return self._language

    @property
    def answers_in_order(self) -> list[Any] | None:
        """The benchmark's answers in the order of its item ids."""
        return self._plan.answers_in_order(self._language)

    @property
    def fingerprint(self) -> str | None:
        """What the ids and answers come from (None: use them)."""
        return self._plan.fingerprint(self._language)


def data_expectation(dataset: "Dataset", language: str) -> Expected | None:
    """What any checkpoint of `language` must hold on this benchmark, whatever its run: the language
    file's digest, ids and answers (None for a language the benchmark does not define)."""
    if language not in dataset.languages:
        return None
    return Expected(tuple(dataset.item_ids(language)), dataset.expected_answers(language),
                    {keys.BENCHMARK_SHA256: dataset.pinned_sha256(language)})


