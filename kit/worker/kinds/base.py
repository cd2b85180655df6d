"""What a benchmark kind does inside the image: open an engine for a run, and turn one pair's data
into predictions, metrics and speed figures. kit.worker.shard does everything the kinds share:
skipping complete pairs, loading each model once, provenance, the :::MLLOG log, the checkpoint."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kit.config.dataset import Dataset, LanguageData
from kit.config.roster import Run
from kit.results.kinds.base import ResultKind


class Engine(Protocol):
    """A loaded model as the shard loop sees it."""

    def versions(self) -> dict[str, str | None]:
        """Package versions the checkpoint's provenance records."""

    def close(self) -> None:
        """Free the model (GPU memory, engine processes)."""


@dataclass(frozen=True)
class PairInput:
    """One pair to evaluate, with what the shard loop loaded for it."""

    run: Run
    language: str
    data: LanguageData
    dataset: Dataset
    engine: Any
    load_seconds: float
    results: Path
    scratch: Path


@dataclass
class Evaluated:
    """What a kind made of one pair; the shard loop adds the shared metadata and the provenance."""

    predictions: list[dict[str, Any]]
    metrics: dict[str, Any]
    speed: dict[str, Any]
    summary: str                                  # the progress line's figures, e.g. "f1=0.81 accuracy=0.80"
    headline: tuple[float, dict[str, Any]]        # the eval_accuracy MLLOG line: its value and metadata
    metadata: dict[str, Any] = field(default_factory=dict)   # the kind's own metadata keys
    sections: dict[str, Any] = field(default_factory=dict)   # the kind's own top-level sections


class PairRunner(ABC):
    """One benchmark kind's pairs, run inside the image."""

    results: ResultKind

    def check_run(self, run: Run) -> None:
        """Refuse (ConfigError) a run this kind cannot evaluate, before its model loads."""

    @abstractmethod
    def open(self, run: Run, dataset: Dataset, snapshot: Path, scratch: Path) -> Engine:
        """Load the run's model from its local snapshot into the engine this kind runs it with."""

    def pair_facts(self, run: Run, language: str, dataset: Dataset) -> dict[str, Any]:
        """Extra fields of the pair's `kit_pair` log line (none by default)."""
        return {}

    @abstractmethod
    def evaluate(self, pair: PairInput, log: Any) -> Evaluated:
        """Run the pair's items through the engine (`log`: the pair's PairLog, for per-batch lines)."""
