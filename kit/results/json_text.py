"""The canonical text of a checkpoint (sorted keys, UTF-8 kept, indent 2, no NaN), the bytes
json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False) gives, made faster.

With an indent, the standard library encodes in pure Python, a generator per nested value; a
checkpoint's hundreds of flat prediction objects then cost about 2 ms a file, which `kit export lrb` and
`kit release` pay for every file of a sweep. Here each object's flat members are written inline with the
standard library's own C string escaper and number reprs. Anything unusual (a subclass, a key that is
not a string, a NaN or infinity, another type) goes to json.dumps itself, which gives its text or its error.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring   # the C escaper for ensure_ascii=False, where built
from typing import Any

_INF = float("inf")


class _Unusual(Exception):
    """A value this encoder leaves to json.dumps."""


def indented_json(value: Any) -> str:
    """json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False), the same text."""
    out: list[str] = []
    try:
        _value(value, "\n", out)
    except (_Unusual, RecursionError, TypeError):   # json.dumps gives the text, or its own error
        return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False)
    return "".join(out)


def _scalar(value: Any) -> str | None:
    """The text of a str, None, bool, int or float (exact types); None for anything else."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value or value == _INF or value == -_INF:
            raise _Unusual   # json.dumps raises its ValueError
        return float.__repr__(value)
    return None


def _value(value: Any, newline: str, out: list[str]) -> None:
    text = _scalar(value)
    if text is not None:
        out.append(text)
        return
    kind = type(value)
    if kind is dict:
        named, members, brackets = True, sorted(value), "{}"   # a key that is not text: the escaper's TypeError
    elif kind is list or kind is tuple:
        named, members, brackets = False, value, "[]"
    else:
        raise _Unusual
    if not value:
        out.append(brackets)
        return
    inner = newline + "  "   # a member a line, indented one step more
    sep = brackets[0] + inner
    for member in members:
        if named:
            out.append(sep + encode_basestring(member) + ": ")
            member = value[member]
        else:
            out.append(sep)
        text = _scalar(member)
        if text is not None:   # most members: no call
            out.append(text)
        else:
            _value(member, inner, out)
        sep = "," + inner
    out.append(newline + brackets[1])
