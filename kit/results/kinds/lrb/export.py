"""`kit export lrb`: the lrb checkpoints of a results tree as lrb's own result files, which lrb's loader
reads (docs/checkpoint-format.md, "lrb's own tools").

lrb's loader builds its metadata record from every key a file has and refuses a key it does not
know; it reads `predicted` as yes, no or null (it has no `unparsed` label) and requires the metrics
to be exactly those of the predictions. So an exported file holds:

- metadata: lrb's keys only. kit's run name becomes lrb's `run_id` when it names a variant; the
  keys only kit writes (run, backend, task, options, manifest_sha256, ...) are left out: they stay
  in kit's checkpoint, with its provenance. A score run is marked as lrb marks its scoring runs:
  inference "scoring", decoding "none", max_new_tokens 0.
- predictions: item_id, expected, predicted (unparsed -> null), raw_output, truncated and
  parse_mode (lrb's exact / leading / last, else null), and lrb's per-generation counters
  (latency_seconds, generated_tokens, verify_steps, accepted_drafts, proposed_drafts) where the
  checkpoint has them; a score run's raw_output is lrb's "no=<score> yes=<score> native=<score>",
  each with six decimals.
- metrics: recomputed from those predictions (the lrb formulas of kit.results.metrics).
- speed: the checkpoint's own section, when it has one (lrb's loader does not read it; lrb derives
  its speed columns from the counters).

Files go to OUT/<language>/<run with "/" -> "__">.json, written as lrb writes them (sorted keys,
indent 2, UTF-8, final newline). Nothing is written unless every checkpoint is valid and every file
serialises: a value JSON or UTF-8 cannot hold (NaN, an infinite or out-of-range number, a lone
surrogate) is a ConfigError naming the checkpoint and the value's JSON path. OUT is written under the
output contract (kit.outputs): built beside and swapped in, an earlier export's files kept (those of
the same pairs replaced), and a folder holding anything kit did not export there refused.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.config.roster import split_variant
from kit.errors import ConfigError
from kit.files import name_part, write_bytes_new
from kit.outputs import check_output, write_output
from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import validate_sealed
from kit.results.kinds import kind_of
from kit.results.kinds.lrb import LRB
from kit.results.metrics import compute_metrics, verdict
from kit.results.records import recorded_run
from kit.config.names import run_file_stem
from kit.results.store import (
    UNDETERMINED_LANGUAGE, left_out_note, checkpoint_path, dumps_checkpoint, file_language, iter_checkpoint_files,
    linked_part,
)

# lrb's metadata record: the keys it requires, and the optional ones copied when a file has them
LRB_REQUIRED = (
    keys.MODEL_ID, keys.LANGUAGE, keys.MODEL_REVISION, keys.PROMPT_SHA256, keys.BENCHMARK_SHA256,
    keys.MAX_NEW_TOKENS, keys.BATCH_SIZE, keys.SEED, keys.DECODING, keys.DTYPE, keys.STARTED_AT,
    keys.DURATION_SECONDS,
)
LRB_OPTIONAL = (
    keys.SOURCE_COMMIT, keys.RUN_ID, keys.PACKAGE_VERSION, "runtime", "draft_model_id", "draft_model_revision",
    "speculative", "generation_mode", "inference", "decision_rule", "throughput_items_per_second",
    "peak_vram_bytes", "sequence_length", "quantization", "device_name",
)
# lrb's RunMetadata.to_dict leaves these out when empty, so a full-precision run keeps its bytes
_OMITTED_WHEN_EMPTY = ("quantization", "device_name")
# lrb's per-generation measurements (domain/records.py _COUNTERS): a number, or null when not measured
LRB_COUNTERS = ("latency_seconds", "generated_tokens", "verify_steps", "accepted_drafts", "proposed_drafts")
LRB_PARSE_MODES = (keys.PARSE_EXACT, keys.PARSE_LEADING, keys.PARSE_LAST)
_TEXT_DEFAULTS = (keys.SOURCE_COMMIT, keys.PACKAGE_VERSION)   # str in lrb's record: "" where kit has null


@dataclass
class LrbExport:
    """What an export did: the files written, and the checkpoints that stopped it (path -> reasons)."""

    written: list[Path] = field(default_factory=list)
    refused: dict[Path, list[str]] = field(default_factory=dict)
    same_as: dict[Path, Path] = field(default_factory=dict)   # a checkpoint whose lrb file another's equals
    not_counted: str | None = None   # why files under RESULTS/archive/ were left out (kit.results.store.archive_note)
    # an lrb file (no provenance) converted, not given back: what lrb's writer does not write and the
    # converted file leaves out or changes (fields_left_out); the source file itself is untouched
    converted: dict[Path, list[str]] = field(default_factory=dict)


def export_lrb(results: Path, out: Path) -> LrbExport:
    """Write every checkpoint of `results` as an lrb result file under `out`; when one is invalid, not
    an lrb checkpoint, or lacks a key lrb requires, write nothing and list why (lrb_bytes: a ConfigError
    for a value JSON cannot hold). Each file is converted and written into the output's staging folder
    as it is read, so only its place and digest are held (a 20,000-pair tree's lrb files are GBs); the
    staging folder is dropped, not swapped in, when any file is refused."""
    results, out = Path(results), Path(out)
    files = iter_checkpoint_files(results)
    if not files:
        raise ConfigError(f"{results}: no checkpoint files (RESULTS/<language>/<run>.json)",
                          fix="pass the results folder of a sweep")
    check_output(out, "export", force_needed=False, inputs=[results])
    export = LrbExport(not_counted=left_out_note(results))
    made: dict[Path, tuple[Path, str]] = {}
    try:
        with write_output(out, "export", force_needed=False, update=True, inputs=[results]) as folder:
            written: set[Path] = set()
            for path in files:
                link = linked_part(results, path, log=False)   # a linked log: invalid evidence, said below
                if link is not None:   # lrb's tree gets the sites' own files, never what a link points at
                    export.refused[path] = [f"{link} is a link, not a file the site wrote"]
                    continue
                state = validate_sealed(path)   # what its job logged, too
                if state.state != PairState.COMPLETE or state.data is None:
                    export.refused[path] = state.reasons or [state.state]
                    continue
                try:
                    rel, body = lrb_file(results, path, state.data)
                except ValueError as exc:
                    export.refused[path] = [str(exc)]
                    continue
                made[path] = (rel, hashlib.sha256(body).hexdigest())
                left_out = fields_left_out(state.data)
                if left_out:
                    export.converted[path] = left_out
                if not export.refused and rel not in written:   # the first checkpoint of each lrb file
                    write_bytes_new(folder.stage / rel, body)   # in one step: the folder is made durable and swapped in whole
                    written.add(rel)
            sources = _one_source_each(export, made)
            if export.refused:
                raise _Refused
    except _Refused:
        return export
    export.written = [out / rel for rel in sources]
    return export


class _Refused(Exception):
    """Leaves write_output's block when a checkpoint is refused: its staging folder is dropped."""


def lrb_file(results: Path, path: Path, data: Mapping[str, Any]) -> tuple[Path, bytes]:
    """The lrb result file of one valid checkpoint of RESULTS: (where it goes, relative to the output, and
    its bytes). A file lrb wrote (lrb_own_bytes) comes back as it is, in its own place; any other is
    converted (lrb_result) and written as lrb writes it. A ValueError when it cannot be an lrb file; a
    ConfigError for a value JSON cannot hold. `kit export lrb` and `kit release` both write through it."""
    kept = lrb_own_bytes(path, data)
    if kept is not None:   # lrb's own file, only read here: lrb's bytes back, in lrb's place
        return Path(path).relative_to(results), kept
    converted = lrb_result(data, file_language(results, path, data.get(keys.METADATA)))
    return _destination(Path(), converted, Path(path).parent.relative_to(results)), lrb_bytes(path, converted)


def _one_source_each(export: LrbExport, made: dict[Path, tuple[Path, str]]) -> dict[Path, Path]:
    """{lrb file: the checkpoint it is made from}, from `made` (checkpoint -> its lrb file and that file's
    sha256). Checkpoints that would give one lrb file different bytes (lrb's top-level copy of a run and
    its copy in a batch folder) are refused, none dropped; byte-equal ones give the file once and are
    listed in `export.same_as`."""
    by_file: dict[Path, list[Path]] = {}
    for source, (rel, _) in made.items():
        by_file.setdefault(rel, []).append(source)
    for rel, sources in by_file.items():
        if len(sources) < 2:
            continue
        if len({made[s][1] for s in sources}) > 1:
            for source in sources:
                others = ", ".join(str(o) for o in sources if o != source)
                export.refused[source] = [f"would be written to the same lrb file {rel.as_posix()} as {others}, "
                                          "which holds other results; export each folder on its own (-o apart)"]
        else:
            export.same_as.update({s: sources[0] for s in sources[1:]})
    return {rel: sources[0] for rel, sources in by_file.items()}


def _destination(out: Path, data: Mapping[str, Any], folder: Path) -> Path:
    """Where lrb keeps result `data` under `out`: <language>/<run_id or model_id>.json, or, for a result
    that names no language, the `folder` its checkpoint lay in (lrb's top level or a batch folder)."""
    meta = data[keys.METADATA]
    run = meta.get(keys.RUN_ID) or meta[keys.MODEL_ID]
    if keys.LANGUAGE not in meta:
        return out / folder / f"{name_part(run_file_stem(run), 'run name')}.json"
    # a batch's language folder (<batch>/<language>/) keeps its batch: a collection of its own, never the
    # tree's own copy of the pair
    batch = folder.parts[0] if len(folder.parts) == 2 else None
    return checkpoint_path(out / batch if batch else out, run, meta[keys.LANGUAGE])


def lrb_own_bytes(path: Path, data: Mapping[str, Any]) -> bytes | None:
    """The bytes of a valid lrb checkpoint when it is a file as lrb writes it (no provenance block, which
    kit's jobs write, and its bytes lrb's own serialisation of what they hold), which an export gives
    back as they are; None for any other file, which is converted (lrb_result)."""
    if kind_of(data) is not LRB or keys.PROVENANCE in data or not _predictions_as_lrb_writes(data):
        return None
    body = path.read_bytes()
    try:
        same = dumps_checkpoint(json.loads(body)).encode("utf-8") == body
    except ValueError:   # a value lrb's writer would refuse (NaN, a lone surrogate): not lrb's bytes
        return None
    return body if same else None


# what lrb's writer puts in a result file, section by section, and nothing else
_LRB_SECTIONS = frozenset({keys.METADATA, keys.METRICS, keys.PREDICTIONS, keys.SPEED})
_LRB_METADATA = frozenset({*LRB_REQUIRED, *LRB_OPTIONAL})
_LRB_PREDICTION = frozenset({keys.ITEM_ID, keys.EXPECTED, keys.PREDICTED, keys.RAW_OUTPUT, keys.TRUNCATED,
                             keys.PARSE_MODE, *LRB_COUNTERS})


def _predictions_as_lrb_writes(data: Mapping[str, Any]) -> bool:
    """Whether the file holds only what lrb writes, of the types its loader reads: its sections, its
    metadata keys, and predictions whose `predicted` is yes, no or null (lrb has no "unparsed" label),
    `raw_output` a string, `truncated` a boolean, `parse_mode` one of lrb's or null and each counter a number
    or null. A file with anything else came from another writer or a hand edit, and is converted
    (lrb_result) rather than given back as it is."""
    predictions, metadata = data.get(keys.PREDICTIONS), data.get(keys.METADATA)
    if not (set(data) <= _LRB_SECTIONS and isinstance(metadata, Mapping) and set(metadata) <= _LRB_METADATA
            and isinstance(predictions, list)):
        return False
    return all(isinstance(p, Mapping) and set(p) <= _LRB_PREDICTION
               and p.get(keys.PREDICTED, "") in (keys.YES, keys.NO, None) and isinstance(p.get(keys.RAW_OUTPUT), str)
               and isinstance(p.get(keys.TRUNCATED, False), bool) and p.get(keys.PARSE_MODE) in (None, *LRB_PARSE_MODES)
               and all(_counter(p[k]) for k in LRB_COUNTERS if k in p) for p in predictions)


def fields_left_out(data: Mapping[str, Any]) -> list[str]:
    """For an lrb file (no provenance block): what it holds that lrb's writer, as kit knows it, does not
    write, and its export therefore leaves out or changes (a section, a metadata key, a prediction key, a
    parse mode), one phrase each; [] for a kit checkpoint, whose export is a conversion by design."""
    if keys.PROVENANCE in data:
        return []
    out = []
    sections = sorted(set(data) - _LRB_SECTIONS)
    if sections:
        out.append(f"section(s) {', '.join(sections)}")
    metadata = data.get(keys.METADATA)
    extra = sorted(set(metadata) - _LRB_METADATA) if isinstance(metadata, Mapping) else []
    if extra:
        out.append(f"metadata key(s) {', '.join(extra)}")
    predictions = data.get(keys.PREDICTIONS)
    items = [p for p in predictions if isinstance(p, Mapping)] if isinstance(predictions, list) else []
    keys_extra = sorted({k for p in items for k in p} - _LRB_PREDICTION)
    if keys_extra:
        out.append(f"prediction key(s) {', '.join(keys_extra)}")
    modes = sorted({repr(p[keys.PARSE_MODE]) for p in items
                    if p.get(keys.PARSE_MODE) not in (None, *LRB_PARSE_MODES)})
    if modes:
        out.append(f"parse_mode {', '.join(modes)} (written as null)")
    return out


def _counter(value: Any) -> bool:
    """One of lrb's counters as its loader reads one: a number, or null (not measured)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def lrb_bytes(source: Path, data: dict[str, Any]) -> bytes:
    """The bytes of lrb result `data` (converted from checkpoint `source`) as lrb writes them; a
    ConfigError naming `source` and the JSON path of a value JSON or UTF-8 cannot hold."""
    try:
        return dumps_checkpoint(data).encode("utf-8")
    except ValueError:   # UnicodeEncodeError is one too
        where, what = _unwritable(data, "") or ("?", "a value JSON cannot hold")
        raise ConfigError(f"{source}: {where} {what}, so it cannot be written to an lrb result file",
                          fix=f"mend {where} in {source} (or rerun that pair), then export again") from None


def _unwritable(value: Any, where: str) -> tuple[str, str] | None:
    """The JSON path of the first value or key under `value` that lrb's UTF-8 JSON cannot hold (a NaN or
    infinite float: 1e400 reads as infinity; a string with a lone surrogate), and why; None when none."""
    if isinstance(value, float) and not math.isfinite(value):
        return where, f"is {value!r}, which JSON cannot hold"
    if isinstance(value, str):
        return None if _encodes(value) else (where, "holds a lone surrogate, which UTF-8 cannot encode")
    if isinstance(value, Mapping):
        children = [(f"{where}.{_segment(k)}" if where else _segment(k), k, v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(f"{where}[{i}]", "", v) for i, v in enumerate(value)]
    else:
        return None
    for path, key, child in children:
        if not _encodes(str(key)):
            return path, "is a key with a lone surrogate, which UTF-8 cannot encode"
        found = _unwritable(child, path)
        if found:
            return found
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _segment(key: Any) -> str:
    """A key as a path segment; one UTF-8 cannot encode is shown escaped, so the error line prints."""
    return str(key) if _encodes(str(key)) else ascii(key)


def lrb_result(data: Mapping[str, Any], language: str) -> dict[str, Any]:
    """One valid checkpoint (kit's or lrb's) as lrb's result record; ValueError when it cannot be one."""
    if kind_of(data) is not LRB:
        raise ValueError("not an lrb checkpoint (lrb's loader reads only its own kind)")
    meta = data[keys.METADATA]
    score = meta.get(keys.TASK) == keys.TASK_SCORE
    predictions = [_prediction(p, score) for p in data[keys.PREDICTIONS]]
    out = {keys.METADATA: _metadata(meta, language, score), keys.METRICS: compute_metrics(predictions),
           keys.PREDICTIONS: predictions}
    if isinstance(data.get(keys.SPEED), Mapping):
        out[keys.SPEED] = dict(data[keys.SPEED])
    return out


