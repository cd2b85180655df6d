"""The output contract: how every kit command that writes a folder (collect, release, report, export,
reproduce) writes it.

- The folder is built beside its destination (a hidden staging folder in the same parent) and renamed
  into place whole: at every instant the destination is the earlier output or the new one.
- An existing destination is replaced only when kit wrote everything in it: each output holds an
  inventory (.kit-output.json: its kind and the sha256 of every file). A file the inventory does not
  name, a file changed since, a link, or no inventory at all: refused, naming the file.
- "update" outputs (export, reproduce) carry the earlier output's files over into the new one; the
  others are rebuilt from scratch, and link in each file of the earlier output that comes out byte for
  byte the same (OutputFolder.earlier, kit.files.write_bytes_new's same_as): no new file for it, and
  none freed when the earlier output goes.
- An output may keep a memo in its inventory (a digest of everything it was made from, and what the
  command needs to describe it): a command whose inputs have the same digest may leave an intact earlier
  output as it is (unchanged_output) instead of rebuilding it.
- Nothing is written through a link (the staging folder is new) nor outside the destination (names
  taken from data go through kit.files.name_part).
- A full, read-only or missing disk is one ConfigError naming the folder, with the earlier output
  intact and no staging folder left behind.

Standard library and kit.files only: this sits at the bottom of the import graph."""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import DISK_ERRNOS, ConfigError
from kit.files import (atomic_writer, file_sha256, folder_identity, folders_under, leftover_prefix, name_part,
                       read_regular_file, regular_files, replace_folder, sweep_leftovers, umask, what_stands)

INVENTORY = ".kit-output.json"
# an inventory file of an earlier kit version, and the kind of output it marks
LEGACY_INVENTORIES = {".kit-release.json": "release"}
_INVENTORY_LIMIT = 64 << 20
_SHOWN = 3   # files named in a refusal; the rest are counted


@dataclass(frozen=True)
class OutputFolder:
    """A folder being written under the contract: `stage` is where the command writes; `dest` is where
    it lands once the command's block ends without an error."""

    dest: Path
    kind: str
    stage: Path
    # what the inventory keeps besides the files (see unchanged_output): the block fills it before it ends
    memo: dict[str, Any] = field(default_factory=dict)
    # the output being replaced, checked as kit's own and unchanged: a file that comes out byte for byte
    # the same may be linked from it (kit.files.write_bytes_new's same_as); None when there is none, or
    # when its files were carried over into the stage (update)
    earlier: Path | None = None

    def same_as(self, path: Path) -> Path | None:
        """The earlier output's file at the place of `path` (a path under `stage`), or None."""
        if self.earlier is None:
            return None
        return self.earlier / Path(path).relative_to(self.stage)

    def file(self, *parts: str, what: str = "file name") -> Path:
        """The staging path of OUT/<parts...>, each part checked as one plain name (kit.files.name_part),
        its folder made."""
        path = self.stage.joinpath(*(name_part(p, what) for p in parts))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


def check_output(dest: Path, kind: str, *, force: bool = False, force_needed: bool = True,
                 inputs: Sequence[Path] = (), legacy: Callable[[set[str]], bool] | None = None) -> None:
    """A ConfigError unless `dest` can take a `kind` output: absent or empty, or (with `force`, or
    without it where `force_needed` is False) an earlier `kind` output whose every file kit wrote and
    nobody changed since. `inputs` are folders the command reads: the output may not overlap one.
    `legacy` says whether a set of files (relative paths) is what an earlier kit wrote there before
    outputs had an inventory: a folder without one that holds only regular files, which `legacy`
    accepts as a whole, is taken as kit's."""
    dest = Path(dest)
    for source in inputs:
        a, b = Path(source).resolve(), dest.resolve()
        if a == b or a in b.parents or b in a.parents:
            raise ConfigError(f"{dest}: the {kind} folder overlaps the input {source}: replacing it would delete "
                              "what it reads", fix=f"write the {kind} to a folder outside {source}")
    if dest.is_symlink():
        raise ConfigError(f"{dest}: is a link; kit writes its {kind} as a real folder",
                          fix="remove the link or choose another folder")
    _check_writable_place(dest, kind)
    if not dest.exists():
        return
    if not dest.is_dir():
        raise ConfigError(f"{dest}: exists and is not a folder", fix=f"choose a folder for the {kind}")
    try:
        if not any(dest.iterdir()):
            return
    except OSError as exc:
        raise ConfigError(f"{dest}: cannot be read ({exc.strerror})", fix="choose a folder you can write") from None
    _check_owned(dest, kind, legacy)   # first: --force is offered only for what it would replace
    if force_needed and not force:
        raise ConfigError(f"{dest}: already exists", fix=f"choose a new folder, or pass --force to replace the {kind}")


