"""Paired statistics of two lrb runs on the same items, from the items' joint confusion cells.

Each item falls in one of 25 joint cells (A's confusion cell, B's confusion cell). Resampling the
items with replacement is drawing those 25 counts from a multinomial with the observed joint
frequencies: the same distribution as resampling item ids and scoring both runs on each draw, at a
cost that does not grow with the number of items. F1 per draw is kit.results.intervals.f1_of_cells
(lrb's formula); accuracy counts the true positives and true negatives. `kit compare` and the
report's marks between neighbouring ranks both draw here, with the same seed for the same two runs
and language, so the two give the same interval for the same pair.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from itertools import repeat
from operator import add, itemgetter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kit.errors import MissingExtraError
from kit.results import keys
from kit.results.intervals import CONFIDENCE, f1_of_cells

CELLS = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)
CELL_INDEX = {cell: i for i, cell in enumerate(CELLS)}
_RIGHT = (True, False, True, False, False)     # tp and tn are right answers; unparsed is wrong


def numpy() -> Any:
    """numpy, or a MissingExtraError naming the report extra."""
    try:
        import numpy as np
    except ImportError as exc:
        raise MissingExtraError("kit's paired bootstrap", "numpy", "report") from exc
    return np


def seed(*parts: str) -> int:
    """A 64-bit seed from text parts (the two runs and the language): the same inputs, the same draws."""
    text = "\0".join(parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "big")


_DIGITS = b"01234"
_DIGIT_VALUES = bytes.maketrans(_DIGITS, bytes(range(5)))
_CELL_DIGIT = {(keys.YES, keys.YES): "0", (keys.NO, keys.YES): "1", (keys.NO, keys.NO): "2", (keys.YES, keys.NO): "3"}


def item_outcomes(predictions: Sequence[Any]) -> tuple[str, str] | None:
    """A checkpoint's items in short: (sha256 of "id<TAB>expected" lines in item id order, each item's
    confusion cell as one digit, index into CELLS, in the same order). Two checkpoints with one digest
    hold the same items with the same labels, so their digit strings pair item by item. None when an
    item is not a well-formed lrb prediction."""
    try:
        return outcomes_of_columns([p[keys.ITEM_ID] for p in predictions], [p[keys.EXPECTED] for p in predictions],
                                   [p.get(keys.PREDICTED) for p in predictions])
    except (TypeError, KeyError, AttributeError):
        return None


def outcomes_of_columns(ids: Sequence[Any], expected: Sequence[Any], predicted: Sequence[Any]) -> tuple[str, str]:
    """item_outcomes of items given as their id, expected and predicted columns (a TypeError when the
    items cannot be ordered: ids of several types, or a shared id whose labels do not compare)."""
    pick = _id_order(ids)
    if pick is not None:   # the usual case: ordered by id alone, in C
        ids, expected, predicted = pick(ids), pick(expected), pick(predicted)
    elif len(ids) > 1:
        items = sorted(zip(ids, expected, predicted))
        ids, expected, predicted = (list(column) for column in zip(*items)) if items else ([], [], [])
    return _items_digest(ids, expected), _cell_digits(expected, predicted)


def outcomes_of_text_columns(ids: tuple[str, ...], expected: Sequence[str], predicted: Sequence[Any]) -> tuple[str, str]:
    """outcomes_of_columns of items whose ids and expected labels are all text (a typed read's columns):
    the items' order and digest found once per process for each set of items and labels, which every
    run of a language shares (a report reads fifty or more runs of each)."""
    key = (ids, tuple(expected))
    known = _TEXT_ORDERS.get(key)
    if known is None:
        pick = _id_order(ids)
        if pick is None:   # a shared id: ordered by its labels too, as outcomes_of_columns does
            return outcomes_of_columns(ids, expected, predicted)
        if len(_TEXT_ORDERS) >= _TEXT_ORDERS_KEPT:
            _TEXT_ORDERS.clear()
        known = _TEXT_ORDERS[key] = (pick, _items_digest(pick(ids), pick(expected)))
    pick, digest = known
    return digest, _cell_digits(pick(expected), pick(predicted))


_TEXT_ORDERS: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[Any, str]] = {}
_TEXT_ORDERS_KEPT = 64   # languages' item sets held at once; a worker reads its languages one after another


def _id_order(ids: Sequence[Any]) -> Any:
    """An itemgetter putting a column of these items in id order, when there are two or more and the ids
    are unique; else None."""
    try:
        unique = len(set(ids)) == len(ids)
    except TypeError:   # an unhashable id
        unique = False
    if not unique or len(ids) < 2:
        return None
    return itemgetter(*sorted(range(len(ids)), key=ids.__getitem__))


def _items_digest(ids: Sequence[Any], expected: Sequence[Any]) -> str:
    """The sha256 of "id<TAB>expected" lines of items in id order (item_outcomes)."""
    try:
        lines = "\n".join(map("\t".join, zip(ids, expected)))
    except TypeError:   # an id or label that is not text
        lines = "\n".join(map("{}\t{}".format, ids, expected))
    if lines.count("\t") != len(ids) or lines.count("\n") != max(len(ids) - 1, 0):
        # a tab or newline inside an id or label would make two lists of items read as one: those are
        # digested as JSON instead (lrb's ids are hex, so every real file keeps the lines above)
        lines = "json:" + json.dumps([[str(i), str(e)] for i, e in zip(ids, expected)], ensure_ascii=False)
    return hashlib.sha256(lines.encode("utf-8", "surrogatepass")).hexdigest()


def _cell_digits(expected: Sequence[Any], predicted: Sequence[Any]) -> str:
    """Each item's confusion cell as a digit: (expected, predicted) -> cell; anything else (null,
    unparsed) is unparsed, as confusion_cell has it."""
    return "".join(map(_CELL_DIGIT.get, zip(expected, predicted), repeat("4")))


def joint_of_outcomes(cells_a: str, cells_b: str) -> list[int]:
    """The 25 joint cell counts of two digit strings of item_outcomes that share one digest."""
    a, b = cells_a.encode("ascii", "replace"), cells_b.encode("ascii", "replace")
    if len(a) == len(b) and not a.translate(None, _DIGITS) and not b.translate(None, _DIGITS):
        # each item's joint cell 5 * A + B as one byte of a big number (no byte carries: 5 * 4 + 4 < 256),
        # so that the 25 counts are 25 byte counts in C (a report compares thousands of pairs of runs)
        joint = (int.from_bytes(a.translate(_DIGIT_VALUES), "big") * 5
                 + int.from_bytes(b.translate(_DIGIT_VALUES), "big")).to_bytes(len(a), "big")
        return [joint.count(cell) for cell in range(25)]
    counts = [0] * 25
    for pair, n in Counter(map(add, cells_a, cells_b)).items():
        counts[5 * int(pair[0]) + int(pair[1])] += n
    return counts


def joint_counts(cells_a: Iterable[int], cells_b: Iterable[int]) -> list[int]:
    """The 25 joint cell counts (index 5 * A's cell + B's cell) of items given as cell indexes."""
    counts = [0] * 25
    for a, b in zip(cells_a, cells_b):
        counts[5 * a + b] += 1
    return counts


def marginals(joint: Sequence[int]) -> tuple[list[int], list[int]]:
    """A's and B's five confusion cell counts (CELLS order) from the 25 joint cell counts."""
    return ([sum(joint[5 * a + b] for b in range(5)) for a in range(5)],
            [sum(joint[5 * a + b] for a in range(5)) for b in range(5)])


def discordant(joint: Sequence[int]) -> tuple[int, int]:
    """McNemar's counts from the 25 joint cell counts: items only A got right, items only B got right."""
    cells = range(5)
    only_a = sum(joint[5 * a + b] for a in cells for b in cells if _RIGHT[a] and not _RIGHT[b])
    only_b = sum(joint[5 * a + b] for a in cells for b in cells if _RIGHT[b] and not _RIGHT[a])
    return only_a, only_b


