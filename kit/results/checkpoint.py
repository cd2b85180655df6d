"""Read and validate checkpoint files: complete, invalid (with reasons) or missing.

A checkpoint is complete only if it parses, its run and language match its path, its
item ids are unique (and equal the benchmark's, in order, when those are given), its
labels are valid (and the benchmark's), its metrics recompute exactly from its predictions,
its metadata agrees with its provenance record, and (when the plan's runs are given) it was
recorded for the run and data as they are now; otherwise stale (docs/checkpoint-format.md). Nothing here raises on a bad file: the reasons are
returned, one short line each, naming the key, for the caller to report.
"""

from __future__ import annotations

import math
import operator
import re
import os
import unicodedata
from collections import Counter
from itertools import repeat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit import safejson
from kit.errors import ConfigError, clipped, unshowable, visible
from kit.files import read_regular_file
from kit.config.names import run_file_stem
from kit.results import keys
from kit.results.keys import PairState
from kit.results.columns import column, shared
from kit.results.evidence import evidence_notices, evidence_reasons
from kit.results.identity import Expectation, answer_reasons, edit_reasons, stale_reasons
from kit.results.store import names_a_language
from kit.results.kinds import ResultKind, kind_of, typed_read, unknown_kind

# keys.py has no checkpoint-side name for "no file yet"; kept here until it does.
MISSING = "missing"
LEGACY_LANGUAGE_NOTICE = "legacy lrb file without metadata.language; language not checked"

_REQUIRED_SECTIONS = {keys.METADATA: dict, keys.METRICS: dict, keys.PREDICTIONS: list}


@dataclass
class CheckpointState:
    """What a checkpoint file is: `state` is PairState.COMPLETE, PairState.STALE, PairState.INVALID or MISSING."""

    state: str
    reasons: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None
    truncated: int | None = None    # predictions with truncated=true, when `data` no longer holds them
    # each item's outcome in a short form, kept when predictions go (ResultKind.item_outcomes); None when not asked for
    outcomes: tuple[str, str] | None = None
    # a complete or stale checkpoint's MLLOG compliance findings, (rule, file name, key, message) each
    # (kit.results.check.compliance_findings; empty: PASS), found while its file is read; None when not asked for
    compliance: tuple[tuple[str, str, str, str], ...] | None = None

    @property
    def complete(self) -> bool:
        """True when the checkpoint counts as done."""
        return self.state == PairState.COMPLETE


def without_predictions(state: CheckpointState, *, outcomes: bool = False) -> CheckpointState:
    """The state with every section of its data but `predictions`, and how many of those were truncated:
    what status, verify and report keep, so that memory does not grow with every prediction read. With
    `outcomes`, a complete or stale checkpoint also keeps its kind's short form of each item's outcome
    (ResultKind.item_outcomes: what the report's paired tests between runs read)."""
    data = state.data
    if not isinstance(data, dict) or keys.PREDICTIONS not in data:
        return state
    predictions = data[keys.PREDICTIONS]
    if outcomes and state.state in (PairState.COMPLETE, PairState.STALE):
        kind = kind_of(data)
        state = replace(state, outcomes=kind.item_outcomes(predictions) if kind is not None else None)
    try:   # at C speed when every prediction is an object
        truncated = sum(map(operator.is_, map(dict.get, predictions, repeat(keys.TRUNCATED)), repeat(True)))
    except TypeError:
        truncated = (sum(1 for p in predictions if isinstance(p, dict) and p.get(keys.TRUNCATED) is True)
                     if isinstance(predictions, list) else 0)
    return replace(state, data={k: v for k, v in data.items() if k != keys.PREDICTIONS}, truncated=truncated)


def recorded_metadata(path: str | os.PathLike[str], state: CheckpointState) -> dict[str, Any]:
    """A validated checkpoint's metadata: from its state, or read again when a cached verdict kept no
    sections ({} when it has none)."""
    data = state.data if state.data is not None else read_checkpoint(path).data
    metadata = (data or {}).get(keys.METADATA)
    return metadata if isinstance(metadata, dict) else {}


