"""`kit report`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common


@click.command()
@click.argument("results", type=click.Path(path_type=Path, exists=True, file_okay=False), default="results")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Folder for the report files. Default: RESULTS/report.")
@common.models_option
@common.json_option
def report(results: Path, output: Path | None, models: tuple[str, ...], as_json: bool) -> None:
    """Write the report of a results folder: for lrb checkpoints leaderboard.csv, aggregates.csv,
    by_language.csv, summary.md and heatmap_f1.png; for a LightEval suite lighteval_scores.csv
    and summary.md.

    Only complete checkpoints count; invalid ones are listed in the summary. Refuses to
    mix runs whose prompt, benchmark digest or decoding differ: report those separately
    (--model).

    \b
    Example:
      kit report results -o release/
    """
    from kit.results.report import write_report

    out = output or results / "report"
    written = write_report(results, out, runs=list(models) or None)
    files = {role: str(path) for role, path in written.files.items()}
    if as_json:
        common.print_json("report", common.OK, {"files": files, "pairs": written.pairs, "invalid": written.invalid})
        return
    for role, path in files.items():
        click.echo(f"{role:<14} {path}")
    click.echo(f"{written.pairs} pairs counted, {written.invalid} invalid files listed in the summary")
