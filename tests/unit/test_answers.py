"""parse_verdict: the exact / leading / last / none rules, truncation, reasoning blocks."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kit.results import keys
from kit.results.answers import answer_words, parse_verdict, strip_reasoning

Y, N, U = keys.YES, keys.NO, keys.UNPARSED
EXACT, LEADING, LAST = keys.PARSE_EXACT, keys.PARSE_LEADING, keys.PARSE_LAST

CASES = [
    # exact: the only word is the verdict, whatever surrounds it
    ("yes", Y, EXACT),
    ("No", N, EXACT),
    ("  YES!\n", Y, EXACT),
    ("**Yes.**", Y, EXACT),
    ('"no"', N, EXACT),
    ("_no_", N, EXACT),
    ("(Yes)", Y, EXACT),
    # leading: the first word is the verdict
    ("Yes, because the sentence mentions no crops.", Y, LEADING),
    ("No. The text says yes to nothing.", N, LEADING),
    ("YES YES", Y, LEADING),
    ("**No** - it is about a concert", N, LEADING),
    # last: the last standalone verdict anywhere
    ("The answer is yes.", Y, LAST),
    ("Is it yes or no? I would say no", N, LAST),
    ("Answer: **yes**", Y, LAST),
    ("Yesterday I said no, nobody knew", N, LAST),
    ("« Oui » -> yes", Y, LAST),
    # none: no standalone verdict
    ("yesterday nobody knew", U, keys.PARSE_NONE),
    ("I know, yesno is not a word", U, keys.PARSE_NONE),
    ("no1 and yes2 are labels", U, keys.PARSE_NONE),
    ("nó", U, keys.PARSE_NONE),
    ("no\u0301", U, keys.PARSE_NONE),  # "no" + combining acute: one word, not "no"
    ("Oui", U, keys.PARSE_NONE),
    ("", U, keys.PARSE_NONE),
    ("   \n", U, keys.PARSE_NONE),
    # reasoning models: a complete leading block is dropped, the answer after it is parsed
    ("<think>The farm is mentioned... no, wait.</think>\nYes", Y, EXACT),
    ("<think>yes? yes.</think>\n\nNo, it describes a concert.", N, LEADING),
    ("  <think>no</think> The answer is yes", Y, LAST),
    ("<think>it could be yes</think>", U, keys.PARSE_NONE),
    ("reasoning opened by the chat template, so no</think>\n\nYes", Y, EXACT),
    # not a complete leading block: the whole text is parsed
    ("<think>unclosed reasoning, leaning to no", N, LAST),
    ("Sure. <think>aside yes</think> no", N, LAST),
]


@pytest.mark.parametrize(("text", "label", "mode"), CASES)
def test_parse_verdict_table(text, label, mode):
    assert parse_verdict(text, truncated=False) == (label, mode)


@pytest.mark.parametrize("text", ["yes", "No.", "<think>x</think>yes", ""])
def test_truncated_is_never_parsed(text):
    assert parse_verdict(text, truncated=True) == (U, keys.PARSE_TRUNCATED)


def test_strip_reasoning_keeps_text_without_a_block():
    assert strip_reasoning("plain yes") == "plain yes"
    assert strip_reasoning("<think>a</think>b</think>c") == "b</think>c"


def test_answer_words_splits_on_punctuation_and_underscore():
    assert answer_words("**Yes**_no, l'été 42!") == ["yes", "no", "l", "été", "42"]


# --- properties ------------------------------------------------------------

letters = st.characters(categories=["L", "N"], codec="utf-8")
fillers = st.text(letters, min_size=1, max_size=12).filter(lambda w: w.lower() not in keys.LABELS)
separators = st.text(st.characters(categories=["P", "S", "Z", "Cc"], codec="utf-8"), min_size=1, max_size=4)
verdict_spellings = st.sampled_from(keys.LABELS).flatmap(
    lambda label: st.tuples(
        st.just(label),
        st.lists(st.booleans(), min_size=len(label), max_size=len(label)).map(
            lambda upper: "".join(c.upper() if u else c for c, u in zip(label, upper))
        ),
    )
)


def join(words: list[str], seps: list[str]) -> str:
    """words separated (and surrounded) by the separators, cycling through them."""
    out = [seps[0]]
    for i, word in enumerate(words):
        out += [word, seps[(i + 1) % len(seps)]]
    return "".join(out)


@given(st.text(max_size=200), st.booleans())
def test_label_and_mode_always_agree(text, truncated):
    label, mode = parse_verdict(text, truncated)
    assert label in (Y, N, U)
    assert mode in keys.PARSE_MODES and mode != keys.PARSE_SCORE
    assert (label == U) == (mode in (keys.PARSE_TRUNCATED, keys.PARSE_NONE))
    if truncated:
        assert mode == keys.PARSE_TRUNCATED


@given(st.lists(fillers, max_size=8), st.lists(separators, min_size=1, max_size=4))
def test_text_without_a_standalone_verdict_is_unparsed(words, seps):
    assert parse_verdict(join(words, seps), truncated=False) == (U, keys.PARSE_NONE)


@given(
    st.lists(fillers, max_size=8),
    st.lists(separators, min_size=1, max_size=4),
    verdict_spellings,
    st.integers(min_value=0),
)
def test_one_standalone_verdict_is_found_with_the_right_mode(words, seps, verdict, where):
    label, spelled = verdict
    at = where % (len(words) + 1)
    text = join(words[:at] + [spelled] + words[at:], seps)
    assume("</think>" not in text)  # a closing tag would drop the text before it
    expected_mode = EXACT if not words else LEADING if at == 0 else LAST
    assert parse_verdict(text, truncated=False) == (label, expected_mode)
