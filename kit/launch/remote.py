"""A site's files as seen from here: results trees copied over the frontend's ssh, inputs copied there.

Remote status works on a local mirror: kit lists the site's checkpoints on the frontend
(`find`, one round trip), fetches only new or changed files (`tar` over the same ssh
connection) into `.kit/mirror/<site>/results` beside sites.toml, and validates them here
with the same code as local results. Nothing of kit needs to be installed on the
frontend, and status, `kit run` (which pairs are pending) and `kit pull` share one copy.

A remote site's jobs cannot read the roster and benchmark on this machine: `kit run`
copies them to `<root>/inputs/` on the frontend, named by content digest (copied once).
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import subprocess
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from collections.abc import Callable
from typing import TYPE_CHECKING

from kit.config.sites import Site
from kit.errors import ConfigError, SubmitError, unshowable, visible
from kit.files import what_stands, write_bytes_atomic
from kit.launch.frontend import Frontend

if TYPE_CHECKING:
    from kit.launch.site import ResolvedSite

# what a results tree holds that kit copies: <language>/<run>.json checkpoints, their mllog and the
# signed statement a job may write beside them (<run>.intoto.jsonl, kit.results.store.ENVELOPE_SUFFIX)
_COPIED = (".json", ".mllog", ".intoto.jsonl")
# Each answer of the frontend begins with a line of kit's own: what a login shell prints before it (a
# profile's "modules loaded") is skipped, and an absent folder is told apart from an empty one (a typo in
# `results`, an unmounted file system), which would otherwise read as "nothing has run yet".
_LISTING, _ABSENT, _STREAM = b"kit-listing-1\n", b"kit-absent-1\n", b"kit-tar-1\n"
# Every place a results tree holds a checkpoint (kit.results.store.iter_checkpoint_files): <file>,
# <folder>/<file> and <batch>/<language>/<file>; hidden folders (kit's .superseded/) are left out. A
# folder that is not there is told apart from one that cannot be reached: absent only when its parent
# can be listed. Linked folders are read through (-L), as every reader of a tree reads them.
_LIST = ('if [ ! -e "$1" ]; then p=$(dirname -- "$1"); [ -d "$p" ] && [ -r "$p" ] && [ -x "$p" ] || '
         '{ echo "cannot reach $p" >&2; exit 3; }; printf "kit-absent-1\\n"; exit 0; fi; cd "$1" || exit 3; '
         'printf "kit-listing-1\\n"; find -L . -mindepth 1 -maxdepth 3 -name ".*" -prune -o -type f '
         '\\( -name "*.json" -o -name "*.mllog" -o -name "*.intoto.jsonl" \\) -printf "%P\\0%s\\0%T@\\0"')
# a file that vanished between the listing and the copy (a job moving a stale checkpoint aside) is left
# out of the stream, not a failure of the whole copy
_TAR = 'cd "$1" || exit 3; printf "kit-tar-1\\n"; exec tar --ignore-failed-read --null -T - -czf -'
# where a replaced copy is kept, in its language folder (hidden: no reader takes it for a checkpoint)
SUPERSEDED_DIR = ".superseded"


@dataclass
class SyncReport:
    """What a copy of a results tree did."""

    source: str
    dest: Path
    listed: int = 0
    fetched: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    absent: bool = False                                   # the remote folder does not exist
    skipped: list[str] = field(default_factory=list)       # names no results tree holds (control characters, not UTF-8)
    vanished: list[str] = field(default_factory=list)      # listed, gone before they were copied
    kept_aside: list[str] = field(default_factory=list)    # earlier local copies moved into .superseded/

    def notes(self) -> list[str]:
        """One line for each thing a reader of the copy should know beyond the counts."""
        out = []
        if self.absent:
            out.append(f"{self.source} does not exist on the frontend: nothing to copy (no job has written there "
                       "yet, or the site's `results` is not where its jobs write)")
        if self.skipped:
            out.append(f"{len(self.skipped)} file name(s) there hold control characters or bytes that are not UTF-8 "
                       f"and were not copied (such as {visible(self.skipped[0])}): no checkpoint kit writes is named so")
        if self.vanished:
            out.append(f"{len(self.vanished)} file(s) were moved or removed there while being copied "
                       f"(such as {self.vanished[0]}): pull again to copy what stands now")
        if self.kept_aside:
            out.append(f"{len(self.kept_aside)} earlier copy(ies) here were replaced and kept in "
                       f"<language>/{SUPERSEDED_DIR}/ (such as {self.kept_aside[0]})")
        return out


# what an empty path of a remote site could be instead (an example for the fix)
_EXAMPLE_PATHS = {"root": "/home/<login>/kit", "results": "/home/<login>/kit/results",
                  "images": "/home/<login>/kit/images", "scratch": "/tmp", "weights": "/home/<login>/hf-hub",
                  "python": "/home/<login>/kit/.venv/bin/python"}
# `~`, `~/x`, `~user/x`, `$HOME/x` and `${HOME}/x`: a home folder, which kit does not expand on the cluster
_HOME = re.compile(r"^(?:~(?P<user>[A-Za-z0-9._-]*)|\$HOME|\$\{HOME\})(?=/|$)/*")


def check_remote_paths(site: Site) -> None:
    """A ConfigError unless every path of a remote site is absolute (they are paths on the cluster);
    an empty one is no path at all."""
    for key in ("root", "results", "images", "scratch", "weights", "python"):
        value = getattr(site, key)
        if key == "images" and site.runtime not in ("apptainer", "pyxis", "enroot"):
            continue  # no image file to find
        if value is None or (key == "python" and value and "/" not in value):
            continue  # unset, or a command the cluster's PATH finds
        remote_path(site, key)


def remote_path(site: Site, key: str) -> str:
    """The remote site's folder `key` (root, results, images, ...), which must be an absolute path on
    the cluster; a ConfigError naming the absolute path meant otherwise."""
    value = getattr(site, key) or ""
    if value.startswith("/"):
        return value
    what = "is empty" if not value.strip() else "is relative"
    raise ConfigError(f"site {site.name}: {key} = {value!r} {what}, but the frontend is "
                      f"{site.frontend!r}: paths of a remote site are absolute paths on the cluster",
                      fix=f"write it absolute in [site.{site.name}], e.g. {key} = \"{absolute_example(key, value)}\"")


def absolute_example(key: str, value: str) -> str:
    """The absolute path a person most likely meant by a remote site's relative `value` for `key`:
    `~/kit` and `$HOME/kit` -> /home/<login>/kit; a relative root is in the home folder (where ssh
    starts), other relative paths in kit's folder (`results` -> /home/<login>/kit/results)."""
    home = _HOME.match(value)
    if home:
        return posixpath.normpath(posixpath.join(f"/home/{home['user'] or '<login>'}", value[home.end():]))
    if not value.strip() or posixpath.normpath(value) == "." or value.startswith("$"):
        return _EXAMPLE_PATHS[key]
    return posixpath.normpath(posixpath.join("/home/<login>" if key == "root" else "/home/<login>/kit", value))


