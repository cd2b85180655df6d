"""`kit plan`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import warn
from kit.results.keys import PairState


@click.command()
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--shard", "shard_text", default="0/1", show_default=True, metavar="I/N",
              help="Show only shard I of N (pairs whose index mod N is I).")
@click.option("--results", type=click.Path(path_type=Path), default="results", show_default=True,
              help="Results tree to count complete / pending / invalid checkpoints in.")
@click.option("--site", "site_name", default=None, metavar="NAME",
              help="Also show the image each run uses at this site (its runtime's artifact), and refuse "
                   "(exit 2) a run whose backend has no built image for that runtime.")
@common.sites_option
@click.option("--images-lock", type=click.Path(path_type=Path), default=None,
              help="Lock of built images (default: KIT_IMAGES_LOCK, else containers/images.lock.json).")
@common.unpinned_option
@common.json_option
def plan(roster: Path, benchmark: Path | None, models: tuple[str, ...], languages: str | None, shard_text: str,
         results: Path, site_name: str | None, sites_file: Path, images_lock: Path | None, allow_unpinned: bool,
         as_json: bool) -> None:
    """Show what a sweep consists of, before any model is loaded.

    Prints each run's prompt file and its digest (and a prompt file found by lrb's names
    but passed over, as prompt_generate.txt beside prompt.txt), the runs, the languages
    with their prompt counts and file digests (each language file is checked against the
    manifest), the pairs, the pairs of the chosen shard, and how many of those already
    have a complete, pending or invalid checkpoint.

    \b
    Examples:
      kit plan --roster roster.toml
      kit plan --benchmark data --languages en,fr,ja     (no roster: the dataset alone)
      kit plan --model LiquidAI/LFM2.5-2.6B --shard 1/4 --json
      kit plan --site local     (and the image of each run for the site's runtime)
    """
    from kit.config.project import load_project
    from kit.launch.overview import plan_overview
    from kit.plan import parse_shard

    shard = parse_shard(shard_text)
    project = load_project(roster, benchmark, allow_unpinned=allow_unpinned,
                           roster_required=common.roster_given() or bool(models))
    runs = project.roster.select(models) if project.roster.run else []
    ov = plan_overview(project, runs, common.split_languages(languages), shard, common.results_folder(results))
    site, images = None, []
    if site_name is not None:
        from kit.config.walltime import short_walltime
        from kit.launch.plan_images import run_images
        from kit.launch.site import load_site

        site = load_site(sites_file, site_name)
        note = short_walltime(site.config.walltime, site.config.scheduler)
        warnings = ([f"site {site.name}: {note}"] if note else []) + site.config.ignored_keys()
        for warning in warnings:
            warn(warning)
        images = run_images(site, runs, images_lock)
    data = ov.as_dict()
    if site is not None:
        data["images"] = [i.as_dict() for i in images]
    render(Outcome("plan", data, _lines(project, ov, shard, results, site, images)), as_json)


def _lines(project, ov, shard: tuple[int, int], results: Path, site, images: list):
    """The benchmark, runs, languages, pairs, the shard, its checkpoints' states, and (with a site) each
    run's image there."""
    yield f"benchmark  {project.benchmark.root}  ({project.benchmark.describe()})"
    yield f"whole set  {ov.whole_set[0]}: {ov.whole_set[1]}"
    for task, digest in ov.prompt_digests.items():
        yield f"prompt     {task}: {ov.prompt_files.get(task, '?')} sha256 {digest}"
    for line in ov.prompts_unread:
        yield f"           {line}"
    yield f"runs       {len(ov.runs)}" + (": " + ", ".join(ov.runs) if ov.runs else "  (no roster: pass --roster to plan pairs)")
    yield f"languages  {len(ov.languages)}"
    for lang in ov.languages:
        yield f"  {lang:<6} {ov.prompts_per_language[lang]:>5} prompts  sha256 {ov.digests[lang]}  ok"
    yield f"pairs      {ov.pairs}"
    yield f"shard      {shard[0]}/{shard[1]}: {len(ov.assigned)} pairs, {ov.total_prompts} prompts"
    c = ov.counts
    yield (f"results    {results}: {c['complete']} complete, {c['pending']} pending, {c['stale']} stale, "
           f"{c['invalid']} invalid")
    for st in ov.states:
        if st.state in (PairState.INVALID, PairState.STALE):
            yield f"  {st.state:<8} {st.path}: {'; '.join(st.reasons)}"
    if site is not None:
        yield f"images     site {site.name} ({site.config.runtime}): {len(images)} runs"
        for i in images:
            yield f"  {i.run}  {i.backend}  " + (f"{i.ref}  {i.digest}" if i.ref else "host venv (no image)")
