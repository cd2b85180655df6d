"""The columns lrb's newer leaderboards publish beyond the scores (lrb's adapters/results_store.py
LEADERBOARD_COLUMNS and domain/speed.py), computed as lrb computes them, for kit's report.

Per checkpoint (aggregates.csv, one row per run x language, as lrb's newest leaderboard has one per
run and language):
- speed: sentences_per_second (3 decimals), latency_p50_seconds and latency_p95_seconds (4),
  generated_tokens, output_tokens_per_second (1), mean_accept_length (3), draft_accept_rate (4):
  the checkpoint's own `speed` section where it has one (kit's jobs and lrb's newer files write
  it); else sentences per second over the run's wall time (metadata.duration_seconds), the only
  figure lrb derives without per-prediction timings; blank where nothing supports a figure;
- runtime and generation_mode: as recorded; an lrb file that records none gets lrb's loader
  defaults ("transformers", "static-batched"); a kit checkpoint's engine is its backend column;
- accuracy_ci95, precision_ci95, recall_ci95: Wilson score intervals at 95% from the confusion
  counts, written "[low, high]" with 4 decimals, as lrb writes them;
- mcnemar_top_run, mcnemar_p_vs_top: the best-F1 run of the same language (ties by run name) and
  the exact McNemar p-value of this checkpoint against it (1.0 against itself), blank when the two
  do not hold the same items with the same labels.
lrb's f1 and MCC intervals are seeded bootstraps of its own; kit's report has its own F1 interval
(kit.results.intervals) and does not imitate them.

Per run (leaderboard.csv): sentences_per_second, generated_tokens and output_tokens_per_second
pooled over the run's languages (items and tokens over seconds), runtime and generation_mode as
recorded; a run of one language (every lrb run) also carries its checkpoint's latencies, ratios and
intervals, so its row is lrb's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kit.results import keys
from kit.results.records import CheckpointRecord, groups

SPEED_COLUMNS = ("sentences_per_second", "latency_p50_seconds", "latency_p95_seconds", "generated_tokens",
                 "output_tokens_per_second", "mean_accept_length", "draft_accept_rate")
ENGINE_COLUMNS = ("runtime", "generation_mode")
INTERVAL_COLUMNS = ("accuracy_ci95", "precision_ci95", "recall_ci95")
MCNEMAR_COLUMNS = ("mcnemar_top_run", "mcnemar_p_vs_top")
CHECKPOINT_COLUMNS = (*SPEED_COLUMNS, *ENGINE_COLUMNS, *INTERVAL_COLUMNS, *MCNEMAR_COLUMNS)
RUN_COLUMNS = (*SPEED_COLUMNS, *ENGINE_COLUMNS, *INTERVAL_COLUMNS)

# lrb's rounding of each speed figure (results_store.speed_columns); generated_tokens is a count
_DIGITS = {"sentences_per_second": 3, "latency_p50_seconds": 4, "latency_p95_seconds": 4,
           "output_tokens_per_second": 1, "mean_accept_length": 3, "draft_accept_rate": 4}
# lrb's RunMetadata defaults, what its loader gives a file that records neither
LRB_DEFAULTS = {"runtime": "transformers", "generation_mode": "static-batched"}
_Z95 = 1.959963984540054   # the standard normal's 97.5% quantile


def wilson_text(successes: int, trials: int) -> str:
    """The 95% Wilson score interval of successes/trials as lrb writes it: "[0.7859, 0.8984]"; "" with
    no trials."""
    if trials <= 0:
        return ""
    p, z2 = successes / trials, _Z95 * _Z95
    scale = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / scale
    half = _Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / scale
    return f"[{max(0.0, centre - half):.4f}, {min(1.0, centre + half):.4f}]"


def checkpoint_columns(record: CheckpointRecord, top: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """The newer columns of one complete checkpoint; `top`: record name -> (top run, p-value text)
    (mcnemar_against_top)."""
    out = {**_speed(record), **_engine(record), **_intervals(record)}
    top_run, p = top.get(record.name, ("", ""))
    out.update({"mcnemar_top_run": top_run, "mcnemar_p_vs_top": p})
    return out


def run_columns(group: Sequence[CheckpointRecord]) -> dict[str, str]:
    """The newer columns of one run's complete checkpoints (see the module doc)."""
    if len(group) == 1:
        one = group[0]
        return {**_speed(one), **_engine(one), **_intervals(one)}
    seconds = [_seconds(r) for r in group]
    items = [int(r.metrics.get(keys.N_ITEMS) or 0) for r in group]
    tokens = [_speed_section(r).get("generated_tokens") for r in group]
    out = dict.fromkeys(RUN_COLUMNS, "")
    if all(s is not None and s > 0 for s in seconds):
        total = math.fsum(seconds)
        out["sentences_per_second"] = _figure("sentences_per_second", sum(items) / total)
        if all(_count(t) for t in tokens):
            out["generated_tokens"] = str(sum(tokens))
            out["output_tokens_per_second"] = _figure("output_tokens_per_second", sum(tokens) / total)
    for column in ENGINE_COLUMNS:
        out[column] = ";".join(sorted({_engine(r)[column] for r in group}))
    return out


