"""The parts of a checkpoint built from one pair's outputs: lrb predictions, speed figures, and
the metadata every kind shares."""

from __future__ import annotations

import statistics
from typing import Any

import kit
from kit.config.roster import Run
from kit.results import keys
from kit.results.answers import parse_verdict
from kit.worker.backends.base import Generation, Score


def generation_predictions(item_ids: list[str], expected: list[str], outputs: list[Generation]) -> list[dict[str, Any]]:
    """Predictions for the generate task: parse each answer into yes / no / unparsed."""
    preds = []
    for item_id, exp, out in zip(item_ids, expected, outputs, strict=True):
        label, mode = parse_verdict(out.text, out.truncated)
        preds.append({
            keys.ITEM_ID: item_id, keys.EXPECTED: exp, keys.PREDICTED: label,
            keys.RAW_OUTPUT: out.text, keys.TRUNCATED: out.truncated, keys.PARSE_MODE: mode,
        })
    return preds


def score_predictions(item_ids: list[str], expected: list[str], scores: list[Score], threshold: float) -> list[dict[str, Any]]:
    """Predictions for the score task: yes when the normalised yes-score reaches the threshold."""
    preds = []
    for item_id, exp, sc in zip(item_ids, expected, scores, strict=True):
        preds.append({
            keys.ITEM_ID: item_id, keys.EXPECTED: exp, keys.PREDICTED: keys.YES if sc.yes >= threshold else keys.NO,
            keys.RAW_OUTPUT: repr(float(sc.native)), keys.TRUNCATED: False, keys.PARSE_MODE: keys.PARSE_SCORE,
            keys.SCORE_YES: float(sc.yes), keys.SCORE_NO: float(sc.no), keys.NATIVE_SCORE: float(sc.native),
        })
    return preds


def speed_block(load_seconds: float, batch_seconds: list[float], n_items: int, generated_tokens: int) -> dict[str, Any]:
    """Throughput and latency figures of one pair (latency per static batch)."""
    total = sum(batch_seconds)
    ordered = sorted(batch_seconds)

    def pct(q: float) -> float:
        if not ordered:
            return 0.0
        return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 6)

    return {
        "load_seconds": round(load_seconds, 6),
        "duration_seconds": round(total, 6),
        "sentences_per_second": round(n_items / total, 6) if total > 0 else 0.0,
        "latency_p50_seconds": round(statistics.median(ordered), 6) if ordered else 0.0,
        "latency_p95_seconds": pct(0.95),
        "batches": len(ordered),
        "generated_tokens": generated_tokens,
        "output_tokens_per_second": round(generated_tokens / total, 6) if total > 0 else 0.0,
    }


def pair_metadata(
    *,
    run: Run,
    language: str,
    benchmark_sha256: str,
    manifest_sha256: str,
    prompt_sha256: str,
    started_at: str,
    source_commit: str | None,
    duration_seconds: float,
) -> dict[str, Any]:
    """The metadata section every checkpoint kind shares (lrb names first, kit's after)."""
    return {
        keys.MODEL_ID: run.model_id,
        keys.RUN: run.name,
        keys.MODEL_REVISION: run.revision,
        keys.LANGUAGE: language,
        keys.BACKEND: run.backend,
        keys.TASK: run.task,
        keys.BATCH_SIZE: run.batch_size,
        keys.DTYPE: run.dtype,
        keys.DECODING: "greedy" if run.task == keys.TASK_GENERATE else "score",
        keys.MAX_NEW_TOKENS: run.max_new_tokens,
        keys.SEED: run.seed,
        keys.OPTIONS: dict(run.options),
        keys.TRUST_REMOTE_CODE: run.trust_remote_code,
        keys.BENCHMARK_SHA256: benchmark_sha256,
        keys.MANIFEST_SHA256: manifest_sha256,
        keys.PROMPT_SHA256: prompt_sha256,
        keys.PROMPT_FILE: run.prompt,
        keys.PACKAGE_VERSION: kit.__version__,
        keys.SOURCE_COMMIT: source_commit,
        keys.STARTED_AT: started_at,
        keys.DURATION_SECONDS: duration_seconds,
    }