@dataclass(frozen=True)
class PairedLanguage:
    """One language's paired figures: item count, F1 and accuracy of each run, McNemar's discordant
    counts, and the bootstrap draws of the F1 and accuracy differences (A minus B)."""

    items: int
    f1_a: float
    f1_b: float
    accuracy_a: float
    accuracy_b: float
    only_a_right: int
    only_b_right: int
    f1_draws: Any
    accuracy_draws: Any


def paired_language(joint: Sequence[int], resamples: int, rng_seed: int) -> PairedLanguage:
    """The paired figures of one language from its 25 joint cell counts, `resamples` draws seeded by `rng_seed`."""
    np = numpy()
    joint_array = np.asarray(joint, dtype=np.int64)
    n = int(joint_array.sum())
    rng = np.random.default_rng(rng_seed)
    draws = rng.multinomial(n, joint_array / n, size=resamples).reshape(resamples, 5, 5)
    observed = joint_array.reshape(1, 5, 5)
    right = np.array(_RIGHT)

    def scores(grid):
        cells_a, cells_b = grid.sum(axis=2), grid.sum(axis=1)
        return (f1_of_cells(np, cells_a), f1_of_cells(np, cells_b),
                cells_a[:, right].sum(axis=1) / n, cells_b[:, right].sum(axis=1) / n)

    f1_a, f1_b, acc_a, acc_b = (float(v[0]) for v in scores(observed))
    draw_f1_a, draw_f1_b, draw_acc_a, draw_acc_b = scores(draws)
    only_a, only_b = discordant(joint)
    return PairedLanguage(n, f1_a, f1_b, acc_a, acc_b, only_a, only_b, draw_f1_a - draw_f1_b, draw_acc_a - draw_acc_b)