def read_checkpoint(path: str | os.PathLike[str]) -> CheckpointState:
    """Parse a checkpoint and check its three lrb sections exist; no content checks.

    `complete` here only means "parses, sections present": validate_checkpoint decides
    whether the checkpoint counts.
    """
    path = Path(path)
    if not path.exists():
        if path.is_symlink():   # a link to nothing stands there: not a file never written
            return _invalid(f"a broken link (to {os.readlink(path)!r})")
        return CheckpointState(MISSING)
    if not path.is_file():
        return _invalid("not a regular file")
    try:
        data = safejson.loads_utf8(path.read_bytes())
    except UnicodeDecodeError as exc:
        return _invalid(f"not valid UTF-8 (byte {exc.start})")
    except ValueError as exc:
        return _invalid(f"not valid JSON ({exc})")
    except OSError as exc:
        return _invalid(f"cannot be read ({exc.strerror})")
    if not isinstance(data, dict):
        return _invalid(f"top level is a JSON {type(data).__name__}, not an object")
    reasons = []
    for section, kind in _REQUIRED_SECTIONS.items():
        if section not in data:
            reasons.append(f"section {section!r} is missing")
        elif not isinstance(data[section], kind):
            reasons.append(f"section {section!r} is not a JSON {'object' if kind is dict else 'array'}")
    if reasons:
        return CheckpointState(PairState.INVALID, reasons=reasons, data=data)
    return CheckpointState(PairState.COMPLETE, data=data)


def validate_checkpoint(
    path: str | os.PathLike[str],
    *,
    run: str | None = None,
    language: str | None = None,
    expect: Expectation | None = None,
) -> CheckpointState:
    """Read a checkpoint and decide whether it is complete, stale or invalid, listing every reason.

    The file name and folder are always checked against metadata.run and metadata.language, the
    metadata against the job's provenance record, and the file against the evidence policy
    (kit.results.evidence: a kit checkpoint needs its provenance and its log; an lrb file gets the
    legacy-evidence notice); `run`, `language` and what `expect` holds
    (the benchmark's item ids and answers, the run's identity now) are checked when given. A file
    sound in itself but recorded for another identity than today's is stale; its ids and answers
    are then not compared, since they belong to the data it was run on.
    """
    path = Path(path)
    read = read_checkpoint(path)
    if read.state != PairState.COMPLETE:
        return read
    data = read.data
    metadata = data[keys.METADATA]
    reasons: list[str] = []
    notices: list[str] = []
    reasons += _run_reasons(metadata, path, run)
    reasons += _language_reasons(metadata, path, language, notices)
    reasons += _metadata_type_reasons(metadata)
    reasons += provenance_type_reasons(data)
    predictions = data[keys.PREDICTIONS]
    kind = kind_of(data)
    if kind is None:
        reasons.append(unknown_kind(data))
        return CheckpointState(PairState.INVALID, reasons, notices, data)
    with shared(predictions):   # the checks below read the same fields: each is extracted once
        shape = _prediction_reasons(kind, predictions)
        reasons += shape
        ids = column(predictions, keys.ITEM_ID, required=True) if not shape else []
        if not shape:
            reasons += _duplicate_reasons(ids)
            differing = kind.metrics_differ(data[keys.METRICS], kind.metrics(predictions))
            if differing:
                reasons.append(f"metrics do not recompute from predictions: {', '.join(differing)}")
            reasons += kind.verdict_faults(data)
        reasons += edit_reasons(data)
        reasons += evidence_reasons(path, data)
        notices += evidence_notices(path, data)
        if expect is not None:
            if not reasons and expect.identity is not None:
                stale = stale_reasons(metadata, expect.identity, legacy=keys.PROVENANCE not in data)
                if stale:
                    return CheckpointState(PairState.STALE, stale, notices, data)
            in_order = None
            try:
                expected_ids, answers = (expect.item_ids, expect.answers) if not shape else (None, None)
            except ConfigError as exc:   # its language's data cannot be read here: this file alone is not held to it
                reasons.append(unreadable_data_reason(exc))
                expected_ids = answers = None
            if expected_ids is not None:
                id_reasons = _item_id_reasons(ids, expected_ids)
                reasons += id_reasons
                if not id_reasons:   # the benchmark's ids, in its order
                    in_order = expect.answers_in_order
            if answers is not None:
                reasons += answer_reasons(predictions, answers, in_order)
    return CheckpointState(PairState.INVALID if reasons else PairState.COMPLETE, reasons, notices, data)


