"""`kit plan`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.config.project import load_project
from kit.launch.overview import plan_overview
from kit.plan import parse_shard
from kit.results import keys


@click.command()
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--shard", "shard_text", default="0/1", show_default=True, metavar="I/N",
              help="Show only shard I of N (pairs whose index mod N is I).")
@click.option("--results", type=click.Path(path_type=Path), default="results", show_default=True,
              help="Results tree to count complete / pending / invalid checkpoints in.")
@common.unpinned_option
@common.json_option
def plan(roster: Path, benchmark: Path | None, models: tuple[str, ...], languages: str | None, shard_text: str,
         results: Path, allow_unpinned: bool, as_json: bool) -> None:
    """Show what a sweep consists of, before any model is loaded.

    Prints the runs, the languages with their prompt counts and file digests (each
    language file is checked against the manifest), the pairs, the pairs of the chosen
    shard, and how many of those already have a complete, pending or invalid checkpoint.

    \b
    Examples:
      kit plan --roster roster.toml
      kit plan --benchmark data --languages en,fr,ja     (no roster: the dataset alone)
      kit plan --model LiquidAI/LFM2.5-2.6B --shard 1/4 --json
    """
    shard = parse_shard(shard_text)
    explicit_roster = click.get_current_context().get_parameter_source("roster") != click.core.ParameterSource.DEFAULT
    project = load_project(roster, benchmark, allow_unpinned=allow_unpinned,
                           roster_required=explicit_roster or bool(models))
    runs = project.roster.select(models) if project.roster.run else []
    ov = plan_overview(project, runs, common.split_languages(languages), shard, results)
    if as_json:
        common.print_json("plan", common.OK, ov.as_dict())
        return
    echo = click.echo
    echo(f"benchmark  {project.benchmark.root}  ({project.benchmark.describe()})")
    echo(f"whole set  {ov.whole_set[0]}: {ov.whole_set[1]}")
    for task, digest in ov.prompt_digests.items():
        echo(f"prompt     {task}: sha256 {digest}")
    echo(f"runs       {len(ov.runs)}" + (": " + ", ".join(ov.runs) if ov.runs else "  (no roster: pass --roster to plan pairs)"))
    echo(f"languages  {len(ov.languages)}")
    for lang in ov.languages:
        echo(f"  {lang:<6} {ov.prompts_per_language[lang]:>5} prompts  sha256 {ov.digests[lang]}  ok")
    echo(f"pairs      {ov.pairs}")
    echo(f"shard      {shard[0]}/{shard[1]}: {len(ov.assigned)} pairs, {ov.total_prompts} prompts")
    c = ov.counts
    echo(f"results    {results}: {c['complete']} complete, {c['pending']} pending, {c['stale']} stale, "
         f"{c['invalid']} invalid")
    for st in ov.states:
        if st.state in (keys.INVALID, keys.STALE):
            echo(f"  {st.state:<8} {st.path}: {'; '.join(st.reasons)}")
