"""`kit cancel`."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@click.option("--site", "site_name", required=True, metavar="NAME", help="The site whose jobs to cancel.")
@common.sites_option
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--dry-run", is_flag=True, help="Print the jobs and the exact cancel command; cancel nothing.")
@common.unpinned_option
@common.json_option
def cancel(site_name: str, sites_file: Path, roster: Path, benchmark: Path | None, models: tuple[str, ...],
           languages: str | None, dry_run: bool, allow_unpinned: bool, as_json: bool) -> None:
    """Cancel a site's queued and running jobs that still own pairs without a checkpoint.

    The jobs are those kit recorded when it submitted (.kit/jobs/SITE.jsonl beside the
    sites file), kept only when the scheduler says they are queued or running and own a
    selected pair that is not complete. A job (array task) shard can hold pairs of other
    models too: cancelling it stops those as well; `kit run` later submits what is missing.

    \b
    Examples:
      kit cancel --site cluster --model LiquidAI/LFM2.5-2.6B --dry-run
      kit cancel --site cluster
    """
    from kit.config.project import load_project
    from kit.launch.cancel import cancel_site
    from kit.launch.site import load_site

    site = load_site(sites_file, site_name)
    project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
    runs = project.roster.select(models)
    plan = cancel_site(project, site, runs, common.split_languages(languages), dry_run=dry_run)
    render(Outcome("cancel", {**plan.as_dict(), "dry_run": dry_run}, _lines(plan, site.name, dry_run),
                   errors=[f"site {site.name}: {why}" for why in plan.unknown]), as_json)


def _lines(plan, site_name: str, dry_run: bool):
    """The jobs left alone, the jobs that own pending pairs, and the cancel command (run or not)."""
    for job, state in sorted(plan.not_live.items()):
        yield f"job {job}: {state}, left alone"
    if not plan.jobs:
        if not plan.unknown:
            yield f"site {site_name}: no queued or running job owns a pending pair; nothing to cancel"
        else:   # the errors say why: the site's jobs are not known, so "nothing to cancel" would be a guess
            yield f"site {site_name}: its jobs could not all be known; nothing cancelled"
        return
    for job, pairs in plan.jobs.items():
        yield f"job {job}: {len(pairs)} pending pair(s): " + ", ".join(str(p) for p in pairs)
    if dry_run:
        yield "# cancel command (not run):"
        yield shlex.join(plan.command)
    else:
        yield f"site {site_name}: cancelled {len(plan.jobs)} job(s): {shlex.join(plan.command)}"