def mcnemar_against_top(records: Iterable[CheckpointRecord]) -> dict[str, tuple[str, str]]:
    """For each complete checkpoint with item outcomes: the best-F1 run of its language (ties by run
    name) and the exact McNemar p-value against it, by record name (lrb's mcnemar_top_run and
    mcnemar_p_vs_top); a checkpoint whose items or labels differ from the top run's gets the run and
    no p-value."""
    from kit.results.kinds.lrb.compare import mcnemar_exact
    from kit.results.kinds.lrb.paired import discordant, joint_of_outcomes

    out: dict[str, tuple[str, str]] = {}
    for _, group in groups([r for r in records if r.valid], lambda r: r.language):
        best = min(group, key=lambda r: (-float(r.metrics.get(keys.F1) or 0.0), r.run))
        for r in group:
            if r.outcomes is None or best.outcomes is None or r.outcomes[0] != best.outcomes[0]:
                out[r.name] = (best.run, "")
                continue
            p = mcnemar_exact(*discordant(joint_of_outcomes(r.outcomes[1], best.outcomes[1])))
            out[r.name] = (best.run, repr(p))
    return out


def _speed_section(record: CheckpointRecord) -> Mapping[str, Any]:
    speed = (record.data or {}).get(keys.SPEED)
    return speed if isinstance(speed, Mapping) else {}


def _seconds(record: CheckpointRecord) -> float | None:
    """The wall seconds the checkpoint's items took: items over its sentences per second (its own
    figure, or lrb's from metadata.duration_seconds)."""
    sps = _number(_speed_section(record).get("sentences_per_second"))
    items = int(record.metrics.get(keys.N_ITEMS) or 0)
    if sps and sps > 0:
        return items / sps
    duration = _number(record.metadata.get(keys.DURATION_SECONDS))
    return duration if duration and duration > 0 else None


def _speed(record: CheckpointRecord) -> dict[str, str]:
    section = _speed_section(record)
    out = {c: _figure(c, section.get(c)) for c in SPEED_COLUMNS}
    if not out["sentences_per_second"]:
        seconds = _seconds(record)
        items = int(record.metrics.get(keys.N_ITEMS) or 0)
        out["sentences_per_second"] = _figure("sentences_per_second", items / seconds) if seconds else ""
    return out


def _engine(record: CheckpointRecord) -> dict[str, str]:
    lrb_own = keys.PROVENANCE not in (record.data or {})
    return {c: str(record.metadata.get(c) or (LRB_DEFAULTS[c] if lrb_own else "")) for c in ENGINE_COLUMNS}


def _intervals(record: CheckpointRecord) -> dict[str, str]:
    cells = record.metrics.get(keys.CONFUSION) or {}
    tp, fp, tn, fn = (int(cells.get(k) or 0) for k in (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE,
                                                       keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE))
    n = int(record.metrics.get(keys.N_ITEMS) or 0)
    return {"accuracy_ci95": wilson_text(tp + tn, n), "precision_ci95": wilson_text(tp, tp + fp),
            "recall_ci95": wilson_text(tp, tp + fn)}


def _figure(column: str, value: Any) -> str:
    if column == "generated_tokens":
        return str(value) if _count(value) else ""
    number = _number(value)
    return "" if number is None else repr(round(number, _DIGITS[column]))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
