"""What a benchmark kind does with its checkpoints (kit.config.kinds names the kinds; each registers its part in kit.results.kinds.RESULT_KINDS): check the
predictions' shape, compute and verify metrics, write the report, and say what a reproduced result
must match. Checkpoint validation, `kit check`, `kit report` and `kit reproduce` call this
interface and never ask which kind they hold."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.results import keys
from kit.results.records import CheckpointRecord, ReportFiles

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.results.html_page import HtmlParts, PageLinks
    from kit.config.roster import Run


class TypedCheckpoint(ABC):
    """A checkpoint read by its kind's typed reader (ResultKind.typed_read): its sections but `predictions`,
    and what validation asks of its items, answered from their columns."""

    sections: dict[str, Any]
    truncated: int    # items whose `truncated` is true

    @abstractmethod
    def items_pass(self) -> bool:
        """True when the items pass every item check of validate_checkpoint (unique ids, metrics that
        recompute, each verdict what its output gives); False when any might not (the full path names it)."""

    @abstractmethod
    def matches(self, expect: Any) -> bool:
        """True when the item ids are the benchmark's, in its order, and each expected label its answer, as far
        as `expect` (kit.results.identity.Expectation) holds them; False when they might not be."""

    @abstractmethod
    def outcomes(self) -> tuple[str, str] | None:
        """ResultKind.item_outcomes of the items."""


class ResultKind(ABC):
    """One benchmark kind's checkpoints."""

    name: str
    # the `submission_benchmark` of its :::MLLOG lines, and the compliance ruleset (kit/defaults/) that checks them
    mllog_benchmark: str
    ruleset: str
    # the per-item field a rerun must match for the item to agree, and what the metric bound of a
    # reproduce tolerance applies to
    agreement_field: str
    bounded: str
    # what one checkpoint of a run covers, in the plural ("languages" for lrb, "tasks" for a suite)
    units: str = "languages"

    @abstractmethod
    def prediction_faults(self, predictions: Sequence[Any]) -> dict[str, list[int]]:
        """{fault: indexes of the predictions that have it}; empty when every prediction is well formed."""

    @abstractmethod
    def metrics(self, predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The metrics section recomputed from well-formed predictions."""

    @abstractmethod
    def metrics_differ(self, recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
        """The names of recorded metrics that are not the recomputed ones."""

    @abstractmethod
    def bounded_delta(self, deltas: Mapping[str, float]) -> float:
        """From the rerun-minus-recorded metric deltas, the signed one a reproduce tolerance bounds."""

    @abstractmethod
    def write_report(self, records: Sequence[CheckpointRecord], out_dir: Path) -> ReportFiles:
        """Write the kind's report of these records (complete ones counted, invalid ones listed)."""

    @abstractmethod
    def html_parts(self, records: Sequence[CheckpointRecord], links: "PageLinks") -> "HtmlParts":
        """The kind's sections of the HTML report (kit.results.html_report): the index's overview, a
        table per language, each result's metrics, and the plots beside the index."""

    @abstractmethod
    def pair_identity(self, run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
        """The data-side identity a current checkpoint of (run, language) records (metadata key ->
        value now): the data file's and prompt's digests, the decoding, the kind's own settings."""

    def pair_identity_inputs(self, run: "Run", dataset: "Dataset") -> Hashable | None:
        """All that pair_identity reads of `run` (on one dataset), when the kind can say: the runs with equal
        inputs then share each language's identity part, computed once (a sweep of 235 runs on one prompt
        computes 85, not 20,000); None (the default): computed for each pair."""
        return None

    def typed_read(self, raw: bytes) -> TypedCheckpoint | None:
        """The checkpoint in these bytes, parsed with every item's shape checked in one typed pass, when they
        hold a well-formed checkpoint of this kind and nothing a typed pass could read otherwise than
        kit.safejson; None when the kind has no typed reader (the default), its library is not installed, or
        in any doubt: validate_checkpoint then reads the file, and names what is wrong."""
        return None

    def item_outcomes(self, predictions: Sequence[Any]) -> tuple[str, str] | None:
        """Each item's outcome in short, for paired tests between two runs of the same items:
        (a digest of the items and their expected answers, one character per item in item id order);
        None when the kind has no such form (the default)."""
        return None

    def paired_change(self, recorded: Mapping[str, Any], rerun: Mapping[str, Any]) -> dict[str, Any] | None:
        """How a rerun's score moved from the recorded one over the same items, with its interval
        (JSON-ready: `kit reproduce` records it and the drift table reads it); None when the kind has no
        paired statistic (the default) or the two hold other items."""
        return None

    def verdict_faults(self, data: Mapping[str, Any]) -> list[str]:
        """Predictions of a well-formed checkpoint whose verdict is not what their recorded output
        gives, one line; none by default (the kind cannot tell)."""
        return []

    def compared_metrics(self, recorded: Mapping[str, Any]) -> list[str]:
        """The metric names a reproduce verdict shows deltas for (all but the item count by default)."""
        return sorted(m for m in recorded if m != keys.N_ITEMS)
