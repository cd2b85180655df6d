"""`kit run`."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import warn


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
@click.option("--walltime", default=None, metavar="TIME", callback=lambda _ctx, _param, value: _given_walltime(value),
              help="Walltime per job (default: the site's), as the site's scheduler reads it (Slurm: M, M:S, "
                   "H:M:S, D-H[:M[:S]]; OAR: H, H:M, H:M:S) or in units: 90m, 1h30m, 2d. 'auto': shards packed "
                   "by the time earlier checkpoints of each run took, the fewest that fit the site's walltime, "
                   "each job's walltime sized to its longest shard (a run never measured gets a one-pair "
                   "calibration job first).")
@click.option("--job-type", "job_types", multiple=True, metavar="TYPE",
              help="OAR job type (-t), repeatable ('night exotic' counts as two); replaces the sites' night, "
                   "besteffort and day types for this run, and keeps their others (exotic). night is refused at "
                   "a site with night_jobs = false.")
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
    (kit-<site>-<run with its @variant>[-and-N-more]-<plan digest>, a long run name kept at
    both ends, where sizes are), so `squeue --me` / `oarstat -u` can be read too.

    Before anything is submitted, each run's weights must be staged at its site (the
    snapshot at its revision with its weights manifest): otherwise kit refuses and prints
    the `kit weights stage` and `kit weights push` commands. Each job's image must be at its
    site too (the SIF or sqsh the lock names, whole, in the site's `images` folder; for the
    docker runtime the image id in the engine): otherwise kit refuses and prints the
    `kit images push` command. A dry run shows both checks.

    Each job is sized per site and engine: vLLM gets the fewest GPUs of one node that hold
    the weights and the KV cache of one max_model_len sequence, other engines one GPU; what
    cannot fit is refused before anything is submitted (README, GPU sizing). Each job also
    asks for GPUs its image's CUDA code runs on (an OAR filter term, a Slurm constraint from
    the site's gpu_features), and a site whose stated GPUs cannot run it is refused.

    Before submitting, each site's policy checks run on its frontend (OAR sites:
    `usagepolicycheck -t`) with their output shown, and an OAR job that is not of type
    night must not cross 09:00 or 19:00 Europe/Paris on a weekday. KIT_NOW (ISO time)
    sets the clock those rules see. A --dry-run makes no ssh connection; it exits 1 when
    a job's day window would refuse the submission now. --json carries every warning
    and, per job, the basis of its GPU count (size, source, memory, KV cache) and what
    its request asks for its image's GPUs.

    \b
    Examples:
      kit run --site local --model kit-demo/tiny-llama
      kit run --site lyon --model LiquidAI/LFM2.5-2.6B --array 4 --dry-run
      kit run --sites nancy,grenoble --model LiquidAI/LFM2.5-2.6B
      kit run --site lyon --model LiquidAI/LFM2.5-2.6B --walltime auto --dry-run
    """
    from kit.launch.policy import parse_now
    from kit.launch.run import RunRequest, prepare_kit_run

    clock = parse_now(now)
    req = RunRequest(sites_file, tuple(site_names) + tuple(common.split_names(sites_csv) or ()), roster, benchmark,
                     models, tuple(common.split_languages(languages) or ()) or None, array, walltime, job_types,
                     dry_run, resubmit, allow_unpinned)
    prepared = prepare_kit_run(req, now=clock)
    plan = prepared.plan
    for warning in prepared.warnings:
        warn(warning)
    if dry_run or not plan.pending:
        data = {**plan.as_dict(), "dry_run": dry_run, "submitted": [], "warnings": list(prepared.warnings)}
        if prepared.weights is not None:
            # one script per job (a site may get several: one per backend and GPU count)
            data.update(weights=prepared.weights.as_dict(), images=prepared.images.as_dict(),
                        scripts={str(s.script_path): s.script_text for s in plan.sites})
        from kit.launch.policy import day_window_refusals

        # a dry run that finds its submission would be refused says so in its status and exit code (1)
        data["would_be_refused"] = day_window_refusals(plan.sites, clock) if dry_run else []
        render(Outcome("run", data, _unsubmitted_lines(prepared, array), failed=bool(data["would_be_refused"])),
               as_json)
        return
    if not as_json:
        click.echo(_plan_lines(plan))   # progress: the plan, shown before the submission
    from kit.launch.submit import submit_run

    submissions = submit_run(plan, now=clock, show=common.say)
    failed = any(code != 0 for s in submissions for code in s.exit_codes.values())
    data = {**plan.as_dict(), "submitted": [{"site": s.site, "job_ids": s.job_ids, "exit_codes": s.exit_codes}
                                            for s in submissions], "warnings": list(prepared.warnings)}
    stopped = next((s.stopped_by for s in submissions if s.stopped_by), None)
    render(Outcome("run", data, _submitted_lines(prepared, submissions, array), failed=failed,
                   stopped_by=signal.Signals(stopped).name if stopped else None), as_json)


