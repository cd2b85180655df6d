"""`kit verify` as a library call: every checkpoint file under the paths given, each validated on
its own through the cache of the results tree it lies in, and held to a benchmark's languages when
one is given."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from kit.config.dataset import Dataset
from kit.errors import ConfigError
from kit.results import keys
from kit.results.checkpoint import CheckpointState, verify_files
from kit.results.identity import PlanExpectations
from kit.results.keys import PairState
from kit.results.store import NON_LANGUAGE_DIRS, UNDETERMINED_LANGUAGE, file_language
from kit.results.tree import ResultsTree


def verify_paths(paths: list[Path], dataset: Dataset | None = None) -> list[tuple[Path, CheckpointState]]:
    """(file, state) for every checkpoint file given or under a folder given, in order: a folder is a
    results tree (its files share its cache), a file belongs to the tree two levels up. With `dataset`,
    each file is also held to its language's file (digest, ids, labels) and a sound file of a language
    the benchmark does not define is invalid. A ConfigError when no file is found."""
    files: list[Path] = []
    roots: dict[Path, Path] = {}     # file -> the results tree its cache is kept for
    for p in paths:
        if p.is_dir():
            found = json_files(p, NON_LANGUAGE_DIRS)
            files.extend(found)
            roots.update((q, p) for q in found)
        else:
            files.append(p)
            roots[p] = p.parent.parent
    if not files:
        raise ConfigError(f"no checkpoint files under {', '.join(map(str, paths))}",
                          fix="pass *.json files or folders holding them")
    # what each language's files are held to, read only when a file is validated (not on a cached verdict)
    expect_of = lru_cache(maxsize=None)(PlanExpectations(dataset).of_language) if dataset else None
    trees = {root: ResultsTree(root) for root in dict.fromkeys(roots.values())}

    def validate_all(jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
        # each results tree's files through its own cache, back in the order given
        out: list = [None] * len(jobs)
        for root, tree in trees.items():
            mine = [i for i, (path, _) in enumerate(jobs) if roots[path] == root]
            for i, state in zip(mine, tree.validate_all([jobs[i] for i in mine])):
                out[i] = state
        return out

    try:
        outcomes = verify_files(files, (lambda path: expect_of(path.parent.name)) if expect_of else (lambda path: None),
                                validate_all)
    finally:
        for tree in trees.values():
            tree.save()
    if dataset:
        outcomes = [(p, _outside_benchmark(dataset, p, st)) for p, st in outcomes]
    return outcomes


def _outside_benchmark(dataset: Dataset, path: Path, state: CheckpointState) -> CheckpointState:
    """The state, made invalid when a sound file is of a language the benchmark does not define, by its
    folder's name (a sound file's metadata.language is its folder's); an lrb file of undetermined
    language (kit.results.store.file_language) is left as it is: nothing names its language."""
    if state.state != PairState.COMPLETE:
        return state
    language = file_language(path.parent.parent, path, (state.data or {}).get(keys.METADATA))
    if language == UNDETERMINED_LANGUAGE or language in dataset.languages:
        return state
    known = ", ".join(dataset.languages[:5]) + (", ..." if len(dataset.languages) > 5 else "")
    return replace(state, state=PairState.INVALID, reasons=[
        f"language {language!r} is not one of the benchmark's {len(dataset.languages)} ({known})"])


def json_files(root: Path, skip_dirs: frozenset[str] | set[str]) -> list[Path]:
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
