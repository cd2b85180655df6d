"""`kit report`: turn a results folder into a release leaderboard, tables, a summary and a heatmap.

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
`aggregates.csv`, one row per run x language, sorted by run then language:
    run, language, model_id, model_revision, backend, task, n_items, the seven metrics,
    true_positive, false_positive, true_negative, false_negative, unparsed (confusion),
    truncated, duration_seconds, file (path relative to RESULTS)
`by_language.csv`, one row per language, sorted by language:
    language, runs (how many runs were counted), f1_mean, f1_min, f1_max over runs,
    best_run (highest f1, ties by run name)
`summary.md`: the leaderboard as a Markdown table, languages covered, digests, decoding,
    and the invalid files with their reasons.
`heatmap_f1.png`: F1 per run (rows, leaderboard order) x language (columns), colour scale
    0..1, cells annotated when the grid is small enough.

Rates are rounded to 4 decimals and durations to 2, as in the lrb leaderboards, and
written as Python's shortest float text (`0.85`, `1.0`), so the same inputs give the same
bytes. Macro means use `math.fsum`, so they do not depend on the order files are read.
"""

from __future__ import annotations

import io
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import CheckpointError, ConfigError, MissingExtraError
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint
from kit.results.store import iter_checkpoint_files, run_from_stem, write_text_atomic

LEADERBOARD = "leaderboard.csv"
AGGREGATES = "aggregates.csv"
BY_LANGUAGE = "by_language.csv"
SUMMARY = "summary.md"
HEATMAP = "heatmap_f1.png"

_CONFUSION = (keys.TRUE_POSITIVE, keys.FALSE_POSITIVE, keys.TRUE_NEGATIVE, keys.FALSE_NEGATIVE, keys.UNPARSED)
_RUN_FIELDS = (keys.MODEL_ID, keys.MODEL_REVISION, keys.BACKEND, keys.TASK)
LEADERBOARD_COLUMNS = (
    keys.RUN, *_RUN_FIELDS, "languages", keys.N_ITEMS, *keys.METRIC_NAMES, keys.TRUNCATED, keys.DURATION_SECONDS,
)
AGGREGATE_COLUMNS = (
    keys.RUN, keys.LANGUAGE, *_RUN_FIELDS, keys.N_ITEMS, *keys.METRIC_NAMES, *_CONFUSION,
    keys.TRUNCATED, keys.DURATION_SECONDS, "file",
)
BY_LANGUAGE_COLUMNS = (keys.LANGUAGE, "runs", "f1_mean", "f1_min", "f1_max", "best_run")

HEATMAP_DPI = 100
HEATMAP_ANNOTATE_MAX_CELLS = 400
_RATE_DIGITS = 4
_SECONDS_DIGITS = 2
_SEPARATE = "report them separately (e.g. --model {a}, then --model {b})"


@dataclass(frozen=True)
class CheckpointRecord:
    """One `RESULTS/<language>/<run>.json` file and what validation said about it."""

    path: Path
    language: str
    state: str
    reasons: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    data: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def valid(self) -> bool:
        """True when the checkpoint is complete and may be counted."""
        return self.state == keys.COMPLETE and self.data is not None

    @property
    def name(self) -> str:
        """The file as `<language>/<file>.json`, relative to RESULTS."""
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The `metadata` section (empty for an invalid file)."""
        return (self.data or {}).get(keys.METADATA) or {}

    @property
    def metrics(self) -> Mapping[str, Any]:
        """The `metrics` section (empty for an invalid file)."""
        return (self.data or {}).get(keys.METRICS) or {}

    @property
    def run(self) -> str:
        """The roster run name: metadata `run`, else `model_id` (lrb files), else the file name."""
        meta = self.metadata
        return meta.get(keys.RUN) or meta.get(keys.MODEL_ID) or run_from_stem(self.path.stem)

    @property
    def task(self) -> str:
        """The task; lrb files record none and were generated, so they count as `generate`."""
        return self.metadata.get(keys.TASK) or keys.TASK_GENERATE

    @property
    def truncated(self) -> int:
        """How many predictions hit the token limit."""
        return sum(1 for p in (self.data or {}).get(keys.PREDICTIONS) or [] if p.get(keys.TRUNCATED) is True)

    @property
    def duration_seconds(self) -> float:
        """Benchmark wall time: metadata `duration_seconds`, else `speed.duration_seconds`, else 0."""
        value = self.metadata.get(keys.DURATION_SECONDS)
        if value is None:
            value = ((self.data or {}).get(keys.SPEED) or {}).get(keys.DURATION_SECONDS)
        return float(value or 0.0)


@dataclass(frozen=True)
class ReportPaths:
    """The files `write_report` wrote, and how many pairs were counted or refused as invalid."""

    leaderboard: Path
    aggregates: Path
    by_language: Path
    summary: Path
    heatmap: Path
    pairs: int = 0
    invalid: int = 0

    @property
    def files(self) -> tuple[Path, ...]:
        """Every written file, in a fixed order."""
        return (self.leaderboard, self.aggregates, self.by_language, self.summary, self.heatmap)


# --------------------------------------------------------------------------- collect


def collect_checkpoints(results_dir: Path) -> list[CheckpointRecord]:
    """Every `RESULTS/<language>/<run>.json`, validated, sorted by path; invalid ones carry reasons."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ConfigError(
            f"results folder {str(results_dir)!r} does not exist",
            fix="point at the folder holding <language>/<run>.json checkpoints (e.g. results/)",
        )
    return [_validate(path) for path in iter_checkpoint_files(results_dir)]


