"""The lrb kind's part of the HTML report (kit.results.kinds.lrb): the leaderboard with F1 intervals,
the heatmap and F1-per-language plots, a table per language and each result's metrics. The numbers
are the report's own (kit.results.kinds.lrb.report's rows, kit.results.intervals), not recomputed here."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from kit.results import keys
from kit.results.html_page import (Cell, HtmlParts, OnDemand, PageLinks, esc, image, key_values, maybe_link, slug, table,
                                   titled_link)
from kit.results.html_plots import f1_by_language_png
from kit.results.intervals import METHOD, f1_intervals
from kit.results.plot_process import draw
from kit.results.kinds.lrb.compare_html import comparison_body, interval_text
from kit.results.kinds.lrb.neighbours import NeighbourComparison
from kit.results.kinds.lrb.columns import CHECKPOINT_COLUMNS
from kit.results.kinds.lrb.report import HEATMAP, aggregate_row, lrb_tables
from kit.results.records import CheckpointRecord
from kit.results.tables import rate

F1_PLOT = "f1_by_language.png"
F1_CI = "f1 95% CI"
_METRICS = (keys.ACCURACY, keys.BALANCED_ACCURACY, keys.PRECISION, keys.RECALL, keys.MCC, keys.UNPARSED_RATE)
_CONFUSION = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)


def _ci(bounds: tuple[float, float] | None) -> str:
    return "" if bounds is None else f"[{rate(bounds[0])}, {rate(bounds[1])}]"


# lrb's newer run columns the HTML leaderboard shows, after the scores and the run's identity
_SPEED = ("sentences_per_second", "runtime", "generation_mode")

def lrb_html(records: Sequence[CheckpointRecord], links: PageLinks) -> HtmlParts:
    """The lrb sections of the HTML report for these records (complete ones counted)."""
    valid = [r for r in records if r.valid]
    by_pair = {(r.run, r.language): r for r in valid}
    intervals = f1_intervals(valid)
    tables = lrb_tables(valid)
    leaderboard, languages = tables.leaderboard, tables.languages
    run_order, language_order = tables.run_order, tables.language_order
    plot = draw(f1_by_language_png, run_order, language_order,   # drawn while the tables are made
                {pair: float(r.metrics[keys.F1]) for pair, r in by_pair.items()},
                {pair: intervals.pairs[r.name] for pair, r in by_pair.items()})

    neighbours = tables.neighbours
    by_page = {_page_name(n): n for n in neighbours}
    pages = OnDemand(by_page, lambda name: _neighbour_page(by_page[name]))   # each built when it is written
    marks = {n.comparison.run_a: _mark(n, links.page(_page_name(n))) for n in neighbours}
    # what a reader came for first (rank, run, F1, its interval, the mark), then the rest
    board = table(
        ("rank", "run", keys.F1, F1_CI, "vs next", "languages", keys.N_ITEMS, *_METRICS, keys.TRUNCATED,
         keys.MODEL_ID, keys.MODEL_REVISION, keys.BACKEND, keys.TASK, *_SPEED),
        ([n, row[keys.RUN], row[keys.F1], _ci(intervals.runs.get(row[keys.RUN])), marks.get(row[keys.RUN], ""),
          row["languages"], row[keys.N_ITEMS], *(row[m] for m in _METRICS), row[keys.TRUNCATED],
          row[keys.MODEL_ID], _revision(row[keys.MODEL_REVISION]), row[keys.BACKEND], row[keys.TASK],
          *(row[c] for c in _SPEED)]
         for n, row in enumerate(leaderboard, 1)))
    by_language = table(
        (keys.LANGUAGE, "runs", "f1_mean", "f1_min", "f1_max", "best_run"),
        ([maybe_link(links.language(row[keys.LANGUAGE]), row[keys.LANGUAGE]), row["runs"], row["f1_mean"],
          row["f1_min"], row["f1_max"],
          maybe_link(links.result(by_pair[(row["best_run"], row[keys.LANGUAGE])].name), row["best_run"])]
         for row in languages))
    index = (f"<h2>Leaderboard</h2>\n<p>Macro means over each run's languages, sorted by F1 then run "
             f"(as leaderboard.csv). {esc(F1_CI)}: {esc(METHOD)}. {esc(MARK_LEGEND)}</p>\n{board}"
             f"<h2>F1 by run and language</h2>\n<p>{image(links.file(HEATMAP), 'F1 heatmap by run and language')}</p>\n"
             f"<h2>F1 per language, with intervals</h2>\n<p>{image(links.file(F1_PLOT), 'F1 per language with intervals')}</p>\n"
             f"<h2>Languages</h2>\n{by_language}")

    page_links = links.from_page()
    # each page's rows made when it is written: a release's 20,000 formatted rows are never all held
    records_of: dict[str, list[CheckpointRecord]] = {}
    for r in sorted(valid, key=lambda r: (r.run, r.language)):
        records_of.setdefault(r.language, []).append(r)

    def language_page(language: str) -> str:
        rows = [aggregate_row(r, tables.top) for r in records_of.get(language, [])]
        return table(
            ("run", keys.N_ITEMS, keys.F1, F1_CI, *_METRICS, *_CONFUSION, keys.TRUNCATED, keys.DURATION_SECONDS),
            ([maybe_link(page_links.result(row["file"]), row[keys.RUN]), row[keys.N_ITEMS], row[keys.F1],
              _ci(intervals.pairs.get(row["file"])), *(row[m] for m in _METRICS), *(row[c] for c in _CONFUSION),
              row[keys.TRUNCATED], row[keys.DURATION_SECONDS]] for row in rows),
            caption=f"{language}: every counted run") + f"<p class=\"note\">{esc(F1_CI)}: {esc(METHOD)}.</p>\n"

    language_pages = OnDemand(language_order, language_page)   # each built when its page is written
    by_file = {r.name: r for r in valid}

    def result_metrics(name: str) -> str:
        row = aggregate_row(by_file[name], tables.top)
        metrics = [(k, row[k]) for k in (keys.N_ITEMS, keys.F1)] + [(F1_CI, _ci(intervals.pairs.get(name)))]
        metrics += [(k, row[k]) for k in (*_METRICS, *_CONFUSION, keys.TRUNCATED, keys.DURATION_SECONDS)]
        metrics += [(k, row[k]) for k in CHECKPOINT_COLUMNS if row[k]]   # lrb's newer columns it has
        return key_values(metrics, caption="metrics (rates rounded to 4 decimals)")

    return HtmlParts("kit report", index, language_pages, OnDemand(by_file, result_metrics), {F1_PLOT: plot.result()},
                     pages)


MARK_LEGEND = ("vs next: ≠ when the items tell the run from the one ranked below it (the 95% interval of their "
               "paired macro F1 difference excludes zero), ≈ when they do not; each mark links to the two runs' "
               "comparison.")


def _page_name(neighbour: NeighbourComparison) -> str:
    return slug("compare", f"{neighbour.comparison.run_a}\0{neighbour.comparison.run_b}")


def _mark(neighbour: NeighbourComparison, href: str) -> Cell:
    """≠ or ≈, linked to the pair's page, the difference and its interval as the tooltip."""
    macro = neighbour.comparison.macro_f1
    if macro is None:
        return Cell(titled_link(href, "?", "no language with the same items in both runs"))
    text = "≠" if neighbour.distinguishable else "≈"
    return Cell(titled_link(href, text, f"macro F1 minus the next run's: {interval_text(macro)}"))


def _neighbour_page(neighbour: NeighbourComparison) -> tuple[str, str]:
    """(title, body) of the page comparing rank N with rank N + 1."""
    result = neighbour.comparison
    command = f"kit compare {shlex.quote(result.run_a)} {shlex.quote(result.run_b)} --results RESULTS --html compare.html"
    note = (f"The report reads each item's outcome, not its id: <code>{esc(command)}</code> lists the items "
            "whose verdict flips, with their sentences and both answers, and gives the paired bootstrap.")
    title = f"rank {neighbour.rank} vs rank {neighbour.rank + 1}: {result.run_a} vs {result.run_b}"
    return title, comparison_body(result, flips_note=note)


def _revision(revision: str) -> Cell:
    """A revision cut to 12 characters, the whole of it as the tooltip (a 40-hex column pushes F1 off screen)."""
    if len(revision) <= 12:
        return Cell(f"<code>{esc(revision)}</code>")
    return Cell(f'<code title="{esc(revision)}">{esc(revision[:12])}…</code>')