def _check_writable_place(dest: Path, kind: str, option: str = "-o") -> None:
    """A ConfigError when the folder an output is built beside (its parent, or the nearest one that exists)
    cannot be written (no permission, a read-only file system): said before the work, not after it."""
    place = Path(os.path.abspath(dest)).parent
    while not os.path.lexists(place) and place != place.parent:
        place = place.parent
    if not place.is_dir():   # a file where a folder of the path must be
        raise ConfigError(f"{dest}: the {kind} cannot be written: {place} is {what_stands(place)}, not a folder",
                          fix=f"choose a path for the {kind} ({option}) whose folders are folders")
    if not os.access(place, os.W_OK | os.X_OK):
        try:
            why = "Read-only file system" if os.statvfs(place).f_flag & os.ST_RDONLY else "Permission denied"
        except OSError:
            why = "Permission denied"
        raise ConfigError(f"{dest}: the {kind} cannot be written: {place} is not writable ({why})",
                          fix=f"choose a folder you can write for the {kind} ({option})")


def check_output_file(path: Path, kind: str, marker: bytes, *, inputs: Sequence[Path] = (),
                      option: str = "-o") -> None:
    """A ConfigError unless `path` can take a one-file `kind` output (an HTML page written on its own):
    absent, or a regular file kit wrote as one (`marker` in its first 4 KB), and outside every folder
    in `inputs` (a page written over a checkpoint it reads would destroy it)."""
    path = Path(path)
    for source in inputs:
        a, b = Path(source).resolve(), path.resolve()
        if a == b or a in b.parents:
            raise ConfigError(f"{path}: the {kind} would be written inside the input {source}",
                              fix=f"write the {kind} to a file outside {source}")
    if path.is_symlink():
        raise ConfigError(f"{path}: is a link; kit writes its {kind} as a file of its own",
                          fix="remove the link or choose another file name")
    _check_writable_place(path, kind, option)
    if not os.path.lexists(path):
        return
    if not path.is_file():
        raise ConfigError(f"{path}: exists and is not a regular file", fix=f"choose a file name for the {kind}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})", fix="choose a file you can write") from None
    if marker not in head:
        raise ConfigError(f"{path}: exists and is not a {kind} kit wrote, so it is not replaced",
                          fix=f"choose a new file name for the {kind}, or move that file away")


def _check_owned(dest: Path, kind: str, legacy: Callable[[set[str]], bool] | None) -> None:
    """A ConfigError unless every file under `dest` is one its inventory names, with the same bytes
    (or, without an inventory, files `legacy` accepts as an earlier kit's output)."""
    found = read_inventory(dest)
    if found is None and legacy is not None and not (dest / INVENTORY).exists():
        present = dict(_not_owned(dest, {}))
        if all(why == "not written by kit" for why in present.values()) and legacy(set(present)):
            return
    if found is None:
        raise ConfigError(f"{dest}: holds files kit did not write (no valid {INVENTORY}), so it is not replaced",
                          fix=f"choose a new or empty folder for the {kind}; kit replaces only its own output")
    their_kind, files = found
    if their_kind != kind:
        raise ConfigError(f"{dest}: holds the output of kit {their_kind}, not of kit {kind}",
                          fix=f"choose another folder for the {kind}")
    foreign = [f"{rel} ({why})" for rel, why in _not_owned(dest, files)]
    if foreign:
        more = f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else ""
        raise ConfigError(f"{dest}: holds what kit did not write there: {', '.join(foreign[:_SHOWN])}{more}; "
                          "nothing was replaced",
                          fix=f"move those files out (or choose another folder), then write the {kind} again")


