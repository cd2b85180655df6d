"""kit's benchmark suite: the control plane at release scale against the read + parse limit measured in
the same run, memory, and start-up against a click hello-world; one Markdown table of figures, each
with its anchor, the ratio and the goal (issue 15).

    python -m bench            release size: 85 languages x 50 runs = 4,250 checkpoints (a few minutes)
    python -m bench --quick    a small tree, one run of each, to prove the suite runs (CI)

Job start (bench/jobstart.py) is kit's launch-to-first-prompt on the host, in the Docker image and in
the SIF, against the per-job environment sync it replaces; a runtime this machine lacks is a note.

The tree is synthesized by bench/tree.py (valid kit checkpoints) and kept under build/bench/. "cold"
runs start with an empty validated-checkpoint cache, "warm" ones reuse what the cold run stored.
The table is also written to build/bench/last[-quick].md (bench/readme.py copies it into README.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.measure import Sample, best_of
from bench.tree import REPO, Tree, build_tree

BUILD = Path(os.environ.get("KIT_BENCH_DIR") or REPO / "build" / "bench")   # trees, cache, tables
ANCHORS = Path(__file__).resolve().parent / "anchors"
RSS_LIMIT_MB = 150.0
COLUMNS = ("measurement", "kit", "anchor or limit", "ratio", "goal", "met", "noise")
BIG_RUNS = 235   # 85 languages x 235 runs = 19,975 pairs: a prompt, seed or quantization sweep over lrb's languages


@dataclass(frozen=True)
class Row:
    """One line of the table: kit's figure, the anchor's, their ratio, and the goal on the ratio."""

    measurement: str
    kit: float
    kit_unit: str
    anchor: float
    anchor_label: str
    goal: str
    met: bool
    noise: float | None = None    # the anchor's spread between its repeats, (slowest - fastest) / fastest
    margin: float | None = None   # how far kit is from the goal's limit, as a fraction of the limit

    @property
    def sure(self) -> bool:
        """Whether the verdict stands above the run's noise: kit is further from the limit than the anchor's
        own spread (a row without a limit or without repeats is taken as it is)."""
        return self.noise is None or self.margin is None or self.margin > self.noise

    @property
    def ratio(self) -> float:
        """kit's figure over the anchor's."""
        return self.kit / self.anchor if self.anchor else float("inf")

    def cells(self) -> list[str]:
        """The row as table cells."""
        unit = self.kit_unit
        fmt = {"s": lambda v: f"{v:.2f} s", "KB": lambda v: f"{v:.1f} KB"}.get(unit, lambda v: f"{v:.0f} MB")
        met = ("yes" if self.met else "NO") + ("" if self.sure else " (within noise)")
        return [self.measurement, fmt(self.kit), f"{self.anchor_label} {fmt(self.anchor)}", f"{self.ratio:.2f}",
                self.goal, met, "" if self.noise is None else f"{self.noise:.0%}"]


class Suite:
    """Runs kit's commands and the anchors on one tree, collecting rows."""

    def __init__(self, tree: Tree, repeat: int, worker_languages: int = 8, quick: bool = False) -> None:
        self.tree = tree
        self.repeat = repeat
        self.quick = quick
        self.notes: list[str] = []   # figures with no anchor here, and what could not be measured, with why
        self.worker_languages = worker_languages   # languages of 300 prompts the worker row runs
        self.cache = BUILD / "cache"
        self.env = {**os.environ, "KIT_CACHE_DIR": str(self.cache), "HF_HUB_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "160"}
        kit_script = Path(sys.executable).parent / "kit"
        self.kit = [str(kit_script)] if kit_script.is_file() else [sys.executable, "-m", "kit"]
        self.rows: list[Row] = []
        self.last_noise: float | None = None   # the last paired run's anchor spread

    def on(self, tree: Tree) -> "Suite":
        """The same suite measuring another tree (its own cache), rows added to this one's."""
        other = Suite(tree, self.repeat, self.worker_languages, self.quick)
        other.rows, other.notes = self.rows, self.notes
        other.cache = BUILD / f"cache-{tree.root.name}"
        other.env = {**self.env, "KIT_CACHE_DIR": str(other.cache)}
        return other

    def run(self, args: list[str], *, cold: bool, repeat: int | None = None) -> Sample:
        """kit ARGS in the tree's folder; with `cold`, nothing of an earlier run is kept: the validated-checkpoint
        cache is emptied and the command's output folder (its -o) removed, so a report is written whole."""
        return best_of(self.kit + args, self.tree.root, repeat or self.repeat, self.env,
                       before=(lambda: self.clear_cache(args)) if cold else (lambda: None))

    def python(self, script: str, *args: str, repeat: int | None = None) -> Sample:
        """A Python anchor script under bench/anchors/."""
        return best_of(self.anchor(script, *args), self.tree.root, repeat or self.repeat, self.env)

    def paired(self, args: list[str], anchor: list[str], *, cold: bool, repeat: int | None = None) -> tuple[Sample, Sample]:
        """kit ARGS and its anchor (an argv from this folder) run in turn, best of `repeat` each: on a
        shared machine a slow spell then falls on both, not on one side of the ratio. The anchor's spread
        between its repeats is kept as the run's noise (self.last_noise), for the row it judges."""
        kit_runs, anchor_runs = [], []
        for _ in range(max(1, repeat or self.repeat)):
            anchor_runs.append(best_of(anchor, self.tree.root, 1, self.env))
            kit_runs.append(self.run(args, cold=cold, repeat=1))
        times = [x.seconds for x in anchor_runs]
        self.last_noise = (max(times) - min(times)) / min(times) if len(times) > 1 and min(times) > 0 else None
        return min(kit_runs, key=lambda x: x.seconds), min(anchor_runs, key=lambda x: x.seconds)

    def anchor(self, script: str, *args: str) -> list[str]:
        """The argv of a Python anchor script under bench/anchors/."""
        return [sys.executable, str(ANCHORS / script), *args]

    def clear_cache(self, args: list[str] = ()) -> None:
        """Forget every validated checkpoint, and the output folder ARGS name with -o (an earlier report
        kit would leave as it is when nothing changed): both set aside (set_aside), not deleted."""
        set_aside(self.cache)
        if "-o" in args[:-1]:
            set_aside(Path(self.tree.root, args[list(args).index("-o") + 1]))

    def add(self, measurement: str, kit: float, unit: str, anchor: float, label: str, goal: str,
            met: Callable[[float, float], bool], noise: float | None = None) -> None:
        """Record one row; `met(kit, anchor)` says whether the goal holds, and `noise` is the anchor's spread
        of the paired run it comes from (judged against the row's margin when the goal has a limit)."""
        limit = getattr(met, "limit", None)
        bound = limit(anchor) if limit is not None else None
        margin = abs(kit - bound) / bound if bound else None
        self.rows.append(Row(measurement, kit, unit, anchor, label, goal, bool(met(kit, anchor)), noise, margin))


def _goal(limit: Callable[[float], float]) -> Callable[[float, float], bool]:
    def met(kit: float, anchor: float) -> bool:
        return kit <= limit(anchor)

    met.limit = limit   # type: ignore[attr-defined]   # what Suite.add measures the margin against
    return met


def within(factor: float) -> Callable[[float, float], bool]:
    """Goal: kit at most `factor` times the anchor."""
    return _goal(lambda anchor: factor * anchor)


def plus(seconds: float) -> Callable[[float, float], bool]:
    """Goal: kit at most `seconds` over the anchor."""
    return _goal(lambda anchor: anchor + seconds)


def _and(goal: Callable[[float, float], bool], also: Callable[[], bool]) -> Callable[[float, float], bool]:
    """`goal`, and `also()` too (its margin still `goal`'s)."""
    def met(kit: float, anchor: float) -> bool:
        return also() and goal(kit, anchor)

    met.limit = goal.limit   # type: ignore[attr-defined]
    return met


def under_mb(limit: float) -> Callable[[float, float], bool]:
    """Goal: kit's peak RSS at most `limit` MB."""
    return _goal(lambda anchor: limit)


def measure_all(suite: Suite, progress=print) -> list[Row]:
    """Every row of the table, in order."""
    n = suite.tree.files
    results = str(suite.tree.results)
    progress(f"bench: {n} checkpoints; anchors")
    limit = suite.python("read_parse.py", results)
    hello = suite.python("click_hello.py", "hello", "--help", repeat=max(5, suite.repeat))
    startup = suite.run(["status", "--help"], cold=False, repeat=max(5, suite.repeat))
    top = suite.run(["--help"], cold=False, repeat=max(5, suite.repeat))
    rp = f"read + json.loads of {n} files"

    # the rows with a goal are measured in turn with their anchor (Suite.paired), one more time than the rest
    paired_repeat = suite.repeat + (0 if suite.quick else 1)
    read_parse, help_argv = suite.anchor("read_parse.py", results), suite.kit + ["status", "--help"]

    progress("bench: kit status and kit verify")
    parser = _parser_anchor(suite, results)
    colds = control_plane_rows(suite, parser, paired_repeat, help_argv, "")

    progress("bench: kit report")
    out = str(BUILD / "report-out")
    report_cold, limit_r = suite.paired(["report", "results", "-o", out], read_parse, cold=True, repeat=1 if suite.quick else 2)
    noise = suite.last_noise
    suite.add("`kit report`, cold (pages, plots, intervals)", report_cold.seconds, "s", limit_r.seconds, rp, "<= 3x",
              within(3.0), noise)
    suite.add("`kit report`, peak RSS", report_cold.rss_mb, "MB", limit.rss_mb, "read + parse", "<= 150 MB",
              under_mb(RSS_LIMIT_MB))
    report_warm, limit_w = suite.paired(["report", "results", "-o", out], read_parse, cold=False, repeat=1 if suite.quick else 2)
    suite.add("`kit report`, warm (nothing changed)", report_warm.seconds, "s", limit_w.seconds, rp, "<= 2x",
              within(2.0), suite.last_noise)
    # one result rewritten (its checkpoint's ctime moves): the report is made again, pages and all
    one = sorted(suite.tree.results.glob("*/*.json"))[0]
    report_one = best_of(suite.kit + ["report", "results", "-o", out], suite.tree.root, 1, suite.env,
                         before=lambda: os.utime(one))
    suite.add("`kit report`, one checkpoint changed", report_one.seconds, "s", limit_w.seconds, rp, "(none yet)",
              lambda kit, anchor: True)
    if not suite.quick:
        suite.notes.append(report_split(results))

    progress("bench: kit check, kit release, kit export lrb")
    # every file read again, by policy (no cache): memory must not grow with the tree
    check = suite.run(["check", "results"], cold=True, repeat=1)
    suite.add("`kit check` (every rule, every log through mlperf-logging)", check.seconds, "s", limit_r.seconds, rp,
              "(none yet)", lambda kit, anchor: True)
    suite.add("`kit check`, peak RSS", check.rss_mb, "MB", limit.rss_mb, "read + parse", "<= 150 MB",
              under_mb(RSS_LIMIT_MB))
    for name, args in (("`kit release`", ["release", "results", "-o", str(BUILD / "release-out")]),
                       ("`kit export lrb`", ["export", "lrb", "results", "-o", str(BUILD / "export-out")])):
        done = suite.run(args, cold=True, repeat=1)
        suite.add(f"{name}, peak RSS ({done.seconds:.1f} s)", done.rss_mb, "MB", limit.rss_mb, "read + parse",
                  "<= 150 MB", under_mb(RSS_LIMIT_MB))

    progress("bench: memory as files grow")
    if suite.quick:
        suite.notes.append("peak RSS growth per file: measured at release size only (a few files say nothing)")
    else:
        small = build_tree(BUILD, suite.tree.languages, max(1, suite.tree.runs // 5), suite.tree.items, progress=progress)
        checkpoint_kb = sum(f.stat().st_size for f in suite.tree.results.glob("*/*.json")) / n / 1024
        for name, args, big in (("status", ["status", "results"], colds["status"]), ("verify", ["verify", "results"], colds["verify"]),
                                ("report", ["report", "results", "-o", str(BUILD / "report-out-small")], report_cold)):
            few = best_of(suite.kit + args, small.root, 1, suite.env, before=lambda: suite.clear_cache(args))
            growth_kb = (big.rss_mb - few.rss_mb) * 1024 / (n - small.files)
            # a parsed checkpoint held in Python takes several times its JSON size: well under 1, none is held
            suite.add(f"`kit {name}`, peak RSS growth per file ({small.files} to {n} files)", growth_kb, "KB",
                      checkpoint_kb, "a checkpoint's size", "<= 0.2x (streamed)", within(0.2))

    progress("bench: kit plan")
    plan = suite.run(["plan"], cold=True, repeat=1)
    suite.add(f"`kit plan` ({suite.tree.languages} CSV digests, {n} checkpoints)", plan.seconds, "s",
              limit.seconds, rp, "(none yet)", lambda kit, anchor: True)

    if not suite.quick:
        progress(f"bench: the control plane at {suite.tree.languages * BIG_RUNS:,} pairs")
        big_tree = build_tree(BUILD, suite.tree.languages, BIG_RUNS, suite.tree.items, progress=progress)
        on_big = suite.on(big_tree)
        big_parser = _parser_anchor(on_big, str(big_tree.results))
        control_plane_rows(on_big, big_parser, paired_repeat, help_argv, f", {big_tree.files:,} pairs")
        report_big = on_big.run(["report", "results", "-o", str(BUILD / "report-out-big")], cold=True, repeat=1)
        suite.add(f"`kit report`, peak RSS, {big_tree.files:,} pairs", report_big.rss_mb, "MB", report_big.seconds,
                  "(its seconds)", "<= 150 MB", under_mb(RSS_LIMIT_MB))
        # the next report of the same tree reads every verdict and section from the cache
        warm_big = on_big.run(["report", "results", "-o", str(BUILD / "report-out-big")], cold=False, repeat=1)
        suite.add(f"`kit report`, warm (nothing changed), peak RSS, {big_tree.files:,} pairs", warm_big.rss_mb, "MB",
                  warm_big.seconds, "(its seconds)", "<= 150 MB", under_mb(RSS_LIMIT_MB))

    progress("bench: worker vs the bare loop")
    from bench.tree import language_codes
    from bench.worker import measure_worker

    langs = language_codes(suite.tree.languages)[:suite.worker_languages]
    w = measure_worker(BUILD / "worker", suite.tree.benchmark, langs, suite.repeat, suite.env)
    suite.add(f"worker, {w.pairs} pairs of the tiny Llama ({w.prompts} prompts, batch 16), answers "
              + ("identical" if w.identical else "DIFFERENT"), w.kit.seconds, "s", w.bare.seconds,
              "bare transformers loop", "<= 1.02x, same answers",
              _and(within(1.02), lambda: w.identical), w.noise)

    progress("bench: job start")
    from bench.jobstart import measure_job_start

    starts, sync = measure_job_start(BUILD / "jobstart", suite.tree.benchmark, langs[0], suite.env, suite.repeat,
                                     suite.quick)
    for start in [*starts, sync]:
        if start.seconds is None:
            suite.notes.append(f"job start, {start.runtime}: {start.note}")
    for start in starts:
        if start.seconds is not None and sync.seconds is not None:
            suite.add(f"job start to first prompt, {start.runtime}", start.seconds, "s", sync.seconds,
                      "per-job env sync", "< 1 (the sync it replaces)", within(1.0))
        elif start.seconds is not None:
            suite.notes.append(f"job start to first prompt, {start.runtime}: {start.seconds:.2f} s")

    progress("bench: start-up")
    suite.add("`kit status --help`", startup.seconds, "s", hello.seconds, "click hello-world", "<= 1.5x",
              within(1.5))
    suite.add("`kit --help`", top.seconds, "s", hello.seconds, "click hello-world", "<= 1.5x", within(1.5))
    return suite.rows


def report_split(results: str) -> str:
    """One note saying where a cold report's time goes (bench/report_parts.py: one profiled run)."""
    import subprocess

    done = subprocess.run([sys.executable, "-m", "bench.report_parts", results, str(BUILD / "report-parts")],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return f"`kit report`, where the time goes: not measured ({done.stderr.strip()[-300:]})"
    times = [line.strip() for line in lines[1:] if not line.startswith("memory: ")]
    memory = [line[len("memory: "):] for line in lines[1:] if line.startswith("memory: ")]
    return (f"where a cold `kit report`'s time goes ({lines[0].split(': ', 1)[1]} profiled on one core): "
            + "; ".join(times) + "\n- where its memory goes, stage by stage: " + "; ".join(memory))


def _parser_anchor(suite: Suite, results: str) -> tuple[list[str], str]:
    """The anchor the control plane is judged against: read + orjson.loads of every file (kit's own parser,
    its `fast` extra), or read + json.loads where orjson is not installed (said in a note)."""
    import importlib.util

    if importlib.util.find_spec("orjson") is None:
        suite.notes.append("no orjson here (kit's `fast` extra): the control plane is judged against json.loads")
        return suite.anchor("read_parse.py", results), "read + json.loads"
    return suite.anchor("read_parse.py", results, "orjson"), "read + orjson.loads"


def control_plane_rows(suite: Suite, parser: tuple[list[str], str], repeat: int, help_argv: list[str],
                       size: str) -> dict[str, Sample]:
    """Cold and warm `kit status` (table and --json) and `kit verify`, and their peak RSS, on the suite's
    tree: cold against the parse anchor (<= 1.5x), warm against start-up (<= + 0.3 s). Returns the cold
    samples of status (table) and verify."""
    anchor, label = parser
    n = suite.tree.files
    colds: dict[str, Sample] = {}
    what = f"{label} of {n} files"
    for name, args in (("`kit status` (table)", ["status", "results"]), ("`kit status --json`", ["status", "results", "--json"]),
                       ("`kit verify`", ["verify", "results"])):
        cold, limit = suite.paired(args, anchor, cold=True, repeat=repeat)
        suite.add(f"{name}, cold{size}", cold.seconds, "s", limit.seconds, what, "<= 1.5x", within(1.5), suite.last_noise)
        if "--json" in args:
            continue
        colds[args[0]] = cold
        suite.add(f"{name}, peak RSS{size}", cold.rss_mb, "MB", limit.rss_mb, label, "<= 150 MB", under_mb(RSS_LIMIT_MB))
        suite.run(args, cold=True, repeat=1)     # fills the cache
        # the first ask after it takes every verdict from the cache and keeps its answer (kit.cli.replay)
        first = suite.run(args, cold=False, repeat=1)
        warm, start = suite.paired(args, help_argv, cold=False, repeat=max(5, repeat))
        suite.add(f"{name}, first ask after a cold one (verdicts from the cache, the answer kept){size}",
                  first.seconds, "s", start.seconds, "`kit status --help`", "(none)", lambda kit, anchor: True)
        suite.add(f"{name}, warm (nothing changed){size}", warm.seconds, "s", start.seconds, "`kit status --help`",
                  "<= start-up + 0.3 s", plus(0.3), suite.last_noise)
    floor = suite.python("stat_floor.py", str(suite.tree.results), repeat=max(5, repeat))
    suite.notes.append(f"the floor of a warm answer{size or f', {n:,} pairs'}: Python's start-up and a stat of every "
                       f"checkpoint and of its log (how any cache notices a changed file; bench/anchors/stat_floor.py): "
                       f"{floor.seconds:.2f} s")
    return colds


def markdown(rows: list[Row], title: str) -> str:
    """The table as Markdown, under a one-line title."""
    lines = [title, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def packing_section() -> str:
    """`--walltime auto` against one job per pair and index shards, simulated (bench/packing.py)."""
    from bench.packing import LANGUAGES, SEED_TABLE, table

    return (f"Shards packed by predicted cost (`kit run --walltime auto`), simulated on the seed's timing table "
            f"({len(SEED_TABLE)} runs x {LANGUAGES} languages, 3-8 min of set-up per job, each pair within 20% of "
            "its recorded time; `python -m bench.packing`). Goal: within 5% of pure compute at the 4 h cap, no job "
            "killed at its walltime.\n\n" + table() + "\n")


def compile_kit() -> None:
    """Write the bytecode of kit's modules, as an installed kit has it (pip compiles on install; Python
    writes it on first import unless PYTHONDONTWRITEBYTECODE is set): no command is measured compiling
    kit's sources."""
    import compileall

    import kit

    compileall.compile_dir(Path(kit.__file__).resolve().parent, quiet=1)


def set_aside(path: Path) -> None:
    """Move an earlier run's folder out of the way (one rename into TRASH) rather than delete it now. On
    ext4 without a journal, as on this project's CI machines, a file created within minutes of deleting
    thousands costs about 0.6 ms more (the kernel passes over each recently freed inode in turn): a cold
    report's 4,384 pages took 2.7 s longer right after the bench had deleted the last report's. That is
    the cost of the bench's own cleanup, not of the command measured; empty_trash deletes after the last row."""
    if not os.path.lexists(path):
        return
    TRASH.mkdir(parents=True, exist_ok=True)
    os.rename(path, TRASH / f"{Path(path).name}-{os.getpid()}-{next(_SET_ASIDE)}")


def empty_trash() -> None:
    """Delete what set_aside moved away."""
    shutil.rmtree(TRASH, ignore_errors=True)


TRASH = BUILD / "trash"
_SET_ASIDE = itertools.count()


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the tree, measure every row, print the table and save it; exit 0."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 6 x 5 tree, one run of each (CI)")
    parser.add_argument("--languages", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None, help="runs of each command, best kept")
    parser.add_argument("--json", dest="json_out", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    languages = args.languages or (6 if args.quick else 85)
    runs = args.runs or (5 if args.quick else 50)
    repeat = args.repeat or (1 if args.quick else 2)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)   # noqa: E731
    tree = build_tree(BUILD, languages, runs, progress=say)
    compile_kit()
    suite = Suite(tree, repeat, worker_languages=1 if args.quick else 8, quick=args.quick)
    try:   # (an earlier bench's trash, if it stopped before its end, goes too)
        rows = measure_all(suite, progress=say)
    finally:
        empty_trash()
    cores = os.cpu_count()
    text = markdown(rows, f"kit bench{' --quick' if args.quick else ''}: {tree.files} checkpoints "
                          f"({languages} languages x {runs} runs x {tree.items} items), {cores} cores, "
                          f"best of {repeat}; status and verify best of {repeat + (0 if args.quick else 1)} "
                          f"(warm: 5), each run in turn with its anchor")
    if suite.notes:
        text += "\n" + "".join(f"- {note}\n" for note in suite.notes)
    text += "\n" + packing_section()
    print(text, end="")
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / f"last{'-quick' if args.quick else ''}.md").write_text(text)
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(r) | {"ratio": r.ratio} for r in rows], indent=2) + "\n")
    return 0
