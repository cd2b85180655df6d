"""`kit status`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common as C
from kit.config.project import load_project
from kit.plan import select_pairs
from kit.results.status import count_states, pair_states, scan_results


@click.command()
@click.argument("results", type=click.Path(path_type=Path), default="results")
@C.roster_option
@C.benchmark_option
@C.models_option
@C.languages_option
@C.unpinned_option
@C.json_option
def status(results: Path, roster: Path, benchmark: Path | None, models: tuple[str, ...], languages: str | None,
           allow_unpinned: bool, as_json: bool) -> None:
    """Say where every pair stands in a results tree: complete, pending or invalid.

    With a roster (roster.toml here, or --roster), every planned pair is listed, so
    missing ones show as pending. Without one, every checkpoint found is validated on
    its own. A checkpoint counts as complete only if it parses, matches its path, has
    the benchmark's item ids and its metrics recompute exactly.

    \b
    Examples:
      kit status results
      kit status results --model LiquidAI/LFM2.5-2.6B --json
    """
    ctx = click.get_current_context()
    explicit = ctx.get_parameter_source("roster") != click.core.ParameterSource.DEFAULT
    if explicit or roster.exists():
        project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
        runs = project.roster.select(models)
        pairs = select_pairs(runs, project.benchmark, C.split_languages(languages))
        statuses = pair_states(results, pairs, project.benchmark.item_ids)
    else:
        statuses = scan_results(results)
    counts = count_states(statuses)
    if as_json:
        C.print_json("status", "ok", {"results": str(results), "counts": counts,
                                       "pairs": [s.as_dict() for s in statuses]})
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"kit status {results}", show_lines=False)
    for col in ("run", "language", "state", "detail"):
        table.add_column(col)
    style = {"complete": "green", "pending": "yellow", "invalid": "red"}
    for s in statuses:
        table.add_row(s.pair.run, s.pair.language, f"[{style.get(s.state, '')}]{s.state}[/]",
                      "; ".join(s.reasons or s.notices))
    console = Console(width=160)
    console.print(table)
    click.echo(f"{len(statuses)} pairs: " + ", ".join(f"{n} {state}" for state, n in counts.items()))
