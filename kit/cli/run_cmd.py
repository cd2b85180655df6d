"""`kit run`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit.cli import common
from kit.config.project import load_project
from kit.config.sites import load_sites
from kit.errors import ConfigError


@click.command()
@click.option("--site", "site_names", multiple=True, metavar="NAME", help="Site to submit to (repeatable).")
@click.option("--sites", "sites_csv", default=None, metavar="a,b", help="Several sites; each gets consecutive shard slots by weight.")
@common.sites_option
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--array", type=click.IntRange(1, 100000), default=None,
              help="Split the pending pairs into N shards, one array task each (one site).")
@click.option("--walltime", default=None, metavar="TIME",
              help="Walltime per job (default: the site's), as the site's scheduler reads it (Slurm: M, M:S, "
                   "H:M:S, D-H[:M[:S]]; OAR: H, H:M, H:M:S) or in units: 90m, 1h30m, 2d.")
@click.option("--job-type", "job_types", multiple=True, metavar="TYPE",
              help="OAR job type (-t), repeatable ('night exotic' counts as two); replaces the sites' job_types "
                   "for this run. night is refused at a site with night_jobs = false.")
@click.option("--dry-run", is_flag=True, help="Print the plan, the job script and the exact command; submit nothing.")
@click.option("--resubmit", is_flag=True,
              help="Submit pairs that a live job of yours already owns (queued or running) as well.")
@click.option("--now", default=None, hidden=True, envvar="KIT_NOW",
              help="Pretend the submission happens at this ISO time (Europe/Paris unless an offset is given).")
@common.unpinned_option
@common.json_option
def run(site_names: tuple[str, ...], sites_csv: str | None, sites_file: Path, roster: Path, benchmark: Path | None,
        models: tuple[str, ...], languages: str | None, array: int | None, walltime: str | None,
        job_types: tuple[str, ...], dry_run: bool, resubmit: bool, now: str | None, allow_unpinned: bool,
        as_json: bool) -> None:
    """Submit the pairs that are not complete yet to a site's scheduler.

    Plans the pairs of the chosen runs, drops those with a complete checkpoint, shards
    the rest, writes the pair list to a plan file the jobs read, renders the job script
    (clean environment, every value quoted) and submits it. After a failure kit never
    resubmits by itself: look at `kit status`, then run again. A pair that a live job of
    yours already owns (queued or running, asked of the scheduler, whichever machine
    submitted it) is not submitted again unless --resubmit; job names say what they run
    (kit-<site>-<run>-<plan digest>), so `squeue --me` / `oarstat -u` can be read too.

    Before anything is submitted, each run's weights must be staged at its site (the
    snapshot at its revision with its weights manifest): otherwise kit refuses and prints
    the `kit weights stage` and `kit weights push` commands; a dry run shows the check.

    Each job is sized per site and engine: vLLM gets the fewest GPUs of one node that hold
    the model, other engines one GPU; what cannot fit is refused before anything is
    submitted (README, GPU sizing).

    Before submitting, each site's policy checks run on its frontend (OAR sites:
    `usagepolicycheck -t`) with their output shown, and an OAR job that is not of type
    night must not cross 09:00 or 19:00 Europe/Paris on a weekday. KIT_NOW (ISO time)
    sets the clock those rules see. A --dry-run makes no ssh connection.

    \b
    Examples:
      kit run --site local --model kit-demo/tiny-llama
      kit run --site lyon --model LiquidAI/LFM2.5-2.6B --array 4 --dry-run
      kit run --sites nancy,grenoble --model LiquidAI/LFM2.5-2.6B
    """
    from kit.launch.submit import prepare_run, submit_run

    names = list(site_names) + (common.split_names(sites_csv) or [])
    sites_cfg = load_sites(sites_file)
    sites = [sites_cfg.get(n) for n in names]
    if job_types:
        sites = [s.model_copy(update={"job_types": _job_types(job_types, s)}) for s in sites]
    if walltime:
        from kit.config.loading import invalid_line
        from kit.config.walltime import walltime_seconds

        for site in sites:   # each in the grammar of its own scheduler
            try:
                walltime_seconds(walltime, site.scheduler)
            except ValueError as exc:
                raise click.BadParameter(f"{invalid_line(exc)} (site {site.name}, {site.scheduler})",
                                         param_hint="--walltime") from None
    from kit.launch.policy import describe, parse_now

    clock = parse_now(now)
    project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
    if not dry_run:  # which pairs a remote site already has: refresh its local mirror (ssh)
        from kit.launch.remote import sync_mirror

        for site in sites:
            if site.is_remote:
                sync_mirror(site, sites_file.resolve().parent)
    runs = project.roster.select(models)
    plan = prepare_run(project, sites, sites_file.resolve().parent, runs, common.split_languages(languages),
                       array=array, walltime=walltime, allow_unpinned=allow_unpinned, dry_run=dry_run,
                       resubmit=resubmit)
    for warning in plan.warnings:
        common.say(f"kit: warning: {warning}")
    if not as_json:
        click.echo(f"plan: {len(plan.planned)} pairs, {plan.complete} complete, {len(plan.pending)} pending "
                   f"({len(plan.stale)} of them stale: rerun, the old checkpoints kept aside), "
                   f"{len(plan.invalid)} invalid (kept; rerun those with `kit shard --force`)")
        if plan.owned:
            jobs = sorted({job for job, _ in plan.owned.values()})
            click.echo(f"{len(plan.owned)} pairs owned by your live job(s) {', '.join(jobs)}: not submitted again "
                       "(--resubmit submits them anyway)")
    if not plan.pending:
        if as_json:
            common.print_json("run", common.OK, {**plan.as_dict(), "dry_run": dry_run, "submitted": []})
        else:
            click.echo("nothing to submit: every planned pair is complete or owned by a live job")
        return
    from kit.launch.weights_check import preflight_weights

    # every run's weights must be where its jobs read them: refused now, not after a night in the queue
    weights = preflight_weights(plan, runs, sites_file.resolve().parent, dry_run=dry_run, roster=roster,
                                sites_file=sites_file)
    for warning in weights.warnings:
        common.say(f"kit: warning: {warning}")
    if dry_run:
        if as_json:
            # one script per job (a site may get several: one per backend and GPU count)
            common.print_json("run", common.OK, {**plan.as_dict(), "dry_run": True, "weights": weights.as_dict(),
                                                 "scripts": {str(s.script_path): s.script_text for s in plan.sites}})
            return
        for sp in plan.sites:
            click.echo(f"\n# site {sp.site.name}: {sp.backend}, {sp.gpus} GPU(s), shard slots {sp.slots} of "
                       f"{sp.shard_count} ({_tasks_from(sp, array, len(sites))}), plan file {sp.plan_path}")
            for line in describe(sp.site, sp.request.walltime_s, clock):
                click.echo(f"# {line}")
            for line in weights.lines(sp.site.name):
                click.echo(f"# {line}")
            for remote, local in sp.inputs.items():
                click.echo(f"# copied to {sp.site.frontend} before submitting (once): {local} -> {remote}")
            click.echo(f"# job script {sp.script_path}:")
            click.echo(sp.script_text)
            click.echo("# submit command:")
            from kit.launch.jobscript import readable_join

            click.echo(readable_join(sp.submit_argv))
        return
    from kit.launch.sitestatus import state_dir_for

    submissions = submit_run(plan, state_dir_for(sites_file), now=clock, show=common.say)
    failed = any(code != 0 for s in submissions for code in s.exit_codes.values())
    if as_json:
        common.print_json("run", common.FAILED if failed else common.OK,
                     {**plan.as_dict(), "submitted": [{"site": s.site, "job_ids": s.job_ids, "exit_codes": s.exit_codes}
                                                       for s in submissions]})
    else:
        for sp, s in zip(plan.sites, submissions):
            click.echo(f"site {s.site}: {sp.backend}, {sp.gpus} GPU(s), {len(sp.pairs)} pairs in {len(sp.slots)} "
                       f"task(s) of {sp.shard_count} shards ({_tasks_from(sp, array, len(sites))}), "
                       f"walltime {sp.request.walltime_hms}: "
                       f"job ids {', '.join(s.job_ids)}")
            for job, code in s.exit_codes.items():
                if code:
                    click.echo(f"  job {job} exited {code}; see its log, then `kit status` (kit does not resubmit by itself)")
    if failed:
        sys.exit(1)


def _job_types(values: tuple[str, ...], site) -> tuple[str, ...]:
    """--job-type values for one site, one type each; night where the site takes none is refused."""
    from kit.config.loading import invalid_line
    from kit.config.sites import split_job_types

    try:
        types = split_job_types(values)
    except ValueError as exc:
        raise click.BadParameter(invalid_line(exc), param_hint="--job-type") from None
    if "night" in types and not site.night_jobs:
        raise ConfigError(f"site {site.name} takes no job type night (night_jobs = false in its sites.toml entry)",
                          fix=f"drop --job-type night for {site.name}: its day jobs must end before 09:00 or 19:00 "
                              "Europe/Paris (--walltime), or start after 19:00")
    return types


def _tasks_from(sp, array: int | None, n_sites: int) -> str:
    """Where a job's task count comes from, said plainly."""
    capped = " capped at one per pair" if len(sp.slots) < (array or sp.site.weight) else ""
    if n_sites > 1:
        return "slots by site weight" + capped
    return (f"--array {array}" if array else f"the site's weight {sp.site.weight}; --array N sets it") + capped
