"""Helpers for checkpoint tests: synthetic checkpoints and the archived lrb fixtures.

Imported by the test modules (`from conftest_checkpoints import ...`); not a conftest,
so it adds nothing to other tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kit.results import keys
from kit.results.metrics import compute_metrics

# Third-party data (MIT results of the lrb benchmark); see tests/fixtures/lrb/NOTICE.md.
LRB_ARCHIVE = Path(__file__).parents[1] / "fixtures" / "lrb" / "results" / "archive" / "historical-single-language"
LRB_FILES = sorted(LRB_ARCHIVE.rglob("*.json"))


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


def make_checkpoint(root: Path, run: str, language: str, predictions: list[dict[str, Any]]) -> Path:
    """Write a correct checkpoint at root/<language>/<run with / -> __>.json and return its path."""
    data = {
        keys.METADATA: {keys.MODEL_ID: run.split("@")[0], keys.RUN: run, keys.LANGUAGE: language},
        keys.METRICS: compute_metrics(predictions),
        keys.PREDICTIONS: predictions,
    }
    path = root / language / f"{run.replace('/', '__')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(data), encoding="utf-8")
    return path


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
    labels, metadata and provenance that agree with the run and each other; `predicted(expected)`
    gives each prediction. Returns its path."""
    from kit.results.store import checkpoint_path, write_checkpoint
    from kit.worker.record import pair_metadata

    data = dataset.load_language(language)
    prompt = dataset.prompt_for(run)
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
    return path
