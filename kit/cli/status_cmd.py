"""`kit status`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import visible


@click.command()
@click.argument("results", type=click.Path(path_type=Path), default="results")
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--site", "site_names", multiple=True, metavar="NAME",
              help="Status at a configured site (repeatable): checkpoints there, then the scheduler for the rest.")
@click.option("--all-sites", is_flag=True, help="Every site in the sites file.")
@click.option("--pairs", "every_pair", is_flag=True,
              help="One table row per pair (default: one row per run, then only the pairs that are not complete).")
@common.sites_option
@common.unpinned_option
@common.json_option
def status(results: Path, roster: Path, benchmark: Path | None, models: tuple[str, ...], languages: str | None,
           site_names: tuple[str, ...], all_sites: bool, every_pair: bool, sites_file: Path, allow_unpinned: bool,
           as_json: bool) -> None:
    """Say where every pair stands in a results tree: complete, stale, pending or invalid.

    With a roster (roster.toml here, or --roster), every planned pair is listed, so
    missing ones show as pending. Without one, every checkpoint found is validated on
    its own. A checkpoint counts as complete only if it parses, matches its path, has
    the benchmark's item ids and expected labels, agrees with its own provenance record
    and its metrics recompute exactly. A sound checkpoint recorded for another revision,
    setting, prompt or data file than the roster and benchmark have now is stale:
    `kit run` and `kit shard` rerun it (the old file is kept aside) and reports leave it out.

    \b
    With --site, each pair without a complete checkpoint is explained by the job that
    should have written it: running, queued, failed, timeout, cancelled, unknown (the
    scheduler could not say why), or unclaimed (no submission planned it). Array jobs
    count task by task. With several sites each pair gets one row: its most advanced
    state, and the site in the detail. A remote site's checkpoints are copied over ssh
    into .kit/mirror/<site>/ beside sites.toml (only new or changed files) and checked here.

    \b
    By default the table has one row per run (how many of its languages are in each
    state), then the pairs that are not complete, the ones that need a look first
    (invalid, failed, ..., pending last), 50 at most; --pairs lists every pair.
    --json always holds every pair.

    \b
    Verdicts are remembered in the user cache folder, per file identity (size, times, inode),
    kit version and benchmark, so a second run reads only files that changed; the same
    question asked again of files none of which changed (nor the roster, benchmark or
    environment) prints the answer kept, without planning (KIT_NO_CACHE=1: both off).

    \b
    Examples:
      kit status results --pairs
      kit status results --model LiquidAI/LFM2.5-2.6B --json
      kit status --site nancy --site grenoble
      kit status --all-sites
    """
    memo = None
    if not (site_names or all_sites):   # a scheduler's answer changes with no file changing: never kept
        from kit.cli.replay import AnswerMemo

        memo = AnswerMemo.of_context(click.get_current_context())
        memo.replay()   # the same question of the same files: the kept answer, and exit
        memo.record()
    from kit.config.project import load_project
    from kit.results.status import count_states, twice_note
    from kit.results.store import MLLOG_SUFFIX, archive_note, left_out_note
    from kit.results.tree import ResultsTree

    errors: list[str] = []   # only a site can leave its checkpoints unread
    cached = None             # verdicts taken from kit's cache (a local tree only)
    twice: list = []          # pairs more than one found file counts for (a scan of lrb's layouts only)
    planned = bool(common.roster_to_use(roster))
    if site_names or all_sites:
        from kit.launch.site import load_named_sites
        from kit.launch.sitestatus import statuses_at_sites

        project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
        sites = load_named_sites(sites_file, None if all_sites else list(site_names))
        statuses, errors = statuses_at_sites(project, sites, project.roster.select(models),
                                             common.split_languages(languages))
    elif planned:
        from kit.plan import select_pairs
        from kit.results.identity import PlanExpectations

        project = load_project(roster, benchmark, allow_unpinned=allow_unpinned)
        runs = project.roster.select(models)
        pairs = select_pairs(runs, project.benchmark, common.split_languages(languages))
        with ResultsTree(common.results_folder(results)) as tree:
            statuses = tree.pair_states(pairs, PlanExpectations(project.benchmark, runs))
            cached = tree.from_cache
        memo.name_whole(project.benchmark.root)
    else:
        from kit.results.identity import PlanExpectations
        from kit.results.status import counted_twice, select_found

        dataset = common.benchmark_or_roster(benchmark, None)
        with ResultsTree(common.results_folder(results)) as tree:
            statuses = tree.scan(PlanExpectations(dataset) if dataset else None)
            cached = tree.from_cache
        memo.name_whole(dataset.root if dataset else None)
        # without a roster, --model and --languages pick among the checkpoints found
        statuses = select_found(statuses, models, common.split_languages(languages), results)
        twice = counted_twice(results, statuses)
    counts = count_states(statuses)
    if memo is not None:   # each checkpoint and its log: the cache stats them, opening none
        memo.name((s.path for s in statuses), beside=MLLOG_SUFFIX)
        memo.name([results])
    # a roster's pairs have their places; a scan says what it found where no checkpoint lies
    note = (archive_note(results) if planned else left_out_note(results)) if not (site_names or all_sites) else None
    if not (site_names or all_sites) and not os.path.lexists(results):   # a typo reads as "nothing ran yet"
        note = f"{results} does not exist: no pair has a checkpoint yet (or the results folder is elsewhere: " \
               "kit status RESULTS)"
    title = f"kit status {', '.join(site_names) or ('all sites' if all_sites else results)}"
    shown_note = "\n".join(line for line in (note, twice_note(twice)) if line) or None
    render(Outcome("status", lambda: {"results": str(results), "counts": counts, "pairs": [s.as_dict() for s in statuses],
                                      "from_cache": cached, "not_counted": note, "counted_twice": twice},
                   lambda: _print_tables(title, statuses, counts, every_pair, cached, results, shown_note),
                   errors=errors),
           as_json, memo)


def _print_tables(title: str, statuses: list, counts: dict[str, int], every_pair: bool, cached: int | None,
                  results: Path, note: str | None = None) -> None:
    """Print the run table and the pairs not complete (or, with --pairs, every pair), then the counts and
    how many verdicts came from kit's cache."""
    from rich.console import Console

    console = Console(width=160)
    console.on_broken_pipe = _reader_gone   # (rich's own exits 1, the code of a finding)
    if every_pair and statuses:   # (no pair, no table: the count line says it)
        console.print(_pair_table(title, statuses, results))
    elif statuses:
        console.print(_run_table(title, statuses))
        problems = [s for s in statuses if s.state != "complete"]
        # the ones that need a look first; a sweep just planned has thousands pending, which --pairs lists
        problems.sort(key=lambda s: ATTENTION.get(s.state, len(ATTENTION)))
        if problems:
            console.print(_pair_table("pairs not complete (every pair: --pairs)", problems[:LISTED], results))
        if len(problems) > LISTED:
            click.echo(f"... and {len(problems) - LISTED} more pairs not complete, not listed here "
                       "(every pair: --pairs; all of them with their reasons: --json)")
    states = ", ".join(f"{n} {state}" for state, n in counts.items())
    click.echo(f"{len(statuses)} pairs" + (f": {states}" if states else ""))
    if note:
        click.echo(note)
    if cached:
        click.echo(f"{cached} verdicts from kit's cache of files unchanged since they were validated "
                   "(`kit verify` reads every file again)")


