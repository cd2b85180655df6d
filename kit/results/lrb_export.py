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
  parse_mode (lrb's exact / leading / last, else null); a score run's raw_output is lrb's
  "no=<score> yes=<score> native=<score>".
- metrics: recomputed from those predictions (the lrb formulas of kit.results.metrics).

Files go to OUT/<language>/<run with "/" -> "__">.json, written as lrb writes them (sorted keys,
indent 2, UTF-8, final newline). Nothing is written unless every checkpoint is valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.config.roster import split_variant
from kit.errors import ConfigError
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint
from kit.results.kinds import kind_of
from kit.results.kinds.lrb import LRB
from kit.results.metrics import compute_metrics, verdict
from kit.results.records import recorded_run
from kit.results.store import check_outside, checkpoint_path, dumps_checkpoint, iter_checkpoint_files, write_text_atomic

# lrb's metadata record: the keys it requires, and the optional ones copied when a file has them
LRB_REQUIRED = (
    keys.MODEL_ID, keys.LANGUAGE, keys.MODEL_REVISION, keys.PROMPT_SHA256, keys.BENCHMARK_SHA256,
    keys.MAX_NEW_TOKENS, keys.BATCH_SIZE, keys.SEED, keys.DECODING, keys.DTYPE, keys.STARTED_AT,
    keys.DURATION_SECONDS,
)
LRB_OPTIONAL = (
    keys.SOURCE_COMMIT, keys.RUN_ID, keys.PACKAGE_VERSION, "runtime", "draft_model_id", "draft_model_revision",
    "speculative", "generation_mode", "inference", "decision_rule", "throughput_items_per_second",
    "peak_vram_bytes", "sequence_length",
)
LRB_PARSE_MODES = (keys.PARSE_EXACT, keys.PARSE_LEADING, keys.PARSE_LAST)
_TEXT_DEFAULTS = (keys.SOURCE_COMMIT, keys.PACKAGE_VERSION)   # str in lrb's record: "" where kit has null


@dataclass
class LrbExport:
    """What an export did: the files written, and the checkpoints that stopped it (path -> reasons)."""

    written: list[Path] = field(default_factory=list)
    refused: dict[Path, list[str]] = field(default_factory=dict)


def export_lrb(results: Path, out: Path) -> LrbExport:
    """Write every checkpoint of `results` as an lrb result file under `out`; when one is invalid, not
    an lrb checkpoint, or lacks a key lrb requires, write nothing and list why."""
    results, out = Path(results), Path(out)
    files = iter_checkpoint_files(results)
    if not files:
        raise ConfigError(f"{results}: no checkpoint files (RESULTS/<language>/<run>.json)",
                          fix="pass the results folder of a sweep")
    check_outside(results, out, "the export folder", "lrb-results")
    export = LrbExport()
    converted: dict[Path, dict[str, Any]] = {}
    for path in files:
        state = validate_checkpoint(path)
        if state.state != keys.COMPLETE or state.data is None:
            export.refused[path] = state.reasons or [state.state]
            continue
        try:
            converted[path] = lrb_result(state.data, path.parent.name)
        except ValueError as exc:
            export.refused[path] = [str(exc)]
    if export.refused:
        return export
    for path, data in converted.items():
        meta = data[keys.METADATA]
        dest = checkpoint_path(out, meta.get(keys.RUN_ID) or meta[keys.MODEL_ID], meta[keys.LANGUAGE])
        write_text_atomic(dest, dumps_checkpoint(data))
        export.written.append(dest)
    return export


def lrb_result(data: Mapping[str, Any], language: str) -> dict[str, Any]:
    """One valid checkpoint (kit's or lrb's) as lrb's result record; ValueError when it cannot be one."""
    if kind_of(data) is not LRB:
        raise ValueError("not an lrb checkpoint (lrb's loader reads only its own kind)")
    meta = data[keys.METADATA]
    score = meta.get(keys.TASK) == keys.TASK_SCORE
    predictions = [_prediction(p, score) for p in data[keys.PREDICTIONS]]
    return {keys.METADATA: _metadata(meta, language, score), keys.METRICS: compute_metrics(predictions),
            keys.PREDICTIONS: predictions}


def _metadata(meta: Mapping[str, Any], language: str, score: bool) -> dict[str, Any]:
    out = {k: meta[k] for k in (*LRB_REQUIRED, *LRB_OPTIONAL) if k in meta}
    run = recorded_run(meta)
    out.setdefault(keys.MODEL_ID, split_variant(run)[0] if run else None)
    out[keys.LANGUAGE] = meta.get(keys.LANGUAGE) or language
    if run and run != out[keys.MODEL_ID]:
        out[keys.RUN_ID] = run
    for key in _TEXT_DEFAULTS:
        if out.get(key) is None:
            out[key] = ""
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
        raw = f"no={float(no):.6f} yes={float(yes):.6f} native={float(native)!r}"
    return {
        keys.ITEM_ID: item[keys.ITEM_ID], keys.EXPECTED: item[keys.EXPECTED],
        keys.PREDICTED: None if label == keys.UNPARSED else label, keys.RAW_OUTPUT: raw,
        keys.TRUNCATED: item.get(keys.TRUNCATED) is True, keys.PARSE_MODE: mode if mode in LRB_PARSE_MODES else None,
    }
