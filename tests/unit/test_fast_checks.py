"""The C-speed passes of checkpoint validation (issue 15) agree with the item-by-item rules on every
input: a well-formed list passes both, anything else is sent to the rules that name the fault."""

from __future__ import annotations

import itertools

import pytest

from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import CheckpointState, without_predictions
from kit.results.identity import answer_reasons
from kit.results.kinds.lrb import LrbKind
from kit.results.metrics import confusion_cell, all_well_formed, confusion_counts
from kit.results.records import item_faults

GOOD = {keys.ITEM_ID: "a", keys.EXPECTED: "yes", keys.PREDICTED: "no"}
ODD_VALUES = ["yes", "no", "unparsed", None, "", "YES", 1, True, 0, 1.0, [], {}, ["yes"]]


def slow_faults(predictions):
    from kit.results.metrics import has_verdict

    return item_faults(predictions, lambda item: [
        *(["expected"] if item.get(keys.EXPECTED) not in keys.LABELS else []),
        *(["predicted"] if not has_verdict(item) else [])])


def variants():
    yield [GOOD]
    for key in (keys.ITEM_ID, keys.EXPECTED, keys.PREDICTED):
        yield [GOOD, {k: v for k, v in GOOD.items() if k != key}]
        for value in ODD_VALUES:
            yield [GOOD, {**GOOD, key: value}]
    for item in ("text", 3, None, [GOOD], True):
        yield [GOOD, item]


@pytest.mark.parametrize("predictions", list(variants()), ids=repr)
def test_fast_shape_check_agrees_with_the_item_rules(predictions):
    assert all_well_formed(predictions) == (slow_faults(predictions) == {})
    assert (LrbKind().prediction_faults(predictions) == {}) == (slow_faults(predictions) == {})


def test_fast_counts_equal_item_by_item_counts():
    items = [{keys.ITEM_ID: f"i{n}", keys.EXPECTED: e, keys.PREDICTED: p}
             for n, (e, p) in enumerate(itertools.product(keys.LABELS, (*keys.LABELS, keys.UNPARSED, None)))]
    slow = dict.fromkeys(confusion_counts([]), 0)
    for item in items:
        slow[confusion_cell(item[keys.EXPECTED], item[keys.PREDICTED])] += 1
    assert confusion_counts(items) == slow
    assert confusion_counts(iter(items)) == slow


def test_fast_answer_check_agrees():
    preds = [{keys.ITEM_ID: "a", keys.EXPECTED: "yes"}, {keys.ITEM_ID: "b", keys.EXPECTED: "no"}]
    assert answer_reasons(preds, {"a": "yes", "b": "no"}) == []
    assert answer_reasons(preds, {"a": "yes"}) == []
    assert "item 'b'" in answer_reasons(preds, {"a": "yes", "b": "yes"})[0]
    assert "item 'b'" in answer_reasons([preds[0], {keys.ITEM_ID: "b"}], {"a": "yes", "b": "yes"})[0]


@pytest.mark.parametrize("predictions, count", [
    ([{keys.TRUNCATED: True}, {keys.TRUNCATED: 1}, {keys.TRUNCATED: False}, {}], 1),
    ([{keys.TRUNCATED: True}, "text"], 1), ("text", 0), ({"a": 1}, 0), (None, 0)])
def test_truncated_count_counts_only_true(predictions, count):
    state = without_predictions(CheckpointState(PairState.COMPLETE, data={keys.PREDICTIONS: predictions, "x": 1}))
    assert state.truncated == count and state.data == {"x": 1}


def test_answers_in_the_benchmarks_order_clear_in_one_comparison_and_a_wrong_one_is_still_named():
    preds = [{keys.ITEM_ID: "a", keys.EXPECTED: "yes"}, {keys.ITEM_ID: "b", keys.EXPECTED: "no"}]
    answers = {"a": "yes", "b": "no"}
    assert answer_reasons(preds, answers, ["yes", "no"]) == []
    wrong = [preds[0], {keys.ITEM_ID: "b", keys.EXPECTED: "yes"}]
    assert "item 'b'" in answer_reasons(wrong, answers, ["yes", "no"])[0]
    # a list that differs sends the check on to the per-item rule
    assert answer_reasons(preds, answers, ["no", "no"]) == []
