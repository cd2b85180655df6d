"""lrb's verdicts read again from their recorded outputs, for whole columns of items at a time: what
verify's verdict check (LrbKind.verdict_faults) and the typed read (kit.results.kinds.lrb.typed) share."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_
from typing import Any

from kit.results import keys
from kit.results.answers import parse_verdict

# answers up to this length are re-read by verify; a reasoning model's long ones are not (cost)
REREAD_CHARS = 256
# a short raw output -> the verdict lrb's rules give it (not truncated); bounded: cleared when full
_READ: dict[str, str] = {}
_READ_MAX = 1 << 16


def score_verdicts_agree(scores: Sequence[Any], got: Sequence[Any], threshold: Any) -> bool:
    """A score run's items, as columns: each verdict is its yes-score against the threshold (a TypeError
    when a score or the threshold is not a number)."""
    return [keys.YES if y >= threshold else keys.NO for y in scores] == got


def text_verdicts_agree(raws: Sequence[Any], truncated: Sequence[Any], got: Sequence[Any]) -> bool:
    """A generate run's items, as columns (raw outputs, `truncated` flags, verdicts): each verdict is what
    lrb's rules read in its output, a truncated one unparsed; outputs longer than the re-read limit are
    not re-read (a TypeError when an output is not text)."""
    want = list(map(_READ.get, raws))   # only short answers are kept there: all known, all short
    if None in want and max(map(len, raws), default=0) > REREAD_CHARS:   # a reasoning model's: short ones only
        return all(parse_verdict(raw, flag is True)[0] == verdict
                   for raw, flag, verdict in zip(raws, truncated, got) if len(raw) <= REREAD_CHARS)
    if None in want:   # answers not seen yet in this process: read once each
        if len(_READ) > _READ_MAX:
            _READ.clear()
        for raw in set(raws).difference(_READ):
            _READ[raw] = parse_verdict(raw, False)[0]
        want = list(map(_READ.__getitem__, raws))
    if True in truncated:   # a truncated answer is unparsed whatever it says (the few found in C)
        for at in compress(range(len(truncated)), map(is_, truncated, repeat(True))):
            want[at] = keys.UNPARSED
    return want == got
