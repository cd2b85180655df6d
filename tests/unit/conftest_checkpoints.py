"""Helpers for checkpoint tests: synthetic checkpoints and the archived lrb fixtures.

Imported by the test modules (`from conftest_checkpoints import ...`); not a conftest,
so it adds nothing to other tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kit.results import keys
from kit.results.metrics import compute_metrics

# Third-party data (MIT results of the lrb benchmark); see tests/fixtures/lrb/NOTICE.md.
LRB_ARCHIVE = Path(__file__).parents[1] / "fixtures" / "lrb" / "results" / "archive" / "historical-single-language"
LRB_FILES = sorted(LRB_ARCHIVE.rglob("*.json"))


def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by a test are seconds old at most: make the checkpoint cache store them anyway."""
    from kit.results import cache

    monkeypatch.setattr(cache, "RACY_SECONDS", -1.0)


def predictions_of(pairs: Sequence[tuple[str, str]], prefix: str = "item") -> list[dict[str, Any]]:
    """Predictions from (expected, predicted) pairs, with item ids `item-000`, `item-001`, ..."""
    return [
        {
            keys.ITEM_ID: f"{prefix}-{i:03d}",
            keys.EXPECTED: expected,
            keys.PREDICTED: predicted,
            keys.RAW_OUTPUT: predicted,
            keys.TRUNCATED: False,
            keys.PARSE_MODE: keys.PARSE_EXACT if predicted != keys.UNPARSED else keys.PARSE_NONE,
        }
        for i, (expected, predicted) in enumerate(pairs)
    ]


def make_checkpoint(root: Path, run: str, language: str, predictions: list[dict[str, Any]],
                    **recorded: Any) -> Path:
    """Write a correct kit checkpoint at root/<language>/<run with / -> __>.json, with a provenance block
    and the log its job would write beside it (see seal), and return its path; `recorded`: more metadata
    (benchmark_sha256, ...)."""
    metadata = {keys.MODEL_ID: run.split("@")[0], keys.RUN: run, keys.LANGUAGE: language, **recorded}
    data = {
        keys.METADATA: metadata,
        keys.METRICS: compute_metrics(predictions),
        keys.PREDICTIONS: predictions,
        keys.PROVENANCE: provenance_of(metadata),
    }
    path = root / language / f"{run.replace('/', '__')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(data), encoding="utf-8")
    return seal(path)


def provenance_of(metadata: dict[str, Any]) -> dict[str, Any]:
    """The provenance block a job writes beside `metadata`, as far as kit compares the two: the model,
    backend and data digests metadata records again (kit.results.identity.edit_reasons), each equal."""
    twice = {keys.MODEL_ID: (keys.PROV_MODEL, keys.PROV_MODEL_ID),
             keys.MODEL_REVISION: (keys.PROV_MODEL, keys.PROV_MODEL_REVISION),
             keys.BACKEND: (keys.PROV_IMAGE, keys.IMAGE_BACKEND),
             keys.BENCHMARK_SHA256: (keys.PROV_DATA, keys.DATA_FILE_SHA256),
             keys.MANIFEST_SHA256: (keys.PROV_DATA, keys.DATA_MANIFEST_SHA256),
             keys.PROMPT_SHA256: (keys.PROV_DATA, keys.DATA_PROMPT_SHA256)}
    provenance: dict[str, Any] = {}
    for key, (section, name) in twice.items():
        if metadata.get(key) is not None:
            provenance.setdefault(section, {})[name] = metadata[key]
    return provenance


def write_job_checkpoint(path: Path, data: dict[str, Any]) -> Path:
    """Write `data` at `path` as a kit job does (kit.results.store.write_checkpoint), with a provenance
    block that agrees with its metadata when `data` has none, and the log beside it (see seal).
    Returns `path`."""
    from kit.results.store import write_checkpoint

    if keys.PROVENANCE not in data:
        data = {**data, keys.PROVENANCE: provenance_of(data.get(keys.METADATA) or {})}
    write_checkpoint(path, data)
    return seal(path)


def seal(path: Path) -> Path:
    """Write the :::MLLOG log a job writes beside checkpoint `path`: its run_stop line records the
    file's sha256 (and, as the job does, its metrics in eval_accuracy). Returns `path`."""
    from kit.files import file_sha256

    metrics = json.loads(path.read_text(encoding="utf-8")).get(keys.METRICS) or {}
    lines = [{"key": "eval_accuracy", "value": metrics.get(keys.F1), "metadata": {**metrics, "metric": keys.F1}},
             {"key": "run_stop", "metadata": {"status": "success", "checkpoint_sha256": file_sha256(path)}}]
    path.with_suffix(".mllog").write_text("".join(f":::MLLOG {json.dumps(line)}\n" for line in lines),
                                          encoding="utf-8")
    return path


def seal_all(results: Path) -> list[Path]:
    """Seal (see seal) every checkpoint under `results`, as if each job had written its log beside it;
    for trees whose builder writes the checkpoints alone (bench/tree.py). Returns their paths."""
    from kit.results.store import iter_checkpoint_files

    return [seal(path) for path in iter_checkpoint_files(results)]


def dump(data: dict[str, Any]) -> str:
    """Checkpoint text in the canonical layout (sorted keys, indent 2, final newline)."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def rewrite(path: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    """Load the checkpoint at `path`, apply `change(data)` in place, write it back."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(dump(data), encoding="utf-8")
    return path


def current_checkpoint(results: Path, run: Any, language: str, dataset: Any,
                       predicted: Callable[[str], str] = lambda expected: expected) -> Path:
    """Write the checkpoint a kit job would write for (run, language) today: the benchmark's ids and
    labels, metadata and provenance that agree with the run and each other, and its log; `predicted(expected)`
    gives each prediction (a score run's: a yes-score of 0.99 for yes, 0.01 otherwise). Returns its path."""
    from kit.results.store import checkpoint_path, write_checkpoint
    from kit.worker.backends.base import Score
    from kit.worker.record import pair_metadata, score_predictions

    data = dataset.load_language(language)
    prompt = dataset.prompt_for(run)
    if run.task == keys.TASK_SCORE:   # as the worker records a score run: each verdict its yes-score thresholded
        scores = [Score(yes, 1 - yes, yes) for yes in (0.99 if predicted(item.label) == keys.YES else 0.01
                                                       for item in data.items)]
        preds = score_predictions([item.item_id for item in data.items], [item.label for item in data.items],
                                  scores, float(run.options.get("threshold", 0.5)))
    else:
        preds = predictions_of([(item.label, predicted(item.label)) for item in data.items])
        for pred, item in zip(preds, data.items):
            pred[keys.ITEM_ID] = item.item_id
    metadata = pair_metadata(run=run, language=language, benchmark_sha256=data.file_sha256,
                             manifest_sha256=dataset.manifest_sha256, prompt_sha256=prompt.sha256,
                             started_at="2026-12-01T00:00:00Z", source_commit=None, duration_seconds=1.0)
    provenance = {"image": {"backend": run.backend}, "model": {"id": run.model_id, "revision": run.revision},
                  "data": {"manifest_sha256": dataset.manifest_sha256, "file_sha256": data.file_sha256,
                           "prompt_sha256": prompt.sha256}}
    path = checkpoint_path(results, run.name, language)
    write_checkpoint(path, {keys.METADATA: metadata, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds,
                            keys.PROVENANCE: provenance})
    return seal(path)
