"""Turn one pair's outputs into a checkpoint dict (metadata, metrics, predictions, speed)."""

from __future__ import annotations

import statistics
from typing import Any

import kit
from kit.config.roster import Run
from kit.results import keys as K
from kit.results.metrics import compute_metrics
from kit.results.verdict import parse_verdict
from kit.worker.backends.base import Generation, Score


def generation_predictions(item_ids: list[str], expected: list[str], outputs: list[Generation]) -> list[dict[str, Any]]:
    """Predictions for the generate task: parse each answer into yes / no / unparsed."""
    preds = []
    for item_id, exp, out in zip(item_ids, expected, outputs, strict=True):
        label, mode = parse_verdict(out.text, out.truncated)
        preds.append({
            K.ITEM_ID: item_id, K.EXPECTED: exp, K.PREDICTED: label,
            K.RAW_OUTPUT: out.text, K.TRUNCATED: out.truncated, K.PARSE_MODE: mode,
        })
    return preds


def score_predictions(item_ids: list[str], expected: list[str], scores: list[Score], threshold: float) -> list[dict[str, Any]]:
    """Predictions for the score task: yes when the normalised yes-score reaches the threshold."""
    preds = []
    for item_id, exp, sc in zip(item_ids, expected, scores, strict=True):
        preds.append({
            K.ITEM_ID: item_id, K.EXPECTED: exp, K.PREDICTED: K.YES if sc.yes >= threshold else K.NO,
            K.RAW_OUTPUT: repr(float(sc.native)), K.TRUNCATED: False, K.PARSE_MODE: K.PARSE_SCORE,
            K.SCORE_YES: float(sc.yes), K.SCORE_NO: float(sc.no), K.NATIVE_SCORE: float(sc.native),
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
        K.MODEL_ID: run.model_id,
        K.RUN: run.name,
        K.MODEL_REVISION: run.revision,
        K.LANGUAGE: language,
        K.BACKEND: run.backend,
        K.TASK: run.task,
        K.BATCH_SIZE: run.batch_size,
        K.DTYPE: run.dtype,
        K.DECODING: "greedy" if run.task == K.TASK_GENERATE else "score",
        K.MAX_NEW_TOKENS: run.max_new_tokens,
        K.SEED: run.seed,
        K.OPTIONS: dict(run.options),
        "trust_remote_code": run.trust_remote_code,
        K.BENCHMARK_SHA256: benchmark_sha256,
        K.MANIFEST_SHA256: manifest_sha256,
        K.PROMPT_SHA256: prompt_sha256,
        K.PACKAGE_VERSION: kit.__version__,
        K.SOURCE_COMMIT: source_commit,
        K.STARTED_AT: started_at,
        K.DURATION_SECONDS: duration_seconds,
    }


def build_checkpoint(
    *,
    run: Run,
    language: str,
    predictions: list[dict[str, Any]],
    speed: dict[str, Any],
    provenance: dict[str, Any],
    benchmark_sha256: str,
    manifest_sha256: str,
    prompt_sha256: str,
    started_at: str,
    source_commit: str | None,
) -> dict[str, Any]:
    """The full checkpoint for one pair."""
    metadata = pair_metadata(run=run, language=language, benchmark_sha256=benchmark_sha256,
                             manifest_sha256=manifest_sha256, prompt_sha256=prompt_sha256, started_at=started_at,
                             source_commit=source_commit, duration_seconds=speed["duration_seconds"])
    return {
        K.METADATA: metadata,
        K.METRICS: compute_metrics(predictions),
        K.PREDICTIONS: predictions,
        K.SPEED: speed,
        K.PROVENANCE: provenance,
    }
