"""lrb checkpoints read in one typed pass (msgspec, kit's `fast` extra): the parser builds each prediction
as a small typed record and checks its shape as it goes (a non-empty text id, a yes/no expected label, a
yes/no/unparsed/null verdict, a boolean `truncated`), so a release-size status or verify spends its time
on reading, not on re-checking hundreds of items per file in Python.

The typed read is a fast path only. It answers for a file only when it reads the very document
kit.safejson would (any parse error, unknown field, integer past 64 bits, or nesting past what Python's
parser takes sends the file to the full path), and `LrbTyped.items_pass` / `matches` answer True only
when the full path's checks would pass; the full path names every fault."""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import attrgetter
from typing import Annotated, Any, Literal, Union

from kit.results import keys
from kit.results.evidence import is_kit_checkpoint
from kit.results.identity import Expectation
from kit.results.kinds.base import ResultKind, TypedCheckpoint
from kit.results.kinds.lrb.verdicts import score_verdicts_agree, text_verdicts_agree
from kit.results.metrics import counts_of_labels, metrics_of_counts
from kit.safejson import INT_LIMIT

try:
    import msgspec
except ImportError:   # without the `fast` extra every file takes the full path
    msgspec = None

# Nesting a typed read accepts in the free-form sections; deeper documents go to the full path, which
# holds them to Python's recursion limit.
MAX_DEPTH = 64

_DECODERS: list[Any] = []


def _decoders() -> list[Any]:
    """The msgspec decoders of a whole lrb checkpoint, built on first use (none without msgspec): first a
    generate run's (every item a text answer with a text parse mode), then any lrb file's."""
    if not _DECODERS and msgspec is not None:
        whole = Annotated[int, msgspec.Meta(ge=-INT_LIMIT, le=INT_LIMIT - 1)]
        number = Union[whole, float, None]
        text_modes = Literal[tuple(mode for mode in keys.PARSE_MODES if mode != keys.PARSE_SCORE)]  # type: ignore[valid-type]
        shared = [
            (keys.ITEM_ID, Annotated[str, msgspec.Meta(min_length=1)]),
            (keys.EXPECTED, Literal[keys.YES, keys.NO]),
            (keys.PREDICTED, Union[Literal[keys.YES, keys.NO, keys.UNPARSED], None]),
        ]
        # field names are the checkpoint keys themselves (docs/checkpoint-format.md)
        text_item = msgspec.defstruct("LrbTextItem", [
            *shared,
            (keys.RAW_OUTPUT, str),
            (keys.TRUNCATED, Union[bool, None], None),
            (keys.PARSE_MODE, Union[text_modes, None], None),
        ], forbid_unknown_fields=True, gc=False)
        any_item = msgspec.defstruct("LrbItem", [
            *shared,
            (keys.TRUNCATED, Union[bool, None], None),
            (keys.PARSE_MODE, Union[str, None], None),
            (keys.RAW_OUTPUT, Union[str, None], None),
            (keys.SCORE_YES, number, None),
            (keys.SCORE_NO, number, None),
            (keys.NATIVE_SCORE, number, None),
        ], forbid_unknown_fields=True, gc=False)
        for item in (text_item, any_item):
            whole_file = msgspec.defstruct(f"{item.__name__}Checkpoint", [
                (keys.METADATA, dict[str, Any]),
                (keys.METRICS, dict[str, Any]),
                (keys.PREDICTIONS, list[item]),
                (keys.PROVENANCE, Any, msgspec.UNSET),
                (keys.SPEED, Any, msgspec.UNSET),
            ], forbid_unknown_fields=True)
            _DECODERS.append(msgspec.json.Decoder(whole_file))
    return _DECODERS


def read_typed(raw: bytes) -> "LrbTyped | None":
    """The lrb-shaped checkpoint in these bytes (ResultKind.typed_read), or None; which kind its metadata
    names is kit.results.kinds.typed_read's check."""
    for text_only, decoder in zip((True, False), _decoders()):
        try:
            whole = decoder.decode(raw)
            break
        except msgspec.ValidationError:   # not this shape: the next decoder may read it
            continue
        except (msgspec.DecodeError, RecursionError, ValueError, OverflowError):   # not JSON msgspec reads
            return None   # (or nested past its limit): the full path decides
    else:
        return None
    sections: dict[str, Any] = {}
    for name in (keys.METADATA, keys.METRICS, keys.PROVENANCE, keys.SPEED):
        value = getattr(whole, name)
        if value is msgspec.UNSET:
            continue
        if not _as_python_reads(value, 0):
            return None
        sections[name] = value
    return LrbTyped(sections, getattr(whole, keys.PREDICTIONS), text_only)