def _validate(path: Path) -> CheckpointRecord:
    # validate_checkpoint always checks metadata.run against the file name and
    # metadata.language against the folder; the benchmark's item ids are not known here.
    st = validate_checkpoint(path)
    data = st.data if st.state == keys.COMPLETE else None
    return CheckpointRecord(path, path.parent.name, st.state, tuple(st.reasons), tuple(st.notices), data)


def select_runs(records: Sequence[CheckpointRecord], runs: Sequence[str] | None) -> list[CheckpointRecord]:
    """The records of these runs (all when `runs` is None); an unknown run is a ConfigError."""
    if runs is None:
        return list(records)
    known = sorted({r.run for r in records if r.valid})
    unknown = [run for run in runs if run not in known]
    if unknown:
        raise ConfigError(
            f"no complete checkpoint for run {unknown[0]!r}",
            fix=f"pick among: {', '.join(known) or '(none)'}",
        )
    wanted = set(runs)
    return [r for r in records if r.run in wanted]


# --------------------------------------------------------------------------- comparability


def check_comparable(records: Iterable[CheckpointRecord]) -> None:
    """Refuse (ConfigError) to report together checkpoints measured on different terms.

    Complete checkpoints only are compared: one manifest_sha256 where recorded (lrb files
    have none; they are held to the benchmark_sha256 rule), one benchmark_sha256 per
    language, one prompt_sha256 per task, one (decoding, max_new_tokens) among generate runs.
    """
    valid = sorted((r for r in records if r.valid), key=lambda r: (r.run, r.language, r.name))
    with_manifest = [r for r in valid if r.metadata.get(keys.MANIFEST_SHA256) is not None]
    _same(with_manifest, keys.MANIFEST_SHA256, lambda r: r.metadata[keys.MANIFEST_SHA256], "")
    for language, group in _groups(valid, lambda r: r.language):
        _same(group, keys.BENCHMARK_SHA256, lambda r: r.metadata.get(keys.BENCHMARK_SHA256), f" for language {language!r}")
    for task, group in _groups(valid, lambda r: r.task):
        _same(group, keys.PROMPT_SHA256, lambda r: r.metadata.get(keys.PROMPT_SHA256), f" for task {task!r}")
    generate = [r for r in valid if r.task == keys.TASK_GENERATE]
    _same(generate, "decoding/max_new_tokens", _decoding, " among generate runs")


def _decoding(record: CheckpointRecord) -> tuple[Any, Any]:
    return (record.metadata.get(keys.DECODING), record.metadata.get(keys.MAX_NEW_TOKENS))


def _groups(records: Sequence[CheckpointRecord], key) -> list[tuple[str, list[CheckpointRecord]]]:
    out: dict[str, list[CheckpointRecord]] = {}
    for r in records:
        out.setdefault(key(r), []).append(r)
    return sorted(out.items())


def _same(records: Sequence[CheckpointRecord], what: str, value, where: str) -> None:
    if not records:
        return
    first = records[0]
    for other in records[1:]:
        if value(other) != value(first):
            raise ConfigError(
                f"cannot report {first.run!r} ({first.name}) with {other.run!r} ({other.name}): "
                f"{what} differs{where} ({_short(value(first))} vs {_short(value(other))})",
                fix=_SEPARATE.format(a=first.run, b=other.run),
            )


def _short(value: Any) -> str:
    if isinstance(value, tuple):
        return "/".join(_short(v) for v in value)
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return str(value)


# --------------------------------------------------------------------------- tables


def aggregate_rows(records: Iterable[CheckpointRecord]) -> list[dict[str, str]]:
    """One formatted row per complete checkpoint (run x language), sorted by run then language."""
    rows = []
    for r in sorted((r for r in records if r.valid), key=lambda r: (r.run, r.language)):
        confusion = r.metrics.get(keys.CONFUSION) or {}
        row = {keys.RUN: r.run, keys.LANGUAGE: r.language}
        row.update({k: _text(r.metadata.get(k) if k != keys.TASK else r.task) for k in _RUN_FIELDS})
        row[keys.N_ITEMS] = _text(r.metrics.get(keys.N_ITEMS))
        row.update({k: _rate(r.metrics.get(k)) for k in keys.METRIC_NAMES})
        row.update({k: _text(confusion.get(k)) for k in _CONFUSION})
        row[keys.TRUNCATED] = str(r.truncated)
        row[keys.DURATION_SECONDS] = _seconds(r.duration_seconds)
        row["file"] = r.name
        rows.append(row)
    return rows


