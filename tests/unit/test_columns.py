"""kit.results.columns: a field of every prediction extracted once while one checkpoint is validated,
never reused for another list or after the validation, and with the same errors as item-by-item access."""

from __future__ import annotations

import pytest

from kit.results.columns import column, shared


def test_within_a_validation_each_field_is_extracted_once_and_only_for_that_list():
    items = [{"item_id": "a", "predicted": "yes"}, {"item_id": "b", "predicted": None}]
    other = [{"item_id": "a", "predicted": "yes"}]
    with shared(items):
        first = column(items, "predicted")
        assert column(items, "predicted") is first and first == ["yes", None]
        assert column(other, "predicted") is not column(other, "predicted")   # another list: not shared
        assert column(items, "truncated") == [None, None]
        with shared(other):   # a nested validation has its own scope, and the outer one comes back
            assert column(other, "item_id") is column(other, "item_id")
        assert column(items, "predicted") is first
    items[0]["predicted"] = "no"   # after the validation, the list is read anew
    assert column(items, "predicted") == ["no", None]


def test_a_required_field_and_an_item_that_is_not_an_object_raise_as_item_access_would():
    with pytest.raises(KeyError):
        column([{"item_id": "a"}], "predicted", required=True)
    assert column([{"item_id": "a"}], "predicted") == [None]
    for bad in ([["item_id"]], ["text"], [None]):
        with pytest.raises((TypeError, AttributeError)):
            column(bad, "item_id")
        with shared(bad), pytest.raises((TypeError, AttributeError)):
            column(bad, "item_id", required=True)