def unreadable_data_reason(exc: ConfigError) -> str:
    """Why a checkpoint is not counted when its language's benchmark data cannot be read (a missing or
    changed language file): the file is then not held to it, and says so, while the others are checked."""
    return f"cannot be checked against its benchmark: {exc.one_line()}"


def validate_summary(
    path: str | os.PathLike[str],
    *,
    run: str | None = None,
    language: str | None = None,
    expect: Expectation | None = None,
    outcomes: bool = False,
) -> CheckpointState:
    """without_predictions(validate_checkpoint(path, run=, language=, expect=), outcomes=outcomes): the state a
    batch reader keeps. A file its kind's typed reader takes (ResultKind.typed_read: one pass that parses and
    checks every item's shape) and that passes every check is judged from its items' columns; any other
    file takes validate_checkpoint, which names each fault. Both give the same state."""
    path = Path(path)
    state = _typed_summary(path, run, language, expect, outcomes)
    if state is not None:
        return state
    return without_predictions(validate_checkpoint(path, run=run, language=language, expect=expect), outcomes=outcomes)


def _typed_summary(path: Path, run: str | None, language: str | None, expect: Expectation | None,
                   outcomes: bool) -> CheckpointState | None:
    """validate_summary's state from a typed read when the file is complete or stale and nothing is in doubt;
    None sends it to the full path. The checks and their order are validate_checkpoint's."""
    try:
        read = typed_read(read_regular_file(path, "checkpoint", None))
    except (OSError, ConfigError):   # the full path says why it cannot be read
        return None
    if read is None:
        return None
    typed = read[1]
    data = typed.sections
    metadata = data[keys.METADATA]
    notices: list[str] = []
    if (_run_reasons(metadata, path, run) or _language_reasons(metadata, path, language, notices)
            or _metadata_type_reasons(metadata) or provenance_type_reasons(data) or not typed.items_pass()
            or edit_reasons(data)
            or evidence_reasons(path, data)):
        return None
    notices += evidence_notices(path, data)
    state, reasons = PairState.COMPLETE, []
    if expect is not None:
        stale = stale_reasons(metadata, expect.identity, legacy=keys.PROVENANCE not in data) \
            if expect.identity is not None else []
        if stale:
            state, reasons = PairState.STALE, stale
        else:
            try:
                if not typed.matches(expect):
                    return None
            except ConfigError:   # its benchmark data cannot be read: the full path says so
                return None
    return CheckpointState(state, reasons, notices, data, truncated=typed.truncated,
                           outcomes=typed.outcomes() if outcomes else None)


# Validates a batch of (path, validate_checkpoint keyword arguments) jobs, in order, without predictions:
# validate_each here, or kit.results.cache.CheckpointCache.validate_all (cached, the rest on every core).
ValidateAll = Callable[[list[tuple[Path, dict[str, Any]]]], list[CheckpointState]]


