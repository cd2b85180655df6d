"""lrb checkpoints: yes/no verdicts per item, the seven lrb metrics and the confusion cells, the
leaderboard report. Agreement of a rerun is the same predicted label; the tolerance bounds F1."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.errors import clipped
from kit.results import keys
from kit.results.answers import parse_verdict
from kit.results.columns import column
from kit.results.evidence import is_kit_checkpoint
from kit.results.kinds import RESULT_KINDS
from kit.results.kinds.base import ResultKind, TypedCheckpoint
from kit.results.kinds.lrb.verdicts import REREAD_CHARS, score_verdicts_agree, text_verdicts_agree
from kit.results.metrics import all_well_formed, compute_metrics, has_verdict, metrics_equal
from kit.results.records import CheckpointRecord, ReportFiles, item_faults

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.results.html_page import HtmlParts, PageLinks
    from kit.config.roster import Run


class LrbKind(ResultKind):
    """The land-use relevance kind (lrb's own result files and kit's)."""

    name = keys.KIND_LRB
    mllog_benchmark = "kit_lrb"
    ruleset = "mllog_ruleset.yaml"
    agreement_field = keys.PREDICTED
    bounded = "F1"

    def prediction_faults(self, predictions: Sequence[Any]) -> dict[str, list[int]]:
        """Items that are not objects, or lack a string item id, a yes/no expected label or a
        yes/no/unparsed prediction (null is lrb's unparsed), or whose `truncated` is not a boolean."""
        if all_well_formed(predictions):   # the common case, at C speed
            return {}
        return item_faults(predictions, lambda item: [
            *([f"{keys.EXPECTED} is not yes/no"] if item.get(keys.EXPECTED) not in keys.LABELS else []),
            *([f"{keys.PREDICTED} is not yes/no/unparsed/null"] if not has_verdict(item) else []),
            *([f"{keys.TRUNCATED} is not true/false"] if not isinstance(item.get(keys.TRUNCATED), (bool, type(None)))
              else [])])

    def verdict_faults(self, data: Mapping[str, Any]) -> list[str]:
        """In kit's own checkpoints (lrb's files follow rules of their own version), each answer is read
        the way its run's task reads answers (a score run's are scores, a generate run's are text, so
        no parse mode can be claimed to dodge the re-read); each score verdict is its yes-score against
        the run's threshold, and each short answer's verdict is what lrb's rules read in it
        (kit.results.answers; a truncated answer is unparsed); long answers are not re-read, to keep
        a verify fast."""
        if not is_kit_checkpoint(data):
            return []
        predictions = data[keys.PREDICTIONS]
        mode_fault = _parse_mode_fault(data[keys.METADATA].get(keys.TASK), predictions)
        if mode_fault:
            return [mode_fault]
        options = data[keys.METADATA].get(keys.OPTIONS)
        threshold = options.get("threshold", 0.5) if isinstance(options, Mapping) else 0.5
        if data[keys.METADATA].get(keys.TASK) == keys.TASK_SCORE and not is_threshold(threshold):
            return [f"{keys.METADATA}.{keys.OPTIONS}.threshold is {clipped(threshold)}, not the number a score run's "
                    "verdicts are read against, so they cannot be read again (the file was changed after the job "
                    "wrote it)"]
        if _all_agree(predictions, threshold):
            return []
        wrong = [(i, want) for i, item in enumerate(predictions)
                 if (want := _verdict_of(item, threshold)) is not None and want != item[keys.PREDICTED]]
        if not wrong:
            return []
        at, want = wrong[0]
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        return [f"{keys.PREDICTIONS}[{at}].{keys.PREDICTED} is not the {want!r} its recorded output gives{more} "
                "(the verdict was edited after the job wrote it)"]

    def paired_change(self, recorded: Mapping[str, Any], rerun: Mapping[str, Any]) -> dict[str, Any] | None:
        """The rerun minus the recorded checkpoint over their shared items: F1 and accuracy differences with
        `kit compare`'s paired bootstrap interval, the exact McNemar p-value, and the items whose verdict
        changed; None when they share no item or label an item differently."""
        from kit.results.kinds.lrb.compare import checkpoint_comparison

        meta = recorded.get(keys.METADATA, {})
        language = str(meta.get(keys.LANGUAGE))
        found = checkpoint_comparison(language, rerun, recorded, (str(meta.get(keys.RUN)), "rerun"))
        if isinstance(found, str):
            return None
        rec = {p[keys.ITEM_ID]: p.get(keys.PREDICTED) for p in recorded.get(keys.PREDICTIONS) or []}
        changed = sum(1 for p in rerun.get(keys.PREDICTIONS) or []
                      if p[keys.ITEM_ID] in rec and p.get(keys.PREDICTED) != rec[p[keys.ITEM_ID]])
        return {"items": found.items, "changed": changed, "f1": found.f1.as_dict(), "accuracy": found.accuracy.as_dict(),
                "p_value": found.p_value, "only_rerun_right": found.only_a_right,
                "only_recorded_right": found.only_b_right}

    def typed_read(self, raw: bytes) -> "TypedCheckpoint | None":
        """lrb's typed reader (kit.results.kinds.lrb.typed: msgspec, the `fast` extra)."""
        from kit.results.kinds.lrb.typed import read_typed

        return read_typed(raw)

    def item_outcomes(self, predictions: Sequence[Any]) -> tuple[str, str] | None:
        """(sha256 of the item ids and expected labels, each item's confusion cell as a digit of
        kit.results.kinds.lrb.paired.CELLS), in item id order; None when a prediction is malformed."""
        from kit.results.kinds.lrb.paired import item_outcomes

        return item_outcomes(predictions)

    def metrics(self, predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """lrb's metrics and confusion cells (kit.results.metrics)."""
        return compute_metrics(predictions)

    def metrics_differ(self, recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
        """Recorded metrics that differ from the recomputed ones beyond lrb's rounding, or are missing; a key
        lrb does not compute, at any level (a metric, a cell of `confusion`), is left out, as lrb's loader
        reads only its own (a newer lrb may add one)."""
        return metrics_equal(_computed_keys_only(recorded, recomputed), recomputed)

    def compared_metrics(self, recorded: Mapping[str, Any]) -> list[str]:
        """The seven lrb metrics."""
        return list(keys.METRIC_NAMES)

    def bounded_delta(self, deltas: Mapping[str, float]) -> float:
        """The F1 delta."""
        return deltas.get(keys.F1, 0.0)

    def pair_identity(self, run: "Run", language: str, dataset: "Dataset") -> dict[str, Any]:
        """The language file's pinned digest, the run's prompt digest, greedy or score decoding."""
        return {keys.BENCHMARK_SHA256: dataset.pinned_sha256(language),
                keys.PROMPT_SHA256: dataset.prompt_for(run).sha256,
                keys.DECODING: "greedy" if run.task == keys.TASK_GENERATE else "score"}

    def pair_identity_inputs(self, run: "Run", dataset: "Dataset") -> tuple[str, str]:
        """What pair_identity reads of a run: its prompt's digest and its task."""
        return dataset.prompt_for(run).sha256, run.task

    def html_parts(self, records: Sequence[CheckpointRecord], links: "PageLinks") -> "HtmlParts":
        """The leaderboard with F1 intervals, the heatmap and F1-per-language plots, a table per language."""
        from kit.results.kinds.lrb.html import lrb_html

        return lrb_html(records, links)

    def write_report(self, records: Sequence[CheckpointRecord], out_dir: Path) -> ReportFiles:
        """leaderboard.csv, aggregates.csv, by_language.csv, summary.md, heatmap_f1.png."""
        from kit.results.kinds.lrb.report import write_lrb_report   # the tables' code, only where a report asks

        return write_lrb_report(records, out_dir)


def _all_agree(predictions: Sequence[Any], threshold: Any) -> bool:
    """True when every verdict is what its output gives, decided mostly with C-level passes over the
    list (a verify reads thousands of files); False sends the caller to the item-by-item check."""
    try:
        got = column(predictions, keys.PREDICTED, required=True)
        if predictions and predictions[0].get(keys.PARSE_MODE) == keys.PARSE_SCORE:
            return score_verdicts_agree(column(predictions, keys.SCORE_YES), got, threshold)
        return text_verdicts_agree(column(predictions, keys.RAW_OUTPUT), column(predictions, keys.TRUNCATED), got)
    except (TypeError, KeyError, AttributeError):   # not objects, not numbers, not text
        return False


def _parse_mode_fault(task: Any, predictions: Sequence[Any]) -> str | None:
    """Why the predictions' parse modes are not those of the run's task, or None: a score run's answers
    are all scores, a generate run's never are, and each of its answers is text (raw_output)."""
    score = task == keys.TASK_SCORE
    if _modes_fit(score, predictions):   # the common case, in C-level passes over the list
        return None
    for at, item in enumerate(predictions):
        if not isinstance(item, Mapping):
            continue
        if (item.get(keys.PARSE_MODE) == keys.PARSE_SCORE) != score:
            return (f"{keys.PREDICTIONS}[{at}].{keys.PARSE_MODE} is {item.get(keys.PARSE_MODE)!r} in a {task!r} run, "
                    f"whose answers are {'scores' if score else 'text'} (the file was changed after the job wrote it)")
        raw = item.get(keys.RAW_OUTPUT)
        if not score and not isinstance(raw, str):
            return (f"{keys.PREDICTIONS}[{at}].{keys.RAW_OUTPUT} is {clipped(raw)}, not the text a generate run's answer "
                    "is, so its verdict cannot be read again (the file was changed after the job wrote it)")
        yes = item.get(keys.SCORE_YES)
        if score and (isinstance(yes, bool) or not isinstance(yes, (int, float)) or not math.isfinite(yes)):
            return f"{keys.PREDICTIONS}[{at}].{keys.SCORE_YES} is {yes!r}, not a finite number a verdict can be read from"
    return None


_NUMBER_TYPES = frozenset({int, float})


def _modes_fit(score: bool, predictions: Sequence[Any]) -> bool:
    """True when every prediction is a dict whose parse mode fits the task (and, in a score run, whose
    yes-score is a finite number); False sends the caller to the item-by-item check that names the fault."""
    try:
        modes = column(predictions, keys.PARSE_MODE)   # TypeError: not a dict
        if not score:   # and every answer text, so that its verdict can be read again
            return keys.PARSE_SCORE not in modes and set(map(type, column(predictions, keys.RAW_OUTPUT))) <= {str}
        if set(modes) != {keys.PARSE_SCORE} and modes:
            return False
        yes = column(predictions, keys.SCORE_YES)
        return set(map(type, yes)) <= _NUMBER_TYPES and all(map(math.isfinite, yes))
    except (TypeError, AttributeError):
        return False


def is_threshold(value: Any) -> bool:
    """Whether a score run's recorded threshold is one its verdicts can be read against: a finite number,
    not a boolean."""
    return type(value) in _NUMBER_TYPES and math.isfinite(value)


def _verdict_of(item: Mapping[str, Any], threshold: Any) -> str | None:
    """The verdict an item's recorded output gives, or None when it is not re-read."""
    if item.get(keys.PARSE_MODE) == keys.PARSE_SCORE:
        yes = item.get(keys.SCORE_YES)
        if isinstance(yes, bool) or not isinstance(yes, (int, float)) or isinstance(threshold, bool) \
                or not isinstance(threshold, (int, float)):
            return None
        return keys.YES if yes >= threshold else keys.NO
    raw = item.get(keys.RAW_OUTPUT)
    if not isinstance(raw, str) or len(raw) > REREAD_CHARS:
        return None
    return parse_verdict(raw, item.get(keys.TRUNCATED) is True)[0]


LRB = RESULT_KINDS.register("lrb")(LrbKind())


def _computed_keys_only(recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> Mapping[str, Any]:
    """`recorded` without the keys `recomputed` lacks, at every level where both hold an object."""
    if not _holds_more(recorded, recomputed):
        return recorded   # the usual file: nothing to leave out
    return {key: (_computed_keys_only(value, recomputed[key])
                  if isinstance(value, Mapping) and isinstance(recomputed[key], Mapping) else value)
            for key, value in recorded.items() if key in recomputed}


def _holds_more(recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> bool:
    if recorded.keys() - recomputed.keys():
        return True
    return any(isinstance(value, Mapping) and isinstance(recomputed[key], Mapping) and _holds_more(value, recomputed[key])
               for key, value in recorded.items())
