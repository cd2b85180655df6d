"""`kit collect`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import CheckpointError, ConfigError, error_line, visible


@click.command()
@click.option("--from", "sources", multiple=True, required=True, metavar="SITE=DIR",
              help="A site's results tree (repeat for each site).")
@click.option("--output", "-o", type=click.Path(path_type=Path), required=True, help="The merged tree to create.")
@click.option("--force", is_flag=True, help="Replace --output when it is a collect kit wrote before, unchanged since.")
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@common.json_option
def collect(sources: tuple[str, ...], output: Path, force: bool, roster: Path, benchmark: Path | None,
            models: tuple[str, ...], languages: str | None, as_json: bool) -> None:
    """Merge several sites' results trees into one release tree, or refuse with every problem.

    Refuses invalid checkpoints, duplicate pairs whose files differ (by run name: @variant
    runs never collide; byte-identical copies at two sites count once), pairs outside the
    plan, missing pairs, and runs whose files mix kit commits or image digests. The tree
    (each checkpoint with its log and signed statement) is staged beside --output and renamed
    into place.

    \b
    Example:
      kit collect --from nancy=results-nancy --from grenoble=results-grenoble -o merged
    """
    from kit.config.project import load_project
    from kit.plan import left_out_by_selection, select_pairs
    from kit.results.collect import install_collect, plan_collect
    from kit.results.identity import PlanExpectations

    pairs_of_sites = []
    for text in sources:
        site, sep, folder = text.partition("=")
        if not sep or not site or not folder:
            raise ConfigError(f"--from {text!r} is not SITE=DIR", fix="write e.g. --from nancy=results-nancy")
        if site in dict(pairs_of_sites):
            raise ConfigError(f"--from {text!r}: site {site!r} is given twice",
                              fix="give each site's tree once, under its own name (e.g. --from nancy=A --from lyon=B)")
        if not Path(folder).is_dir():
            raise ConfigError(f"--from {text!r}: {folder} is not a folder" + (" (it does not exist)" if not
                              os.path.lexists(folder) else ""), fix="give the folder holding that site's "
                              "<language>/<run>.json checkpoints (kit pull copies a site's here)")
        pairs_of_sites.append((site, Path(folder)))
    project = load_project(roster, benchmark, allow_unpinned=True)
    runs = project.roster.select(models)
    expected = select_pairs(runs, project.benchmark, common.split_languages(languages))
    left_out = left_out_by_selection(project.roster.run, project.benchmark, expected) if models or languages else ()
    plan = plan_collect(pairs_of_sites, expected, PlanExpectations(project.benchmark, runs), left_out)
    if plan.problems:   # a refused merge is a finding: each problem on stderr, and under --json in `data`
        for problem in plan.problems:
            click.echo(f"  {visible(problem)}", err=True)
        refused = CheckpointError(f"collect refused: {len(plan.problems)} problems (listed above); nothing written",
                                  fix="mend or remove those files (a pair two sites hold: keep one of its files)")
        if not as_json:
            raise refused
        click.echo(error_line(refused), err=True)
        render(Outcome("collect", {"problems": plan.problems}, failed=True), as_json)
        return
    out = install_collect(plan, output, force=force)
    by_site: dict[str, int] = {}
    for site, _ in plan.chosen.values():
        by_site[site] = by_site.get(site, 0) + 1
    render(Outcome("collect", {"output": str(out), "pairs": len(plan.chosen), "by_site": by_site},
                   _lines(out, len(plan.chosen), by_site)), as_json)


def _lines(out: Path, pairs: int, by_site: dict[str, int]):
    """How many pairs went into the merged tree, from each site."""
    yield f"collected {pairs} pairs into {out} (" + ", ".join(f"{s}: {n}" for s, n in sorted(by_site.items())) + ")"
