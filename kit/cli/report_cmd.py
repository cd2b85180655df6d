"""`kit report`."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import visible


@click.command()
@click.argument("results", type=click.Path(path_type=Path, exists=True, file_okay=False), default="results")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Folder for the report files, replaced whole; one holding files kit did not write is refused. "
                   "Default: RESULTS/report.")
@common.roster_option
@common.benchmark_option
@common.models_option
@click.option("--include-stale", is_flag=True,
              help="Count stale checkpoints too (the summary then says so, file by file).")
@click.option("--verdicts", "verdict_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folders of `kit reproduce` verdicts (reproduce-*.json) for the HTML report's reruns (repeatable). "
                   "Default: the reproduce* folders beside RESULTS.")
@common.unpinned_option
@common.json_option
def report(results: Path, output: Path | None, roster: Path, benchmark: Path | None, models: tuple[str, ...],
           include_stale: bool, verdict_dirs: tuple[Path, ...], allow_unpinned: bool, as_json: bool) -> None:
    """Write the report of a results folder: for lrb checkpoints leaderboard.csv, aggregates.csv,
    by_language.csv, summary.md and heatmap_f1.png; for a LightEval suite lighteval_scores.csv
    and summary.md. Both get a static HTML report (index.html, pages/): leaderboard or scores,
    plots, a page per language and per result with its provenance, MLLOG compliance verdict,
    reruns and `kit reproduce` command.

    Asked again with nothing it reads changed (checkpoints, their logs and signatures,
    verdicts, options, kit), an intact earlier report is left as it is and said to be
    unchanged.

    Only complete checkpoints count. Refuses to mix runs whose prompt, benchmark digest or
    decoding differ: report those separately (--model).

    \b
    With a roster (roster.toml here, or --roster), each checkpoint of a planned pair is
    held to the run and benchmark as they are now: one recorded for another revision,
    setting, prompt or data file is stale and is left out unless --include-stale.
    Files that fail validation are listed in the summary and named here, and the exit
    code is then 1: a report never drops a row silently. With no complete checkpoint to
    count, the folder is refused: nothing is written and the exit code is 2.

    \b
    Examples:
      kit report results -o release/
      kit report results --include-stale --json
    """
    from kit.config.project import load_project
    from kit.results.identity import PlanExpectations
    from kit.results.plot_process import plot_process
    from kit.results.report import write_report
    from kit.results.tree import ResultsTree

    expect = None
    if common.roster_to_use(roster):
        project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
        expect = PlanExpectations(project.benchmark, list(project.roster.run))
    elif benchmark is not None:   # no roster: every file held to the benchmark (kit.results.benchmark_rule)
        expect = PlanExpectations(common.benchmark_or_roster(benchmark, None))
    out = output or results / "report"
    # the plotting process forked first, while this one is small: the cache's sections are tens of MB
    with plot_process(), ResultsTree(results, sections=True) as tree:   # validated checkpoints, kept for the next command
        # a run named as the roster does (org/model) or by its file name (org__model), as kit compare takes it
        runs = list(dict.fromkeys(models)) or None
        written = write_report(results, out, runs=runs, expect=expect, include_stale=include_stale,
                               verdicts=list(verdict_dirs) or None, validate_all=tree.validate_all)
    files = {role: str(path) for role, path in written.files.items()}
    data = {"files": files, "html_index": files.get("html"), "pairs": written.pairs,
            "roster_checked": expect is not None,
            "invalid": [{"path": str(r.path), "reasons": list(r.reasons)} for r in written.invalid],
            "stale": [{"path": str(r.path), "reasons": list(r.reasons)} for r in written.stale],
            "stale_included": written.stale_included,
            "batches": {name: str(path) for name, path in written.batches.items()},
            "not_counted": written.not_counted, "unchanged": written.unchanged}
    render(Outcome("report", data, partial(_print_text, written, files, bool(expect and expect.runs)),
                   failed=bool(written.invalid)), as_json)


def _print_text(written, files: dict[str, str], roster_checked: bool) -> None:
    """The files written and the counts on stdout; each invalid checkpoint, with its reasons, on stderr."""
    stale_note = ("counted, marked stale in the summary" if written.stale_included
                  else "not counted (--include-stale counts them)")
    for role, path in files.items():
        click.echo(f"{role:<14} {path}")
    if "html" in files:
        click.echo(f"HTML report: {files['html']} (open it in a browser; the folder can be copied as is)")
    if written.unchanged:
        click.echo("unchanged: nothing the report reads changed since it was written, so it was left as it is")
    for name, index in written.batches.items():
        click.echo(f"batch {name}: its own report, {index}")
    click.echo(f"{written.pairs} pairs counted; {len(written.stale)} stale ({stale_note}); "
               f"{len(written.invalid)} invalid, listed in the summary")
    if written.not_counted:
        click.echo(written.not_counted)
    if not roster_checked:
        click.echo("no roster: checkpoints were not held to today's runs (pass --roster to find stale ones)")
    for r in written.invalid:
        click.echo(visible(f"INVALID {r.path}: {'; '.join(r.reasons)}"), err=True)
