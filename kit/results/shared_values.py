"""Equal values held once: thousands of checkpoint summaries repeat the same few hundred strings
(digests, run names, versions, keys) and the same small objects (a run's image, model and packages, a
site's hardware), and a report or a cache that keeps every summary would otherwise hold each of them
thousands of times. What is shared must not be changed afterwards: the summaries are read, never edited."""

from __future__ import annotations

from typing import Any


def shared_json(value: Any, table: dict[Any, Any], *, document_depth: int = 0) -> Any:
    """The same JSON value, with each string (keys and values) replaced by the equal one in `table`
    (added when new), and each object nested inside a document's sections by an equal one met before, so
    that equal strings and objects across many documents are held once. The document lies
    `document_depth` levels into `value` (0: `value` is the document; 1: a member of it is, as a cache
    entry's summary)."""
    return _shared(value, table, -document_depth)


def _shared(value: Any, table: dict[Any, Any], depth: int) -> Any:
    if isinstance(value, str):
        return table.setdefault(value, value)
    if isinstance(value, list):
        return [_shared(v, table, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    out = {table.setdefault(k, k) if isinstance(k, str) else k: _shared(v, table, depth + 1) for k, v in value.items()}
    if depth < 2:   # a document and its sections differ from file to file: looking them up costs more than it saves
        return out
    key = _object_key(out)
    if key is None:
        return out
    slot = ("{}", hash(key))   # the key's hash, not the key: most nested objects are met once, and a key
    found = table.get(slot)    # is as large as its object
    if found is None:
        table[slot] = out
        return out
    return found if _object_key(found) == key else out   # another object of the same hash: not shared


def _object_key(obj: dict[Any, Any]) -> tuple[Any, ...] | None:
    """A key equal only for objects equal in every member and its type (1, 1.0 and True differ, and so do
    0.0 and -0.0), members that are objects compared by identity (already shared); None when a member
    is a list (not shared)."""
    parts: list[Any] = ["{}"]
    for k, v in obj.items():
        kind = type(v)
        if kind is str or kind is int or kind is bool or v is None:
            parts.append((k, kind, v))
        elif kind is float:
            parts.append((k, kind, v.hex()))
        elif kind is dict:
            parts.append((k, kind, id(v)))   # shared before its parent: one object per value
        else:
            return None
    return tuple(parts)
