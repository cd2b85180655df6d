"""`kit release`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="The release folder to write (outside RESULTS; refused if it exists, unless --force).")
@common.roster_option
@common.benchmark_option
@click.option("--name", default=None, help="The benchmark name the card and status use. Default: the benchmark's.")
@click.option("--license", "license_id", default="mit", show_default=True,
              help="The card's licence id (Hub front matter) for the results.")
@click.option("--force", is_flag=True, help="Replace OUTPUT when it is a release kit wrote before, unchanged since.")
@click.option("--public-keys", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="The public keys that signed the results (kit keys export: one or a JSON list): shipped as keys.json, "
                   "and every signed result must verify under them.")
@common.unpinned_option
@common.json_option
def release(results: Path, output: Path, roster: Path, benchmark: Path | None, name: str | None, license_id: str,
            force: bool, public_keys: Path | None, allow_unpinned: bool, as_json: bool) -> None:
    """Write a release folder the way lrb publishes one, from a results tree.

    \b
    OUTPUT gets:
      README.md            dataset card: per-run macro scores, F1 by language, every
                           prompt used (verbatim), images by digest, how to reproduce
      SNAPSHOT_STATUS.md   complete, or in progress with each run's coverage
      leaderboard.csv ...  the report (as `kit report` writes it)
      data/train.csv       one row per item per run-language (gold, prediction, score)
      <language>/<run>.json  lrb's own result files (as `kit export lrb` writes them)
      checkpoints/         kit's checkpoints, logs and signed statements (kit sign),
                           for `kit reproduce` and `kit verify --trusted-keys`
      keys.json            with --public-keys: the signers' public keys
      REPRODUCE.md         the reviewer's guide

    With a roster (roster.toml here, or --roster) the expected pairs are the planned
    ones and stale checkpoints are left out; without one, every run found times every
    language found. The prompt texts come from the benchmark folder (--benchmark, or
    the roster's). A release holds the tree's own files: an lrb batch folder's are named
    and left out (release the batch on its own), and a file deeper than a checkpoint
    lies stops it, as an invalid checkpoint does: nothing is written. The folder is
    built beside OUTPUT and renamed into place. `kit publish` uploads it.

    \b
    Examples:
      kit release results -o release
      kit release results -o release --roster roster.toml --force
      kit release results -o release --benchmark data --name v3-multilingual --json
    """
    from kit.config.project import load_project
    from kit.results.release import build_release

    project = None
    if common.roster_to_use(roster):
        project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
    elif benchmark is not None:
        project = load_project(None, benchmark, roster_required=False)
    runs = list(project.roster.run) if project is not None else None
    done = build_release(results, output, benchmark=project.benchmark if project is not None else None, runs=runs,
                         name=name, license_id=license_id, force=force, public_keys=common.trusted_keys(public_keys))
    render(Outcome("release", done.as_dict(), _lines(output, done)), as_json)


def _lines(output: Path, done):
    """Whether the release is complete, each run's coverage, and the stale checkpoints left out."""
    yield f"release {output}: {'complete' if done.complete else 'in progress'}, {len(done.files)} files"
    for c in done.coverage:
        n = len(c.complete) + len(c.other)
        yield f"  {c.run}: {len(c.complete)}/{n} languages" + ("" if c.done else f" (not complete: {', '.join(sorted(c.other))})")
    for path, reasons in done.left_out.items():
        yield f"  left out (stale): {path}: {'; '.join(reasons)}"
    for path, state in done.outside.items():
        yield f"  left out (a pair the roster does not plan; {state}): {path}"
    for path, batch in done.in_batches.items():
        yield f"  left out (lrb's batch folder {batch}, a collection of its own: release it on its own): {path}"
    if done.not_counted:
        yield f"  {done.not_counted}"
