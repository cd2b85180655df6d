"""JSON from files kit does not control (checkpoints, manifests, plans, locks): hostile input must
fail as bad input (a ValueError with a short reason), never as a crash. Python's parser breaks two
other ways on such input: nesting deeper than the recursion limit (RecursionError) and integers
longer than its digit limit (a ValueError that names an interpreter setting). Integers are also
held to 64 bits: none of kit's files needs more, and a larger one overflows every float conversion
downstream (metrics, scores, seeds)."""

from __future__ import annotations

import json
import sys
from typing import Any

INT_LIMIT = 2**63


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
        raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
