"""lrb's result-file schema, as facts read from its public repository
(NoeFlandre/benchmark-llms-landuse-relevance), restated here for tests: the result files it writes
and reads, fixtures built from those facts, and a checker of a file against them. Written for kit's
tests; no lrb code or result file is copied.

Facts (where in lrb they come from):
- domain/records.py RunMetadata.from_dict builds the record with cls(**payload): every metadata key
  must be a field, and the fields without a default must be there (REQUIRED below; `language` since
  the multilingual layout, tests/unit/test_records.py); adapters/results_store.py read_run turns the
  TypeError into "not a valid run result".
- domain/records.py Prediction: item_id, expected (Label: "yes" | "no"), predicted (Label | None:
  null is an unparsed answer; there is no "unparsed" label, domain/labels.py), raw_output, truncated
  (default false: older files lack it), parse_mode (domain/parsing.py: exact | leading | last, or
  null), and per-generation counters that may be null.
- domain/metrics.py: an unparsed answer counts in confusion.unparsed and in n_items only; the
  metrics are exactly evaluate(outcomes); RunResult refuses metrics that are not (records.py).
- docs/results.md: a truncated generation is scored unparsed however many verdict words it holds.
- domain/roster.py: a run named differently from its model (DSpark: "<model>+DSpark", baseline
  "<model>@sglang") records metadata.run_id; the file is named after run_id or model_id
  (results_store.run_filename: "/" -> "__") in the language's folder (RESULTS/<language>/).
- adapters/results_store.write_run: sorted keys, indent 2, ensure_ascii False, final newline; the
  file also holds a `speed` section, which the loader does not read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

REQUIRED = ("model_id", "language", "model_revision", "prompt_sha256", "benchmark_sha256", "max_new_tokens",
            "batch_size", "seed", "decoding", "dtype", "started_at", "duration_seconds")
OPTIONAL = ("source_commit", "run_id", "package_version", "runtime", "draft_model_id", "draft_model_revision",
            "speculative", "generation_mode", "inference", "decision_rule", "throughput_items_per_second",
            "peak_vram_bytes", "sequence_length",
            # RunMetadata's newest fields (adapters/pipeline.py _metadata fills them); to_dict omits them when empty
            "quantization", "device_name")
PREDICTION_KEYS = ("item_id", "expected", "predicted", "raw_output", "truncated", "parse_mode", "latency_seconds",
                   "generated_tokens", "verify_steps", "accepted_drafts", "proposed_drafts")
PARSE_MODES = ("exact", "leading", "last", None)
METRICS = ("accuracy", "balanced_accuracy", "f1", "precision", "recall", "matthews_corrcoef", "unparsed_rate",
           "n_items", "confusion")
CELLS = ("true_positive", "false_negative", "true_negative", "false_positive", "unparsed")

# a reasoning model's answer: deliberation mentioning both verdicts, then the answer (parse mode "last")
REASONING = ("<think>\n" + "The sentence names a harbour, so yes could fit; but it is about an event, so no. " * 220
             + "Thus output: no.\n</think>\nno")
CUT_OFF = "<think>\n" + "Is a harbour visible from above? yes, perhaps; or no. " * 300   # budget spent mid-thought


def evaluate(outcomes: list[tuple[str, str | None]]) -> dict[str, Any]:
    """lrb's metrics of (expected, predicted) pairs, predicted None being unparsed (domain/metrics.py)."""
    c = dict.fromkeys(CELLS, 0)
    for expected, predicted in outcomes:
        if predicted is None:
            c["unparsed"] += 1
        elif predicted == "yes":
            c["true_positive" if expected == "yes" else "false_positive"] += 1
        else:
            c["false_negative" if expected == "yes" else "true_negative"] += 1
    tp, fn, tn, fp = c["true_positive"], c["false_negative"], c["true_negative"], c["false_positive"]
    total = sum(c.values())

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return {
        "confusion": c, "n_items": total, "accuracy": ratio(tp + tn, total), "precision": precision,
        "recall": recall, "f1": ratio(2 * precision * recall, precision + recall),
        "balanced_accuracy": (ratio(tp, tp + fn) + ratio(tn, tn + fp)) / 2,
        "matthews_corrcoef": ratio(float(tp * tn - fp * fn),
                                   math.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))),
        "unparsed_rate": ratio(c["unparsed"], total),
    }


