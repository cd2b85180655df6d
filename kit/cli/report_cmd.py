"""`kit report`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common as C


@click.command()
@click.argument("results", type=click.Path(path_type=Path, exists=True, file_okay=False), default="results")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Folder for the report files. Default: RESULTS/report.")
@C.models_option
@C.json_option
def report(results: Path, output: Path | None, models: tuple[str, ...], as_json: bool) -> None:
    """Write leaderboard.csv, aggregates.csv, by_language.csv, summary.md and heatmap_f1.png.

    Only complete checkpoints count; invalid ones are listed in the summary. Refuses to
    mix runs whose prompt, benchmark digest or decoding differ: report those separately
    (--model).

    \b
    Example:
      kit report results -o release/
    """
    from kit.results.report import write_report

    out = output or results / "report"
    paths = write_report(results, out, runs=list(models) or None)
    files = {k: str(v) for k, v in vars(paths).items()} if hasattr(paths, "__dict__") else {"report": str(out)}
    if as_json:
        C.print_json("report", "ok", files)
        return
    for name, path in files.items():
        click.echo(f"{name:<14} {path}")