# the pairs not complete that the table lists without --pairs, the states that need a look first
LISTED = 50
ATTENTION = {state: rank for rank, state in enumerate(
    ("invalid", "failed", "timeout", "cancelled", "unknown", "stale", "unclaimed", "running", "queued", "pending"))}

# states in the order a sweep moves through them, and how the table shows each
STATE_STYLE = {"complete": "green", "stale": "magenta", "pending": "yellow", "invalid": "red", "running": "cyan",
               "queued": "blue", "failed": "red", "timeout": "magenta", "cancelled": "red", "unclaimed": "yellow",
               "unknown": "white"}


def shown(text: str) -> str:
    """A name or reason as a table cell: kit.errors.visible, and no rich markup read in it."""
    from rich.markup import escape

    return escape(visible(text))


def _pair_table(title: str, statuses: list, results: Path):
    """One row per pair: run, language, state, job, detail; and the file, when two rows would
    otherwise read alike (lrb's top-level copy of a run and its copy in a batch folder), relative to
    the results folder."""
    import os
    from collections import Counter

    from rich.table import Table

    twice = any(n > 1 for n in Counter((s.pair.run, s.pair.language) for s in statuses).values())
    table = Table(title=title, show_lines=False)
    for col in ("run", "language", *(("file",) if twice else ()), "state", "job", "detail"):
        table.add_column(col, overflow="fold" if col == "file" else "ellipsis")
    for s in statuses:
        file = (shown(os.path.relpath(s.path, results)),) if twice else ()
        table.add_row(shown(s.pair.run), shown(s.pair.language), *file,
                      f"[{STATE_STYLE.get(s.state, '')}]{s.state}[/]", shown(s.job or ""),
                      shown("; ".join(s.reasons or s.notices)))
    return table


def _run_table(title: str, statuses: list):
    """One row per run: how many of its languages are in each state (the states that occur)."""
    from rich.table import Table

    found = {s.state for s in statuses}
    present = [state for state in STATE_STYLE if state in found]
    present += sorted(found - set(present))
    table = Table(title=title, show_lines=False)
    table.add_column("run")
    for state in present:
        table.add_column(f"[{STATE_STYLE.get(state, '')}]{state}[/]", justify="right")
    by_run: dict[str, dict[str, int]] = {}
    for s in statuses:
        counts = by_run.setdefault(s.pair.run, {})
        counts[s.state] = counts.get(s.state, 0) + 1
    for run, counts in by_run.items():
        table.add_row(shown(run), *[str(counts.get(state, "")) for state in present])
    return table


def _reader_gone() -> None:
    """The table's reader went away (`kit status | head`): kit exits as a program killed by SIGPIPE does."""
    import errno

    raise BrokenPipeError(errno.EPIPE, "the reader of kit's output went away")
