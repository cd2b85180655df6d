"""Where checkpoints live and how they are written: atomically, so a kill at any
instant leaves the old complete file or none, never a half-written one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kit.errors import ConfigError


def run_file_stem(run: str) -> str:
    """Run name -> checkpoint file stem ('org/name@v' -> 'org__name@v')."""
    return run.replace("/", "__")


def run_from_stem(stem: str) -> str:
    """Checkpoint file stem -> run name (inverse of run_file_stem)."""
    return stem.replace("__", "/")


def checkpoint_path(results: Path, run: str, language: str) -> Path:
    """RESULTS/<language>/<run with '/' -> '__'>.json; refuses names that would leave RESULTS."""
    stem = run_file_stem(run)
    for part in (language, stem):
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\0" in part or part.startswith("."):
            raise ConfigError(f"unsafe run or language name {part!r} for a checkpoint path", fix="use plain ids such as 'org/name' and 'fr'")
    return Path(results) / language / f"{stem}.json"


def dumps_checkpoint(data: dict[str, Any]) -> str:
    """The canonical text of a checkpoint: sorted keys, UTF-8 kept, indent 2, final newline."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write text via a temporary file in the same folder, fsync, rename, fsync the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dirfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def write_checkpoint(path: Path, data: dict[str, Any]) -> None:
    """Atomically write one checkpoint in the canonical format."""
    write_text_atomic(path, dumps_checkpoint(data))


# Folders of a results tree that hold no checkpoints (system descriptions, reports).
NON_LANGUAGE_DIRS = frozenset({"systems", "report", "logs"})


def iter_checkpoint_files(results: Path) -> list[Path]:
    """Every RESULTS/<language>/<run>.json, sorted; temporary files and non-language folders are skipped."""
    results = Path(results)
    if not results.is_dir():
        return []
    return sorted(p for p in results.glob("*/*.json")
                  if not p.name.startswith(".") and p.parent.name not in NON_LANGUAGE_DIRS)
