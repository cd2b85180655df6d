"""`kit verify`."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kit.cli import common
from kit.errors import ConfigError

if TYPE_CHECKING:
    from kit.config.dataset import Dataset
    from kit.results.checkpoint import CheckpointState


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--benchmark", type=click.Path(path_type=Path, exists=True), default=None,
              help="Also hold each file to this benchmark's language file: its digest, item ids and labels. "
                   "Default: the benchmark of roster.toml here, when there is one.")
@common.json_option
def verify(paths: tuple[Path, ...], benchmark: Path | None, as_json: bool) -> None:
    """Check each checkpoint on its own: it parses, matches its path, agrees with its own
    provenance record, and its metrics recompute exactly from its predictions; exit 1
    unless all pass.

    PATHS are checkpoint files or folders (searched recursively for *.json). Legacy lrb
    files without metadata.language are accepted with a notice. With a benchmark (--benchmark,
    or the one roster.toml here names), each file must also be a result on it: the
    language file's digest, the item ids in order and every expected label.
    Verdicts are remembered in the user cache folder (KIT_NO_CACHE=1: off); a changed file is
    always checked again.

    \b
    Examples:
      kit verify results/fr/LiquidAI__LFM2.5-350M.json
      kit verify results/ --benchmark data/translations --json
    """
    from kit.results.cache import CheckpointCache
    from kit.results.checkpoint import verify_files
    from kit.results.identity import PlanExpectations
    from kit.results.store import NON_LANGUAGE_DIRS

    files: list[Path] = []
    roots: dict[Path, Path] = {}     # file -> the results tree its cache is kept for
    for p in paths:
        if p.is_dir():
            found = _json_files(p, NON_LANGUAGE_DIRS)
            files.extend(found)
            roots.update((q, p) for q in found)
        else:
            files.append(p)
            roots[p] = p.parent.parent
    if not files:
        raise ConfigError(f"no checkpoint files under {', '.join(map(str, paths))}",
                          fix="pass *.json files or folders holding them")
    dataset = _benchmark(benchmark)
    # what each language's files are held to, read only when a file is validated (not on a cached verdict)
    expect_of = lru_cache(maxsize=None)(PlanExpectations(dataset).of_language) if dataset else None
    caches = {root: CheckpointCache.open(root, sections=False) for root in dict.fromkeys(roots.values())}
    def validate_all(jobs: list) -> list:
        # each results tree's files through its own cache, back in the order given
        out: list = [None] * len(jobs)
        for root, cache in caches.items():
            mine = [i for i, (path, _) in enumerate(jobs) if roots[path] == root]
            for i, state in zip(mine, cache.validate_all([jobs[i] for i in mine])):
                out[i] = state
        return out

    outcomes = verify_files(files, (lambda path: expect_of(path.parent.name)) if dataset else (lambda path: None),
                            validate_all)
    for cache in caches.values():
        cache.save()
    if dataset:
        outcomes = [(p, _outside_benchmark(dataset, p, st)) for p, st in outcomes]
    bad = [(p, st) for p, st in outcomes if st.state != "complete"]
    if as_json:
        common.print_json("verify", common.OK if not bad else common.FAILED,
                     [{"path": str(p), "state": st.state, "reasons": st.reasons, "notices": st.notices}
                      for p, st in outcomes])
    else:
        lines = [f"OK    {_shown(p)}" + (f"  ({'; '.join(st.notices)})" if st.notices else "")
                 if st.state == "complete" else f"FAIL  {_shown(p)}: {'; '.join(st.reasons)}" for p, st in outcomes]
        lines.append(f"{len(outcomes) - len(bad)} verified, {len(bad)} failed")
        click.echo("\n".join(lines))   # one write: a release tree is thousands of lines
    if bad:
        sys.exit(1)


def _shown(path: Path) -> str:
    """A path as one line of output: quoted when it holds a control character (a name with a
    newline must not make a line of its own, such as a false OK)."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _outside_benchmark(dataset: "Dataset", path: Path, state: "CheckpointState") -> "CheckpointState":
    """The state, made invalid when a sound file is of a language the benchmark does not define, by its
    folder's name (a sound file's metadata.language is its folder's); an lrb file of undetermined
    language (kit.results.store.file_language) is left as it is: nothing names its language."""
    from dataclasses import replace

    from kit.results import keys
    from kit.results.store import UNDETERMINED_LANGUAGE, file_language

    if state.state != keys.COMPLETE:
        return state
    language = file_language(path.parent.parent, path, (state.data or {}).get(keys.METADATA))
    if language == UNDETERMINED_LANGUAGE or language in dataset.languages:
        return state
    known = ", ".join(dataset.languages[:5]) + (", ..." if len(dataset.languages) > 5 else "")
    return replace(state, state=keys.INVALID, reasons=[
        f"language {language!r} is not one of the benchmark's {len(dataset.languages)} ({known})"])


def _benchmark(path: Path | None) -> "Dataset | None":
    """The benchmark given, or the one roster.toml here names; None without either."""
    if path is not None:
        from kit.config.kinds import load_benchmark

        return load_benchmark(path)
    if Path("roster.toml").is_file():
        from kit.config.project import roster_benchmark

        return roster_benchmark(Path("roster.toml"))
    return None


def _json_files(root: Path, skip_dirs: frozenset[str] | set[str]) -> list[Path]:
    """Every *.json file under root (at any depth, in path order), except hidden files and what lies
    under a folder named in skip_dirs. os.walk on strings: a release tree holds thousands of files."""
    found: list[tuple[tuple[str, ...], str]] = []
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip_dirs]
        parts = tuple(Path(top).relative_to(root).parts)
        # a folder named *.json is listed too (validated as "not a regular file"), as a glob would
        found += [(parts + (name,), os.path.join(top, name)) for name in (*names, *dirs)
                  if name.endswith(".json") and not name.startswith(".")]
    found.sort()
    return [Path(path) for _, path in found]