def prediction(item_id: str, expected: str, predicted: str | None, raw: str, *, truncated: bool = False,
               parse_mode: str | None = "exact") -> dict[str, Any]:
    """One prediction as lrb writes it, counters included (null: not measured)."""
    return {"item_id": item_id, "expected": expected, "predicted": predicted, "raw_output": raw,
            "truncated": truncated, "parse_mode": parse_mode if predicted is not None else None,
            "latency_seconds": None, "generated_tokens": None, "verify_steps": None, "accepted_drafts": None,
            "proposed_drafts": None}


def result(model_id: str, language: str | None, predictions: list[dict[str, Any]], **metadata: Any) -> dict[str, Any]:
    """A whole lrb result file: metadata (lrb's defaults, then `metadata`), metrics, predictions, speed."""
    meta = {"model_id": model_id, "model_revision": "654f9463ce32b05d0429d76fe1f580b27d4c1ac0",
            "prompt_sha256": "2" * 64, "benchmark_sha256": "a" * 64, "max_new_tokens": 4096, "batch_size": 16,
            "seed": 0, "decoding": "greedy", "dtype": "bfloat16", "started_at": "2026-09-13T17:31:46Z",
            "duration_seconds": 12.5, "source_commit": "c" * 40, "run_id": "", "package_version": "0.1.0"}
    if language is not None:
        meta["language"] = language
    meta.update(metadata)
    return {"metadata": meta, "metrics": evaluate([(p["expected"], p["predicted"]) for p in predictions]),
            "predictions": predictions,
            "speed": {"sentences_per_second": 1.0, "latency_p50_seconds": None, "latency_p95_seconds": None,
                      "generated_tokens": None, "output_tokens_per_second": None, "mean_accept_length": None,
                      "draft_accept_rate": None}}


def file_name(data: dict[str, Any]) -> str:
    """The file lrb writes a result to: named after run_id, else model_id ("/" -> "__")."""
    meta = data["metadata"]
    return f"{(meta.get('run_id') or meta['model_id']).replace('/', '__')}.json"


def write(root: Path, data: dict[str, Any]) -> Path:
    """Write `data` where lrb would: ROOT/<language>/<run>.json, as lrb writes it."""
    path = root / data["metadata"]["language"] / file_name(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return path


def problems(path: Path, root: Path) -> list[str]:
    """Why lrb's loader would refuse the file at `path` (under results folder `root`); [] when it reads it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"not JSON: {exc}"]
    out = []
    meta, preds, metrics = data.get("metadata"), data.get("predictions"), data.get("metrics")
    if not isinstance(meta, dict) or not isinstance(preds, list) or not isinstance(metrics, dict):
        return ["metadata, predictions or metrics missing"]
    out += [f"metadata.{k} is not lrb's" for k in sorted(set(meta) - set(REQUIRED) - set(OPTIONAL))]
    out += [f"metadata.{k} is missing" for k in REQUIRED if k not in meta]
    for i, p in enumerate(preds):
        if not {"item_id", "expected", "predicted", "raw_output"} <= set(p):
            out.append(f"predictions[{i}] lacks a required key")
            continue
        if p["expected"] not in ("yes", "no") or p["predicted"] not in ("yes", "no", None):
            out.append(f"predictions[{i}]: {p['expected']!r}/{p['predicted']!r} is not a Label (or null)")
        if p.get("parse_mode") not in PARSE_MODES or not isinstance(p.get("truncated", False), bool):
            out.append(f"predictions[{i}]: parse_mode or truncated is not lrb's")
    if not out:
        ids = [p["item_id"] for p in preds]
        if len(set(ids)) != len(ids):
            out.append("duplicate item id")
        if {k: metrics.get(k) for k in METRICS} != evaluate([(p["expected"], p["predicted"]) for p in preds]):
            out.append("metrics do not match predictions")
        if path.relative_to(root).as_posix() != f"{meta['language']}/{file_name(data)}":
            out.append(f"lrb would write it at {meta['language']}/{file_name(data)}")
        if path.read_text(encoding="utf-8") != json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n":
            out.append("not written as lrb writes (sorted keys, indent 2, UTF-8, final newline)")
    return out