def _not_owned(dest: Path, files: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Each path under `dest` (relative) that is not a file of the inventory as it was written, and why."""
    unreadable: list[OSError] = []   # a folder that cannot be listed may hold anything: never kit's
    # the folders kit's files lie in: any other (an empty one the user made) is not kit's to remove
    folders = {parent.as_posix() for rel in files for parent in Path(rel).parents if parent != Path(".")}
    for top, dirs, names in os.walk(dest, onerror=unreadable.append):   # links are listed, never entered
        for name in sorted([*dirs, *names]):
            path = Path(top, name)
            rel = path.relative_to(dest).as_posix()
            if rel in (INVENTORY, *LEGACY_INVENTORIES):
                continue
            if path.is_symlink():
                yield rel, "a link"
            elif path.is_dir():
                # an empty one: a folder holding anything is judged by what it holds
                if rel not in folders and _empty_folder(path):
                    yield rel, "a folder kit did not write"
                continue
            elif not path.is_file():
                yield rel, "not a regular file"
            elif rel not in files:
                yield rel, "not written by kit"
            elif file_sha256(path) != files[rel]:
                yield rel, "changed since kit wrote it"
        dirs[:] = [d for d in dirs if not Path(top, d).is_symlink()]
    for exc in unreadable:
        yield Path(exc.filename or dest).relative_to(dest).as_posix(), f"a folder that cannot be read ({exc.strerror})"


def _empty_folder(path: Path) -> bool:
    """Whether a folder holds nothing (one that cannot be listed is said by the walk that reaches it)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def read_inventory(folder: Path) -> tuple[str, dict[str, str]] | None:
    """(kind, {relative path: sha256}) of the output in `folder`, or None when it has no valid inventory."""
    found = _inventory(folder)
    return None if found is None else found[:2]


def unchanged_output(dest: Path, kind: str, inputs: str) -> dict[str, Any] | None:
    """The memo of the `kind` output in `dest` when it was made from inputs whose digest is `inputs` and
    is intact (every file of its inventory there with its sha256, nothing else); None otherwise, and
    then the output is written anew."""
    dest = Path(dest)
    if dest.is_symlink() or not dest.is_dir():
        return None
    found = _inventory(dest)
    if found is None or found[0] != kind or found[2].get("inputs") != inputs:
        return None
    files = found[1]
    if not all(plain_relative(rel) for rel in files):   # an inventory naming files outside is no evidence
        return None
    if any(True for _ in _not_owned(dest, files)):
        return None
    if not all(os.path.isfile(dest / rel) and not os.path.islink(dest / rel) for rel in files):
        return None
    return found[2]


def plain_relative(rel: str) -> bool:
    """Whether a path an inventory or its memo names is a file inside its folder (relative, no '..', no
    empty part, no backslash)."""
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\\" not in rel and all(p not in ("", ".", "..") for p in parts)


def _inventory(folder: Path) -> tuple[str, dict[str, str], dict[str, Any]] | None:
    """(kind, files, memo) of the output in `folder` (see read_inventory); the memo is {} when none was kept."""
    for name, legacy_kind in ((INVENTORY, None), *LEGACY_INVENTORIES.items()):
        path = Path(folder) / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = json.loads(read_regular_file(path, "an output inventory", _INVENTORY_LIMIT))
        except (OSError, ValueError, ConfigError):
            return None
        kind = legacy_kind if legacy_kind and isinstance(data, dict) and data.get("kit_release") == 1 \
            else (data.get("kit_output") if isinstance(data, dict) else None)
        files = data.get("files") if isinstance(data, dict) else None
        # an entry naming a file outside the folder (../x, /x) makes it no inventory: never hashed, carried or trusted
        if not isinstance(kind, str) or not isinstance(files, dict) or not all(
                isinstance(k, str) and plain_relative(k) and isinstance(v, str) and len(v) == 64
                for k, v in files.items()):
            return None
        memo = data.get("memo")
        return kind, files, memo if isinstance(memo, dict) else {}
    return None


@contextmanager
def write_output(dest: Path, kind: str, *, force: bool = False, force_needed: bool = True, update: bool = False,
                 inputs: Sequence[Path] = (), legacy: Callable[[set[str]], bool] | None = None) -> Iterator[OutputFolder]:
    """Write a `kind` output to `dest` under the contract (see the module): checked (check_output),
    built in a staging folder the block writes into, inventoried and renamed into place when the block
    ends without an error; with `update`, the earlier output's files are carried into the staging
    folder first. On any error the staging folder is removed and `dest` is left as it was."""
    dest = Path(dest)
    check_output(dest, kind, force=force, force_needed=force_needed, inputs=inputs, legacy=legacy)
    stage = None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        sweep_leftovers(dest)   # a writer that was killed (SIGKILL, a power cut) left its folders here
        stage = Path(tempfile.mkdtemp(prefix=leftover_prefix(dest), suffix=".kit-staging", dir=dest.parent))
        if update and dest.is_dir():
            _carry_over(dest, stage)
        out = OutputFolder(dest, kind, stage, earlier=dest if not update and dest.is_dir() else None)
        yield out
        _seal(stage, kind, out.memo)
        # judged again now: what the command was writing for minutes may have been made or filled meanwhile
        check_output(dest, kind, force=force, force_needed=force_needed, inputs=inputs, legacy=legacy)
        replace_folder(stage, dest, checked=folder_identity(dest))
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        kept = "the earlier output is left as it was" if dest.exists() else "nothing was written"
        if _an_input(exc, stage, dest):
            raise ConfigError(f"{exc.filename}: cannot be read ({os.strerror(exc.errno)}), so the {kind} {dest} was not "
                              f"written; {kept}", fix="make that file readable (or move it out of the input), then "
                                                       "run the command again") from None
        what = os.strerror(exc.errno) + (f": {exc.filename}" if exc.filename else "")
        raise ConfigError(f"{dest}: could not write the {kind} ({what}); {kept}",
                          fix="free space, or choose a folder on a disk you can write (-o)") from None
    finally:
        if stage is not None and stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
        elif stage is None:   # stopped (a signal) between making the staging folder and holding its name
            for own in dest.parent.glob(f"{glob.escape(leftover_prefix(dest))}*.kit-staging"):
                shutil.rmtree(own, ignore_errors=True)


def _an_input(exc: OSError, stage: Path | None, dest: Path) -> bool:
    """Whether a permission or I/O error is about a file the command reads (named, and neither in the output
    nor in its staging folder), not one it writes; a full or read-only disk is always the output's."""
    import errno

    if exc.errno not in (errno.EACCES, errno.EPERM, errno.EIO) or not exc.filename:
        return False
    named = os.path.abspath(os.fsdecode(exc.filename))
    return not any(named == os.path.abspath(place) or named.startswith(os.path.abspath(place) + os.sep)
                   for place in (stage, dest) if place is not None)


def _carry_over(dest: Path, stage: Path) -> None:
    """The earlier output's own files (its inventory's, or every file of an accepted earlier kit's folder),
    hard-linked (copied across filesystems) into the staging folder: kit replaces files by renaming, so
    a link is never written through."""
    found = read_inventory(dest)
    # without an inventory, check_output accepted the folder as an earlier kit's (legacy): all of it is kit's
    names = found[1] if found else {rel: "" for rel, _ in _not_owned(dest, {})}
    for rel in sorted(names):
        source, target = dest / rel, stage / rel
        if not source.is_file() or source.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)


