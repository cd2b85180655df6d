"""What `--benchmark` means, the same in every command that reads checkpoints (`kit verify`, `kit status`
without a roster, `kit report`, and a roster's own benchmark): each checkpoint is held to the benchmark's
file of its language (that file's digest, item ids and expected labels).

- A file in a language folder (RESULTS/fr/...) is held to that language's file; a file that records its
  language elsewhere (lrb's top-level or batch files of its multilingual layout) to the language it records.
- A file that names no language (lrb's single-language files) is held to the language file whose digest
  it records (metadata.benchmark_sha256), said in a notice; when none of the benchmark's files has that
  digest it was measured on other data (another benchmark, or an older version of this one): stale.
- A language the benchmark does not define makes the file invalid.

A file recorded for another version of its language's file is stale, as `kit status` says of a planned
pair: verify fails it, status shows it stale, report leaves it out unless --include-stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kit.results import keys
from kit.results.checkpoint import CheckpointState, ValidateAll, recorded_metadata
from kit.results.identity import Expectation, PlanExpectations
from kit.results.keys import PairState
from kit.results.store import UNDETERMINED_LANGUAGE, file_language, language_folder

if TYPE_CHECKING:
    from kit.config.dataset import Dataset

# the notice of a language-less file held to the language file whose digest it records
HELD_BY_DIGEST = "held to the benchmark's {language!r} file, whose digest it records (it names no language)"


def validate_held(files: Sequence[tuple[Path, Path]], validate_all: ValidateAll,
                  benchmark: PlanExpectations | None = None,
                  planned: Callable[[Path], Expectation | None] | None = None) -> list[CheckpointState]:
    """Each (checkpoint, its results tree) validated by `validate_all`, in order; with `benchmark`, held to
    it as the module doc says. `planned(path)`: a planned pair's own expectation (a roster's run as it
    is now), which takes the place of the benchmark rule for that file."""
    own = [planned(path) if planned is not None else None for path, _ in files]
    folders = _language_folders(files)
    expects = [o if o is not None or benchmark is None or not folder else benchmark.of_language(folder)
               for o, folder in zip(own, folders)]
    states = validate_all([(path, {"expect": e}) for (path, _), e in zip(files, expects)])
    if benchmark is None:
        return states
    dataset = benchmark.dataset
    again: dict[int, tuple[Expectation, str]] = {}
    for i, ((path, root), st) in enumerate(zip(files, states)):
        if own[i] is not None or st.state not in (PairState.COMPLETE, PairState.STALE):
            continue    # a planned pair is held to its run; a broken file has nothing to hold
        if folders[i]:   # a sound file in a language folder records that language or none: no need to read it
            language, metadata = folders[i], {}
        else:
            metadata = recorded_metadata(path, st)
            language = file_language(root, path, metadata)
        if language == UNDETERMINED_LANGUAGE and language not in dataset.languages:
            language = benchmark.language_of_digest(metadata.get(keys.BENCHMARK_SHA256))
            if language is None:
                states[i] = _not_of(dataset, st, metadata.get(keys.BENCHMARK_SHA256))
            else:
                again[i] = (benchmark.of_language(language), HELD_BY_DIGEST.format(language=language))
        elif language not in dataset.languages:
            states[i] = outside_benchmark(dataset, st, language)
        elif folders[i] != language:   # its language is recorded, not its folder's: hold it to that one
            again[i] = (benchmark.of_language(language), "")
    if again:
        order = sorted(again)
        redone = validate_all([(files[i][0], {"expect": again[i][0]}) for i in order])
        for i, st in zip(order, redone):
            note = again[i][1]
            states[i] = replace(st, notices=[*st.notices, note]) if note else st
    return states


def _language_folders(files: Sequence[tuple[Path, Path]]) -> list[str | None]:
    """language_folder of each (checkpoint, its results tree), found once per tree and folder (a sweep's
    thousands of files lie in a few dozen)."""
    known: dict[tuple[int, str], str | None] = {}   # by tree and the folder part of the file's text
    out = []
    for path, root in files:
        key = (id(root), os.fspath(path).rpartition(os.sep)[0])
        if key not in known:
            known[key] = language_folder(root, path)
        out.append(known[key])
    return out


def _not_of(dataset: "Dataset", state: CheckpointState, digest: object) -> CheckpointState:
    shown = f"{digest[:16]}..." if isinstance(digest, str) and len(digest) > 16 else repr(digest)
    return replace(state, state=PairState.STALE, reasons=[
        f"metadata.{keys.BENCHMARK_SHA256} {shown} is the digest of none of the benchmark's "
        f"{len(dataset.languages)} language files, and the file names no language: it was measured on other "
        "data (another benchmark, or an older version of this one)"])


def outside_benchmark(dataset: "Dataset", state: CheckpointState, language: str) -> CheckpointState:
    """The state made invalid: a sound file of a language the benchmark does not define."""
    known = ", ".join(dataset.languages[:5]) + (", ..." if len(dataset.languages) > 5 else "")
    return replace(state, state=PairState.INVALID, reasons=[
        f"language {language!r} is not one of the benchmark's {len(dataset.languages)} ({known})"])
