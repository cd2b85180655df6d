"""The report of lrb checkpoints (kit.results.kinds.lrb): a release leaderboard, tables, a summary
and a heatmap.

Only complete checkpoints are counted; invalid files are listed with their reasons in
`summary.md`. Runs whose checkpoints are not comparable (different dataset manifest, prompt
within a task, benchmark file within a language, or decoding among generate runs) are
refused rather than averaged together.

Files written to OUT (each atomically: temporary file in OUT, fsync, rename):

`leaderboard.csv`, one row per run, sorted by f1 (as printed) descending, then run:
    run, model_id, model_revision, backend, task   as recorded (distinct values joined by ';')
    languages          number of languages counted for the run
    n_items            sum of n_items over those languages
    accuracy, balanced_accuracy, f1, precision, recall, matthews_corrcoef, unparsed_rate
                       macro means over the run's languages
    truncated          number of predictions with truncated=true, summed
    duration_seconds   summed over languages
    then lrb's newer columns: speed, runtime, generation_mode, Wilson intervals
                       (kit.results.kinds.lrb.columns: pooled over languages, or the
                       checkpoint's own for a run of one language)
`aggregates.csv`, one row per run x language, sorted by run then language:
    run, language, model_id, model_revision, backend, task, n_items, the seven metrics,
    true_positive, false_positive, true_negative, false_negative, unparsed (confusion),
    truncated, duration_seconds, file (path relative to RESULTS), then lrb's newer columns
    as lrb computes them per run and language (kit.results.kinds.lrb.columns): speed,
    runtime, generation_mode, Wilson intervals, McNemar against the language's top run
`by_language.csv`, one row per language, sorted by language:
    language, runs (how many runs were counted), f1_mean, f1_min, f1_max over runs,
    best_run (highest f1, ties by run name)
`neighbours.csv`, one row per run but the last, in leaderboard order: whether the items tell it
    from the next run (kit.results.kinds.lrb.neighbours):
    rank, run, next_run, languages (compared: both runs, the same items)
    f1_diff, f1_low, f1_high  the paired macro F1 difference (run minus next) and its 95% interval
    distinguishable    yes when the interval excludes zero, else no
`summary.md`: the leaderboard as a Markdown table, which neighbouring ranks the items tell apart,
    languages covered, digests, decoding, and the invalid files with their reasons.
`heatmap_f1.png`: F1 per run (rows, leaderboard order) x language (columns), colour scale
    0..1, cells annotated when the grid is small enough.

Rates are rounded to 4 decimals and durations to 2, as in the lrb leaderboards, and
written as Python's shortest float text (`0.85`, `1.0`), so the same inputs give the same
bytes. Macro means use `math.fsum`, so they do not depend on the order files are read.
"""

from __future__ import annotations

import io
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kit.errors import MissingExtraError
from kit.files import atomic_writer, write_bytes_atomic, write_text_atomic
from kit.results import keys
from kit.results.kinds.lrb.columns import CHECKPOINT_COLUMNS, RUN_COLUMNS, checkpoint_columns, mcnemar_against_top, run_columns
from kit.results.kinds.lrb.neighbours import METHOD as NEIGHBOUR_METHOD
from kit.results.kinds.lrb.neighbours import NeighbourComparison, neighbour_comparisons
from kit.results.plot_process import draw
from kit.results.records import CheckpointRecord, ReportFiles, check_comparable, groups, stale_banner
from kit.results.tables import csv_text, digest_lines, markdown_table, md_code, md_text, rate, seconds, text, write_csv

LEADERBOARD = "leaderboard.csv"
AGGREGATES = "aggregates.csv"
BY_LANGUAGE = "by_language.csv"
SUMMARY = "summary.md"
HEATMAP = "heatmap_f1.png"
NEIGHBOURS = "neighbours.csv"