def inventory_pieces(stage: Path, names: Sequence[str], rest: dict[str, Any]) -> Iterator[str]:
    """The text of json.dumps({"files": {name: sha256 of stage/name}, **rest}, indent=1, sort_keys=True)
    plus a newline, in pieces, each file hashed as its line is made: a report's 20,000 digests and
    the whole text are never held at once. `names` sorted."""
    yield "{"
    for number, key in enumerate(sorted(["files", *rest])):
        yield ("\n " if number == 0 else ",\n ") + json.dumps(key) + ": "
        if key != "files":
            yield json.dumps(rest[key], indent=1, sort_keys=True).replace("\n", "\n ")   # JSON text holds no raw newline
        elif not names:
            yield "{}"
        else:
            for index, rel in enumerate(names):
                yield ("{\n  " if index == 0 else ",\n  ") + json.dumps(rel) + ": " + json.dumps(
                    file_sha256(os.path.join(stage, rel)))
            yield "\n }"
    yield "\n}\n"


def _seal(stage: Path, kind: str, memo: dict[str, Any]) -> None:
    """Write the inventory of `stage` (with `memo` when not empty) and give its folders the modes of plain
    mkdir (mkdtemp makes 0700: an output is meant to be read by a team)."""
    skip = (INVENTORY, *LEGACY_INVENTORIES)
    names = sorted(rel for rel in regular_files(stage) if rel.rpartition("/")[2] not in skip)
    with atomic_writer(stage / INVENTORY, durable=False) as fh:
        for piece in inventory_pieces(stage, names, {"kit_output": kind, **({"memo": memo} if memo else {})}):
            fh.write(piece.encode("ascii"))
    mode = 0o777 & ~umask()
    for path in [stage, *(os.path.join(stage, rel) for rel in folders_under(stage))]:
        os.chmod(path, mode)