def percentile_interval(draws: Any) -> tuple[float, float]:
    """The central CONFIDENCE percentile interval of the draws."""
    np = numpy()
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def macro_draws(draws: Sequence[Any]) -> Any:
    """Each draw's mean over the languages' draws (given in language order)."""
    np = numpy()
    return np.mean(np.stack(list(draws)), axis=0)


def _f1_gradient(tp: float, fp: float, fn: float) -> tuple[float, float, float, float]:
    """F1 = 2tp / (2tp + fp + fn) (lrb's formula, which is this wherever it is not 0) and its partial
    derivatives by tp, fp and fn; all 0 when no item is a tp, fp or fn."""
    d = 2 * tp + fp + fn
    if d == 0:
        return 0.0, 0.0, 0.0, 0.0
    return 2 * tp / d, 2 * (fp + fn) / d ** 2, -2 * tp / d ** 2, -2 * tp / d ** 2


def normal_differences(joint: Sequence[int]) -> tuple[float, float, float, float]:
    """(F1 A - F1 B, its variance, accuracy A - accuracy B, its variance) of one language from its 25
    joint cell counts, by the delta method: the normal approximation of what the paired bootstrap
    draws, at the cost of one pass over the cells. The variance is that of resampling the items."""
    n = sum(joint)
    if n == 0:
        return 0.0, 0.0, 0.0, 0.0
    p = [c / n for c in joint]
    cells_a, cells_b = marginals(joint)
    f1_a, *grad_a = _f1_gradient(*(cells_a[k] / n for k in (0, 1, 3)))
    f1_b, *grad_b = _f1_gradient(*(cells_b[k] / n for k in (0, 1, 3)))

    def per_cell(grad: Sequence[float], cell: int) -> float:   # d F1 / d p of an item in this cell
        return {0: grad[0], 1: grad[1], 3: grad[2]}.get(cell, 0.0)

    f1_g = [per_cell(grad_a, k // 5) - per_cell(grad_b, k % 5) for k in range(25)]
    acc_g = [float(_RIGHT[k // 5]) - float(_RIGHT[k % 5]) for k in range(25)]

    def variance(g: Sequence[float]) -> float:
        mean = sum(pk * gk for pk, gk in zip(p, g))
        return max(0.0, sum(pk * gk * gk for pk, gk in zip(p, g)) - mean * mean) / n

    acc_diff = sum(pk * gk for pk, gk in zip(p, acc_g))
    return f1_a - f1_b, variance(f1_g), acc_diff, variance(acc_g)
