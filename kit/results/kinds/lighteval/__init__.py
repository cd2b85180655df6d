"""LightEval suite checkpoints: per-item metric values, task metrics as their means, the scores
report. Agreement of a rerun is the same item metric values; the tolerance bounds the largest
change of any task metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.results import keys
from kit.results.kinds import RESULT_KINDS
from kit.results.kinds.base import ResultKind
from kit.results.records import CheckpointRecord, ReportFiles
from kit.results.kinds.lighteval.metrics import prediction_faults, suite_metrics, suite_metrics_differ
from kit.results.kinds.lighteval.report import write_suite_report

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.results.html_page import HtmlParts, PageLinks
    from kit.config.roster import Run


class LightevalKind(ResultKind):
    """A LightEval suite task's checkpoints (kit.config.kinds.lighteval.suite)."""

    name = keys.KIND_LIGHTEVAL
    mllog_benchmark = "kit_lighteval"
    ruleset = "mllog_ruleset_lighteval.yaml"
    agreement_field = keys.ITEM_METRICS
    bounded = "largest task metric"
    units = "tasks"

    def prediction_faults(self, predictions: Sequence[Any]) -> dict[str, list[int]]:
        """Items without an item id or numeric item metrics, or naming other metrics than item 0."""
        return prediction_faults(list(predictions))

    def metrics(self, predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Each task metric as the mean of its per-item values."""
        return suite_metrics(predictions)

    def metrics_differ(self, recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
        """Names whose recorded value is not exactly the recomputed mean."""
        return suite_metrics_differ(recorded, recomputed)

    def bounded_delta(self, deltas: Mapping[str, float]) -> float:
        """The delta of largest magnitude among the task metrics."""
        return max(deltas.values(), key=abs, default=0.0)

    def pair_identity(self, run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
        """The task's pinned data digest, the custom tasks' digest, the suite's sampling settings and
        LightEval task string."""
        from kit.config.kinds.lighteval.suite import EvalSuite

        if not isinstance(dataset, EvalSuite):
            raise TypeError(f"a LightEval identity needs an EvalSuite, not a {type(dataset).__name__}")
        gen = dataset.spec.generation
        return {keys.BENCHMARK_SHA256: dataset.pinned_sha256(language),
                keys.PROMPT_SHA256: dataset.prompt_for(run).sha256,
                keys.DECODING: "greedy" if gen.temperature == 0 else "sampling",
                "suite": dataset.name, "lighteval_task": dataset.task(language).lighteval,
                "temperature": gen.temperature, "top_p": gen.top_p}

    def pair_identity_inputs(self, run: "Run", dataset: "Dataset") -> tuple[str]:
        """What pair_identity reads of a run: its prompt's digest."""
        return (dataset.prompt_for(run).sha256,)

    def html_parts(self, records: Sequence[CheckpointRecord], links: "PageLinks") -> "HtmlParts":
        """The score table, a table per task."""
        from kit.results.kinds.lighteval.html import suite_html

        return suite_html(records, links)

    def write_report(self, records: Sequence[CheckpointRecord], out_dir: Path) -> ReportFiles:
        """lighteval_scores.csv and summary.md."""
        return write_suite_report(records, out_dir)


LIGHTEVAL = RESULT_KINDS.register("lighteval")(LightevalKind())