def validate_each(jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
    """validate_checkpoint(path, **kwargs) for each job, one file at a time, without predictions."""
    return [validate_summary(path, **kwargs) for path, kwargs in jobs]


def validate_each_with_outcomes(jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
    """validate_each, keeping each complete checkpoint's item outcomes (see without_predictions): a report's reader."""
    return [validate_summary(path, **kwargs, outcomes=True) for path, kwargs in jobs]


def validate_sealed(path: str | os.PathLike[str]) -> CheckpointState:
    """validate_checkpoint, and a complete kit checkpoint also held to its log (the sha256 and metrics its
    job logged: the sealed evidence policy, kit.results.evidence): what the commands that certify, publish
    or sign read. A checkpoint its log does not vouch for is invalid, with the reasons."""
    state = validate_checkpoint(path)
    if state.state != PairState.COMPLETE or state.data is None:
        return state
    sealed = evidence_reasons(Path(path), state.data, sealed=True)
    return replace(state, state=PairState.INVALID, reasons=sealed) if sealed else state


def verify_files(paths: Iterable[str | os.PathLike[str]],
                 expect_for: Callable[[Path], Expectation | None] = lambda path: None,
                 validate_all: ValidateAll = validate_each,
                 ) -> list[tuple[Path, CheckpointState]]:
    """Validate each file (structure, path, provenance, metric recomputation, and what
    `expect_for(path)` holds), in order, with `validate_all`; each state is kept without its predictions."""
    files = [Path(p) for p in paths]
    return list(zip(files, validate_all([(p, {"expect": expect_for(p)}) for p in files])))


def _run_reasons(metadata: Mapping[str, Any], path: Path, run: str | None) -> list[str]:
    # kept here so that the edits of this helper stay inside it
    from kit.results.records import run_key

    key = run_key(metadata)   # kit's `run`, lrb's `run_id` for a variant run, else `model_id`
    recorded = metadata.get(key)
    if not isinstance(recorded, str) or not recorded:
        return [f"metadata.{keys.RUN} (or lrb's metadata.{keys.RUN_ID} or metadata.{keys.MODEL_ID}) "
                "is missing or not a string"]
    reasons = []
    # Compare encoded names: decoding "__" back to "/" is ambiguous for ids containing "__".
    expected_name = f"{run_file_stem(recorded)}.json"
    if path.name != expected_name:
        same_text = unicodedata.normalize("NFC", path.name) == unicodedata.normalize("NFC", expected_name)
        reasons.append(
            f"metadata.{key} {recorded!r} does not match the file name {path.name!r} (expected {expected_name!r}"
            + ("; the same text in another Unicode normalisation: rename the file to the metadata's form)"
               if same_text else ")")
        )
    if run is not None and recorded != run:
        reasons.append(f"metadata.{key} {recorded!r} is not the expected run {run!r}")
    return reasons


def _language_reasons(
    metadata: Mapping[str, Any], path: Path, language: str | None, notices: list[str]
) -> list[str]:
    if keys.LANGUAGE not in metadata:
        notices.append(LEGACY_LANGUAGE_NOTICE)
        return []
    recorded = metadata[keys.LANGUAGE]
    if not isinstance(recorded, str) or not recorded:
        return [f"metadata.{keys.LANGUAGE} is {recorded!r}, not a language code"]
    reasons = []
    # a file recording its language counts for it wherever it lies: only a language folder must agree
    if recorded != path.parent.name and names_a_language(path.parent.name):
        reasons.append(f"metadata.{keys.LANGUAGE} {recorded!r} does not match the folder {path.parent.name!r}")
    if language is not None and recorded != language:
        reasons.append(f"metadata.{keys.LANGUAGE} {recorded!r} is not the expected language {language!r}")
    return reasons


# metadata keys kit reads, by the JSON type they must have when present (null is lrb's "not recorded")
_TEXT_KEYS = (keys.MODEL_ID, keys.MODEL_REVISION, keys.RUN, keys.RUN_ID, keys.BACKEND, keys.TASK, keys.DTYPE,
              keys.DECODING, keys.PROMPT_SHA256, keys.BENCHMARK_SHA256, keys.MANIFEST_SHA256)
_WHOLE_KEYS = (keys.MAX_NEW_TOKENS, keys.SEED, keys.BATCH_SIZE)
_NAME_KEYS = (keys.MODEL_ID, keys.RUN, keys.RUN_ID, keys.LANGUAGE)


def _metadata_type_reasons(metadata: Mapping[str, Any]) -> list[str]:
    """Metadata values of a type no writer of the format produces (a list digest, a text token
    budget, a duration that is not a finite number of seconds); one line each."""
    reasons = []
    for key in _TEXT_KEYS:
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            reasons.append(f"metadata.{key} is a JSON {_json_type(value)}, not a string")
    for key in _NAME_KEYS:   # names every table, page and CSV shows: one that would read as another is refused
        value = metadata.get(key)
        if isinstance(value, str) and unshowable(value):
            reasons.append(f"metadata.{key} {visible(clipped(value))} holds a control, bidirectional or invisible "
                           "character, which no model, run or language name has")
    for key in _WHOLE_KEYS:
        value = metadata.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            reasons.append(f"metadata.{key} is {_json_type(value)} {clipped(value)}, not a whole number")
    value = metadata.get(keys.DURATION_SECONDS)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value) or value < 0):
        reasons.append(f"metadata.{keys.DURATION_SECONDS} is {clipped(value)}, not a number of seconds")
    return reasons