def _as_python_reads(value: Any, depth: int) -> bool:
    """True when Python's parser (kit.safejson) gives this decoded value too: every integer within 64 bits
    (msgspec keeps larger ones exact, where safejson refuses them) and nesting within MAX_DEPTH."""
    kind = type(value)
    if kind is int:
        return -INT_LIMIT <= value < INT_LIMIT
    if kind is not dict and kind is not list:
        return True
    if depth >= MAX_DEPTH:
        return False
    for inner in value.values() if kind is dict else value:
        kind = type(inner)
        if kind is str or kind is float or kind is bool or inner is None:   # most values: no call
            continue
        if not _as_python_reads(inner, depth + 1):
            return False
    return True


_ID, _EXPECTED, _PREDICTED, _TRUNCATED, _MODE, _RAW, _YES = (attrgetter(name) for name in (
    keys.ITEM_ID, keys.EXPECTED, keys.PREDICTED, keys.TRUNCATED, keys.PARSE_MODE, keys.RAW_OUTPUT, keys.SCORE_YES))


class LrbTyped(TypedCheckpoint):
    """An lrb checkpoint from read_typed: its sections but predictions, and its items as typed records."""

    def __init__(self, sections: dict[str, Any], items: Sequence[Any], text_only: bool) -> None:
        self.sections = sections
        self.items = items
        self.text_only = text_only   # every item has a text answer and no score parse mode
        self.ids: tuple[str, ...] = tuple(map(_ID, items))   # compared with the benchmark's tuple as it is
        self.expected: list[str] = list(map(_EXPECTED, items))
        self.predicted: list[str | None] = list(map(_PREDICTED, items))
        self.flags: list[bool | None] = list(map(_TRUNCATED, items))
        self.truncated = self.flags.count(True)

    def items_pass(self) -> bool:
        """TypedCheckpoint.items_pass: the full path's checks, on the items' columns."""
        from kit.results.kinds import kind_of

        if not self.ids or len(set(self.ids)) != len(self.ids):
            return False
        kind: ResultKind | None = kind_of(self.sections)
        counts = counts_of_labels(self.expected, self.predicted)   # the decoder checked every label
        if kind is None or kind.metrics_differ(self.sections[keys.METRICS], metrics_of_counts(counts)):
            return False
        return self._verdicts_pass() if is_kit_checkpoint(self.sections) else True

    def _verdicts_pass(self) -> bool:
        """LrbKind.verdict_faults finds nothing: every answer read the way its run's task reads answers,
        each verdict what its output gives."""
        metadata = self.sections[keys.METADATA]
        score_run = metadata.get(keys.TASK) == keys.TASK_SCORE
        if self.text_only:   # the decoder made sure: no score parse mode, every answer text
            return not score_run and text_verdicts_agree(list(map(_RAW, self.items)), self.flags, self.predicted)
        modes = list(map(_MODE, self.items))
        options = metadata.get(keys.OPTIONS)
        threshold = options.get("threshold", 0.5) if isinstance(options, dict) else 0.5
        try:
            if score_run:
                if type(threshold) not in (int, float) or not math.isfinite(threshold):   # (LrbKind.verdict_faults)
                    return False
                scores = list(map(_YES, self.items))
                if set(modes) != {keys.PARSE_SCORE} or not all(type(y) in (int, float) and math.isfinite(y)
                                                                 for y in scores):
                    return False
                return score_verdicts_agree(scores, self.predicted, threshold)
            raws = list(map(_RAW, self.items))
            if keys.PARSE_SCORE in modes or None in raws:
                return False
            return text_verdicts_agree(raws, self.flags, self.predicted)
        except (TypeError, ValueError):   # a threshold that is not a number
            return False

    def matches(self, expect: Expectation) -> bool:
        """TypedCheckpoint.matches: the ids in the benchmark's order, and its answers."""
        in_order = None
        ids = expect.item_ids
        if ids is not None:
            if self.ids != (ids if type(ids) is tuple else tuple(ids)):
                return False
            in_order = expect.answers_in_order
        answers = expect.answers
        if answers is None or self.expected == in_order:
            return True
        return list(map(answers.get, self.ids, self.expected)) == self.expected

    def outcomes(self) -> tuple[str, str] | None:
        """TypedCheckpoint.outcomes (kit.results.kinds.lrb.paired.item_outcomes)."""
        from kit.results.kinds.lrb.paired import outcomes_of_text_columns

        return outcomes_of_text_columns(self.ids, self.expected, self.predicted)
