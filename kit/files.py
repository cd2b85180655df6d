"""File helpers with the standard library alone: a file's sha256, bounded reads of files users pass,
and atomic writes (temporary file in the same folder, fsync, rename, fsync of the folder). Kept free
of kit's config libraries so that the weights manifest code works where pydantic is absent (the GPU
benchmark's environment)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from kit.errors import ConfigError   # bottom of the import graph, standard library only


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (OSError when it cannot be read)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@contextmanager
def atomic_writer(path: Path, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: a temporary file in the same folder, renamed over `path`
    when the block ends without an error (fsync before and of the folder after, unless not
    `durable`), removed when it raises. A kill at any instant leaves the old file or the new one,
    never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent not in _SWEPT:   # once per folder and process: a signing of thousands lists each once
        _SWEPT.add(path.parent)
        sweep_temporary_files(path.parent)
    # named for this host and process (leftover_prefix), so that a later write can tell a dead one's
    fd, tmp = tempfile.mkstemp(prefix=leftover_prefix(path), suffix=TEMPORARY_SUFFIX, dir=path.parent)
    try:
        # mkstemp makes the file 0600; a results tree is shared with a team and copied by others, so
        # the file gets the mode a plain open() would give it (or keeps the one it had)
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            try:
                yield fh
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            except OSError as exc:   # a write's error names no file: this one, so its line says which disk
                if exc.filename is None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
                    raise OSError(exc.errno, exc.strerror, str(path)) from exc
                raise
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        _fsync_path(path.parent)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write bytes through atomic_writer: the old file or the new one, never a part. `durable` False
    leaves out both fsyncs, for many files made durable together afterwards (make_durable)."""
    with atomic_writer(path, durable=durable) as fh:
        fh.write(data)


def write_bytes_new(path: Path, data: bytes | Iterable[bytes], *, same_as: Path | None = None) -> None:
    """Write a file that should not exist yet (a page of an output being built in its staging folder,
    which is swapped in whole): created in one step, without the temporary file and rename of
    write_bytes_atomic, which a file already there (an earlier one, maybe a hard link) still takes.
    `data`: the bytes, or their pieces in order (a large page is never joined in memory). `same_as`: the
    file this one replaces (the same page of the output being replaced): when it holds exactly these
    bytes, it is hard-linked in instead (kit replaces files by renaming, so a link is never written
    through): no new file, and none freed when the old output goes (on ext4 without a journal, files
    created just after thousands were deleted cost ten times as much)."""
    path = Path(path)
    if same_as is not None and isinstance(data, (bytes, bytearray)) and _holds(same_as, data) \
            and _linked(same_as, path):
        return
    pieces = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:   # its folder, first
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o666)
    except FileExistsError:
        write_bytes_atomic(path, b"".join(pieces), durable=False)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def copy_new(source: Path, path: Path, *, same_as: Path | None = None) -> None:
    """Copy `source` with its times (shutil.copy2) into an output being built, its folder made; hard-linked
    from `same_as` instead (the same file of the output being replaced) when that holds exactly the
    source's bytes, as write_bytes_new."""
    path = Path(path)
    if same_as is not None:
        try:
            same_size = os.lstat(same_as).st_size == os.stat(source).st_size
        except OSError:
            same_size = False
        if same_size and _holds(same_as, Path(source).read_bytes()) and _linked(same_as, path):
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, path)


def _linked(source: Path, path: Path) -> bool:
    """Whether `path` could be made a hard link to `source` (its folder made first when missing); False
    across filesystems, where links are not allowed, with a file already at `path` or `source` gone."""
    for attempt in (1, 2):
        try:
            os.link(source, path, follow_symlinks=False)
            return True
        except FileNotFoundError:   # its folder, first (or the earlier file went meanwhile)
            if attempt == 2:
                return False
            path.parent.mkdir(parents=True, exist_ok=True)
        except (OSError, NotImplementedError):   # NotImplementedError: no linkat on this platform
            return False
    return False


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file (not a link) of exactly these bytes."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        with open(path, "rb") as fh:
            return fh.read(len(data) + 1) == data
    except OSError:
        return False


