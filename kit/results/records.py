"""The checkpoints of a results tree as records for reports: what each file is, what it says,
and the rule that only checkpoints measured on the same terms are reported together."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from kit.config.kinds.lrb.prompts import lrb_prompt_kind, prompt_kind
from kit.config.names import run_from_stem, same_run
from kit.errors import ConfigError
from kit.results import keys
from kit.results.keys import PairState

SEPARATE = "report them separately (e.g. --model {a}, then --model {b})"
# the notice a stale checkpoint carries when a report counts it on request
STALE_INCLUDED = "STALE, counted because of --include-stale"


def stale_banner(valid: Sequence["CheckpointRecord"]) -> list[str]:
    """The summary lines that say, at the top, how many counted checkpoints are stale."""
    stale = [r.name for r in valid if any(n.startswith(STALE_INCLUDED) for n in r.notices)]
    if not stale:
        return []
    return [f"**{len(stale)} stale checkpoints are counted (--include-stale): they were recorded for another "
            f"revision, setting, prompt or data file than the roster has now** (see Notices).", ""]


@dataclass(frozen=True)
class CheckpointRecord:
    """One `RESULTS/<language>/<run>.json` file and what validation said about it."""

    path: Path
    language: str
    state: str
    reasons: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    data: Mapping[str, Any] | None = field(default=None, repr=False)
    truncated_count: int | None = None    # when `data` holds no predictions (kit.results.checkpoint.without_predictions)
    outcomes: tuple[str, str] | None = field(default=None, repr=False)   # ResultKind.item_outcomes, when read
    collection: str = ""    # "" for the tree's own files, else lrb's batch folder (kit.results.store.collection_of)
    compliance: tuple[tuple[str, str, str, str], ...] | None = field(default=None, repr=False)   # CheckpointState's, when read

    @property
    def valid(self) -> bool:
        """True when the checkpoint is complete and may be counted."""
        return self.state == PairState.COMPLETE and self.data is not None

    @cached_property   # one string, however many tables and pages of a report key by it
    def name(self) -> str:
        """The file as `<language>/<file>.json`, relative to RESULTS."""
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The `metadata` section (empty for an invalid file)."""
        return (self.data or {}).get(keys.METADATA) or {}

    @property
    def metrics(self) -> Mapping[str, Any]:
        """The `metrics` section (empty for an invalid file)."""
        return (self.data or {}).get(keys.METRICS) or {}

    @property
    def run(self) -> str:
        """The roster run name: as the metadata names it (recorded_run), else the file name."""
        return file_run(self.path, self.metadata)

    @property
    def prompt_kind(self) -> str | None:
        """The kind of prompt lrb gives this run (kit.config.kinds.lrb.prompts); lrb files record only the task,
        and a scoring file's rule may not tell it (None)."""
        meta = self.metadata
        if meta.get(keys.BACKEND) is None and self.task == keys.TASK_SCORE:
            return lrb_prompt_kind(meta.get(keys.LRB_DECISION_RULE))
        options = meta.get(keys.OPTIONS)
        return prompt_kind(self.task, meta.get(keys.BACKEND), options if isinstance(options, Mapping) else None)

    @property
    def task(self) -> str:
        """The task; lrb files record none: their scoring runs say inference "scoring", the others generated."""
        return recorded_task(self.metadata)

    @property
    def truncated(self) -> int:
        """How many predictions hit the token limit."""
        if self.truncated_count is not None:
            return self.truncated_count
        return sum(1 for p in (self.data or {}).get(keys.PREDICTIONS) or [] if p.get(keys.TRUNCATED) is True)

    @property
    def duration_seconds(self) -> float:
        """Benchmark wall time: metadata `duration_seconds`, else `speed.duration_seconds`; 0.0 when
        there is none or it is not a finite non-negative number (a string, NaN, infinity)."""
        value = self.metadata.get(keys.DURATION_SECONDS)
        if value is None:
            speed = (self.data or {}).get(keys.SPEED)
            value = speed.get(keys.DURATION_SECONDS) if isinstance(speed, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return 0.0
        try:
            seconds = float(value)
        except OverflowError:   # an integer beyond float range
            return 0.0
        return seconds if 0.0 <= seconds < float("inf") else 0.0


@dataclass(frozen=True)
class ReportFiles:
    """What a report wrote: each file by its role (e.g. "leaderboard"), and how many pairs were
    counted or left out as invalid."""

    files: dict[str, Path]
    pairs: int = 0
    invalid: int = 0


def recorded_task(metadata: Mapping[str, Any]) -> str:
    """The task a checkpoint's metadata records; lrb files record none: their scoring runs say inference
    "scoring", the others generated."""
    if metadata.get(keys.TASK):
        return metadata[keys.TASK]
    return keys.TASK_SCORE if metadata.get(keys.LRB_INFERENCE) == "scoring" else keys.TASK_GENERATE


def run_key(metadata: Mapping[str, Any]) -> str:
    """The metadata key that names the run: `run` (kit), else lrb's `run_id` when it is set (a variant
    run such as 'org/name+DSpark'; lrb writes "" otherwise), else `model_id`."""
    if keys.RUN in metadata:
        return keys.RUN
    run_id = metadata.get(keys.RUN_ID)
    return keys.RUN_ID if isinstance(run_id, str) and run_id else keys.MODEL_ID


def recorded_run(metadata: Mapping[str, Any]) -> str | None:
    """The run name the metadata records (see run_key); None when that value is not a non-empty string."""
    value = metadata.get(run_key(metadata))
    return value if isinstance(value, str) and value else None


def file_run(path: Path, metadata: Any) -> str:
    """The run a checkpoint file counts for: the one its metadata records (recorded_run), else the one its
    file name says (run_from_stem), which cannot tell a model id holding "__" (my-org/lfm__sft-v2) apart."""
    recorded = recorded_run(metadata) if isinstance(metadata, Mapping) else None
    return recorded or run_from_stem(Path(path).stem)


def item_faults(predictions: Sequence[Any], faults_of: Callable[[dict[str, Any]], list[str]]) -> dict[str, list[int]]:
    """{fault: indexes of the predictions that have it}: items that are not JSON objects or lack a
    string item id, and whatever `faults_of(item)` names for the others (the kind's own rules)."""
    faults: dict[str, list[int]] = {}
    for index, item in enumerate(predictions):
        if not isinstance(item, dict):
            faults.setdefault("is not a JSON object", []).append(index)
            continue
        found = [] if isinstance(item.get(keys.ITEM_ID), str) and item[keys.ITEM_ID] else [
            f"{keys.ITEM_ID} is missing or not a string"]
        for fault in found + faults_of(item):
            faults.setdefault(fault, []).append(index)
    return faults


def groups(records: Sequence[CheckpointRecord], key: Callable[[CheckpointRecord], Any]) -> list[tuple[Any, list[CheckpointRecord]]]:
    """Records grouped by key(record), groups sorted by key, each in input order."""
    out: dict[Any, list[CheckpointRecord]] = {}
    for r in records:
        out.setdefault(key(r), []).append(r)
    return sorted(out.items())


def select_runs(records: Sequence[CheckpointRecord], runs: Sequence[str] | None) -> list[CheckpointRecord]:
    """The records of these runs (all when `runs` is None); an unknown run is a ConfigError."""
    if runs is None:
        return list(records)
    known = sorted({r.run for r in records if r.valid})
    unknown = [run for run in runs if not any(same_run(run, name) for name in known)]
    if unknown:
        raise ConfigError(
            f"no complete checkpoint for run {unknown[0]!r}",
            fix=f"pick among: {', '.join(known) or '(none)'}",
        )
    return [r for r in records if any(same_run(run, r.run) for run in runs)]


def check_comparable(records: Iterable[CheckpointRecord]) -> None:
    """Refuse (ConfigError) to report together checkpoints measured on different terms.

    Complete checkpoints only are compared: one benchmark_sha256 per language (the data each
    was measured on, as status and run hold a pair to it: the manifest's digest changes with any
    language's file, so checkpoints of unchanged languages keep an older one), one prompt_sha256 per prompt kind (lrb asks zero-shot classifiers and masked LMs
    with prompts of their own; an lrb scoring file whose decision rule does not tell its kind is
    held to none), one (decoding, max_new_tokens) among generate runs.
    """
    valid = sorted((r for r in records if r.valid), key=lambda r: (r.run, r.language, r.name))
    _once_each(valid)
    for language, group in groups(valid, lambda r: r.language):
        _same(group, keys.BENCHMARK_SHA256, lambda r: r.metadata.get(keys.BENCHMARK_SHA256), f" for language {language!r}")
    # an lrb scoring file whose rule does not tell its prompt kind is held to none (lrb's own card lists
    # its scorers' prompts side by side)
    for kind, group in groups([r for r in valid if r.prompt_kind is not None], lambda r: r.prompt_kind):
        _same(group, keys.PROMPT_SHA256, lambda r: r.metadata.get(keys.PROMPT_SHA256), f" for {kind!r} prompts")
    generate = [r for r in valid if r.task == keys.TASK_GENERATE]
    _same(generate, "decoding/max_new_tokens", decoding, " among generate runs")


def _once_each(records: Sequence[CheckpointRecord]) -> None:
    # Only lrb's folder layouts can hold one pair twice: its archive keeps runs of an undetermined
    # language at the top and in dated batch folders.
    seen: dict[tuple[str, str], CheckpointRecord] = {}
    for r in records:
        first = seen.setdefault((r.run, r.language), r)
        if first is not r:
            raise ConfigError(f"cannot report {r.run!r} twice for language {r.language!r}: {first.path} and {r.path}",
                              fix="report one folder at a time (e.g. kit report RESULTS/<batch>), or move one file aside")


def decoding(record: CheckpointRecord) -> tuple[Any, Any]:
    """(decoding, max_new_tokens) as the record states them."""
    return (record.metadata.get(keys.DECODING), record.metadata.get(keys.MAX_NEW_TOKENS))


def _same(records: Sequence[CheckpointRecord], what: str, value, where: str) -> None:
    if not records:
        return
    first = records[0]
    for other in records[1:]:
        if value(other) != value(first):
            raise ConfigError(
                f"cannot report {first.run!r} ({first.name}) with {other.run!r} ({other.name}): "
                f"{what} differs{where} ({_short(value(first))} vs {_short(value(other))})",
                fix=SEPARATE.format(a=first.run, b=other.run) if first.run != other.run else
                f"rerun the pairs of {first.run} measured otherwise (kit status lists them as stale), or move "
                "one of the two files out of the results folder",
            )


def _short(value: Any) -> str:
    if isinstance(value, tuple):
        return "/".join(_short(v) for v in value)
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return str(value)