_CONFUSION = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)
_RUN_FIELDS = (keys.MODEL_ID, keys.MODEL_REVISION, keys.BACKEND, keys.TASK)
# the scores (what summary.md's table shows), then lrb's newer columns (kit.results.kinds.lrb.columns)
SUMMARY_COLUMNS = (
    keys.RUN, *_RUN_FIELDS, "languages", keys.N_ITEMS, *keys.METRIC_NAMES, keys.TRUNCATED, keys.DURATION_SECONDS,
)
LEADERBOARD_COLUMNS = (*SUMMARY_COLUMNS, *RUN_COLUMNS)
AGGREGATE_COLUMNS = (
    keys.RUN, keys.LANGUAGE, *_RUN_FIELDS, keys.N_ITEMS, *keys.METRIC_NAMES, *_CONFUSION,
    keys.TRUNCATED, keys.DURATION_SECONDS, "file", *CHECKPOINT_COLUMNS,
)
BY_LANGUAGE_COLUMNS = (keys.LANGUAGE, "runs", "f1_mean", "f1_min", "f1_max", "best_run")
NEIGHBOUR_COLUMNS = ("rank", keys.RUN, "next_run", "languages", "f1_diff", "f1_low", "f1_high", "distinguishable")

HEATMAP_DPI = 100
HEATMAP_ANNOTATE_MAX_CELLS = 400
# above this many runs, rows are 0.16 inch with 7-point labels: a sweep's 235 runs draw on a 45 MB canvas, not 70
HEATMAP_COMPACT_RUNS = 100
HEATMAP_COMPACT_LABEL_POINTS = 7


# --------------------------------------------------------------------------- tables


def aggregate_rows(records: Iterable[CheckpointRecord],
                   top: Mapping[str, tuple[str, str]] | None = None) -> Iterator[dict[str, str]]:
    """One formatted row per complete checkpoint (run x language), sorted by run then language, each made
    as it is asked for (a release's rows are never all held); `top`: their mcnemar_against_top, when
    already found."""
    valid = [r for r in records if r.valid]
    top = mcnemar_against_top(valid) if top is None else top
    return (aggregate_row(r, top) for r in sorted(valid, key=lambda r: (r.run, r.language)))


