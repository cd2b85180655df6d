"""Where kit's caches live and what marks a file as unchanged: the cache folder (KIT_CACHE_DIR, or the
user's cache folder; KIT_NO_CACHE turns every cache off), the user's sealing key in it, a file's
identity, and how recent a change must be to be called racy. Standard library only, so that a command
answering from a cache (kit.cli.replay) loads nothing else first."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kit.errors import ConfigError
from kit.files import read_regular_file

RACY_SECONDS = 2.0
KEY_FILE = ".key"


_OFF_WORDS, _ON_WORDS = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def cache_folder() -> Path | None:
    """Where cache files go; None when KIT_NO_CACHE says so (1, true, yes, on; 0, false, no, off or
    unset keep it); a ConfigError for any other value, rather than a guess."""
    flag = os.environ.get("KIT_NO_CACHE", "").strip().lower()
    if flag in _OFF_WORDS:
        return None
    if flag not in _ON_WORDS:
        raise ConfigError(f"KIT_NO_CACHE={os.environ['KIT_NO_CACHE']!r} is neither on nor off",
                          fix="set KIT_NO_CACHE=1 to turn kit's cache off, or unset it")
    base = os.environ.get("KIT_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("kit")
    return Path(base) / "checkpoints"


def cache_key(folder: Path) -> bytes | None:
    """This user's key for sealing cache files in `folder` (made once: 32 random bytes, mode 0600), or
    None when it cannot be made or read (then nothing is cached)."""
    path = folder / KEY_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        key = _read_key(path)
        if key is None:   # none yet, or one cut short (a full disk, a kill while it was written): made whole
            _make_key(path)
            key = _read_key(path)
    except (OSError, ValueError, ConfigError):
        return None
    return key


def _read_key(path: Path) -> bytes | None:
    """The key at `path` when it is whole and only this user's (a key another user could read or write is
    no key: such a cache is not trusted); None when there is none or it is cut short (a ConfigError or
    OSError for anything else there, then nothing is cached)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    key = read_regular_file(path, "kit's cache key", 64)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ConfigError(f"{path}: not this user's own key")
    return key if len(key) == 32 else None


def _make_key(path: Path) -> None:
    """Write a new key beside `path` and put it in place in one step: linked when there is none (the first of
    several commands starting at once wins, and the others read its key), replacing one cut short."""
    import tempfile   # (here: a command answered from the cache never makes a key)

    fd, temporary = tempfile.mkstemp(prefix=f".{KEY_FILE}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
        try:
            os.link(temporary, path)
        except FileExistsError:
            if _cut_short(path):   # no command can be writing it (one makes a key whole before linking it)
                os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _cut_short(path: Path) -> bool:
    """Whether the key at `path` is this user's and cut short; anything else there is left as it is (then
    cache_key reads no key, and nothing is cached)."""
    try:
        return _read_key(path) is None
    except (OSError, ConfigError):
        return False


def file_identity(st: os.stat_result) -> list[int]:
    """The facts of a file that any write changes: size, mtime_ns, ctime_ns, inode, device."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
