"""`kit compare` (issue 35): the exact McNemar p-values (scipy's binomial test) against hand-computed
cases and the binomial sum written out, Holm's correction against a hand-computed case, the paired
bootstrap interval (it holds the observed difference, is zero for identical runs, is seeded), the
languages not compared, the flipped items, and the command's table, envelope and refusals."""

from __future__ import annotations

import json
import math

import pytest
from conftest_checkpoints import make_checkpoint, predictions_of
from inprocess import kit_in_process as kit

from kit.results.kinds.lrb.compare import compare_runs, holm, mcnemar_exact

YES, NO, UNP = "yes", "no", "unparsed"


def _binomial_two_sided(k: int, n: int) -> float:
    """The exact two-sided binomial p at 1/2, written out: twice the smaller tail, at most 1."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("b,c,expected", [(0, 5, 2 / 32), (1, 9, 22 / 1024), (5, 5, 1.0), (0, 0, 1.0),
                                          (3, 0, 2 / 8)])
def test_mcnemar_exact_equals_the_hand_computed_binomial_test(b, c, expected):
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact(c, b) == pytest.approx(expected, rel=1e-12)   # two-sided: symmetric


@pytest.mark.parametrize("b,c", [(7, 19), (40, 61), (0, 30), (12, 13)])
def test_mcnemar_exact_equals_the_written_out_binomial_sum(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(_binomial_two_sided(b, b + c), rel=1e-9)


def test_mcnemar_exact_is_scipy_s_binomial_test_over_a_language_s_range_of_counts():
    from scipy.stats import binomtest   # the oracle (the test extra); kit computes it without SciPy

    counts = [(b, c) for b in range(0, 301, 7) for c in range(0, 301 - b, 11) if b + c]
    for b, c in counts:
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12, abs=0), (b, c)


def test_holm_adjusts_step_down_and_keeps_order():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> raised to 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])   # capped at 1
    assert holm([]) == []


def _tree(tmp_path, verdicts_a, verdicts_b, labels, languages=("de", "en")):
    results = tmp_path / "results"
    for lang in languages:
        make_checkpoint(results, "org/model-a", lang, predictions_of(list(zip(labels, verdicts_a))))
        make_checkpoint(results, "org/model-b", lang, predictions_of(list(zip(labels, verdicts_b))))
    return results


def test_a_clear_difference_is_significant_and_its_interval_excludes_zero(tmp_path):
    labels = [YES, NO] * 50
    a = list(labels)                                     # A: every item right
    b = [NO if i % 4 == 0 else lab for i, lab in enumerate(labels)]   # B: 25 of 100 wrong
    result = compare_runs(_tree(tmp_path, a, b, labels), "org/model-a", _tree(tmp_path, a, b, labels), "org/model-b")
    de = result.languages[0]
    assert (de.language, de.items, de.only_a_right, de.only_b_right) == ("de", 100, 25, 0)
    assert de.accuracy.a == 1.0 and de.accuracy.b == 0.75 and de.accuracy.diff == pytest.approx(0.25)
    assert 0 < de.accuracy.low <= 0.25 <= de.accuracy.high
    assert de.p_value == pytest.approx(_binomial_two_sided(25, 25))
    assert de.p_holm == pytest.approx(min(1.0, 2 * de.p_value))   # two languages, equal p-values
    assert result.macro_f1.low > 0 and len(result.flips) == 50 and result.flips[0].predicted_b == NO


def test_identical_runs_differ_by_nothing(tmp_path):
    labels = [YES, NO, NO, YES] * 25
    verdicts = [YES, YES, NO, UNP] * 25
    result = compare_runs(_tree(tmp_path, verdicts, verdicts, labels), "org/model-a",
                          _tree(tmp_path, verdicts, verdicts, labels), "org/model-b")
    for lang in result.languages:
        assert (lang.f1.diff, lang.f1.low, lang.f1.high, lang.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert result.flips == []


def test_the_bootstrap_is_seeded_and_paired(tmp_path):
    labels = [YES, NO] * 60
    a = [YES if i % 3 else NO for i in range(120)]
    b = [YES if i % 5 else NO for i in range(120)]
    results = _tree(tmp_path, a, b, labels)
    first = compare_runs(results, "org/model-a", results, "org/model-b")
    again = compare_runs(results, "org__model-a", results, "org__model-b")   # file stems name the runs too
    assert first.languages[0].f1 == again.languages[0].f1 and first.macro_f1 == again.macro_f1
    de = first.languages[0]
    assert de.f1.low < de.f1.diff < de.f1.high and de.f1.high - de.f1.low < 0.5


def test_a_language_only_one_run_has_is_listed_not_compared(tmp_path):
    labels = [YES, NO] * 20
    results = _tree(tmp_path, labels, labels, labels)
    make_checkpoint(results, "org/model-a", "fr", predictions_of(list(zip(labels, labels))))
    result = compare_runs(results, "org/model-a", results, "org/model-b")
    assert [lang.language for lang in result.languages] == ["de", "en"]
    assert result.not_compared == {"fr": "only A has a complete checkpoint"}


def test_the_command_prints_a_table_and_a_json_envelope(tmp_path):
    labels = [YES, NO] * 30
    a = list(labels)
    b = [NO] * 60
    results = _tree(tmp_path, a, b, labels)
    text = kit("compare", "org/model-a", "org/model-b", "--results", str(results), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "macro" in text.stdout and "30 / 0" in text.stdout and "*" in text.stdout and "60 items flip" in text.stdout
    envelope = kit("compare", "org/model-a", "org/model-b", "--results", str(results), "--json", cwd=tmp_path)
    data = json.loads(envelope.stdout)["data"]
    assert data["languages"][0]["only_a_right"] == 30 and len(data["flips"]) == 60
    assert data["macro"]["accuracy"]["diff"] == pytest.approx(0.5)


@pytest.mark.parametrize("args,words", [
    (["org/model-a", "org/nobody"], ["no checkpoint of run 'org/nobody'"]),
    (["org/model-a", "org/model-b", "--resamples", "99"], ["--resamples 99 is too few", "(at least 100)",
                                                           "use 2000 (the default)"]),
    (["org/model-a", "org/model-b", "--resamples", "0"], ["--resamples 0"]),
    (["org/model-a", "org/model-b", "--results", "missing"], ["missing", "does not exist"]),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    labels = [YES, NO] * 10
    results = _tree(tmp_path, labels, labels, labels)
    r = kit("compare", *args, *([] if "--results" in args else ["--results", str(results)]), cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr


def test_the_page_is_written_only_where_no_other_file_is(tmp_path):
    """--html writes a new file or replaces its own page; never a checkpoint it reads, a file inside the
    results tree, a foreign file or a link (one line, exit 2, the file untouched)."""
    labels = [YES, NO] * 10
    results = _tree(tmp_path, labels, labels, labels)
    checkpoint = next(results.rglob("*.json"))
    before = checkpoint.read_bytes()
    foreign = tmp_path / "notes.html"
    foreign.write_text("<html>my notes</html>")
    (tmp_path / "link.html").symlink_to(foreign)
    for target, said in ((checkpoint, "inside the input"), (results / "page.html", "inside the input"),
                         (foreign, "is not a comparison page kit wrote"), (tmp_path / "link.html", "is a link")):
        r = kit("compare", "org/model-a", "org/model-b", "--results", str(results), "--html", str(target), cwd=tmp_path)
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert checkpoint.read_bytes() == before and foreign.read_text() == "<html>my notes</html>"
    assert not (results / "page.html").exists()
    page = tmp_path / "compare.html"
    for _ in range(2):   # a new file, then its own page again
        r = kit("compare", "org/model-a", "org/model-b", "--results", str(results), "--html", str(page), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert '<meta name="generator" content="kit compare">' in page.read_text(encoding="utf-8")
