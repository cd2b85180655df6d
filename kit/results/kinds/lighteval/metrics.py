"""Metrics of a LightEval suite checkpoint: each task metric is the mean of its per-item values.

LightEval aggregates its sample-level metrics with a mean too; kit recomputes that mean with
math.fsum over the stored item values, so `kit verify` can check a checkpoint without LightEval
and a tampered item value shows. Corpus-level LightEval metrics have no per-item value and are
not recorded by kit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from kit.results import keys
from kit.results.records import item_faults


def suite_metrics(predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """{"n_items": n, <metric>: mean of predictions[i]["item_metrics"][<metric>]} over all items."""
    names = sorted({name for p in predictions for name in p[keys.ITEM_METRICS]})
    out: dict[str, Any] = {keys.N_ITEMS: len(predictions)}
    for name in names:
        values = [float(p[keys.ITEM_METRICS][name]) for p in predictions]
        out[name] = math.fsum(values) / len(values) if values else 0.0
    return out


def suite_metrics_differ(recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
    """Names whose recorded value is not the recomputed one (exactly: both come from the same sum)."""
    names = sorted(set(recorded) | set(recomputed))
    return [n for n in names if recorded.get(n) != recomputed.get(n)]


def prediction_faults(predictions: list[Any]) -> dict[str, list[int]]:
    """{fault: indexes} for suite predictions lacking an item id or numeric item metrics; also
    when items disagree on which metrics they carry."""
    names: list[set[str]] = []   # the metric names of the first well-formed item

    def faults_of(item: dict[str, Any]) -> list[str]:
        values = item.get(keys.ITEM_METRICS)
        if not isinstance(values, dict) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values.values()):
            return [f"{keys.ITEM_METRICS} is missing or not an object of numbers"]
        names[:] = names or [set(values)]
        return [f"{keys.ITEM_METRICS} names other metrics than item 0"] if set(values) != names[0] else []

    return item_faults(predictions, faults_of)
