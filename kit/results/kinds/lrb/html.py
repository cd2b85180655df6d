"""The lrb kind's part of the HTML report (kit.results.kinds.lrb): the leaderboard with F1 intervals,
the heatmap and F1-per-language plots, a table per language and each result's metrics. The numbers
are the report's own (kit.results.kinds.lrb.report's rows, kit.results.intervals), not recomputed here."""

from __future__ import annotations

from collections.abc import Sequence

from kit.results import keys
from kit.results.html_page import HtmlParts, PageLinks, esc, image, key_values, maybe_link, table
from kit.results.html_plots import f1_by_language_png
from kit.results.intervals import METHOD, f1_intervals
from kit.results.kinds.lrb.report import HEATMAP, aggregate_rows, by_language_rows, leaderboard_rows
from kit.results.records import CheckpointRecord
from kit.results.tables import rate

F1_PLOT = "f1_by_language.png"
F1_CI = "f1 95% CI"
_METRICS = (keys.ACCURACY, keys.BALANCED_ACCURACY, keys.PRECISION, keys.RECALL, keys.MCC, keys.UNPARSED_RATE)
_CONFUSION = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)


def _ci(bounds: tuple[float, float] | None) -> str:
    return "" if bounds is None else f"[{rate(bounds[0])}, {rate(bounds[1])}]"


def lrb_html(records: Sequence[CheckpointRecord], links: PageLinks) -> HtmlParts:
    """The lrb sections of the HTML report for these records (complete ones counted)."""
    valid = [r for r in records if r.valid]
    by_pair = {(r.run, r.language): r for r in valid}
    intervals = f1_intervals(valid)
    leaderboard = leaderboard_rows(valid)
    languages = by_language_rows(valid)
    run_order = [row[keys.RUN] for row in leaderboard]
    language_order = [row[keys.LANGUAGE] for row in languages]
    plot = f1_by_language_png(run_order, language_order,
                              {pair: float(r.metrics[keys.F1]) for pair, r in by_pair.items()},
                              {pair: intervals.pairs[r.name] for pair, r in by_pair.items()})

    board = table(
        ("rank", "run", keys.MODEL_ID, keys.MODEL_REVISION, keys.BACKEND, keys.TASK, "languages", keys.N_ITEMS,
         keys.F1, F1_CI, *_METRICS, keys.TRUNCATED),
        ([n, row[keys.RUN], row[keys.MODEL_ID], row[keys.MODEL_REVISION], row[keys.BACKEND], row[keys.TASK],
          row["languages"], row[keys.N_ITEMS], row[keys.F1], _ci(intervals.runs.get(row[keys.RUN])),
          *(row[m] for m in _METRICS), row[keys.TRUNCATED]] for n, row in enumerate(leaderboard, 1)))
    by_language = table(
        (keys.LANGUAGE, "runs", "f1_mean", "f1_min", "f1_max", "best_run"),
        ([maybe_link(links.language(row[keys.LANGUAGE]), row[keys.LANGUAGE]), row["runs"], row["f1_mean"],
          row["f1_min"], row["f1_max"],
          maybe_link(links.result(by_pair[(row["best_run"], row[keys.LANGUAGE])].name), row["best_run"])]
         for row in languages))
    index = (f"<h2>Leaderboard</h2>\n<p>Macro means over each run's languages, sorted by F1 then run "
             f"(as leaderboard.csv). {esc(F1_CI)}: {esc(METHOD)}.</p>\n{board}"
             f"<h2>F1 by run and language</h2>\n<p>{image(links.file(HEATMAP), 'F1 heatmap by run and language')}</p>\n"
             f"<h2>F1 per language, with intervals</h2>\n<p>{image(links.file(F1_PLOT), 'F1 per language with intervals')}</p>\n"
             f"<h2>Languages</h2>\n{by_language}")

    page_links = links.from_page()
    rows = aggregate_rows(valid)
    language_pages = {}
    for language in language_order:
        mine = [row for row in rows if row[keys.LANGUAGE] == language]
        language_pages[language] = table(
            ("run", keys.N_ITEMS, keys.F1, F1_CI, *_METRICS, *_CONFUSION, keys.TRUNCATED, keys.DURATION_SECONDS),
            ([maybe_link(page_links.result(row["file"]), row[keys.RUN]), row[keys.N_ITEMS], row[keys.F1],
              _ci(intervals.pairs.get(row["file"])), *(row[m] for m in _METRICS), *(row[c] for c in _CONFUSION),
              row[keys.TRUNCATED], row[keys.DURATION_SECONDS]] for row in mine),
            caption=f"{language}: every counted run") + f"<p class=\"note\">{esc(F1_CI)}: {esc(METHOD)}.</p>\n"
    result_pages = {}
    for row in rows:
        metrics = [(k, row[k]) for k in (keys.N_ITEMS, keys.F1)] + [(F1_CI, _ci(intervals.pairs.get(row["file"])))]
        metrics += [(k, row[k]) for k in (*_METRICS, *_CONFUSION, keys.TRUNCATED, keys.DURATION_SECONDS)]
        result_pages[row["file"]] = key_values(metrics, caption="metrics (rates rounded to 4 decimals)")
    return HtmlParts("kit report", index, language_pages, result_pages, {F1_PLOT: plot})
