"""One field of every prediction of a checkpoint, as a list: what the checks of one validation read
many times over (ids, labels, verdicts, answers, truncation), extracted once per field while that
checkpoint is validated. A release-size tree has thousands of checkpoints of hundreds of items: each
pass over a list costs a few microseconds, and a validation used to make a dozen.

Outside `shared(predictions)`, or for another list, every call extracts anew: nothing is cached
across checkpoints, so a list changed after its validation is never judged by an old column."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import repeat
from operator import itemgetter
from typing import Any

_SCOPE = threading.local()


@contextmanager
def shared(predictions: Sequence[Any]) -> Iterator[None]:
    """While it holds, column(predictions, ...) extracts each field of this list once."""
    outer = getattr(_SCOPE, "current", None)
    _SCOPE.current = (predictions, {})
    try:
        yield
    finally:
        _SCOPE.current = outer


def column(predictions: Sequence[Any], key: str, *, required: bool = False) -> list[Any]:
    """[item[key] for item in predictions] when `required` (a KeyError for an item without it), else
    [item.get(key) ...]; a TypeError (or AttributeError) when an item is not a JSON object. Callers
    must not change the list: within shared() it is handed out again."""
    current = getattr(_SCOPE, "current", None)
    if current is None or current[0] is not predictions:
        return _extract(predictions, key, required)
    found = current[1].get((key, required))
    if found is None:
        found = current[1][(key, required)] = _extract(predictions, key, required)
    return found


def _extract(predictions: Sequence[Any], key: str, required: bool) -> list[Any]:
    if required:
        return list(map(itemgetter(key), predictions))
    return list(map(dict.get, predictions, repeat(key)))