def _unsubmitted_lines(prepared, array: int | None):
    """A run that submits nothing: the plan, then why nothing is submitted, or (a dry run with pending
    pairs) what each job would be."""
    yield _plan_lines(prepared.plan)
    if not prepared.plan.pending:
        invalid = len(prepared.plan.invalid)
        yield ("nothing to submit: every planned pair is complete or owned by a live job"
               + (f", or invalid ({invalid}, kept: rerun those with `kit shard --force`)" if invalid else ""))
    else:
        yield from _dry_run_lines(prepared, array)


def _submitted_lines(prepared, submissions, array: int | None):
    """Each site's submission: what it holds and its job ids, and each of its jobs that exited non-zero."""
    for sp, s in zip(prepared.plan.sites, submissions):
        yield (f"site {s.site}: {sp.backend}, {sp.gpus} GPU(s), {len(sp.pairs)} pairs in {len(sp.slots)} "
               f"task(s) of {sp.shard_count} shards ({_tasks_from(sp, array, len(prepared.sites))}), "
               f"walltime {sp.request.walltime_hms}: job ids {', '.join(s.job_ids)}")
        for job, code in s.exit_codes.items():
            if code:
                yield f"  job {job} exited {code}; see its log, then `kit status` (kit does not resubmit by itself)"


def _plan_lines(plan) -> str:
    """The plan's counts, and who owns the pairs not submitted again."""
    text = (f"plan: {len(plan.planned)} pairs, {plan.complete} complete, {len(plan.pending)} pending "
            f"({len(plan.stale)} of them stale: rerun, the old checkpoints kept aside), "
            f"{len(plan.invalid)} invalid (kept; rerun those with `kit shard --force`)")
    if plan.held:
        text += (f"\n{len(plan.held)} pairs wait for their run's calibration job (--walltime auto): "
                 "run `kit run --walltime auto` again when it has ended")
    if plan.owned:
        jobs = sorted({job for job, _ in plan.owned.values()})
        text += (f"\n{len(plan.owned)} pairs owned by your live job(s) {', '.join(jobs)}: not submitted again "
                 "(--resubmit submits them anyway)")
    return text


def _dry_run_lines(prepared, array: int | None):
    """Each job of a dry run: what it runs and in which image, the policy notes, the weights check,
    its script and its submit command."""
    from kit.launch.jobscript import readable_join

    for sp in prepared.plan.sites:
        yield (f"\n# site {sp.site.name}: {sp.backend}, {sp.gpus} GPU(s), shard slots {sp.slots} of "
               f"{sp.shard_count} ({_tasks_from(sp, array, len(prepared.sites))}), plan file {sp.plan_path}")
        digest = sp.image.env.get("KIT_IMAGE_DIGEST")
        yield f"# image: {sp.image.ref or 'none (host runtime)'}" + (f" (digest {digest})" if digest else "")
        if sp.group.note:
            yield f"# {sp.group.note}"
        for run in sorted({p.run for p in sp.pairs}):
            size = prepared.plan.sizes.get((run, sp.site.name))
            if size is not None:
                yield f"# GPUs for {run}: {size.note}"
        if sp.arch_fit.runs_on:
            yield f"# GPUs: image {sp.backend} runs on {sp.arch_fit.runs_on}; the request: {sp.arch_fit.asked}"
        yield from (f"# {line}" for line in sp.policy)
        yield from (f"# {line}" for line in prepared.weights.lines(sp.site.name))
        yield from (f"# {line}" for line in prepared.images.lines(sp.site.name, sp.backend))
        yield from (f"# copied to {sp.site.frontend} before submitting (once): {local} -> {remote}"
                    for remote, local in sp.inputs.items())
        yield f"# job script {sp.script_path}:"
        yield sp.script_text
        yield "# submit command:"
        yield readable_join(sp.submit_argv)


def _tasks_from(sp, array: int | None, n_sites: int) -> str:
    """Where a job's task count comes from, said plainly."""
    capped = " capped at one per pair" if len(sp.slots) < (array or (sp.site.weight if n_sites > 1 else 1)) else ""
    if n_sites > 1:
        return "slots by site weight" + capped
    return (f"--array {array}" if array else "one job at one site; --array N splits it") + capped


def _given_walltime(value: str | None) -> str | None:
    """--walltime as given; a blank one is refused (it would fall back to the site's without a word)."""
    if value is not None and not value.strip():
        from kit.errors import ConfigError

        raise ConfigError(f"--walltime {value!r} is empty",
                          fix="give a walltime (2:00:00, 90m, auto), or leave the option out for the site's own")
    return value
