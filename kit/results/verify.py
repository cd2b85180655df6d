"""`kit verify` as a library call: every checkpoint file under the paths given, each validated on
its own through the cache of the results tree it lies in, and held to a benchmark's languages when
one is given."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from kit.config.dataset import Dataset
from kit.errors import ConfigError
from kit.results.benchmark_rule import validate_held
from kit.results.checkpoint import CheckpointState, without_predictions
from kit.results.identity import PlanExpectations
from kit.results.store import ARCHIVE_DIR, NON_LANGUAGE_DIRS, json_files, reserved_files, unread_among
from kit.results.tree import ResultsTree

# the notice of a file verified under a tree's archive/ folder
ARCHIVED_NOTICE = "archived: lrb's discovery, and kit's status, report and export of this tree, leave archive/ out"
# the notice of a file verified where no checkpoint lies (deeper than a batch's language folders)
RESERVED_NOTICE = ("in a folder kit keeps for its own files (systems, report, logs): kit's status, report, export "
                   "and sign of this tree do not read it, and collect and release refuse the tree")
DEEPER_NOTICE = ("deeper than a checkpoint lies: kit's status, report, export and sign of this tree do not read it, "
                 "and collect and release refuse the tree")


def verify_paths(paths: list[Path], dataset: Dataset | None = None) -> list[tuple[Path, CheckpointState]]:
    """(file, state) for every checkpoint file given or under a folder given, in order: a folder is a
    results tree (its files share its cache), a file belongs to the tree two levels up. With `dataset`,
    each file is held to it (kit.results.benchmark_rule: the rule every command follows). Files under a
    tree's archive/ are verified and say so. A ConfigError when no file is found."""
    files: list[Path] = []
    roots: dict[Path, Path] = {}     # file -> the results tree its cache is kept for
    deeper: set[Path] = set()   # files no other command reads (kit.results.store.unread_files)
    kept_for_kit: set[Path] = set()   # the same, in a folder kit keeps for its own (kit.results.store.reserved_files)
    for p in paths:
        if p.is_dir():
            found = json_files(p, NON_LANGUAGE_DIRS)
            reserved = reserved_files(p)   # verified too, and said
            files.extend(sorted(found + reserved))
            roots.update((q, p) for q in found + reserved)
            deeper.update(unread_among(p, found))
            kept_for_kit.update(reserved)
        else:
            files.append(p)
            roots[p] = p.parent.parent
    if not files:
        raise ConfigError(f"no checkpoint files under {', '.join(map(str, paths))}",
                          fix="pass *.json files or folders holding them")
    trees = {root: ResultsTree(root) for root in dict.fromkeys(roots.values())}

    def validate_all(jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
        # each results tree's files through its own cache, back in the order given
        if len(trees) == 1:
            return next(iter(trees.values())).validate_all(jobs)
        out: list = [None] * len(jobs)
        mine: dict[Path, list[int]] = {root: [] for root in trees}
        for i, (path, _) in enumerate(jobs):
            mine[roots[path]].append(i)
        for root, tree in trees.items():
            for i, state in zip(mine[root], tree.validate_all([jobs[i] for i in mine[root]])):
                out[i] = state
        return out

    try:
        states = validate_held([(path, roots[path]) for path in files], validate_all,
                               PlanExpectations(dataset) if dataset else None)
    finally:
        for tree in trees.values():
            tree.save()
    # by tree and folder (the folder part of the file's text): a tree has thousands of files in a few folders
    archived: dict[tuple[int, str], bool] = {}
    out = []
    for path, st in zip(files, states):
        root = roots[path]
        folder, _, name = os.fspath(path).rpartition(os.sep)
        inside = archived.get((id(root), folder))
        if inside is None:
            inside = _under_archive(root, path)
            if name != ARCHIVE_DIR:   # (else its own name decides, at the top of the tree)
                archived[(id(root), folder)] = inside
        st = without_predictions(st)
        notices = [*st.notices, *([ARCHIVED_NOTICE] if inside else []), *([DEEPER_NOTICE] if path in deeper else []),
                   *([RESERVED_NOTICE] if path in kept_for_kit else [])]
        out.append((path, replace(st, notices=notices) if notices != st.notices else st))
    return out


def _under_archive(root: Path, path: Path) -> bool:
    """Whether the file lies under the tree's archive/ folder, which lrb's discovery (and kit's status,
    report and export of the tree) leave out."""
    try:
        return path.relative_to(root).parts[0] == ARCHIVE_DIR
    except (ValueError, IndexError):
        return False


