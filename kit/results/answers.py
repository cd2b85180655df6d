"""Recover a yes/no verdict from a model's raw output, and say which rule found it.

Rules, first match wins (the parse modes are in kit.results.keys):

- `truncated`: the output hit the token budget without a stop token; never parsed.
- `exact`: the answer's only word is yes or no (`Yes`, `**No.**`, `"yes"`).
- `leading`: the answer's first word is yes or no (`Yes, because ...`).
- `last`: the last standalone yes or no in the answer (`The answer is no.`).
- `none`: no standalone yes or no; the label is `unparsed`.

A word is a maximal run of letters, digits and combining marks (Unicode), compared
case-insensitively, so `yesterday`, `nobody`, `know` and `no1` are not verdicts while
`_yes_` and `(no)` are.

Reasoning models: a complete leading reasoning block is removed before the rules run,
so `<think>... no ...</think>\\nYes` is `yes`/`exact`. The block is `<think>...</think>`
at the start of the output, or text ending in `</think>` with no `<think>` before it
(chat templates that open the block in the prompt, as Qwen3 and DeepSeek-R1 do). Only
the answer after the block is parsed: reasoning that never reaches an answer is
`unparsed`/`none`, since words inside deliberation are not the model's verdict. An
unclosed `<think>` is not a block; that text is parsed as it is.
"""

from __future__ import annotations

import unicodedata

from kit.results import keys

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


def parse_verdict(text: str, truncated: bool) -> tuple[str, str]:
    """(label, parse_mode) for one raw output: label is yes, no or unparsed."""
    if truncated:
        return keys.UNPARSED, keys.PARSE_TRUNCATED
    words = answer_words(strip_reasoning(text))
    verdicts = [w for w in words if w in keys.LABELS]
    if not verdicts:
        return keys.UNPARSED, keys.PARSE_NONE
    if len(words) == 1:
        return words[0], keys.PARSE_EXACT
    if words[0] in keys.LABELS:
        return words[0], keys.PARSE_LEADING
    return verdicts[-1], keys.PARSE_LAST


def strip_reasoning(text: str) -> str:
    """The text after a complete leading reasoning block, or the text unchanged."""
    close = text.find(_THINK_CLOSE)
    if close == -1:
        return text
    before = text[:close]
    opened_here = before.lstrip().startswith(_THINK_OPEN)
    opened_by_template = _THINK_OPEN not in before
    if opened_here or opened_by_template:
        return text[close + len(_THINK_CLOSE) :]
    return text


def answer_words(text: str) -> list[str]:
    """The words of `text`, lower-cased, in order (letters, digits and combining marks)."""
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if unicodedata.category(char)[0] in "LNM":
            current.append(char)
        elif current:
            words.append("".join(current).lower())
            current = []
    if current:
        words.append("".join(current).lower())
    return words