# provenance sections, each an object when present; and the facts of them that name something (a digest, a
# runtime, a model), each a string when present: what check, compare and reproduce look up or cut
_PROVENANCE_SECTIONS = (keys.PROV_IMAGE, keys.PROV_MODEL, keys.PROV_DATA, keys.PROV_JOB, keys.PROV_HARDWARE,
                        keys.PROV_PACKAGES, keys.PROV_ENGINE_ENV, keys.PROV_UNKNOWN)
_PROVENANCE_TEXT = (
    (keys.PROV_IMAGE, (keys.IMAGE_BACKEND, keys.IMAGE_DIGEST, keys.IMAGE_ARTIFACT, keys.IMAGE_ARTIFACT_SHA256,
                       keys.IMAGE_LOCK_SHA256)),
    (keys.PROV_MODEL, (keys.PROV_MODEL_ID, keys.PROV_MODEL_REVISION, keys.WEIGHTS_MANIFEST_SHA256)),
    (keys.PROV_DATA, (keys.DATA_MANIFEST_SHA256, keys.DATA_FILE_SHA256, keys.DATA_PROMPT_SHA256)),
    (keys.PROV_JOB, (keys.JOB_SITE, keys.JOB_SCHEDULER, keys.JOB_RUNTIME, keys.JOB_NODE)),
)


def provenance_type_reasons(data: Mapping[str, Any]) -> list[str]:
    """The provenance block's parts of a type no job writes: the block or a section of it that is not an
    object, a digest, runtime or name that is not a string, weight file digests that are not an object of
    strings; one line each (a reader that looks them up never meets another type)."""
    prov = data.get(keys.PROVENANCE)
    if prov is None:   # lrb's own files have none
        return []
    reasons = _revision_reasons(data.get(keys.METADATA))
    if _provenance_well_typed(prov):   # kit's jobs write it so
        return reasons
    if not isinstance(prov, Mapping):
        return [*reasons, f"{keys.PROVENANCE} is a JSON {_json_type(prov)}, not an object"]
    reasons += [f"{keys.PROVENANCE}.{name} is a JSON {_json_type(prov[name])}, not an object"
                for name in _PROVENANCE_SECTIONS if prov.get(name) is not None and not isinstance(prov[name], Mapping)]
    for name, fields in _PROVENANCE_TEXT:
        section = prov.get(name)
        if not isinstance(section, Mapping):
            continue
        reasons += [f"{keys.PROVENANCE}.{name}.{key} is {_json_type(section[key])} {clipped(section[key])}, "
                    "not a string" for key in fields if section.get(key) is not None
                    and not isinstance(section[key], str)]
    model = prov.get(keys.PROV_MODEL)
    files = model.get(keys.WEIGHT_FILES_SHA256) if isinstance(model, Mapping) else None
    if files is not None and not (isinstance(files, Mapping) and all(isinstance(v, str) for v in files.values())):
        reasons.append(f"{keys.PROVENANCE}.{keys.PROV_MODEL}.{keys.WEIGHT_FILES_SHA256} is not an object of "
                       "file digests")
    return reasons


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _revision_reasons(metadata: Any) -> list[str]:
    """A kit job's recorded model revision that is not a commit: its worker records the 40-hex commit it
    loaded, or null when it ran with --allow-unpinned (reproduce and check read it as one)."""
    revision = metadata.get(keys.MODEL_REVISION) if isinstance(metadata, Mapping) else None
    if isinstance(revision, str) and _COMMIT.fullmatch(revision) is None:
        return [f"metadata.{keys.MODEL_REVISION} {clipped(revision)} is not a 40-hex commit, which is what a kit "
                "job records (or null, run with --allow-unpinned)"]
    return []


