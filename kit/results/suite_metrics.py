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

from kit.results import keys as K


def suite_metrics(predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """{"n_items": n, <metric>: mean of predictions[i]["item_metrics"][<metric>]} over all items."""
    names = sorted({name for p in predictions for name in p[K.ITEM_METRICS]})
    out: dict[str, Any] = {K.N_ITEMS: len(predictions)}
    for name in names:
        values = [float(p[K.ITEM_METRICS][name]) for p in predictions]
        out[name] = math.fsum(values) / len(values) if values else 0.0
    return out


def suite_metrics_differ(recorded: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
    """Names whose recorded value is not the recomputed one (exactly: both come from the same sum)."""
    names = sorted(set(recorded) | set(recomputed))
    return [n for n in names if recorded.get(n) != recomputed.get(n)]


def prediction_faults(predictions: list[Any]) -> dict[str, list[int]]:
    """{fault: indexes} for suite predictions lacking an item id or numeric item metrics; also
    when items disagree on which metrics they carry."""
    faults: dict[str, list[int]] = {}
    names = None
    for index, item in enumerate(predictions):
        if not isinstance(item, dict):
            faults.setdefault("is not a JSON object", []).append(index)
            continue
        if not isinstance(item.get(K.ITEM_ID), str) or not item[K.ITEM_ID]:
            faults.setdefault(f"{K.ITEM_ID} is missing or not a string", []).append(index)
        values = item.get(K.ITEM_METRICS)
        if not isinstance(values, dict) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values.values()):
            faults.setdefault(f"{K.ITEM_METRICS} is missing or not an object of numbers", []).append(index)
            continue
        if names is None:
            names = set(values)
        elif set(values) != names:
            faults.setdefault(f"{K.ITEM_METRICS} names other metrics than item 0", []).append(index)
    return faults
