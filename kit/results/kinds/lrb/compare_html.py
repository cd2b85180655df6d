"""The HTML page of a comparison of two lrb runs (kit.results.kinds.lrb.compare): the per-language
and macro table with paired intervals and McNemar p-values, what was not compared, the flipped items
with their sentences and both answers, and the method. `kit compare --html` writes it alone; `kit
report` writes one for each pair of neighbouring ranks, linked from the leaderboard's marks. Every
text from a result file or the benchmark goes through html_page.esc."""

from __future__ import annotations

from collections.abc import Sequence

from kit.results.html_page import Cell, code, esc, page, table
from kit.results.kinds.lrb.compare import Comparison, Difference

SIGNIFICANT = 0.05


def _signed(value: float) -> str:
    return f"{value:+.4f}"


def interval_text(diff: Difference) -> str:
    """A difference and its interval, as `+0.0123 [-0.0040, +0.0290]`."""
    return f"{_signed(diff.diff)} [{_signed(diff.low)}, {_signed(diff.high)}]"


def excludes_zero(diff: Difference) -> bool:
    """Whether the difference's interval lies wholly on one side of zero."""
    return diff.low > 0 or diff.high < 0


def comparison_body(result: Comparison, *, flips_note: str | None = None) -> str:
    """The body of the comparison's page; `flips_note` (HTML kit built) replaces the flipped items'
    table: a report's page, made from the items' cells, gives their count and the command that names them."""
    rows = []
    for lang in result.languages:
        mark = "*" if lang.p_holm < SIGNIFICANT else ""
        rows.append([lang.language, lang.items, f"{lang.f1.a:.4f}", f"{lang.f1.b:.4f}", interval_text(lang.f1),
                     interval_text(lang.accuracy), f"{lang.only_a_right} / {lang.only_b_right}",
                     f"{lang.p_value:.3g}", f"{lang.p_holm:.3g}{mark}"])
    if result.macro_f1 is not None and result.macro_accuracy is not None:
        rows.append([Cell("<b>macro</b>"), sum(lang.items for lang in result.languages), f"{result.macro_f1.a:.4f}",
                     f"{result.macro_f1.b:.4f}", interval_text(result.macro_f1), interval_text(result.macro_accuracy),
                     f"({len(result.languages)} languages)", "", ""])
    verdict = ""
    if result.macro_f1 is not None:
        verdict = ("the macro F1 difference's interval excludes zero: the two runs are distinguishable"
                   if excludes_zero(result.macro_f1) else
                   "the macro F1 difference's interval holds zero: the items do not tell the two runs apart")
    parts = [f"<p>A = {code(result.run_a)}, B = {code(result.run_b)}. {esc(verdict)}.</p>\n",
             table(("language", "items", "F1 A", "F1 B", "F1 A−B [95% CI]", "accuracy A−B [95% CI]",
                    "only A / only B right", "McNemar p", "p (Holm)"), rows,
                   caption="A minus B, on the items both runs answered (* p < 0.05 after Holm's correction)")]
    if result.not_compared:
        parts.append(table(("language", "why not compared"), sorted(result.not_compared.items())))
    if flips_note is not None:
        parts.append(f"<h2>Flipped items</h2>\n<p>{flips_note}</p>\n")
    elif result.flips:
        parts.append("<h2>Flipped items</h2>\n" + table(
            ("language", "item", "sentence", "label", "A said", "B said", "A's answer", "B's answer"),
            ([f.language, Cell(code(f.item_id)), f.sentence, f.expected, f.predicted_a, f.predicted_b,
              Cell(code(f.answer_a)), Cell(code(f.answer_b))] for f in result.flips),
            caption=f"{len(result.flips)} items one run got right and the other wrong"))
    else:
        parts.append("<h2>Flipped items</h2>\n<p>None: both runs got the same items right.</p>\n")
    parts.append(f'<p class="note">Method: {esc(result.method)}.</p>\n')
    return "".join(parts)


def comparison_page(result: Comparison, nav: Sequence[tuple[str, str]] = (), *,
                    flips_note: str | None = None, generator: str | None = None) -> str:
    """The whole HTML page of a comparison (see comparison_body); `generator` as html_page.page's."""
    return page(f"{result.run_a} vs {result.run_b}", comparison_body(result, flips_note=flips_note), nav, generator)
