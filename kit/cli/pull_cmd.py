"""`kit pull`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


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
    only those new or changed since the last pull; a file here that a copy replaces is
    kept in <language>/.superseded/ first (each file is written beside its place and
    renamed in, so a full disk leaves the earlier copy whole). Then
    each checkpoint is validated (parses, matches its path, metrics recompute) and the
    invalid ones are listed. Exits 1 when any checkpoint is invalid. /home on Grid'5000
    has no backup: pull as soon as jobs end.

    \b
    Examples:
      kit pull --site nancy                       # into ./results-nancy
      kit pull --site grenoble --to results-grenoble --json
    """
    from kit.launch.remote import check_remote_paths, sync_tree
    from kit.launch.site import load_site
    from kit.results.status import count_states, scan_results
    from kit.results.store import left_out_note

    site = load_site(sites_file, site_name)
    if site.is_remote:
        check_remote_paths(site.config)
    dest = dest or Path(f"results-{site.name}")
    report = sync_tree(site.frontend, str(site.paths.results), dest, delete=False)
    statuses = scan_results(dest)
    counts = count_states(statuses)
    invalid = [s for s in statuses if s.state != "complete"]
    data = {"site": site.name, "source": report.source, "dest": str(dest), "listed": report.listed,
            "copied": report.fetched, "counts": counts, "invalid": [s.as_dict() for s in invalid],
            "kept_aside": report.kept_aside, "notes": report.notes(), "not_counted": left_out_note(dest)}
    render(Outcome("pull", data, _lines(report, dest, statuses, counts, invalid, data["not_counted"]),
                   failed=bool(invalid)), as_json)


def _lines(report, dest: Path, statuses: list, counts: dict[str, int], invalid: list, not_counted: str | None):
    """What was copied, each invalid checkpoint, the count of checkpoints by state, and what was not counted."""
    yield f"pulled {report.source} -> {dest}: {report.listed} files there, {len(report.fetched)} copied (new or changed)"
    yield from report.notes()
    for s in invalid:
        yield f"  INVALID {s.path}: {'; '.join(s.reasons)}"
    yield f"{len(statuses)} checkpoints: " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "none")
    if not_counted:
        yield not_counted
