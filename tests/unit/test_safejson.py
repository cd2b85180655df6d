"""kit.safejson.loads_utf8 gives exactly what Python's parser (with kit's 64-bit integer rule) gives,
whether orjson reads the bytes or not: same values and types, same errors with the same words."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit import safejson

orjson = pytest.importorskip("orjson")   # kit's `fast` extra: part of the project venv


def outcome(read, document):
    """("ok", what `read` gives for the document), or the name and words of the error it raises."""
    try:
        return "ok", read(document)
    except (ValueError, RecursionError) as exc:   # UnicodeDecodeError included
        return type(exc).__name__, str(exc)


def stdlib(raw: bytes):
    """What kit read before orjson: decode, then Python's parser."""
    return outcome(lambda r: safejson.loads(r.decode("utf-8")), raw)


def fast(raw: bytes):
    return outcome(safejson.loads_utf8, raw)


def same(a, b) -> bool:
    """Equal values of equal types, NaN equal to NaN, -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


def agree(raw: bytes) -> None:
    alike(raw, stdlib(raw), fast(raw))


def alike(document, want, got) -> None:
    """Both read the same value, or failed with the same error in the same words."""
    assert want[0] == got[0], (document[:80], want, got)
    assert same(want[1], got[1]) if want[0] == "ok" else want[1] == got[1], (document[:80], want, got)


EDGES = [
    b"NaN", b"[Infinity, -Infinity]", b"1e400", b"-1e400", b"1.0e-400", b"-0.0", b"-0", b"1E2",
    b'"\\ud800"', b'"\\ud83d\\ude00"', b'"\\u0000"', b"\xef\xbb\xbf{}", b'{"a": 1, "a": 2}', b'"a\x01b"',
    b"[1] x", b'"\xff"', b'"\xc0\xaf"', b'"\xed\xa0\x80"', b"\x0c[1]", b"[1,]", b"01", b"[1.]", b"", b"  ",
    b"9223372036854775807", b"9223372036854775808", b"18446744073709551615", b"18446744073709551616",
    b"-9223372036854775808", b"-9223372036854775809", b"1" * 5000, b'{"n": ' + b"9" * 30 + b"}",
    b"[" * 3000 + b"]" * 3000, b"[" * 300 + b"]" * 300, b'{"x": [1, 2.5, "three", null, true, false]}',
    b'"0000000000000000000"', b"1234567890123456789.5",
]


@pytest.mark.parametrize("raw", EDGES, ids=range(len(EDGES)))
def test_edge_cases_read_the_same_with_and_without_orjson(raw):
    agree(raw)


values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.text()
    | st.integers(min_value=-2**70, max_value=2**70) | st.integers(min_value=2**62, max_value=2**65),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(values, st.booleans())
def test_any_document_python_writes_reads_the_same(value, ascii_only):
    agree(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(values, st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=3))
def test_damaged_documents_fail_or_read_the_same(value, at, junk):
    raw = json.dumps(value).encode("utf-8", "surrogatepass")
    at = at % (len(raw) + 1)
    agree(raw[:at] + junk + raw[at:])


@pytest.fixture
def orjson_calls(monkeypatch):
    """What orjson.loads is handed from now on, in order."""
    calls = []
    real = orjson.loads
    monkeypatch.setattr(safejson.orjson, "loads", lambda raw: calls.append(raw) or real(raw))
    return calls


def test_an_ordinary_checkpoint_is_read_by_orjson(orjson_calls):
    calls = orjson_calls
    raw = json.dumps({"metadata": {"run": "m"}, "predictions": [{"item_id": "a" * 40, "n": 12}]}).encode()
    assert safejson.loads_utf8(raw) == json.loads(raw)
    assert calls == [raw]
    calls.clear()
    with pytest.raises(ValueError, match="20 digits"):   # past 64 bits: Python's parser says so
        safejson.loads_utf8(b"[18446744073709551616]")
    assert calls == []


def agree_with_json(text: str) -> None:
    alike(text, outcome(json.loads, text), outcome(safejson.loads_as_json, text))


@pytest.mark.parametrize("raw", EDGES, ids=range(len(EDGES)))
def test_loads_as_json_is_json_loads_on_the_edge_cases(raw):
    """None of kit's limits: a 20-digit integer, or one of 5,000 digits, reads (or fails) as json.loads."""
    agree_with_json(raw.decode("utf-8", "surrogateescape"))


@settings(max_examples=300, deadline=None)
@given(values, st.booleans(), st.integers(min_value=0, max_value=200), st.text(min_size=0, max_size=3))
def test_loads_as_json_is_json_loads_on_any_text(value, ascii_only, at, junk):
    text = json.dumps(value, ensure_ascii=ascii_only)
    agree_with_json(text)
    at = at % (len(text) + 1)
    agree_with_json(text[:at] + junk + text[at:])


def test_loads_as_json_reads_an_ordinary_line_with_orjson(orjson_calls):
    calls = orjson_calls
    assert safejson.loads_as_json('{"key": "run_stop", "time_ms": 1796524814757}') == {
        "key": "run_stop", "time_ms": 1796524814757}
    assert len(calls) == 1
    assert safejson.loads_as_json("[" + "9" * 30 + "]") == [int("9" * 30)] and len(calls) == 1