def _provenance_well_typed(prov: Any) -> bool:
    """provenance_type_reasons finds nothing, in one pass of plain lookups (it runs for every file read)."""
    if type(prov) is not dict:
        return False
    get = prov.get
    for name in _PROVENANCE_SECTIONS:
        section = get(name)
        if section is not None and type(section) is not dict:
            return False
    for name, fields in _PROVENANCE_TEXT:
        section = get(name)
        if section is None:
            continue
        for key in fields:
            value = section.get(key)
            if value is not None and type(value) is not str:
                return False
    model = get(keys.PROV_MODEL)
    files = model.get(keys.WEIGHT_FILES_SHA256) if model is not None else None
    return files is None or (type(files) is dict and all(type(v) is str for v in files.values()))


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _prediction_reasons(kind: ResultKind, predictions: list[Any]) -> list[str]:
    """Structure of each prediction by the kind's rules; one line per kind of fault, with its first offender."""
    if not predictions:
        return [f"{keys.PREDICTIONS} is empty"]
    return [f"{keys.PREDICTIONS}[{at[0]}]: {fault}{_more(len(at) - 1, 'item')}"
            for fault, at in kind.prediction_faults(predictions).items()]


def _duplicate_reasons(found: list[str]) -> list[str]:
    if len(set(found)) == len(found):
        return []
    duplicated = [item for item, count in Counter(found).items() if count > 1]
    if not duplicated:
        return []
    return [f"{keys.PREDICTIONS}: {keys.ITEM_ID} {duplicated[0]!r} is duplicated{_more(len(duplicated) - 1, 'id')}"]


def _item_id_reasons(found: list[str], expected: Sequence[str]) -> list[str]:
    reasons: list[str] = []
    if found == list(expected):
        return reasons
    found_set, expected_set = set(found), set(expected)
    missing = [i for i in expected if i not in found_set]
    extra = [i for i in found if i not in expected_set]
    if missing or extra:
        example = missing[0] if missing else extra[0]
        reasons.append(
            f"{keys.PREDICTIONS}: {keys.ITEM_ID}s differ from the benchmark's "
            f"({len(missing)} missing, {len(extra)} not in the benchmark, e.g. {example!r})"
        )
    elif len(found) == len(expected):
        first = next(i for i, (a, b) in enumerate(zip(found, expected)) if a != b)
        reasons.append(
            f"{keys.PREDICTIONS}: {keys.ITEM_ID}s are the benchmark's in a different order (first at position {first})"
        )
    else:
        reasons.append(f"{keys.PREDICTIONS}: {len(found)} items, the benchmark has {len(expected)}")
    return reasons


def _more(count: int, noun: str) -> str:
    return f" (and {count} more {noun}{'s' if count > 1 else ''})" if count else ""


def _invalid(reason: str) -> CheckpointState:
    return CheckpointState(PairState.INVALID, reasons=[reason])
