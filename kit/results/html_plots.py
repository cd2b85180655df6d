"""The HTML report's plots as PNG bytes (matplotlib, the `report` extra): F1 per language with its
intervals, and the per-item agreement of reproduce verdicts. Rendered with matplotlib's defaults
and no Software tag, so the same inputs give the same bytes."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from contextlib import contextmanager

from kit.errors import MissingExtraError

DPI = 100
LEGEND_MAX_RUNS = 30   # beyond this a legend is unreadable; the language pages' tables name every run
# colours of the reproduce verdicts (kit.repro.compare's names)
VERDICT_COLOURS = {"REPRODUCED": "#1b9e77", "WITHIN TOLERANCE": "#7570b3", "DIFFERENT": "#d95f02"}


@contextmanager
def _figure(width: float, height: float, what: str):
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError(what, "matplotlib", "report") from exc
    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # a user's matplotlibrc must not change the bytes
        matplotlib.rcParams["text.parse_math"] = False   # a run named "$\frac{1}{$" is text, not math
        fig = Figure(figsize=(math.ceil(width * 4) / 4, math.ceil(height * 4) / 4), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def f1_by_language_png(runs: Sequence[str], languages: Sequence[str], f1: Mapping[tuple[str, str], float],
                       intervals: Mapping[tuple[str, str], tuple[float, float]]) -> bytes:
    """F1 of each run (one marker colour per run) at each language, with its interval as an error bar."""
    # wide enough to tell runs apart at each language, but no wider than a screen can scale down
    width = min(max(6.0, 2.5 + 0.25 * len(languages) * max(1, min(len(runs), 3))), 30.0) + (2.5 if len(runs) <= LEGEND_MAX_RUNS else 0)
    with _figure(width, 4.5, "kit report's F1-per-language plot") as fig:
        ax = fig.add_subplot()
        spread = 0.7 / max(len(runs), 1)
        for k, run in enumerate(runs):
            xs, ys, lows, highs = [], [], [], []
            for j, lang in enumerate(languages):
                if (run, lang) not in f1:
                    continue
                value = f1[(run, lang)]
                low, high = intervals.get((run, lang), (value, value))
                xs.append(j - 0.35 + spread * (k + 0.5))
                ys.append(value)
                lows.append(max(value - low, 0.0))
                highs.append(max(high - value, 0.0))
            ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", markersize=4, capsize=2, label=run)
        ax.set_xticks(range(len(languages)), labels=list(languages), rotation=90 if len(languages) > 12 else 0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("language")
        ax.set_ylabel("F1")
        ax.set_title("F1 per language (bars: 95% bootstrap interval)")
        ax.grid(axis="y", alpha=0.3)
        if len(runs) <= LEGEND_MAX_RUNS:
            fig.legend(fontsize=6, loc="outside right upper")
        return _png(fig)


def agreement_png(rows: Sequence[tuple[str, float, str]], tolerance: float | None) -> bytes:
    """One horizontal bar per reproduce verdict: (label, per-item agreement 0..1, verdict), coloured by
    verdict, with the agreement tolerance as a dashed line."""
    with _figure(8.0, 1.5 + 0.35 * len(rows), "kit report's reproduction plot") as fig:
        ax = fig.add_subplot()
        ys = range(len(rows))
        ax.barh(list(ys), [a for _, a, _ in rows], color=[VERDICT_COLOURS.get(v, "grey") for _, _, v in rows])
        ax.set_yticks(list(ys), labels=[label for label, _, _ in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0.0, 1.0)
        ax.set_xlabel("items with the same verdict (rerun vs recorded)")
        ax.set_title("Reruns: per-item agreement across hardware")
        if tolerance is not None:
            ax.axvline(tolerance, linestyle="--", color="black", linewidth=1)
        for y, (_, value, verdict) in zip(ys, rows):
            ax.text(0.01, y, f"{verdict} {value:.1%}", va="center", fontsize=7, color="white")
        return _png(fig)


DRIFT_ROWS_MAX = 120   # beyond this the plot shows the first ones; drift.csv and the table hold every row


def drift_png(rows: Sequence[tuple[str, float, float, float, float, int]]) -> bytes:
    """The drift plot: one line per rerun (label, F1 change, its interval low and high, the share of
    items whose verdict changed, the index of its pair of setups), the change as a point with its
    interval, coloured by pair of setups, the share written beside it; zero as a dashed line."""
    rows = list(rows)[:DRIFT_ROWS_MAX]
    palette = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
    with _figure(8.0, 1.5 + 0.3 * len(rows), "kit report's drift plot") as fig:
        ax = fig.add_subplot()
        for y, (_, change, low, high, share, pair) in enumerate(rows):
            colour = palette[pair % len(palette)]
            ax.errorbar([change], [y], xerr=[[change - low], [high - change]], fmt="o", color=colour, capsize=3)
            ax.annotate(f"{share:.1%} changed", (high, y), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=7)
        ax.set_yticks(list(range(len(rows))), labels=[label for label, *_ in rows], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0.0, linestyle="--", color="black", linewidth=1)
        ax.set_xlabel("F1 change, rerun minus recorded, with its 95% paired interval")
        ax.set_title("Drift between setups")
        return _png(fig)