def not_a_folder(path: str | os.PathLike[str]) -> Path | None:
    """What stands where a folder should be: `path` itself or the nearest of its parents that exists and is
    not a folder (a file, a device such as /dev/null), following links as opening it would; None when
    there is none (the folder exists or can be made)."""
    for place in (Path(path), *Path(path).parents):
        if os.path.lexists(place):
            return None if place.is_dir() else place
    return None


def what_stands(path: str | os.PathLike[str]) -> str:
    """What stands at `path`, in words, for an error line: a file, a folder, a device or pipe, a link that
    leads nowhere (naming its target), a link loop, or nothing."""
    try:
        st = os.lstat(path)
    except OSError:
        return "nothing"
    if stat.S_ISLNK(st.st_mode):
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a link in a loop"
            return f"a broken link (to {os.readlink(path)}, which does not exist)"
        return f"a link to {os.readlink(path)}"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    return "a file" if stat.S_ISREG(st.st_mode) else "a device or pipe"


def regular_files(root: str | os.PathLike[str]) -> list[str]:
    """Every regular file under `root`, at any depth, as sorted POSIX paths relative to it; links are
    neither listed nor followed. Plain strings: an output folder (a release's report) holds tens of
    thousands of files, and a Path object each would be held while they are listed."""
    return sorted(_walk(os.fspath(root))[0])


def folders_under(root: str | os.PathLike[str]) -> list[str]:
    """Every folder under `root` (not itself), at any depth, relative to it; links are not followed."""
    return sorted(_walk(os.fspath(root))[1])


def _walk(root: str) -> tuple[list[str], list[str]]:
    files: list[str] = []
    dirs: list[str] = []
    pending = [("", root)]
    while pending:
        prefix, folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(prefix + entry.name)
                    pending.append((prefix + entry.name + "/", entry.path))
                elif entry.is_file(follow_symlinks=False):
                    files.append(prefix + entry.name)
    return files, dirs