def _metadata(meta: Mapping[str, Any], language: str, score: bool) -> dict[str, Any]:
    out = {k: meta[k] for k in (*LRB_REQUIRED, *LRB_OPTIONAL) if k in meta}
    run = recorded_run(meta)
    out.setdefault(keys.MODEL_ID, split_variant(run)[0] if run else None)
    if meta.get(keys.LANGUAGE) or language != UNDETERMINED_LANGUAGE:   # lrb's single-language files name none
        out[keys.LANGUAGE] = meta.get(keys.LANGUAGE) or language
    if run and run != out[keys.MODEL_ID]:
        out[keys.RUN_ID] = run
    for key in _TEXT_DEFAULTS:
        if out.get(key) is None:
            out[key] = ""
    for key in _OMITTED_WHEN_EMPTY:
        if out.get(key) in ("", None):
            out.pop(key, None)
    if score:
        out.update({"inference": "scoring", keys.DECODING: "none", keys.MAX_NEW_TOKENS: 0})
    missing = [k for k in LRB_REQUIRED if k not in out or (k != keys.MODEL_REVISION and out[k] is None)]
    if missing:
        raise ValueError(f"metadata.{missing[0]} is missing, and lrb's loader requires it")
    return out


def _prediction(item: Mapping[str, Any], score: bool) -> dict[str, Any]:
    label = verdict(item[keys.PREDICTED])
    mode = item.get(keys.PARSE_MODE)
    raw = item.get(keys.RAW_OUTPUT, "")
    if score:
        no, yes, native = (item.get(k) for k in (keys.SCORE_NO, keys.SCORE_YES, keys.NATIVE_SCORE))
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (no, yes, native)):
            raise ValueError(f"prediction {item[keys.ITEM_ID]!r} of a score run lacks numeric "
                             f"{keys.SCORE_NO}, {keys.SCORE_YES} and {keys.NATIVE_SCORE}")
        raw = f"no={float(no):.6f} yes={float(yes):.6f} native={float(native):.6f}"
    return {
        keys.ITEM_ID: item[keys.ITEM_ID], keys.EXPECTED: item[keys.EXPECTED],
        keys.PREDICTED: None if label == keys.UNPARSED else label, keys.RAW_OUTPUT: raw,
        keys.TRUNCATED: item.get(keys.TRUNCATED) is True, keys.PARSE_MODE: mode if mode in LRB_PARSE_MODES else None,
        **_counters(item),
    }


def _counters(item: Mapping[str, Any]) -> dict[str, Any]:
    """lrb's counters the prediction has; one that is neither a number nor null is left out, since
    lrb sums them for its speed columns and reads a missing one as not measured."""
    return {k: item[k] for k in LRB_COUNTERS if k in item and _counter(item[k])}
