"""Equal strings held once: thousands of checkpoint summaries repeat the same few hundred strings
(digests, run names, versions, keys), and a report or a cache that keeps every summary would
otherwise hold each of them thousands of times."""

from __future__ import annotations

from typing import Any


def shared_strings(value: Any, table: dict[str, str]) -> Any:
    """The same JSON value, with each string (keys and values) replaced by the equal one in `table`
    (added when new), so that equal strings across many documents are held once."""
    if isinstance(value, str):
        return table.setdefault(value, value)
    if isinstance(value, dict):
        return {table.setdefault(k, k) if isinstance(k, str) else k: shared_strings(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [shared_strings(v, table) for v in value]
    return value
