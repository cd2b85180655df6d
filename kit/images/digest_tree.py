"""Per-file digest trees of image filesystems, from tar streams, and their comparison.

An entry records what a program inside the image can observe of a path: its type, permission
bits, owner, and content (sha256 of a file, target of a symlink, numbers of a device). Hard
links become the file they name, since tools differ in which path keeps the data. Times are
not recorded: every format stores them differently and no program reads them for results."""

from __future__ import annotations

import hashlib
import posixpath
import tarfile
from dataclasses import dataclass

_KIND = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.CONTTYPE: "file", tarfile.DIRTYPE: "dir",
         tarfile.SYMTYPE: "symlink", tarfile.CHRTYPE: "char", tarfile.BLKTYPE: "block", tarfile.FIFOTYPE: "fifo"}


@dataclass(frozen=True)
class Entry:
    """What one path holds."""

    kind: str
    mode: int
    uid: int
    gid: int
    content: str = ""

    def describe(self, owners: bool = True) -> str:
        """A short text for difference reports."""
        owner = f" {self.uid}:{self.gid}" if owners else ""
        return f"{self.kind} {self.mode:04o}{owner} {self.content[:16]}".rstrip()

    def same(self, other: Entry, owners: bool = True) -> bool:
        """Equal in every recorded field (owners optional)."""
        if (self.kind, self.mode, self.content) != (other.kind, other.mode, other.content):
            return False
        return not owners or (self.uid, self.gid) == (other.uid, other.gid)


def norm(name: str) -> str:
    """A tar member name as a path relative to the root, without ./ or trailing slash."""
    return posixpath.normpath("/" + name).lstrip("/")


def _digest(fh) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: fh.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def entry_of(member: tarfile.TarInfo, tar: tarfile.TarFile, lookup) -> Entry | None:
    """The Entry of one tar member (None for kinds a tree does not hold); lookup(path) finds
    the target of a hard link."""
    mode = member.mode & 0o7777
    if member.type == tarfile.LNKTYPE:
        target = lookup(norm(member.linkname))
        return None if target is None else Entry(target.kind, mode, member.uid, member.gid, target.content)
    kind = _KIND.get(member.type)
    if kind is None:
        return None
    content = ""
    if kind == "file":
        fh = tar.extractfile(member)
        content = _digest(fh) if fh is not None else hashlib.sha256(b"").hexdigest()
    elif kind == "symlink":
        content = member.linkname
    elif kind in ("char", "block"):
        content = f"{member.devmajor}:{member.devminor}"
    return Entry(kind, mode, member.uid, member.gid, content)


def remove(tree: dict[str, Entry], path: str, children_only: bool = False) -> None:
    """Delete a path and everything below it (or only what is below it)."""
    prefix = path + "/" if path else ""
    for key in [k for k in tree if k.startswith(prefix) or (k == path and not children_only)]:
        del tree[key]


def add_tar(tree: dict[str, Entry], tar: tarfile.TarFile, *, whiteouts: bool = False) -> None:
    """Apply a tar stream to a tree: an OCI layer (whiteouts=True) or a whole filesystem."""
    layer: dict[str, Entry] = {}
    for member in tar:
        path = norm(member.name)
        base = posixpath.basename(path)
        if whiteouts and base == ".wh..wh..opq":
            remove(tree, posixpath.dirname(path), children_only=True)
            continue
        if whiteouts and base.startswith(".wh."):
            remove(tree, posixpath.join(posixpath.dirname(path), base[4:]).lstrip("/"))
            continue
        if not path or path == ".":
            continue
        entry = entry_of(member, tar, lambda p: layer.get(p) or tree.get(p))
        if entry is not None:
            layer[path] = entry
    for path, entry in layer.items():
        old = tree.get(path)
        if old is not None and old.kind == "dir" and entry.kind != "dir":
            remove(tree, path, children_only=True)
        tree[path] = entry


@dataclass
class Difference:
    """A path whose entry differs between two trees (None: absent)."""

    path: str
    left: Entry | None
    right: Entry | None


def compare(left: dict[str, Entry], right: dict[str, Entry], *, owners: bool = True) -> list[Difference]:
    """Every path that is missing on one side or differs, sorted."""
    out = []
    for path in sorted(set(left) | set(right)):
        a, b = left.get(path), right.get(path)
        if a is None or b is None or not a.same(b, owners):
            out.append(Difference(path, a, b))
    return out
