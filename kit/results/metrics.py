"""Checkpoint metrics: computed from `expected` and `predicted` only, and compared exactly.

The formulas are the lrb ones (docs/checkpoint-format.md), evaluated in the same order,
so they reproduce the archived lrb metrics bit for bit: `yes` is the positive class, an
`unparsed` prediction (lrb's own files write null) counts in `confusion.unparsed` (and in
`n_items`) and in no other cell, and a zero denominator gives 0.0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import eq
from typing import Any

from kit.errors import CheckpointError
from kit.results import keys
from kit.results.columns import column

_CELLS = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)
# what `predicted` may hold; `expected` is one of keys.LABELS. None is lrb's unparsed (its Label | None).
PREDICTED_LABELS = (*keys.LABELS, keys.UNPARSED, None)


def has_verdict(item: Mapping[str, Any]) -> bool:
    """True when the item has a `predicted` key holding yes, no, unparsed or null (a missing key is not null)."""
    return keys.PREDICTED in item and item[keys.PREDICTED] in PREDICTED_LABELS




def all_well_formed(predictions: Sequence[Any]) -> bool:
    """True when every prediction is a JSON object with a non-empty string item id, a yes/no `expected`,
    a verdict (has_verdict) and a boolean `truncated` if any: the common case, decided with C-level
    passes over the list (about 20 times faster than item by item). False sends the caller to the item-by-item check that names
    the faults; it never lets a faulty list through."""
    try:
        ids = column(predictions, keys.ITEM_ID, required=True)   # KeyError: missing; TypeError: not an object
        if not ids:
            return True
        "".join(ids)                          # TypeError: an id that is not a string
        return ("" not in ids and set(column(predictions, keys.EXPECTED, required=True)) <= _EXPECTED
                and set(column(predictions, keys.PREDICTED, required=True)) <= _PREDICTED
                and set(map(type, column(predictions, keys.TRUNCATED))) <= _TRUNCATED_TYPES)
    except (KeyError, TypeError, AttributeError):   # TypeError also: an unhashable value
        return False


_EXPECTED, _PREDICTED = frozenset(keys.LABELS), frozenset(PREDICTED_LABELS)
_TRUNCATED_TYPES = frozenset({bool, type(None)})   # `truncated`: true, false, or absent


def confusion_counts(predictions: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Count predictions into the five confusion cells (yes is the positive class)."""
    counts = dict.fromkeys(_CELLS, 0)
    if not isinstance(predictions, Sequence):
        predictions = list(predictions)
    try:   # count the few distinct (expected, predicted) pairs at C speed, then check those
        counted = counts_of_columns(column(predictions, keys.EXPECTED, required=True),
                                    column(predictions, keys.PREDICTED, required=True))
    except (KeyError, TypeError, AttributeError):   # a key missing, an item not an object, an unhashable value
        counted = None
    if counted is not None:
        return counted
    for index, item in enumerate(predictions):
        expected, predicted = item.get(keys.EXPECTED), item.get(keys.PREDICTED, "(missing)")
        if expected not in keys.LABELS or not has_verdict(item):
            raise CheckpointError(
                f"predictions[{index}] (item_id {item.get(keys.ITEM_ID)!r}) has "
                f"{keys.EXPECTED}={expected!r}, {keys.PREDICTED}={predicted!r}",
                fix="expected must be yes/no and predicted yes/no/unparsed (or null, as lrb writes it)",
            )
        counts[confusion_cell(expected, predicted)] += 1
    return counts


def counts_of_columns(expected: Sequence[Any], predicted: Sequence[Any]) -> dict[str, int] | None:
    """The five confusion cell counts of items given as their `expected` and `predicted` columns, or None when
    a label is not one of lrb's (the caller then goes item by item, naming the fault); a TypeError for an
    unhashable value."""
    pairs = Counter(zip(expected, predicted))
    if not all(e in keys.LABELS and p in PREDICTED_LABELS for e, p in pairs):
        return None
    counts = dict.fromkeys(_CELLS, 0)
    for (e, p), n in pairs.items():
        counts[confusion_cell(e, p)] += n
    return counts


