"""Where a cold `kit report` spends its time and its memory: two runs in this process (validation on one
core, so each part is seen, through the results tree as the command reads it): the first unprofiled, for
the resident memory after each stage, the second profiled, its time split into the parts a reader can act
on.

    python -m bench.report_parts RESULTS OUT
"""

from __future__ import annotations

import cProfile
import os
import pstats
import shutil
import sys
import tempfile
from pathlib import Path

# part -> the function (file suffix, name) whose cumulative time is that part's
PARTS = (
    ("reading and validating the checkpoints", ("kit/results/report.py", "collect_checkpoints")),
    ("  of which each pair's MLLOG compliance check", ("kit/results/parallel.py", "_compliance")),
    ("the kind's tables (leaderboard, aggregates, by-language CSVs, summary)", ("kit/results/kinds/lrb/report.py", "write_lrb_report")),
    ("F1 intervals (bootstrap per checkpoint)", ("kit/results/intervals.py", "f1_intervals")),
    ("marks between neighbouring ranks", ("kit/results/kinds/lrb/neighbours.py", "neighbour_comparisons")),
    ("waiting for the plots (heatmap, F1 per language; drawn in a process of their own)",
     ("kit/results/plot_process.py", "result")),
    ("result pages (one per checkpoint)", ("kit/results/html_report.py", "_result_page")),
)
# stage -> the function of kit.results.report after whose return the resident memory is read
STAGES = (("records validated", "collect_checkpoints"), ("the kind's tables and plots", "_kind_files"),
          ("the HTML report", "write_html_report"))


def _resident_mb() -> tuple[float, float]:
    """(resident, peak resident) MB of this process, from /proc (0 where there is none)."""
    found = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key = line.split(":")[0]
            if key in found:
                found[key] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found["VmRSS"], found["VmHWM"]


def report_parts(results: Path, out: Path) -> tuple[float, list[tuple[str, float]], list[tuple[str, float, float]]]:
    """(total seconds, [(part, seconds)], [(stage, resident MB after it, peak MB so far)]) of one profiled
    cold report of RESULTS into OUT."""
    os.environ["KIT_NO_CACHE"] = "1"
    import kit.results.parallel as parallel
    import kit.results.report as report
    from kit.results.tree import ResultsTree

    parallel.MAX_WORKERS = 1   # one process: the profile sees every part
    memory = [("start-up and imports", *_resident_mb())]
    measured = {name: getattr(report, name) for _, name in STAGES}
    for stage, name in STAGES:
        setattr(report, name, _measured(measured[name], stage, memory))
    # memory first, unprofiled: the profiler keeps an entry per code object, and the compliance checker
    # compiles its rules anew for every log (tens of MB of the profiler's own at release size)
    with ResultsTree(results, sections=True) as tree:   # as `kit report` reads it
        report.write_report(results, out, validate_all=tree.validate_all)
    for name, function in measured.items():
        setattr(report, name, function)
    shutil.rmtree(out)   # written whole again (an intact report of the same inputs would be left as it is)
    profile = cProfile.Profile()
    profile.enable()
    with ResultsTree(results, sections=True) as tree:
        report.write_report(results, out, validate_all=tree.validate_all)
    profile.disable()
    stats = pstats.Stats(profile).stats   # type: ignore[attr-defined]
    total = max(ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "write_report")
    parts = []
    for label, (suffix, function) in PARTS:
        found = [ct for (file, _, name), (_, _, _, ct, _) in stats.items()
                 if name == function and file.replace(os.sep, "/").endswith(suffix)]
        if not found:   # renamed or moved: a part measured as 0 s would mislead
            raise RuntimeError(f"bench.report_parts: {suffix}:{function} never ran; update PARTS")
        parts.append((label, sum(found)))
    if [stage for stage, *_ in memory[1:]] != [stage for stage, _ in STAGES]:
        raise RuntimeError("bench.report_parts: a stage never ran; update STAGES")
    return total, parts, memory


def _measured(function, stage: str, memory: list):
    def run(*args, **kwargs):
        done = function(*args, **kwargs)
        memory.append((stage, *_resident_mb()))
        return done
    return run


def main(argv: list[str]) -> int:
    """Print the split as one line per part, with its share."""
    results = Path(argv[0])
    out = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="kit-report-parts-")) / "report"
    total, parts, memory = report_parts(results, out)
    print(f"kit report, profiled on one core: {total:.1f} s")
    for label, seconds in parts:
        print(f"{label}: {seconds:.1f} s ({seconds / total:.0%})")
    before = 0.0
    for stage, resident, peak in memory:
        print(f"memory: {stage}: +{resident - before:.0f} MB (resident {resident:.0f} MB, peak {peak:.0f} MB)")
        before = resident
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
