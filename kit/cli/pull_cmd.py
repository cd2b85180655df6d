"""`kit pull`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit.cli import common


@click.command()
@click.option("--site", "site_name", required=True, metavar="NAME", help="The site whose results to copy.")
@click.option("--to", "dest", type=click.Path(path_type=Path), default=None,
              help="Local folder to copy into (default: results-<site>).")
@common.sites_option
@common.json_option
def pull(site_name: str, dest: Path | None, sites_file: Path, as_json: bool) -> None:
    """Copy a site's checkpoints here and check every one.

    Copies <language>/<run>.json checkpoints and their .mllog files from the site's
    results tree (over the frontend's ssh connection, or locally for frontend = "local"),
    only those new or changed since the last pull; files already here are kept. Then
    each checkpoint is validated (parses, matches its path, metrics recompute) and the
    invalid ones are listed. Exits 1 when any checkpoint is invalid. /home on Grid'5000
    has no backup: pull as soon as jobs end.

    \b
    Examples:
      kit pull --site nancy                       # into ./results-nancy
      kit pull --site grenoble --to results-grenoble --json
    """
    from kit.config.sites import load_sites
    from kit.launch.frontend import Frontend
    from kit.launch.paths import site_paths
    from kit.launch.remote import check_remote_paths, sync_tree
    from kit.results.status import count_states, scan_results

    site = load_sites(sites_file).get(site_name)
    if site.is_remote:
        check_remote_paths(site)
    source = str(site_paths(site, sites_file.resolve().parent).results)
    dest = dest or Path(f"results-{site.name}")
    report = sync_tree(Frontend(site.frontend), source, dest, delete=False)
    statuses = scan_results(dest)
    counts = count_states(statuses)
    invalid = [s for s in statuses if s.state != "complete"]
    data = {"site": site.name, "source": report.source, "dest": str(dest), "listed": report.listed,
            "copied": report.fetched, "counts": counts, "invalid": [s.as_dict() for s in invalid]}
    if as_json:
        common.print_json("pull", common.FAILED if invalid else common.OK, data)
    else:
        click.echo(f"pulled {report.source} -> {dest}: {report.listed} files there, {len(report.fetched)} copied "
                   f"(new or changed)")
        for s in invalid:
            click.echo(f"  INVALID {s.path}: {'; '.join(s.reasons)}")
        click.echo(f"{len(statuses)} checkpoints: " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "none"))
    if invalid:
        sys.exit(1)