def counts_of_labels(expected: Sequence[str], predicted: Sequence[str | None]) -> dict[str, int]:
    """counts_of_columns of columns whose labels are already known to be lrb's (every expected label yes or
    no, every verdict yes, no, unparsed or None: a typed read's), counted in C."""
    yes, no = predicted.count(keys.YES), predicted.count(keys.NO)
    on_yes = list(compress(predicted, map(eq, expected, repeat(keys.YES))))   # the verdicts of yes items
    tp, fn = on_yes.count(keys.YES), on_yes.count(keys.NO)
    return {keys.TRUE_POSITIVE: tp, keys.FALSE_POSITIVE: yes - tp, keys.TRUE_NEGATIVE: no - fn,
            keys.FALSE_NEGATIVE: fn, keys.UNPARSED: len(predicted) - yes - no}


def compute_metrics(predictions: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The `metrics` section for these predictions: rates, `n_items` and `confusion`."""
    return metrics_of_counts(confusion_counts(predictions))


def metrics_of_counts(c: Mapping[str, int]) -> dict[str, Any]:
    """The `metrics` section of these five confusion cell counts (see compute_metrics)."""
    tp, fp = c[keys.TRUE_POSITIVE], c[keys.FALSE_POSITIVE]
    tn, fn = c[keys.TRUE_NEGATIVE], c[keys.FALSE_NEGATIVE]
    n_items = sum(c.values())
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    mcc_denominator = math.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    # The operation order below is lrb's; reordering (e.g. 2tp / (2tp + fp + fn) for f1)
    # changes the last bits and breaks exact recomputation of archived files.
    return {
        keys.ACCURACY: _ratio(tp + tn, n_items),
        keys.BALANCED_ACCURACY: (recall + _ratio(tn, tn + fp)) / 2,
        keys.F1: _ratio(2 * precision * recall, precision + recall),
        keys.PRECISION: precision,
        keys.RECALL: recall,
        keys.MCC: _ratio(float(tp * tn - fp * fn), mcc_denominator),
        keys.UNPARSED_RATE: _ratio(c[keys.UNPARSED], n_items),
        keys.N_ITEMS: n_items,
        keys.CONFUSION: c,
    }


def metrics_equal(stored: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ (exact equality), sorted; nested ones as `confusion.unparsed`.

    A key present on one side only is a difference. An empty list means equal.
    """
    if stored == recomputed and not _holds_bool(stored):   # the common case, compared in C
        return []
    return sorted(_differences(stored, recomputed, prefix=""))


def _holds_bool(values: Mapping[str, Any]) -> bool:
    """Whether a value, or a value of a nested mapping, is a boolean (True == 1, so `==` alone cannot tell)."""
    return any(isinstance(v, bool) or (isinstance(v, dict) and _holds_bool(v)) for v in values.values())


def _differences(stored: Mapping[str, Any], recomputed: Mapping[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for key in stored.keys() | recomputed.keys():
        name = f"{prefix}{key}"
        if key not in stored or key not in recomputed:
            out.append(name)
            continue
        a, b = stored[key], recomputed[key]
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(_differences(a, b, prefix=f"{name}."))
        elif not _same_value(a, b):
            out.append(name)
    return out


def _same_value(a: Any, b: Any) -> bool:
    # True == 1 in Python; a boolean where a count or rate belongs is a difference.
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


def verdict(predicted: str | None) -> str:
    """A prediction's label as kit names it: lrb's null is `unparsed`."""
    return keys.UNPARSED if predicted is None else predicted


def confusion_cell(expected: str, predicted: str | None) -> str:
    """The confusion cell of one item (yes is the positive class; null and unparsed: unparsed)."""
    if verdict(predicted) == keys.UNPARSED:
        return keys.UNPARSED
    if predicted == keys.YES:
        return keys.TRUE_POSITIVE if expected == keys.YES else keys.FALSE_POSITIVE
    return keys.FALSE_NEGATIVE if expected == keys.YES else keys.TRUE_NEGATIVE


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0
