"""`kit shard`: the worker entry point."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@common.roster_option
@common.benchmark_option
@click.option("--results", type=click.Path(path_type=Path), required=True, help="Results tree to write checkpoints into.")
@common.models_option
@common.languages_option
@click.option("--pairs", "pairs_file", type=click.Path(path_type=Path), default=None,
              help="Plan file written by `kit run` (the exact pair list the shards divide).")
@click.option("--shard", "shard_text", default="0/1", show_default=True, envvar="KIT_SHARD", metavar="I/N",
              help="Run shard I of N.")
@click.option("--force", is_flag=True, help="Replace invalid checkpoints of this shard (complete ones are always kept).")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None, envvar="HF_HUB_CACHE",
              help="Hugging Face hub cache with the staged snapshots. Env: HF_HUB_CACHE.")
@common.unpinned_option
@common.json_option
def shard(roster: Path, benchmark: Path | None, results: Path, models: tuple[str, ...], languages: str | None,
          pairs_file: Path | None, shard_text: str, force: bool, cache_dir: Path | None, allow_unpinned: bool,
          as_json: bool) -> None:
    """Run one shard's pairs and write one checkpoint per pair (the in-image worker).

    Groups the shard's pairs by run so each model loads once, skips pairs whose
    checkpoint is complete, reports invalid checkpoints and leaves them alone unless
    --force. Weights are read offline from the hub cache at the pinned revision.
    A pair runs while this process holds its claim file (RESULTS/<language>/.<run>.claim):
    a pair another kit process is running is skipped and said so. The results folder is
    probed before any model loads (read-only or full: one error line, exit 2).
    Exits 0 when no pair failed or was kept invalid, 1 otherwise. On SIGTERM (Slurm's
    walltime or scancel, OAR's checkpoint signal, `kit cancel`) or SIGINT it stops the
    pair in progress (its log says aborted), lists the pairs left and exits 143 (130).

    \b
    Example (what a job runs):
      kit shard --roster roster.toml --results results --shard 3/8
    """
    from kit.config.project import load_project
    from kit.plan import job_pairs, parse_shard
    from kit.worker.shard import run_shard
    from kit.worker.signals import Terminated, stop_on_signals

    with stop_on_signals():
        try:
            index_count = parse_shard(shard_text)
            common.results_folder(results)   # a file there is refused before any line is printed
            project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
            runs, plan = job_pairs(project.roster, project.benchmark, models, common.split_languages(languages),
                                   pairs_file)
            report = run_shard(runs=runs, pairs=plan.pairs, benchmark=project.benchmark, results=results,
                               shard=index_count, packed=plan.shards, force=force, cache_dir=cache_dir,
                               progress=common.say)
            render(Outcome("shard", _data(report, shard_text), _lines(report, shard_text), failed=not report.ok,
                           stopped_by=report.terminated or None), as_json)
        except Terminated as exc:   # before the pairs were planned, or while the summary printed
            common.say(f"kit: shard {shard_text} terminated by {exc.name}")
            render(Outcome("shard", {"shard": shard_text, "terminated": exc.name}, stopped_by=exc.name), as_json)


def _data(report, shard_text: str) -> dict:
    """The envelope's data: the shard's counts, its invalid, failed and elsewhere-run pairs, and the pairs a
    signal left."""
    def pairs(items) -> list[dict]:
        return [{"run": p.run, "language": p.language} for p in items]

    return {
        "shard": shard_text, "assigned": len(report.assigned), "written": len(report.written),
        "skipped": len(report.skipped),
        "invalid": [{"run": p.run, "language": p.language, "reasons": r} for p, r in report.invalid],
        "failed": [{"run": p.run, "language": p.language, "error": e} for p, e in report.failed],
        "elsewhere": [{"run": p.run, "language": p.language, "reason": why} for p, why in report.elsewhere],
        "terminated": report.terminated, "left": pairs(report.left) if report.terminated else [],
    }


def _lines(report, shard_text: str):
    """The shard's counts in one line, then each failed pair, each pair another process had, each pair left."""
    line = (f"shard {shard_text}: {len(report.written)} written, {len(report.skipped)} already complete, "
            f"{len(report.invalid)} invalid kept, {len(report.failed)} failed")
    if report.elsewhere:
        line += f", {len(report.elsewhere)} left to another kit process"
    if report.terminated:
        line += f", {len(report.left)} not run (terminated by {report.terminated})"
    yield line
    for p, err in report.failed:
        yield f"  failed  {p}: {err}"
    for p, why in report.elsewhere:
        yield f"  skipped {p}: {why}"
    if report.terminated:
        for p in report.left:
            yield f"  left    {p}"
