"""`kit report` for LightEval suite checkpoints: one score row per (run, task, metric) and a
Markdown summary. lrb checkpoints get kit.results.kinds.lrb.report's leaderboard; the two kinds are not
reported together (their metrics do not mix).

Files written to OUT (atomically):
`lighteval_scores.csv`, sorted by task, run, metric:
    run, task, lighteval_task, model_id, model_revision, n_items, metric, value
    (value: the mean of the per-item values, rounded to 4 decimals)
`summary.md`: per task, a table of runs x metrics; digests, sampling, invalid files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kit.files import write_text_atomic
from kit.results import keys
from kit.results.records import CheckpointRecord, ReportFiles, check_comparable, groups, stale_banner
from kit.results.tables import csv_text, digest_lines, markdown_table, md_code, md_text, rate

SCORES = "lighteval_scores.csv"
SUMMARY = "summary.md"
SCORE_COLUMNS = ("run", "task", "lighteval_task", keys.MODEL_ID, keys.MODEL_REVISION, keys.N_ITEMS, "metric", "value")


def score_rows(valid: Sequence[CheckpointRecord]) -> list[dict[str, str]]:
    """One row per (run, task, metric), sorted by task, run, metric."""
    rows = []
    for r in sorted(valid, key=lambda r: (r.language, r.run)):
        for metric in sorted(k for k in r.metrics if k != keys.N_ITEMS):
            rows.append({"run": r.run, "task": r.language, "lighteval_task": str(r.metadata.get("lighteval_task")),
                         keys.MODEL_ID: str(r.metadata.get(keys.MODEL_ID)),
                         keys.MODEL_REVISION: str(r.metadata.get(keys.MODEL_REVISION)),
                         keys.N_ITEMS: str(r.metrics.get(keys.N_ITEMS)), "metric": metric,
                         "value": rate(r.metrics[metric])})
    return rows


def suite_summary(records: Sequence[CheckpointRecord]) -> str:
    """The Markdown summary: per task, runs x metrics; then digests, sampling and invalid files."""
    valid = [r for r in records if r.valid]
    invalid = [r for r in records if not r.valid]
    lines = ["# kit report (LightEval suite)", "",
             f"{len({r.run for r in valid})} runs, {len({r.language for r in valid})} tasks, {len(valid)} pairs counted; "
             f"{len(invalid)} files not counted (invalid or stale).", "", *stale_banner(valid)]
    for task, group in groups(valid, lambda r: r.language):
        metrics = sorted({k for r in group for k in r.metrics if k != keys.N_ITEMS})
        columns = ("run", keys.N_ITEMS, *metrics)
        rows = [{"run": r.run, keys.N_ITEMS: str(r.metrics.get(keys.N_ITEMS)),
                 **{m: rate(r.metrics.get(m)) for m in metrics}} for r in sorted(group, key=lambda r: r.run)]
        lines += [f"## {md_text(task)} ({md_code(group[0].metadata.get('lighteval_task'))})", "", *markdown_table(columns, rows), ""]
    lines += ["## Digests and sampling", "", *digest_lines(valid)]
    sampling = sorted({(r.metadata.get("temperature"), r.metadata.get("top_p"), r.metadata.get(keys.SEED)) for r in valid})
    lines += [md_text(f"- temperature={t}, top_p={p}, seed={s}") for t, p, s in sampling]
    lines += ["", f"## Files not counted ({len(invalid)}: invalid or stale)", ""]
    lines += [f"- {md_code(r.name)} ({r.state}): {md_text('; '.join(r.reasons) or 'no reason given')}"
              for r in invalid] or ["None."]
    notices = [(r.name, n) for r in valid for n in r.notices]
    if notices:
        lines += ["", "## Notices", ""] + [f"- {md_code(name)}: {md_text(n)}" for name, n in notices]
    lines += ["", "## Files", "", f"`{SCORES}`; LightEval's own results and details: RESULTS/logs/lighteval/"]
    return "\n".join(lines) + "\n"


def write_suite_report(records: Sequence[CheckpointRecord], out_dir: Path) -> ReportFiles:
    """Write lighteval_scores.csv and summary.md for these records (complete ones are counted)."""
    valid = [r for r in records if r.valid]
    check_comparable(valid)
    out_dir = Path(out_dir)
    files = {"scores": out_dir / SCORES, "summary": out_dir / SUMMARY}
    write_text_atomic(files["scores"], csv_text(SCORE_COLUMNS, score_rows(valid)))
    write_text_atomic(files["summary"], suite_summary(records))
    return ReportFiles(files, pairs=len(valid), invalid=len(records) - len(valid))