def make_durable(paths: Sequence[str | os.PathLike[str]]) -> None:
    """fsync these files and their folders, many at once: one fsync after another costs a journal
    commit each (seconds for thousands of report pages), while concurrent ones share commits."""
    from concurrent.futures import ThreadPoolExecutor

    names = list(dict.fromkeys(map(os.fspath, paths)))
    targets = [*names, *dict.fromkeys(os.path.dirname(name) or os.curdir for name in names)]
    # each thread a share of the files: Executor.map over the files would hold a future per file (a
    # release's report is 20,000 pages)
    threads = max(1, min(16, len(targets)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(_fsync_each, (targets[at::threads] for at in range(threads))))


def _fsync_each(paths: list[str]) -> None:
    for path in paths:
        _fsync_path(path)


def _fsync_path(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mode_for(path: Path) -> int:
    """The replaced file's permission bits, or those of a new file under the process's umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~umask()


def umask() -> int:
    """The process's umask (read from /proc where it can be, so the umask is never changed)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def read_regular_file(path: str | os.PathLike[str], what: str, limit_bytes: int | None, *,
                      fix: str = "pass the file itself, not a device, pipe or folder") -> bytes:
    """The bytes of a regular file of at most `limit_bytes` (None: any size); a device, FIFO or folder, or
    a larger file, is a ConfigError naming the file (OSError when it cannot be opened)."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: {what} is not a regular file (a device, pipe or folder)", fix=fix)
        if limit_bytes is None:   # to the end, in reads of its size and one byte (it may grow meanwhile)
            pieces = []
            while piece := os.read(fd, max(info.st_size + 1, 1 << 16)):
                pieces.append(piece)
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
        data = b""
        if info.st_size <= limit_bytes:   # read to the limit, not to st_size: the file may grow meanwhile
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(limit_bytes + 1)
    finally:
        os.close(fd)
    if info.st_size > limit_bytes or len(data) > limit_bytes:
        raise ConfigError(f"{path}: {what} is over {limit_bytes} bytes, too large to be one", fix=fix)
    return data


# a path separator (either), NUL or another control character
_NOT_IN_A_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")
# longest name part kit makes a file name of (filesystems allow 255 bytes; kit adds prefixes and suffixes)
NAME_PART_MAX_BYTES = 200


def name_part(value: object, what: str) -> str:
    """`value` (a language, a run's file stem, a model id's part: data read from a file or an option)
    as one component of a path kit writes; a ConfigError naming `what` unless it is a non-empty
    string without a path separator, NUL or control character, not "." or ".." nor hidden, and at
    most NAME_PART_MAX_BYTES in UTF-8: a name never leaves the folder it is written in."""
    text = value if isinstance(value, str) else ""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > NAME_PART_MAX_BYTES and _NOT_IN_A_NAME.search(text) is None:
        raise ConfigError(f"{what} {text[:40]!r}... is {size} bytes long, more than the {NAME_PART_MAX_BYTES} kit "
                          "makes a file name of", fix=f"use a shorter {what}")
    bad = not text or text.startswith(".") or _NOT_IN_A_NAME.search(text) is not None or size > NAME_PART_MAX_BYTES
    if bad:
        raise ConfigError(f"unsafe {what} {value!r} for a file name: it would not be one plain name in its folder",
                          fix=f"use a plain {what} (letters, digits, '-', '_', '.', '@'), such as 'fr' or "
                              "'org/name' for a run")
    return text


def child_path(folder: Path, name: str) -> Path:
    """folder / name for a `name` already checked to be one plain name (name_part): the same Path, made
    without parsing `name` again (a results tree's twenty thousand checkpoint paths)."""
    make = getattr(folder, "_make_child_relpath", None)   # pathlib's own, for names from a listing
    return make(name) if make is not None else folder / name


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write text (UTF-8, '\n' line ends as given) atomically, as write_bytes_atomic; a character UTF-8
    cannot hold (a lone surrogate: a file name's bytes that are not UTF-8) is written as its escape."""
    write_bytes_atomic(path, text.encode("utf-8", "backslashreplace"), durable=durable)


def regular_file_here(path: Path) -> bool:
    """Whether a regular file (not a link to one) stands at `path`; False for a missing one, and for a name
    this file system cannot hold (a sibling name a checkpoint's long name gives, over NAME_MAX)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def folder_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what is at `path` (not followed), or None when nothing is: what replace_folder
    holds the folder it moves aside to."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def replace_folder(staged: Path, dest: Path, *, checked: tuple[int, int] | None | bool = False) -> None:
    """Put a finished folder in place of `dest`: where the system swaps two paths in one step (Linux's
    renameat2 RENAME_EXCHANGE), `dest` is at every instant the old folder or the new one, and the old one,
    then at the staged path, is removed; elsewhere the old folder is moved aside first (and put back if the
    new one cannot be renamed in). What the staged folder holds is made durable first, so that the renamed
    folder never holds a file a crash could leave empty. With `checked` (folder_identity of `dest` when the
    caller judged it replaceable; None: nothing was there), anything else found there at the swap (a
    folder made or swapped in meanwhile) is put back and refused (a ConfigError): no folder is deleted
    that was not the one judged."""
    staged, dest = Path(staged), Path(dest)
    make_durable([os.path.join(staged, rel) for rel in regular_files(staged)])
    if os.path.lexists(dest) and exchange_paths(staged, dest):
        if checked is not False and folder_identity(staged) != checked:   # the staged path holds what was there
            exchange_paths(staged, dest)
            raise _changed_meanwhile(dest)
        _fsync_path(dest.parent)
        shutil.rmtree(staged, ignore_errors=True)
        return
    old = None
    if os.path.lexists(dest):
        old = dest.parent / f"{leftover_prefix(dest)}{secrets.token_hex(4)}.kit-old"
        os.rename(dest, old)
        if checked is not False and folder_identity(old) != checked:
            os.rename(old, dest)
            raise _changed_meanwhile(dest)
    try:
        os.rename(staged, dest)
    except OSError:
        if old is not None:   # the old folder back in place: a failed write never leaves no output
            os.rename(old, dest)
        raise
    _fsync_path(dest.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _changed_meanwhile(dest: Path) -> ConfigError:
    return ConfigError(f"{dest}: changed while kit was writing it (made or replaced by something else); "
                       "nothing was replaced", fix="check what is in it now, then run the command again")


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap what stands at two paths in one step (Linux renameat2 with RENAME_EXCHANGE); False where the
    system or the file system cannot (then nothing was done). Another failure is an OSError."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):   # not glibc 2.28+ (or not Linux)
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(a), None, os.fspath(b))


def leftover_prefix(dest: Path) -> str:
    """The start of the name of every folder kit makes beside `dest` while it writes it (its staging folder, the
    old folder set aside): the destination's name, this host and this process, so that a later write of the
    same destination can tell the leftovers of a process that died (SIGKILL, a power cut) from a running one's."""
    return f".{dest.name}.{_host()}-{os.getpid()}."


def _host() -> str:
    """This host's name as a leftover's name holds it (letters, digits, _ and - only)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", os.uname().nodename)[:40] or "host"


TEMPORARY_SUFFIX = ".tmp"
_SWEPT: set[Path] = set()   # folders whose dead writers' temporary files this process has removed


def temporary_path(dest: Path, part: str = "") -> Path:
    """A temporary file beside `dest` that only this process writes (named by leftover_prefix, so that
    sweep_temporary_files can tell a dead writer's)."""
    return dest.parent / f"{leftover_prefix(dest)}{part}{TEMPORARY_SUFFIX}"


def sweep_temporary_files(folder: Path) -> None:
    """Remove the temporary files in `folder` of writers on this host that are no longer running (killed
    between creating one and renaming it into place): each is named by leftover_prefix."""
    pattern = re.compile(rf"\..+\.{re.escape(_host())}-(\d+)\..*{re.escape(TEMPORARY_SUFFIX)}\Z")
    try:
        with os.scandir(folder) as entries:
            dead = [entry.path for entry in entries if (found := pattern.match(entry.name)) is not None
                    and entry.is_file(follow_symlinks=False) and not _running(int(found.group(1)))]
    except OSError:
        return
    for path in dead:
        try:
            os.unlink(path)
        except OSError:
            pass


def sweep_leftovers(dest: Path) -> None:
    """Remove what a writer of `dest` on this host that is no longer running left beside it: its staging
    folder, or the old folder it had set aside once the new one is in place; an old folder set aside with
    no folder at `dest` is put back (it is the last output written)."""
    pattern = re.compile(rf"\.{re.escape(dest.name)}\.{re.escape(_host())}-(\d+)\..*\.kit-(staging|old)\Z")
    try:
        names = os.listdir(dest.parent)
    except OSError:
        return
    for name in sorted(names):
        found = pattern.match(name)
        if found is None or _running(int(found.group(1))):
            continue
        path = dest.parent / name
        if found.group(2) == "old" and not os.path.lexists(dest):
            try:
                os.rename(path, dest)
            except OSError:
                pass
            continue
        shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process
        return True
    return True


def owner_only_file(path: Path, what: str) -> None:
    """A ConfigError unless `path` is a regular file that only its owner can read or write (mode 600 or
    tighter): the one check for every secret kit reads from a file (a signing key, the HF token)."""
    import stat

    try:
        st = Path(path).stat()
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist", fix=f"put the {what} there, mode 600") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what} {path} is not a regular file", fix=f"pass the {what} itself, not a folder, device or pipe")
    if st.st_mode & 0o077:
        raise ConfigError(f"{what} {path} is open to group or others (mode {stat.S_IMODE(st.st_mode):o})",
                          fix=f"chmod 600 {path}")
