"""Offline builds: a host-side wheelhouse filled with `pip download --require-hashes` from an
image's locks, and the subset of its files the build context needs (chosen by hash).

The same folder serves every image and every run (e.g. ~/.cache/kit/wheelhouse): pip keeps
files it already has, and a file enters a context only if its sha256 is in one of the locks."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from kit.errors import ConfigError, ImageError
from kit.images.built import host_lock
from kit.images.spec import Target

_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)==(\S+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
_INDEX = ".kit-sha256.json"
# pip does not widen --platform to older manylinux tags by itself: name every tag glibc 2.28 runs
PLATFORMS = [a for x in range(28, 4, -1) for a in ("--platform", f"manylinux_2_{x}_x86_64")] + [
    a for p in ("manylinux2014", "manylinux2010", "manylinux1") for a in ("--platform", f"{p}_x86_64")]


def platforms(glibc: str) -> list[str]:
    """pip download's --platform options for an image whose base has this glibc (e.g. "2.36")."""
    newest = int(glibc.split(".")[1])
    return [a for x in range(newest, 28, -1) for a in ("--platform", f"manylinux_2_{x}_x86_64")] + PLATFORMS


def lock_hashes(path: Path) -> dict[str, set[str]]:
    """name==version -> its allowed sha256 hashes, from a hash-pinned requirements lock."""
    out: dict[str, set[str]] = {}
    current = None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a requirements lock (not UTF-8 text at byte {exc.start})",
                          fix="regenerate it (make locks) or restore it from git") from None
    for line in text.splitlines():
        m = _REQ.match(line)
        if m:
            current = f"{m.group(1)}=={m.group(2)}"
            out[current] = set()
        elif not line.startswith((" ", "\t")):
            current = None
        if current:
            out[current].update(_HASH.findall(line))
    return out


def file_hashes(folder: Path) -> dict[str, str]:
    """file name -> sha256 for every distribution in the folder, cached by size and mtime."""
    folder = Path(folder)
    index_path = folder / _INDEX
    try:
        cache = json.loads(index_path.read_text())
    except (OSError, ValueError):
        cache = {}
    if not isinstance(cache, dict):   # kit's own memo, damaged: every file is hashed again
        cache = {}
    out, fresh = {}, {}
    for f in sorted(folder.iterdir()):
        if not f.is_file() or f.name == _INDEX or f.name.startswith("."):
            continue
        st = f.stat()
        key = f"{st.st_size}:{st.st_mtime_ns}"
        entry = cache.get(f.name)
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == key and isinstance(entry[1], str)):
            h = hashlib.sha256()
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            entry = [key, h.hexdigest()]
        fresh[f.name] = entry
        out[f.name] = entry[1]
    if fresh != cache:
        index_path.write_text(json.dumps(fresh, indent=0, sort_keys=True))
    return out


def missing(locks: list[Path], folder: Path) -> list[str]:
    """Requirements of the locks with no file of an allowed hash in the folder."""
    have = set(file_hashes(folder).values()) if Path(folder).is_dir() else set()
    return [req for lock in locks for req, hashes in lock_hashes(lock).items() if not hashes & have]


def download(t: Target, folder: Path, progress=lambda msg: None) -> None:
    """Fill the folder with every file the image's locks need (pip download, hashes checked)."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with host_lock(f"wheelhouse-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}", f"download into {folder}",
                   progress):
        _download(t, folder, progress)


def _download(t: Target, folder: Path, progress) -> None:
    for lock in t.spec.locks():
        path = t.path(lock)
        if not missing([path], folder):
            continue
        progress(f"wheelhouse: pip download -r {lock}")
        argv = [sys.executable, "-m", "pip", "download", "--require-hashes", "--no-deps", "--dest", str(folder),
                "--python-version", t.spec.python, "--implementation", "cp", *platforms(t.spec.glibc), "-r", str(path), "--progress-bar", "off", "--disable-pip-version-check"]
        # build locks may hold an sdist (gguf's llama-cpp-python); its hash is still checked
        argv += [] if lock in t.spec.build_locks else ["--only-binary", ":all:"]
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            tail = " | ".join(r.stderr.strip().splitlines()[-3:])
            raise ImageError(f"pip download for {lock} failed: {tail}",
                             fix="check the network or pip's index settings (pip config list), then retry")
    left = missing([t.path(lock) for lock in t.spec.locks()], folder)
    if left:
        raise ImageError(f"wheelhouse {folder} lacks {', '.join(left[:5])}",
                         fix="run the build with network once, or copy those files into the folder")


def select(t: Target, folder: Path) -> list[Path]:
    """The wheelhouse files whose sha256 one of the image's locks allows."""
    wanted: set[str] = set()
    for lock in t.spec.locks():
        for hashes in lock_hashes(t.path(lock)).values():
            wanted |= hashes
    return [Path(folder) / name for name, digest in file_hashes(folder).items() if digest in wanted]