def aggregate_row(r: CheckpointRecord, top: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """The formatted row of one complete checkpoint (see aggregate_rows), with its McNemar test against its
    language's top run from `top` (mcnemar_against_top of the report's records)."""
    confusion = r.metrics.get(keys.CONFUSION) or {}
    row = {keys.RUN: r.run, keys.LANGUAGE: r.language}
    row.update({k: text(r.metadata.get(k) if k != keys.TASK else r.task) for k in _RUN_FIELDS})
    row[keys.N_ITEMS] = text(r.metrics.get(keys.N_ITEMS))
    row.update({k: rate(r.metrics.get(k)) for k in keys.METRIC_NAMES})
    row.update({k: text(confusion.get(k)) for k in _CONFUSION})
    row[keys.TRUNCATED] = str(r.truncated)
    row[keys.DURATION_SECONDS] = seconds(r.duration_seconds)
    row["file"] = r.name
    row.update(checkpoint_columns(r, top))
    return row


def leaderboard_rows(records: Iterable[CheckpointRecord]) -> list[dict[str, str]]:
    """One formatted row per run (macro means over its languages), best f1 first, then by run."""
    rows = []
    for run, group in groups([r for r in records if r.valid], lambda r: r.run):
        row = {keys.RUN: run}
        for k in _RUN_FIELDS:
            row[k] = ";".join(sorted({text(r.metadata.get(k) if k != keys.TASK else r.task) for r in group}))
        row["languages"] = str(len(group))
        row[keys.N_ITEMS] = str(sum(int(r.metrics.get(keys.N_ITEMS) or 0) for r in group))
        for k in keys.METRIC_NAMES:
            row[k] = rate(math.fsum(float(r.metrics[k]) for r in group) / len(group))
        row[keys.TRUNCATED] = str(sum(r.truncated for r in group))
        row[keys.DURATION_SECONDS] = seconds(math.fsum(r.duration_seconds for r in group))
        row.update(run_columns(group))
        rows.append(row)
    return sorted(rows, key=lambda row: (-float(row[keys.F1]), row[keys.RUN]))


def by_language_rows(records: Iterable[CheckpointRecord]) -> list[dict[str, str]]:
    """One formatted row per language: how many runs, mean/min/max f1 and the best run."""
    rows = []
    for language, group in groups([r for r in records if r.valid], lambda r: r.language):
        f1 = [float(r.metrics[keys.F1]) for r in group]
        best = min(group, key=lambda r: (-float(r.metrics[keys.F1]), r.run))
        rows.append({
            keys.LANGUAGE: language,
            "runs": str(len(group)),
            "f1_mean": rate(math.fsum(f1) / len(f1)),
            "f1_min": rate(min(f1)),
            "f1_max": rate(max(f1)),
            "best_run": best.run,
        })
    return rows


# --------------------------------------------------------------------------- summary


def neighbour_rows(neighbours: Sequence[NeighbourComparison]) -> list[dict[str, str]]:
    """One formatted row per neighbouring pair of ranks (NEIGHBOUR_COLUMNS)."""
    rows = []
    for n in neighbours:
        macro = n.comparison.macro_f1
        rows.append({"rank": str(n.rank), keys.RUN: n.comparison.run_a, "next_run": n.comparison.run_b,
                     "languages": str(len(n.comparison.languages)),
                     "f1_diff": rate(macro.diff) if macro else "", "f1_low": rate(macro.low) if macro else "",
                     "f1_high": rate(macro.high) if macro else "", "distinguishable": "yes" if n.distinguishable else "no"})
    return rows


def summary_markdown(
    leaderboard: Sequence[Mapping[str, str]],
    languages: Sequence[Mapping[str, str]],
    records: Sequence[CheckpointRecord],
    neighbours: Sequence[Mapping[str, str]] = (),
) -> str:
    """The Markdown summary: leaderboard table, neighbouring ranks, languages, digests, decoding, invalid files."""
    valid = [r for r in records if r.valid]
    invalid = [r for r in records if not r.valid]
    lines = [
        "# kit report",
        "",
        f"{len(leaderboard)} runs, {len(languages)} languages, {len(valid)} pairs counted; "
        f"{len(invalid)} files not counted (invalid or stale).",
        "",
        *stale_banner(valid),
        "## Leaderboard",
        "",
        "Macro means over each run's languages; sorted by f1, then run.",
        *_coverage_note(valid),
        *_item_set_note(valid),
        "",
        *markdown_table(SUMMARY_COLUMNS, leaderboard),
        "",
        *_neighbour_section(neighbours),
        "## Languages",
        "",
        *markdown_table(BY_LANGUAGE_COLUMNS, languages),
        "",
        "## Digests and decoding",
        "",
        *digest_lines(valid),
        "",
        f"## Files not counted ({len(invalid)}: invalid or stale)",
        "",
    ]
    lines += [f"- {md_code(r.name)} ({r.state}): {md_text('; '.join(r.reasons) or 'no reason given')}"
              for r in invalid] or ["None."]
    notices = [(r.name, n) for r in valid for n in r.notices]
    if notices:
        lines += ["", "## Notices", ""] + [f"- {md_code(name)}: {md_text(n)}" for name, n in notices]
    files = (LEADERBOARD, AGGREGATES, BY_LANGUAGE, *((NEIGHBOURS,) if neighbours else ()), HEATMAP)
    lines += ["", "## Files", "", ", ".join(f"`{n}`" for n in files)]
    return "\n".join(lines) + "\n"


def _neighbour_section(neighbours: Sequence[Mapping[str, str]]) -> list[str]:
    if not neighbours:
        return []
    apart = sum(row["distinguishable"] == "yes" for row in neighbours)
    return ["## Neighbouring ranks", "",
            f"Whether the items tell each run from the next one: {apart} of {len(neighbours)} neighbouring pairs are "
            f"distinguishable. {md_text(NEIGHBOUR_METHOD)}.", "",
            *markdown_table(NEIGHBOUR_COLUMNS, neighbours), ""]


def _coverage_note(valid: Sequence[CheckpointRecord]) -> list[str]:
    covered = {run: frozenset(r.language for r in group) for run, group in groups(valid, lambda r: r.run)}
    if len(set(covered.values())) <= 1:
        return []
    return ["Runs cover different languages, so their means are not directly comparable "
            "(see the `languages` column and by_language.csv)."]


def _item_set_note(valid: Sequence[CheckpointRecord]) -> list[str]:
    """A line naming the languages whose runs were scored on different items (a file cut short, another
    version of the data): with --benchmark or a roster each is held to the benchmark's items; without,
    nothing else would say their scores are not measured alike."""
    differ = []
    for language, group in groups(valid, lambda r: r.language):
        digests = [r.outcomes[0] if r.outcomes is not None else None for r in group]
        # the items' digest where every file has one, else their count
        items = set(digests) if None not in digests else {r.metrics.get(keys.N_ITEMS) for r in group}
        if len(items) > 1:
            differ.append(language)
    if not differ:
        return []
    shown = ", ".join(md_code(language) for language in differ[:8])
    shown += f" and {len(differ) - 8} more" if len(differ) > 8 else ""
    return [f"Runs of {shown} were scored on different items (their item ids or counts differ), so their scores "
            "there are not directly comparable (hold them to the benchmark: --benchmark, or a roster)."]


# --------------------------------------------------------------------------- heatmap


def heatmap_figsize(runs: Sequence[str], languages: Sequence[str]) -> tuple[float, float]:
    """Figure size in inches for this grid, in quarter inches so pixels are exact at HEATMAP_DPI. Cells
    that carry their value (HEATMAP_ANNOTATE_MAX_CELLS) are wide enough for it; others just hold the
    colour beside a tick label, which keeps the release grid (50 x 85) to a 2,900 x 1,400 image (its
    RGBA canvas 16 MB, not 41 MB: the largest block of `kit report`'s memory). Above
    HEATMAP_COMPACT_RUNS runs, rows are lower and their labels smaller."""
    label = max((len(r) for r in runs), default=0)
    annotated = len(runs) * len(languages) <= HEATMAP_ANNOTATE_MAX_CELLS
    compact = len(runs) > HEATMAP_COMPACT_RUNS
    width = 2.0 + (0.05 if compact else 0.07) * label + (0.6 if annotated else 0.3) * len(languages)
    height = 1.5 + (0.35 if annotated else 0.16 if compact else 0.25) * len(runs)
    return math.ceil(max(width, 4.0) * 4) / 4, math.ceil(max(height, 2.5) * 4) / 4


def heatmap_png(runs: Sequence[str], languages: Sequence[str], f1: Mapping[tuple[str, str], float]) -> bytes:
    """PNG bytes of F1 by run (rows) x language (columns); missing pairs are grey."""
    try:
        import matplotlib
        import numpy as np
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError("kit report's heatmap", "matplotlib", "report") from exc

    grid = np.ma.masked_invalid(
        np.array([[f1.get((run, lang), math.nan) for lang in languages] for run in runs], dtype=float)
    )
    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # a user's matplotlibrc must not change the bytes
        matplotlib.rcParams["text.parse_math"] = False   # a run named "$\frac{1}{$" is text, not math
        fig = Figure(figsize=heatmap_figsize(runs, languages), dpi=HEATMAP_DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
        # One quad per cell, not imshow: imshow resamples the grid to the figure's pixels in floats
        # (6.7 s and 470 MB at the release's 50 x 85); missing pairs are not drawn and show the grey.
        ax.set_facecolor("lightgrey")
        image = ax.pcolormesh(np.arange(len(languages) + 1) - 0.5, np.arange(len(runs) + 1) - 0.5, grid,
                              cmap=cmap, vmin=0.0, vmax=1.0)
        ax.set_xlim(-0.5, len(languages) - 0.5)
        ax.set_ylim(len(runs) - 0.5, -0.5)   # first run on top, as a table reads
        ax.set_xticks(range(len(languages)), labels=list(languages))
        ax.set_yticks(range(len(runs)), labels=list(runs))
        if len(runs) > HEATMAP_COMPACT_RUNS:
            ax.tick_params(axis="y", labelsize=HEATMAP_COMPACT_LABEL_POINTS)
        ax.set_xlabel("language")
        ax.set_title("F1 by run and language")
        fig.colorbar(image, ax=ax, label="F1")
        if len(runs) * len(languages) <= HEATMAP_ANNOTATE_MAX_CELLS:
            for i, run in enumerate(runs):
                for j, lang in enumerate(languages):
                    value = f1.get((run, lang))
                    text = "–" if value is None else f"{value:.2f}"
                    colour = "white" if value is not None and value < 0.5 else "black"
                    ax.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=HEATMAP_DPI, metadata={"Software": None})
    return buf.getvalue()


# --------------------------------------------------------------------------- write


@dataclass(frozen=True)
class LrbTables:
    """The tables of one report's complete records, as both its CSV files and its HTML report show them
    (the aggregate rows, one per record, are made by each: holding them between the two costs more
    memory than making them again costs time). The tests between runs are made when first read, so that
    a plot needing only the orders is drawn meanwhile."""

    leaderboard: list[dict[str, str]]
    languages: list[dict[str, str]]
    valid: tuple[CheckpointRecord, ...] = field(repr=False)

    @cached_property
    def top(self) -> dict[str, tuple[str, str]]:
        """mcnemar_against_top of the records."""
        return mcnemar_against_top(self.valid)

    @cached_property
    def neighbours(self) -> list[NeighbourComparison]:
        """neighbour_comparisons of the records, in leaderboard order."""
        return neighbour_comparisons(self.valid, self.run_order)

    @property
    def run_order(self) -> list[str]:
        """The runs in leaderboard order."""
        return [row[keys.RUN] for row in self.leaderboard]

    @property
    def language_order(self) -> list[str]:
        """The languages in by-language order."""
        return [row[keys.LANGUAGE] for row in self.languages]


# the last records' tables: a report's CSV files and its HTML pages are made from the same records
_LAST: list[tuple[tuple[CheckpointRecord, ...], LrbTables]] = []


def lrb_tables(valid: Sequence[CheckpointRecord]) -> LrbTables:
    """The leaderboard, by-language rows, McNemar tests against each language's top run and neighbour
    comparisons of these complete records, computed once for the same records (the very objects, in the
    same order)."""
    if _LAST and len(_LAST[0][0]) == len(valid) and all(map(operator.is_, _LAST[0][0], valid)):
        return _LAST[0][1]
    tables = LrbTables(leaderboard_rows(valid), by_language_rows(valid), tuple(valid))
    _LAST[:] = [(tables.valid, tables)]
    return tables


def write_lrb_report(records: Sequence[CheckpointRecord], out_dir: Path) -> ReportFiles:
    """Write leaderboard.csv, aggregates.csv, by_language.csv, summary.md and heatmap_f1.png to OUT
    from these records (complete ones are counted, invalid ones listed); nothing is written when
    the checkpoints are not comparable or matplotlib is missing."""
    valid = [r for r in records if r.valid]
    check_comparable(valid)
    tables = lrb_tables(valid)
    leaderboard, languages = tables.leaderboard, tables.languages
    run_order, language_order = tables.run_order, tables.language_order
    heatmap = draw(heatmap_png, run_order, language_order, {(r.run, r.language): float(r.metrics[keys.F1]) for r in valid})
    neighbours = neighbour_rows(tables.neighbours)
    out_dir = Path(out_dir)
    files = {"leaderboard": out_dir / LEADERBOARD, "aggregates": out_dir / AGGREGATES,
             "by_language": out_dir / BY_LANGUAGE, "summary": out_dir / SUMMARY, "heatmap": out_dir / HEATMAP}
    # a row at a time while the heatmap is drawn; renamed in only once it is drawn: nothing is written
    # when it cannot be
    with atomic_writer(files["aggregates"]) as fh:
        write_csv(fh, AGGREGATE_COLUMNS, aggregate_rows(valid, tables.top))
        png = heatmap.result()
    write_text_atomic(files["leaderboard"], csv_text(LEADERBOARD_COLUMNS, leaderboard))
    write_text_atomic(files["by_language"], csv_text(BY_LANGUAGE_COLUMNS, languages))
    if neighbours:
        files["neighbours"] = out_dir / NEIGHBOURS
        write_text_atomic(files["neighbours"], csv_text(NEIGHBOUR_COLUMNS, neighbours))
    write_text_atomic(files["summary"], summary_markdown(leaderboard, languages, records, neighbours))
    write_bytes_atomic(files["heatmap"], png)
    return ReportFiles(files, pairs=len(valid), invalid=len(records) - len(valid))
