"""Where checkpoints live and how they are written: atomically, so a kill at any
instant leaves the old complete file or none, never a half-written one."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kit.config.names import run_file_stem
from kit.errors import ConfigError
from kit.files import name_part, write_text_atomic
from kit.results import keys


def checkpoint_path(results: Path, run: str, language: str) -> Path:
    """RESULTS/<language>/<run with '/' -> '__'>.json; refuses names that would leave RESULTS."""
    folder, stem = name_part(language, "language"), name_part(run_file_stem(run), "run name")
    return (results if isinstance(results, Path) else Path(results)).joinpath(folder, f"{stem}.json")


def dumps_checkpoint(data: dict[str, Any]) -> str:
    """The canonical text of a checkpoint: sorted keys, UTF-8 kept, indent 2, final newline."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_checkpoint(path: Path, data: dict[str, Any]) -> None:
    """Atomically write one checkpoint in the canonical format."""
    write_text_atomic(path, dumps_checkpoint(data))


def mllog_path(checkpoint: Path) -> Path:
    """The :::MLLOG file that sits beside a checkpoint."""
    return Path(checkpoint).with_suffix(".mllog")


# The hidden folder of a language folder that keeps checkpoints replaced by a rerun (stale, or invalid
# with --force) with their logs: RESULTS/<language>/.superseded/<stem>.<UTC time>.json
SUPERSEDED_DIR = ".superseded"


def set_aside(checkpoint: Path) -> Path | None:
    """Move a checkpoint and its log into the language folder's .superseded/ (time-stamped), so
    that a rerun never destroys a result; the new place, or None when there is no checkpoint."""
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file() or checkpoint.is_symlink():
        return None
    keep = checkpoint.parent / SUPERSEDED_DIR
    keep.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = keep / f"{checkpoint.stem}.{stamp}.json"
    log = mllog_path(checkpoint)
    if log.is_file() and not log.is_symlink():
        os.replace(log, target.with_suffix(".mllog"))
    os.replace(checkpoint, target)
    return target


# The folder of a results tree that holds the system descriptions jobs write (RESULTS/systems/).
SYSTEMS_DIR = "systems"
# Folders of a results tree that hold no checkpoints (system descriptions, reports, engines' own logs).
NON_LANGUAGE_DIRS = frozenset({SYSTEMS_DIR, "report", "logs"})


def iter_checkpoint_files(results: Path) -> list[Path]:
    """Every RESULTS/<language>/<run>.json, and every RESULTS/<run>.json (lrb's single-language layout,
    still that of its archive), sorted; temporary files and non-language folders are skipped."""
    results = Path(results)
    if not results.is_dir():
        return []
    return sorted(p for pattern in ("*.json", "*/*.json") for p in results.glob(pattern)
                  if not p.name.startswith(".") and p.parent.name not in NON_LANGUAGE_DIRS and p.is_file())


# BCP 47's code for an undetermined language: that of an lrb file recording none (lrb's single-language
# archive) that sits at the top of RESULTS or in a folder not named like a language (a dated batch).
UNDETERMINED_LANGUAGE = "und"
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


def file_language(results: Path, path: Path, metadata: Any) -> str:
    """The language a checkpoint counts for: its metadata.language; for an lrb file that records none,
    its folder's name when that is a language code (RESULTS/fr/...), else UNDETERMINED_LANGUAGE (a
    file at the top of RESULTS or in a batch folder such as lrb's qwen3-20260913/)."""
    recorded = metadata.get(keys.LANGUAGE) if isinstance(metadata, dict) else None
    if isinstance(recorded, str) and recorded:
        return recorded
    folder = Path(path).parent
    if folder != Path(results) and _LANGUAGE_CODE.fullmatch(folder.name):
        return folder.name
    return UNDETERMINED_LANGUAGE