def run_bytes(frontend: Frontend, argv: list[str], data: bytes = b"", timeout_s: int | None = None) -> bytes:
    """Run a command on the frontend with binary stdin and stdout; any failure is a SubmitError."""
    full = frontend.command(argv, {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"})
    try:
        proc = subprocess.run(full, input=data, capture_output=True, timeout=timeout_s or frontend.timeout_s * 5)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"{frontend.where}: {argv[0]} did not finish in time",
                          fix="check the frontend and the network, then retry") from None
    err = proc.stderr.decode(errors="replace").strip()[-300:]
    if not frontend.is_local and proc.returncode == 255:
        raise SubmitError(f"cannot reach frontend {frontend.host!r} over ssh: {err}",
                          fix=f"check `ssh {frontend.host} true` works without a password (ssh-agent, ~/.ssh/config)")
    if proc.returncode != 0:
        raise SubmitError(f"{frontend.where}: {argv[0]} exited {proc.returncode}: {err}",
                          fix="check the path and permissions on the frontend")
    return proc.stdout


def list_tree(frontend: Frontend, remote: str) -> tuple[dict[str, tuple[int, int]], list[str]] | None:
    """(relative path -> (size, mtime) of the checkpoints, logs and signed statements of a results tree, the
    names left out because they hold control characters), or None when the folder does not exist there."""
    raw = _after_mark(run_bytes(frontend, ["sh", "-c", _LIST, "sh", remote]), (_LISTING, _ABSENT), frontend, "find")
    if raw is None:
        return None
    fields = raw.split(b"\0")
    out, skipped = {}, []
    for name_b, size_b, mtime_b in zip(fields[0::3], fields[1::3], fields[2::3]):
        name = name_b.decode("utf-8", errors="surrogateescape")
        try:
            entry = (int(size_b), int(float(mtime_b)))
        except ValueError:
            continue   # a field cut short at the end of the answer
        if unshowable(name) or any(ord(c) < 32 or 0xDC80 <= ord(c) <= 0xDCFF for c in name):
            skipped.append(name)
        else:
            out[name] = entry
    return out, skipped


def _after_mark(answer: bytes, marks: tuple[bytes, ...], frontend: Frontend, what: str) -> bytes | None:
    """What follows the first of kit's marks in a frontend's answer (None after the absent mark); a
    SubmitError when none is there (the command never ran as kit wrote it)."""
    found = [(answer.find(mark), mark) for mark in marks if answer.find(mark) >= 0]
    if not found:
        raise SubmitError(f"{frontend.where}: {what} gave an answer kit cannot read ({len(answer)} bytes without "
                          "kit's first line)", fix="check that `sh` and the command run there, then retry")
    at, mark = min(found)
    return None if mark == _ABSENT else answer[at + len(mark):]


def fetch_files(frontend: Frontend, remote: str, names: list[str],
                take: Callable[[str, bytes, int], None]) -> set[str]:
    """Copy these files of `remote` in one tar stream, handing each to `take(name, bytes, mtime)` as it is
    read (one file's bytes held at a time, not a tree's); the names taken (a listed file that is gone is
    missing). A SubmitError when the stream is cut short or damaged: what was taken before stays taken."""
    if not names:
        return set()
    answer = run_bytes(frontend, ["sh", "-c", _TAR, "sh", remote], "\0".join(names).encode("utf-8", "surrogateescape")
                       + b"\0")
    data = _after_mark(answer, (_STREAM,), frontend, "tar") or b""
    del answer
    wanted, taken = set(names), set()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|gz") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if member.isfile() and name in wanted:
                    source = tar.extractfile(member)
                    take(name, source.read() if source is not None else b"", int(member.mtime))
                    taken.add(name)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise SubmitError(f"{frontend.where}: the copy of {len(names)} file(s) from {remote} was cut short or "
                          f"damaged on the way ({exc}); {len(taken)} were copied whole before it",
                          fix="retry; no file here was left half-written") from None
    return taken


def _local_files(dest: Path) -> dict[str, tuple[int, int]]:
    """What the listing names, here: the regular files of the places a checkpoint lies, hidden folders left
    out, and nothing reached through a link (a mirror's refresh removes what it lists)."""
    out: dict[str, tuple[int, int]] = {}
    if not dest.is_dir() or dest.is_symlink():
        return out

    def walk(folder: Path, rel: tuple[str, ...]) -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if len(rel) < 2:
                        walk(Path(entry.path), (*rel, entry.name))
                elif entry.is_file(follow_symlinks=False) and entry.name.endswith(_COPIED):
                    st = entry.stat(follow_symlinks=False)
                    out["/".join((*rel, entry.name))] = (st.st_size, int(st.st_mtime))

    walk(dest, ())
    return out


def _refuse_linked_dest(dest: Path) -> None:
    """A ConfigError when the folder copied into is itself a link (a link inside it is never listed nor
    written through: _local_files, _check_place): a refresh that removes files must never remove them where
    a link points."""
    if dest.is_symlink():
        raise ConfigError(f"{dest} is a link: kit writes (and a mirror removes) the site's files in a folder of "
                          "its own, never where a link points", fix="remove the link, or copy into another folder")


def sync_tree(frontend: Frontend, remote: str, dest: Path, *, delete: bool) -> SyncReport:
    """Make `dest` hold the remote tree's checkpoints: fetch new or changed files; with delete (kit's own
    mirror), drop the rest. Each file is written beside its place and renamed in (a full disk leaves the
    earlier copy whole); without delete (a user's folder), an earlier copy that differs is first kept in
    <language>/.superseded/. Nothing is written through a link or when a copy arrives damaged."""
    dest = Path(dest)
    _refuse_linked_dest(dest)
    listing = list_tree(frontend, remote)
    report = SyncReport(f"{frontend.host}:{remote}", dest, absent=listing is None)
    theirs, report.skipped = listing if listing is not None else ({}, [])
    report.listed = len(theirs)
    ours = _local_files(dest)
    if report.absent and delete and ours:   # an unmounted file system or a typo must not empty kit's copy
        raise SubmitError(f"{report.source} does not exist on the frontend, though {len(ours)} file(s) were copied "
                          f"from it before; the copy in {dest} is kept as it was",
                          fix="check the site's `results` in sites.toml and that its file system is mounted there")
    changed = sorted(n for n, meta in theirs.items() if ours.get(n) != meta)
    for name in changed:
        _check_place(dest, name, keeps_aside=not delete)

    def take(name: str, body: bytes, mtime: int) -> None:
        target = dest / name
        if not delete and _differs(target, body):
            report.kept_aside.append(str(_keep_aside(target)))
        try:
            write_bytes_atomic(target, body)
            os.utime(target, (mtime, mtime))
        except OSError as exc:   # a full or read-only disk: the earlier copy is whole (written beside, renamed in)
            raise ConfigError(f"{target}: the copy cannot be written here ({exc.strerror}); {len(report.fetched)} "
                              "file(s) were copied before it", fix="free space, or pull into another folder (--to); "
                              "the earlier copy of this file is as it was") from None
        report.fetched.append(name)

    taken = fetch_files(frontend, remote, changed, take)
    report.vanished = [name for name in changed if name not in taken]
    if delete:
        for name in sorted(set(ours) - set(theirs)):
            (dest / name).unlink(missing_ok=True)
            report.removed.append(name)
    return report


def _check_place(dest: Path, name: str, *, keeps_aside: bool) -> None:
    """A SubmitError for a name no results tree holds there; a ConfigError unless the copy of `name` can be
    written at dest/name: no part of the way is a link (nothing is written where a link points) or a file
    where a folder must be, and what stands there is a file or nothing; when an earlier copy is kept aside
    (`keeps_aside`), its .superseded/ folder is a real folder or nothing."""
    parts = PurePosixPath(name).parts
    if not 1 <= len(parts) <= 3 or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise SubmitError(f"{name!r} is not where a results tree keeps a checkpoint", fix="report this file on the frontend")
    way = dest
    for at, part in enumerate((None, *parts)):
        way = way if part is None else way / part
        if way.is_symlink():
            raise ConfigError(f"{way} is a link: kit writes the site's files here, never where a link points",
                              fix="remove the link or pull into another folder (--to)")
        if at < len(parts) and os.path.lexists(way) and not way.is_dir():   # a folder of the way
            raise ConfigError(f"{way} is {what_stands(way)}, where the copy needs a folder",
                              fix="move it aside, or pull into another folder (--to)")
    if os.path.lexists(dest / name) and not (dest / name).is_file():
        raise ConfigError(f"{dest / name} is {what_stands(dest / name)}, not a file a copy can replace",
                          fix="move it aside, or pull into another folder (--to)")
    keep = (dest / name).parent / SUPERSEDED_DIR
    if keeps_aside and os.path.lexists(keep) and (keep.is_symlink() or not keep.is_dir()):
        raise ConfigError(f"{keep} is {what_stands(keep)}, not the folder kit keeps replaced copies in",
                          fix="move it aside, or pull into another folder (--to)")


def _differs(path: Path, body: bytes) -> bool:
    try:
        return path.read_bytes() != body
    except FileNotFoundError:
        return False


def _keep_aside(path: Path) -> Path:
    """Move a file into .superseded/ of its folder, named with the time; its new place."""
    from datetime import datetime, timezone

    keep = path.parent / SUPERSEDED_DIR
    keep.mkdir(exist_ok=True)
    target = keep / f"{path.name}.{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S.%fZ')}"
    os.replace(path, target)
    return target


def sync_mirror(site: ResolvedSite) -> SyncReport:
    """Refresh the local mirror of a remote site's results tree (`site.mirror`); a warning when that tree
    does not exist on the frontend (nothing has run yet, or the site's `results` is wrong)."""
    from kit.errors import warn

    check_remote_paths(site.config)
    report = sync_tree(site.frontend, site.config.results, site.mirror, delete=True)
    for line in report.notes():
        warn(f"site {site.name}: {line}")
    return report


def tree_digest(folder: Path) -> str:
    """sha256 over the relative names and contents of every non-hidden file under `folder`."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            h.update(rel.as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def staged_inputs(root: Path, roster: Path | None, benchmark: Path) -> tuple[Path | None, Path, dict[str, Path]]:
    """Where a remote site's jobs read the roster and benchmark (under root/inputs), and what to copy there."""
    inputs = PurePosixPath(str(root)) / "inputs"
    bench = inputs / f"benchmark-{tree_digest(benchmark)[:16]}"
    copies = {str(bench): benchmark}
    remote_roster = None
    if roster is not None:
        remote_roster = inputs / f"roster-{hashlib.sha256(roster.read_bytes()).hexdigest()[:16]}.toml"
        copies[str(remote_roster)] = roster
    return (Path(remote_roster) if remote_roster else None), Path(bench), copies


def upload_inputs(frontend: Frontend, copies: dict[str, Path]) -> None:
    """Copy each local file or folder to its path on the frontend, unless it is already there."""
    for remote, local in copies.items():
        buf = io.BytesIO()
        # links followed: a link inside the benchmark may name a path of this machine (the files it
        # reaches lie in the benchmark folder: kit.config.dataset.inside_benchmark)
        with tarfile.open(fileobj=buf, mode="w:gz", dereference=True) as tar:
            tar.add(str(local), arcname="payload", recursive=True,
                    filter=lambda ti: None if PurePosixPath(ti.name).name.startswith(".") else ti)
        script = ('test -e "$1" && exit 0; tmp="$1.kit-tmp-$$"; mkdir -p "$tmp" && tar -xzf - -C "$tmp" '
                  '&& mkdir -p "$(dirname "$1")" && mv -f "$tmp/payload" "$1"; rc=$?; rm -rf "$tmp"; exit $rc')
        run_bytes(frontend, ["sh", "-c", script, "sh", remote], buf.getvalue())
