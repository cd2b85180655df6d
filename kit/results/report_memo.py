"""Whether a results tree still holds what the report in OUT was made from: the digest `kit report` keeps
in its output's inventory (kit.outputs), so that a report asked for again with nothing changed leaves
the earlier one as it is instead of rewriting thousands of pages.

The digest covers everything a report reads:
- each checkpoint's record as validation gave it (state, reasons, notices, language, batch, truncated
  count, item outcomes) and the identity (size, mtime and ctime in ns, inode, device) of the files its
  page reads: the checkpoint, its :::MLLOG log (the compliance verdict) and its signed envelope;
- every `kit reproduce` verdict file the report reads (the reruns and drift sections);
- the options (runs, --include-stale), where the results and the report are;
- kit itself (its version and the size and mtime of every source and default file) and the versions of
  the libraries that draw plots and check logs.
A file changed less than RACY_SECONDS before the report looked cannot be told apart from a second write
in the same clock tick: then there is no digest, and the report is written anew."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import kit
from kit.results.cache import RACY_SECONDS, file_identity, package_file_stats
from kit.results.records import CheckpointRecord
from kit.results.store import pair_files
from kit.results.verdicts import VERDICT_GLOB

MEMO_FORMAT = 1
# the libraries whose version changes a report's bytes: plots, intervals, the MLLOG compliance checker
_LIBRARIES = ("matplotlib", "numpy", "mlperf-logging")


class _Racy(Exception):
    """A file the report reads changed too recently to be identified by its stat."""


def report_inputs(records: Sequence[CheckpointRecord], *, results_dir: Path, out_dir: Path,
                  verdict_dirs: Iterable[Path], options: dict[str, Any]) -> str | None:
    """The sha256 of everything a report of `records` reads (see the module), or None when a file it reads
    changed less than RACY_SECONDS ago."""
    digest = hashlib.sha256()
    now = time.time()

    def add(value: Any) -> None:
        # surrogatepass: a path need not be UTF-8, and a digest only needs the same bytes for the same text
        digest.update(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")

    try:
        add([MEMO_FORMAT, _code_identity(), _library_versions(), os.path.realpath(results_dir),
             os.path.realpath(out_dir), options])
        for r in records:
            add([os.fspath(r.path), r.language, r.state, list(r.reasons), list(r.notices), r.truncated_count,
                 list(r.outcomes) if r.outcomes is not None else None, r.collection,
                 [list(f) for f in r.compliance] if r.compliance is not None else None,
                 [_identity(p, now) for p in pair_files(r.path)]])
        for folder in verdict_dirs:
            add(["verdicts", os.path.realpath(folder)])
            for path in sorted(Path(folder).glob(VERDICT_GLOB)):
                add([path.name, _identity(path, now)])
    except _Racy:
        return None
    return digest.hexdigest()


def _identity(path: Path, now: float) -> list[int]:
    """file_identity of `path` ([-1] when absent); _Racy when it changed within RACY_SECONDS of `now`."""
    try:
        st = os.lstat(path)
    except OSError:
        return [-1]
    if now - max(st.st_mtime, st.st_ctime) <= RACY_SECONDS:
        raise _Racy(path)
    return file_identity(st)


def _code_identity() -> list[str]:
    """kit's version and the size and mtime of each of its files (sources, rulesets, prompts)."""
    package = Path(kit.__file__).resolve().parent
    files = [path for path in package.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")]
    return [kit.__version__, sys.version, *package_file_stats(files)]


def _library_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found