def leaderboard_rows(records: Iterable[CheckpointRecord]) -> list[dict[str, str]]:
    """One formatted row per run (macro means over its languages), best f1 first, then by run."""
    rows = []
    for run, group in _groups([r for r in records if r.valid], lambda r: r.run):
        row = {keys.RUN: run}
        for k in _RUN_FIELDS:
            row[k] = ";".join(sorted({_text(r.metadata.get(k) if k != keys.TASK else r.task) for r in group}))
        row["languages"] = str(len(group))
        row[keys.N_ITEMS] = str(sum(int(r.metrics.get(keys.N_ITEMS) or 0) for r in group))
        for k in keys.METRIC_NAMES:
            row[k] = _rate(math.fsum(float(r.metrics[k]) for r in group) / len(group))
        row[keys.TRUNCATED] = str(sum(r.truncated for r in group))
        row[keys.DURATION_SECONDS] = _seconds(math.fsum(r.duration_seconds for r in group))
        rows.append(row)
    return sorted(rows, key=lambda row: (-float(row[keys.F1]), row[keys.RUN]))


def by_language_rows(records: Iterable[CheckpointRecord]) -> list[dict[str, str]]:
    """One formatted row per language: how many runs, mean/min/max f1 and the best run."""
    rows = []
    for language, group in _groups([r for r in records if r.valid], lambda r: r.language):
        f1 = [float(r.metrics[keys.F1]) for r in group]
        best = min(group, key=lambda r: (-float(r.metrics[keys.F1]), r.run))
        rows.append({
            keys.LANGUAGE: language,
            "runs": str(len(group)),
            "f1_mean": _rate(math.fsum(f1) / len(f1)),
            "f1_min": _rate(min(f1)),
            "f1_max": _rate(max(f1)),
            "best_run": best.run,
        })
    return rows


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, str]]) -> str:
    """Rows as CSV text: a header, '\\n' line ends, quoting only where needed."""
    import csv

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _rate(value: Any) -> str:
    return _number(value, _RATE_DIGITS)


def _seconds(value: Any) -> str:
    return _number(value, _SECONDS_DIGITS)


def _number(value: Any, digits: int) -> str:
    if value is None:
        return ""
    return repr(round(float(value), digits) + 0.0)  # + 0.0 turns -0.0 into 0.0


# --------------------------------------------------------------------------- summary


def summary_markdown(
    leaderboard: Sequence[Mapping[str, str]],
    languages: Sequence[Mapping[str, str]],
    records: Sequence[CheckpointRecord],
) -> str:
    """The Markdown summary: leaderboard table, languages, digests, decoding, invalid files."""
    valid = [r for r in records if r.valid]
    invalid = [r for r in records if not r.valid]
    lines = [
        "# kit report",
        "",
        f"{len(leaderboard)} runs, {len(languages)} languages, {len(valid)} pairs counted; "
        f"{len(invalid)} invalid files not counted.",
        "",
        "## Leaderboard",
        "",
        "Macro means over each run's languages; sorted by f1, then run.",
        *_coverage_note(valid),
        "",
        *_markdown_table(LEADERBOARD_COLUMNS, leaderboard),
        "",
        "## Languages",
        "",
        *_markdown_table(BY_LANGUAGE_COLUMNS, languages),
        "",
        "## Digests and decoding",
        "",
        *_digest_lines(valid),
        "",
        f"## Invalid files ({len(invalid)}, not counted)",
        "",
    ]
    lines += [f"- `{r.name}` ({r.state}): {'; '.join(r.reasons) or 'no reason given'}" for r in invalid] or ["None."]
    notices = [(r.name, n) for r in valid for n in r.notices]
    if notices:
        lines += ["", "## Notices", ""] + [f"- `{name}`: {n}" for name, n in notices]
    lines += ["", "## Files", "", ", ".join(f"`{n}`" for n in (LEADERBOARD, AGGREGATES, BY_LANGUAGE, HEATMAP))]
    return "\n".join(lines) + "\n"


def _coverage_note(valid: Sequence[CheckpointRecord]) -> list[str]:
    covered = {run: frozenset(r.language for r in group) for run, group in _groups(valid, lambda r: r.run)}
    if len(set(covered.values())) <= 1:
        return []
    return ["Runs cover different languages, so their means are not directly comparable "
            "(see the `languages` column and by_language.csv)."]


