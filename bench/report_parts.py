"""Where a cold `kit report` spends its time: one profiled run in this process (validation on one core,
so each part is seen), its time split into the parts a reader can act on.

    python -m bench.report_parts RESULTS OUT
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

# part -> the function (file suffix, name) whose cumulative time is that part's
PARTS = (
    ("reading and validating the checkpoints", ("kit/results/report.py", "collect_checkpoints")),
    ("the kind's tables (leaderboard, aggregates, by-language CSVs, summary)", ("kit/results/kinds/lrb/report.py", "write_lrb_report")),
    ("F1 intervals (bootstrap per checkpoint)", ("kit/results/intervals.py", "f1_intervals")),
    ("marks between neighbouring ranks", ("kit/results/kinds/lrb/neighbours.py", "neighbour_comparisons")),
    ("plots (heatmap, F1 per language)", ("kit/results/html_plots.py", "_png")),
    ("result pages (one per checkpoint)", ("kit/results/html_report.py", "_result_page")),
    ("  of which each pair's MLLOG compliance check", ("kit/results/html_report.py", "_compliance")),
)


def report_parts(results: Path, out: Path) -> tuple[float, list[tuple[str, float]]]:
    """(total seconds, [(part, seconds)]) of one profiled cold report of RESULTS into OUT."""
    os.environ["KIT_NO_CACHE"] = "1"
    import kit.results.parallel as parallel
    from kit.results.report import write_report

    parallel.MIN_FILES = 1 << 62   # one process: the profile sees every part
    profile = cProfile.Profile()
    profile.enable()
    write_report(results, out)
    profile.disable()
    stats = pstats.Stats(profile).stats   # type: ignore[attr-defined]
    total = max(ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "write_report")
    parts = []
    for label, (suffix, function) in PARTS:
        seconds = sum(ct for (file, _, name), (_, _, _, ct, _) in stats.items()
                      if name == function and file.replace(os.sep, "/").endswith(suffix))
        parts.append((label, seconds))
    return total, parts


def main(argv: list[str]) -> int:
    """Print the split as one line per part, with its share."""
    results = Path(argv[0])
    out = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="kit-report-parts-")) / "report"
    total, parts = report_parts(results, out)
    print(f"kit report, profiled on one core: {total:.1f} s")
    for label, seconds in parts:
        print(f"{label}: {seconds:.1f} s ({seconds / total:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
