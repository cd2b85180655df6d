"""JSON from files kit does not control (checkpoints, manifests, plans, locks): hostile input must
fail as bad input (a ValueError with a short reason), never as a crash. Python's parser breaks two
other ways on such input: nesting deeper than the recursion limit (RecursionError) and integers
longer than its digit limit (a ValueError that names an interpreter setting). Integers are also
held to 64 bits: none of kit's files needs more, and a larger one overflows every float conversion
downstream (metrics, scores, seeds).

`loads_utf8` reads bytes with orjson when it is installed (kit's `fast` extra: about 2.5 times
Python's parser on checkpoints) and gives the very result Python's parser would: orjson is used
only where the two agree, and anything else (an error, a run of 19 digits or more, where an integer
might pass 64 bits) is read again by Python's parser, which words the reason."""

from __future__ import annotations

import json
import sys
from typing import Any

try:
    import orjson
except ImportError:   # the stdlib parser alone: same results, slower
    orjson = None

INT_LIMIT = 2**63
# Where orjson and Python's parser part ways: an integer past 64 bits, which orjson turns into a float
# (and one in [2**63, 2**64), which it keeps). Every such literal has 19 digits or more in a row.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 19:
        raise ValueError(f"holds an integer of {digits} digits, more than 64 bits hold")
    value = int(text)
    if not -INT_LIMIT <= value < INT_LIMIT:
        raise ValueError(f"holds the integer {value}, more than 64 bits hold")
    return value


def loads(text: str | bytes) -> Any:
    """json.loads, with every way the text can be unreadable turned into a ValueError saying why."""
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:
        raise ValueError(f"nested deeper than {sys.getrecursionlimit()} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(_where(exc)) from None


def _where(exc: json.JSONDecodeError) -> str:
    # some of json's messages end in "at" ("Unterminated string starting at"): said once
    return f"{exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"


def loads_unique(text: str | bytes) -> Any:
    """loads, refusing an object that gives one key twice (a ValueError naming it): for the files whose
    every key kit acts on (a lock, an envelope), where the parser's last-one-wins would pick silently."""
    try:
        return json.loads(text, parse_int=_int, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError(f"nested deeper than {sys.getrecursionlimit()} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(_where(exc)) from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))   # type: ignore[func-returns-value]
        raise ValueError(f"the key {twice!r} is given twice in one object")
    return found


def loads_utf8(raw: bytes) -> Any:
    """The JSON document in these UTF-8 bytes, exactly as loads(raw.decode("utf-8")) reads it, with
    the same errors (UnicodeDecodeError for bytes that are not UTF-8, ValueError saying why)."""
    if orjson is not None and raw.translate(_DIGITS_AS_ZERO).find(_LONG_DIGITS) < 0:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:   # NaN, a lone surrogate, deep nesting...: Python decides
            pass
    return loads(raw.decode("utf-8"))


def loads_own(raw: bytes | memoryview) -> Any:
    """JSON that kit wrote itself (its caches): orjson when installed, else Python's parser. Not for
    files others write: an integer past 64 bits would come back as a float (loads_utf8 is for those)."""
    return orjson.loads(raw) if orjson is not None else json.loads(bytes(raw))


def loads_as_json(text: str) -> Any:
    """json.loads(text) itself: Python's parser with none of kit's limits, its result and its errors,
    read by orjson where the two give the same document (no run of 19 digits, nothing orjson refuses).
    For a parser of others' that calls json.loads on many small texts (mlperf-logging's log lines)."""
    if orjson is not None:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:   # a lone surrogate: Python's parser decides
            raw = None
        if raw is not None and raw.translate(_DIGITS_AS_ZERO).find(_LONG_DIGITS) < 0:
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:   # NaN, a lone escaped surrogate, deep nesting...: Python decides
                pass
    return json.loads(text)
