"""compute_metrics reproduces the archived lrb metrics bit for bit; metrics_equal finds every difference."""

from __future__ import annotations

import json
import math

import pytest
from conftest_checkpoints import LRB_ARCHIVE, LRB_FILES, predictions_of
from hypothesis import given
from hypothesis import strategies as st

from kit.errors import CheckpointError
from kit.results import keys
from kit.results.metrics import compute_metrics, metrics_equal

Y, N, U = keys.YES, keys.NO, keys.UNPARSED


def test_every_lrb_fixture_is_the_file_its_notice_records():
    """tests/fixtures/lrb/NOTICE.md names each copied file with its size and sha256: a file edited, or one
    added without its row, fails here (and the archive's four original runs are among them)."""
    import hashlib
    import re

    fixtures = LRB_ARCHIVE.parents[2]   # tests/fixtures/lrb
    rows = {m["path"]: (int(m["size"]), m["sha"]) for m in re.finditer(
        r"^\| `(?P<path>[^`]+)` \| `[0-9a-f]+` \| (?P<size>\d+) \| `(?P<sha>[0-9a-f]{64})` \|$",
        (fixtures / "NOTICE.md").read_text(encoding="utf-8"), re.M)}
    files = sorted(p for p in (fixtures / "results").rglob("*") if p.is_file())
    assert len(LRB_FILES) >= 4 and len(files) > len(LRB_FILES)
    for path in files:
        rel = path.relative_to(fixtures).as_posix()
        body = path.read_bytes()
        assert rows.get(rel) == (len(body), hashlib.sha256(body).hexdigest()), rel


