"""kit.results.json_text: the canonical checkpoint text, byte for byte what json.dumps gives (or its error)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.results.json_text import indented_json

REPO = Path(__file__).resolve().parents[2]


def reference(value):
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False)


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
                      | st.tuples(inner, inner), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(values)
def test_any_json_value_gets_json_dumps_own_text(value):
    assert indented_json(value) == reference(value)


@pytest.mark.parametrize("value", [
    {"scores": [1e-05, 2.5e-07, 1e16, -0.0, 5e-324, 1.7976931348623157e308, 12345678901234567890123]},
    {"text": "\x00\x1f\x7f\u2028\u00e9\ud800 \"quoted\" \\ tab\t"},   # a lone surrogate is text here, as in json.dumps
    {"b": {}, "a": [], "c": [[], {}, [{}]], "d": ({"x": 1},)},
    {1: "int key", 2: "another"}, {True: 1}, {2.5: "float key"},
])
def test_edge_values_and_keys_get_json_dumps_own_text(value):
    assert indented_json(value) == reference(value)


class Label(str):
    pass


@pytest.mark.parametrize("value", [{"f": math.nan}, {"f": [math.inf]}, {"k": {1, 2}}, {"k": object()},
                                   {1: "a", "b": "mixed keys"}, {None: 1, "z": 2}])
def test_what_json_dumps_refuses_is_refused_with_its_error(value):
    with pytest.raises(Exception) as ours:
        indented_json(value)
    with pytest.raises(Exception) as theirs:
        reference(value)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_subclasses_and_a_real_checkpoint_get_json_dumps_own_text():
    assert indented_json({"label": Label("yes"), "n": True}) == reference({"label": Label("yes"), "n": True})
    for path in sorted((REPO / "tests" / "fixtures").rglob("*.json"))[:40]:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        assert indented_json(doc) == reference(doc), path
