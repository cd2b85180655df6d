"""`kit demo`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from kit.cli import common as C


@click.command()
@click.option("--workdir", type=click.Path(path_type=Path), default="kit-demo", show_default=True,
              help="Folder for the demo's roster, sites file, results and report.")
@click.option("--runtime", type=click.Choice(["host", "docker"]), default="host", show_default=True,
              help="Run the jobs on the host, or in the built transformers-5.17 Docker image "
                   "(make base-image image-transformers-5.17-cpu), as REPRODUCE.md does.")
def demo(workdir: Path, runtime: str) -> None:
    """Run the embedded default sweep end to end: no files, no network.

    Creates once (cached under the user cache dir, KIT_CACHE_DIR overrides) a tiny
    random-weight Llama and a tiny reranker laid out like the Hugging Face cache, and a
    tiny three-language benchmark in the lrb format. Then it plans, submits the shard to
    the `local` site (the same launcher and job script a cluster gets), shows the
    status and writes the report. A second run skips every complete pair.
    """
    import os

    from kit.config.project import load_project
    from kit.config.sites import load_sites
    from kit.demo.run import prepare_demo
    from kit.launch.overview import plan_overview
    from kit.launch.submit import prepare_run, submit_run
    from kit.results.report import write_report
    from kit.results.status import count_states, pair_states

    t0 = time.perf_counter()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    files = prepare_demo(workdir, progress=C.say, runtime=runtime)
    project = load_project(files.roster, None)
    runs = list(project.roster.run)
    ov = plan_overview(project, runs, None, (0, 1), files.results)
    c = ov.counts
    click.echo(f"plan: {len(ov.runs)} runs x {len(ov.languages)} languages ({', '.join(ov.languages)}) = "
               f"{ov.pairs} pairs, {ov.total_prompts} prompts; {c['complete']} complete, {c['pending']} pending")
    site = load_sites(files.sites).get("local")
    plan = prepare_run(project, [site], files.sites.parent, runs, None)
    if plan.pending:
        from kit.launch.sitestatus import state_dir_for

        subs = submit_run(plan, state_dir_for(files.sites))
        failed = [j for s in subs for j, code in s.exit_codes.items() if code]
        if failed:
            click.echo(f"kit: error: demo job {', '.join(failed)} failed; see {files.workdir / 'logs'}", err=True)
            sys.exit(1)
    else:
        click.echo("every pair is already complete: nothing to run")
    statuses = pair_states(files.results, ov.assigned, project.benchmark.item_ids)
    counts = count_states(statuses)
    for s in statuses:
        click.echo(f"  {s.state:<9} {s.pair.run} [{s.pair.language}]  {s.path}")
    click.echo("status: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    paths = write_report(files.results, files.report)
    click.echo(f"\nresults  {files.results}")
    click.echo(f"report   {files.report}  ({', '.join(p.name for p in vars(paths).values() if isinstance(p, Path))})")
    click.echo(f"roster   {files.roster}\nsites    {files.sites}\nassets   {files.cache}")
    click.echo(f"done in {time.perf_counter() - t0:.1f}s; run `kit demo` again: every pair is skipped")
    if counts.get("complete", 0) != len(statuses):
        sys.exit(1)