@pytest.mark.parametrize("path", LRB_FILES, ids=lambda p: p.name)
def test_archived_lrb_metrics_recompute_exactly(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    recomputed = compute_metrics(data[keys.PREDICTIONS])
    assert metrics_equal(data[keys.METRICS], recomputed) == []
    assert recomputed == data[keys.METRICS]


def test_f1_uses_precision_and_recall_not_counts():
    # LiquidAI__LFM2.5-350M: tp=80, fp=74. 2tp/(2tp+fp+fn) differs in the last bit.
    m = compute_metrics(predictions_of([(Y, Y)] * 80 + [(N, Y)] * 74))
    assert m[keys.F1] == 0.6837606837606837
    assert 2 * 80 / (2 * 80 + 74) != 0.6837606837606837
    assert m[keys.PRECISION] == 80 / 154 and m[keys.RECALL] == 1.0
    assert m[keys.BALANCED_ACCURACY] == 0.5 and m[keys.MCC] == 0.0


def test_counts_each_confusion_cell():
    pairs = [(Y, Y)] * 3 + [(N, Y)] * 2 + [(N, N)] * 4 + [(Y, N)] * 1 + [(Y, U), (N, U)]
    m = compute_metrics(predictions_of(pairs))
    assert m[keys.CONFUSION] == {
        keys.TRUE_POSITIVE: 3,
        keys.FALSE_POSITIVE: 2,
        keys.TRUE_NEGATIVE: 4,
        keys.FALSE_NEGATIVE: 1,
        keys.UNPARSED: 2,
    }
    assert m[keys.N_ITEMS] == 12
    assert m[keys.ACCURACY] == 7 / 12
    assert m[keys.PRECISION] == 3 / 5
    assert m[keys.RECALL] == 3 / 4
    assert m[keys.UNPARSED_RATE] == 2 / 12
    assert m[keys.MCC] == (3 * 4 - 2 * 1) / math.sqrt(5 * 4 * 6 * 5)


def test_unparsed_counts_only_in_unparsed_and_n_items():
    # An unparsed answer to a "yes" item is not a false negative: recall stays 1.0.
    m = compute_metrics(predictions_of([(Y, Y), (Y, U)]))
    assert m[keys.CONFUSION][keys.FALSE_NEGATIVE] == 0
    assert m[keys.RECALL] == 1.0
    assert m[keys.ACCURACY] == 0.5
    assert m[keys.UNPARSED_RATE] == 0.5


def test_all_unparsed():
    m = compute_metrics(predictions_of([(Y, U), (N, U), (N, U)]))
    assert m[keys.CONFUSION][keys.UNPARSED] == 3
    assert m[keys.N_ITEMS] == 3
    assert m[keys.UNPARSED_RATE] == 1.0
    for name in (keys.ACCURACY, keys.BALANCED_ACCURACY, keys.F1, keys.PRECISION, keys.RECALL, keys.MCC):
        assert m[name] == 0.0, name


def test_zero_denominators_give_zero():
    # Only negatives, all right: no predicted or actual positive.
    m = compute_metrics(predictions_of([(N, N)] * 5))
    assert m[keys.PRECISION] == 0.0 and m[keys.RECALL] == 0.0 and m[keys.F1] == 0.0
    assert m[keys.MCC] == 0.0
    assert m[keys.ACCURACY] == 1.0
    assert m[keys.BALANCED_ACCURACY] == 0.5  # recall 0.0 (empty) + specificity 1.0


def test_precision_zero_when_nothing_predicted_yes():
    m = compute_metrics(predictions_of([(Y, N), (N, N)]))
    assert m[keys.PRECISION] == 0.0 and m[keys.RECALL] == 0.0 and m[keys.F1] == 0.0
    assert m[keys.BALANCED_ACCURACY] == 0.5


def test_no_predictions_gives_zeros():
    m = compute_metrics([])
    assert m[keys.N_ITEMS] == 0
    assert all(m[name] == 0.0 for name in keys.METRIC_NAMES)


@pytest.mark.parametrize(
    ("expected", "predicted"), [("maybe", Y), (Y, "Yes"), (N, "null"), (None, N), (N, "(missing)")]
)
def test_bad_label_is_a_one_line_checkpoint_error(expected, predicted):
    preds = predictions_of([(Y, Y)])
    preds[0].update({keys.EXPECTED: expected, keys.PREDICTED: predicted})
    if predicted == "(missing)":
        del preds[0][keys.PREDICTED]   # no key at all is not lrb's null
    with pytest.raises(CheckpointError) as err:
        compute_metrics(preds)
    assert "predictions[0]" in str(err.value) and "item-000" in str(err.value)
    assert "\n" not in str(err.value)


def test_lrb_null_prediction_counts_as_unparsed():
    as_null = predictions_of([(Y, Y), (N, U), (Y, U)])
    for item in as_null[1:]:
        item[keys.PREDICTED] = None
    assert compute_metrics(as_null) == compute_metrics(predictions_of([(Y, Y), (N, U), (Y, U)]))
    assert compute_metrics(as_null)[keys.CONFUSION][keys.UNPARSED] == 2


def test_metrics_equal_names_a_nested_confusion_difference():
    m = compute_metrics(predictions_of([(Y, Y), (N, N), (N, U)]))
    changed = json.loads(json.dumps(m))
    changed[keys.CONFUSION][keys.UNPARSED] = 0
    assert metrics_equal(changed, m) == [f"{keys.CONFUSION}.{keys.UNPARSED}"]


def test_metrics_equal_last_bit_missing_and_extra_keys():
    m = compute_metrics(predictions_of([(Y, Y), (N, Y), (Y, N)]))
    stored = dict(m)
    stored[keys.F1] = math.nextafter(m[keys.F1], 1.0)
    del stored[keys.ACCURACY]
    stored["auc"] = 0.5
    assert metrics_equal(stored, m) == sorted([keys.F1, keys.ACCURACY, "auc"])


def test_metrics_equal_whole_confusion_missing_or_not_a_dict():
    m = compute_metrics(predictions_of([(Y, Y)]))
    assert metrics_equal({**m, keys.CONFUSION: 5}, m) == [keys.CONFUSION]
    without = {k: v for k, v in m.items() if k != keys.CONFUSION}
    assert metrics_equal(without, m) == [keys.CONFUSION]


def test_metrics_equal_int_and_float_of_same_value_are_equal_but_bool_is_not():
    m = compute_metrics(predictions_of([(Y, Y)]))
    assert m[keys.RECALL] == 1.0
    assert metrics_equal({**m, keys.RECALL: 1}, m) == []
    assert metrics_equal({**m, keys.RECALL: True}, m) == [keys.RECALL]


labels = st.tuples(st.sampled_from(keys.LABELS), st.sampled_from((Y, N, U)))


@given(st.lists(labels, max_size=60))
def test_metrics_properties(pairs):
    m = compute_metrics(predictions_of(pairs))
    assert sum(m[keys.CONFUSION].values()) == m[keys.N_ITEMS] == len(pairs)
    assert m[keys.CONFUSION][keys.UNPARSED] == sum(p == U for _, p in pairs)
    for name in keys.METRIC_NAMES:
        low = -1.0 if name == keys.MCC else 0.0
        assert low <= m[name] <= 1.0, name
    assert metrics_equal(m, compute_metrics(predictions_of(pairs))) == []


@given(st.lists(labels, min_size=1, max_size=40), st.sampled_from(keys.METRIC_NAMES))
def test_any_nudged_rate_is_reported(pairs, name):
    m = compute_metrics(predictions_of(pairs))
    stored = {**m, name: math.nextafter(m[name], 2.0)}
    assert metrics_equal(stored, m) == [name]


@given(st.lists(st.tuples(st.sampled_from(keys.LABELS), st.sampled_from((Y, N, U, None))), max_size=80))
def test_the_typed_reads_count_is_the_item_by_item_count(pairs):
    """counts_of_labels (a typed read's columns, labels already checked) gives counts_of_columns' cells,
    in the same order, for any mix of labels, lrb's null included, and for equal labels that are other
    string objects (a parser need not share them)."""
    from kit.results.metrics import counts_of_columns, counts_of_labels

    expected = [e for e, _ in pairs]
    predicted = [p for _, p in pairs]
    want = counts_of_columns(expected, predicted)
    got = counts_of_labels(expected, predicted)
    assert list(got.items()) == list(want.items())
    copies = [None if p is None else "".join(list(p)) for p in predicted]   # equal text, other objects
    assert counts_of_labels(["".join(list(e)) for e in expected], copies) == want