def _markdown_table(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> list[str]:
    def cells(values: Iterable[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    return [cells(columns), "|" + "---|" * len(columns)] + [cells(row[c] for c in columns) for row in rows]


def _digest_lines(valid: Sequence[CheckpointRecord]) -> list[str]:
    manifests = sorted({r.metadata[keys.MANIFEST_SHA256] for r in valid if r.metadata.get(keys.MANIFEST_SHA256)})
    legacy = sum(1 for r in valid if not r.metadata.get(keys.MANIFEST_SHA256))
    lines = [f"- {keys.MANIFEST_SHA256}: " + (", ".join(f"`{m}`" for m in manifests) or "not recorded")
             + (f" (not recorded by {legacy} legacy lrb file(s))" if manifests and legacy else "")]
    for task, group in _groups(valid, lambda r: r.task):
        lines.append(f"- {keys.PROMPT_SHA256} ({task}): `{group[0].metadata.get(keys.PROMPT_SHA256)}`")
        if task == keys.TASK_GENERATE:
            decoding, max_new = _decoding(group[0])
            lines.append(f"- decoding ({task}): {decoding}, {keys.MAX_NEW_TOKENS}={max_new}")
    for language, group in _groups(valid, lambda r: r.language):
        lines.append(f"- {keys.BENCHMARK_SHA256} ({language}): `{group[0].metadata.get(keys.BENCHMARK_SHA256)}`")
    return lines


# --------------------------------------------------------------------------- heatmap


def heatmap_figsize(runs: Sequence[str], languages: Sequence[str]) -> tuple[float, float]:
    """Figure size in inches for this grid, in quarter inches so pixels are exact at HEATMAP_DPI."""
    label = max((len(r) for r in runs), default=0)
    width = 2.0 + 0.07 * label + 0.6 * len(languages)
    height = 1.5 + 0.35 * len(runs)
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
        fig = Figure(figsize=heatmap_figsize(runs, languages), dpi=HEATMAP_DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
        image = ax.imshow(grid, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(languages)), labels=list(languages))
        ax.set_yticks(range(len(runs)), labels=list(runs))
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


def write_report(results_dir: Path, out_dir: Path, *, runs: list[str] | None = None) -> ReportPaths:
    """Write leaderboard.csv, aggregates.csv, by_language.csv, summary.md and heatmap_f1.png to OUT;
    for LightEval suite checkpoints, kit.results.suite_report's files instead.

    Nothing is written when the input is refused (no complete checkpoint, an unknown run,
    checkpoints that are not comparable, matplotlib missing).
    """
    records = select_runs(collect_checkpoints(results_dir), runs)
    valid = [r for r in records if r.valid]
    if not valid:
        raise CheckpointError(
            f"no complete checkpoint under {str(results_dir)!r} ({len(records)} invalid)",
            fix="run `kit status` to see why, or point at the folder holding <language>/<run>.json",
        )
    from kit.results.suite_report import is_suite_record, write_suite_report

    suite = [r for r in valid if is_suite_record(r)]
    if suite and len(suite) < len(valid):
        lrb = next(r for r in valid if not is_suite_record(r))
        raise ConfigError(f"cannot report LightEval suite checkpoints ({suite[0].name}) with lrb ones ({lrb.name})",
                          fix=_SEPARATE.format(a=suite[0].run, b=lrb.run) + ", or keep each benchmark in its own results folder")
    if suite:
        return write_suite_report(records, out_dir)  # type: ignore[return-value]
    check_comparable(valid)

    leaderboard = leaderboard_rows(valid)
    languages = by_language_rows(valid)
    run_order = [row[keys.RUN] for row in leaderboard]
    language_order = [row[keys.LANGUAGE] for row in languages]
    png = heatmap_png(run_order, language_order, {(r.run, r.language): float(r.metrics[keys.F1]) for r in valid})

    out_dir = Path(out_dir)
    paths = ReportPaths(
        out_dir / LEADERBOARD, out_dir / AGGREGATES, out_dir / BY_LANGUAGE, out_dir / SUMMARY, out_dir / HEATMAP,
        pairs=len(valid), invalid=len(records) - len(valid),
    )
    write_text_atomic(paths.leaderboard, csv_text(LEADERBOARD_COLUMNS, leaderboard))
    write_text_atomic(paths.aggregates, csv_text(AGGREGATE_COLUMNS, aggregate_rows(valid)))
    write_text_atomic(paths.by_language, csv_text(BY_LANGUAGE_COLUMNS, languages))
    write_text_atomic(paths.summary, summary_markdown(leaderboard, languages, records))
    _write_bytes_atomic(paths.heatmap, png)
    return paths


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    # kit.results.store.write_text_atomic is text-only; this is its binary twin.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
