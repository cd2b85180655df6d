"""SIF (Apptainer) artifacts: build one from a `docker save` archive, and find the squashfs
partition inside one (to read its files without Apptainer).

SIF layout (sylabs/sif, spec version 01, little-endian, no padding): a 128-byte global header
(launch script 32, magic 10, version 3, arch 3, id 16, then eight int64: created, modified,
descriptors free, total, offset, size, data offset, size), then `total` descriptors of 585
bytes (data type int32, used bool, id, group id, linked id uint32, offset, size, size with
padding, created, modified, uid, gid int64, name 128, extra 384). The system partition has
data type 0x4004 and, in `extra`, file system type 1 (squashfs) and partition type 2 (primary
system)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kit.errors import ConfigError, ImageError
from kit.images import helper

_HEADER = struct.Struct("<32s10s3s3s16s8q")
_DESCR = struct.Struct("<i?IIIqqqqqqq128s384s")
DATA_PARTITION = 0x4004
FS_SQUASH = 1
PART_PRIMSYS = 2


@dataclass(frozen=True)
class Partition:
    """Where the primary system squashfs lies in a SIF file."""

    offset: int
    size: int


def primary_partition(path: Path) -> Partition:
    """The primary system partition of a SIF file; anything else is an ImageError."""
    with open(path, "rb") as fh:
        head = fh.read(_HEADER.size)
        if len(head) < _HEADER.size:
            raise ImageError(f"{path}: too short to be a SIF file", fix="convert the image again")
        _, magic, _, _, _, _, _, _, total, doff, _, _, _ = _HEADER.unpack(head)
        if not magic.startswith(b"SIF_MAGIC"):
            raise ImageError(f"{path}: not a SIF file (magic {magic!r})", fix="convert the image again")
        fh.seek(doff)
        for _ in range(total):
            d = _DESCR.unpack(fh.read(_DESCR.size))
            dtype, used, offset, size, extra = d[0], d[1], d[5], d[6], d[13]
            if used and dtype == DATA_PARTITION:
                fstype, parttype = struct.unpack_from("<ii", extra)
                if fstype == FS_SQUASH and parttype == PART_PRIMSYS:
                    return Partition(offset, size)
    raise ImageError(f"{path}: no squashfs system partition", fix="convert the image again")


def extract_partition(path: Path, dest: Path) -> Path:
    """Copy the SIF's system squashfs to its own file (tools that read squashfs need one)."""
    part = primary_partition(path)
    with open(path, "rb") as src, open(dest, "wb") as out:
        src.seek(part.offset)
        left = part.size
        while left:
            block = src.read(min(left, 1 << 22))
            if not block:
                raise ImageError(f"{path}: truncated SIF partition", fix="convert the image again")
            out.write(block)
            left -= len(block)
    return dest


def compression_args() -> list[str]:
    """Extra `apptainer build` arguments for KIT_SIF_COMPRESSION (gzip, Apptainer's default and
    the one every Apptainer and Singularity reads, or zstd: about 3x faster to make here)."""
    choice = os.environ.get("KIT_SIF_COMPRESSION", "gzip")
    if choice == "gzip":
        return []
    if choice == "zstd":
        return ["--mksquashfs-args", "-comp zstd -Xcompression-level 3"]
    raise ConfigError(f"KIT_SIF_COMPRESSION={choice!r} is not gzip or zstd", fix="unset it or use gzip or zstd")


def build_sif(archive: Path, out: Path, *, use_helper: bool | None = None) -> str:
    """`apptainer build OUT docker-archive://ARCHIVE`, on the host or in the helper; returns the tool."""
    archive, out = Path(archive).resolve(), Path(out).resolve()
    extra = compression_args()
    # built beside and renamed into place: a failed build leaves the SIF there before it whole
    part = out.with_name(f".{out.name}.part")
    if use_helper is None:
        use_helper = shutil.which("apptainer") is None
    try:
        if not use_helper:
            r = subprocess.run(["apptainer", "build", "--force", *extra, str(part), f"docker-archive://{archive}"],
                               capture_output=True, text=True)
            tool = subprocess.run(["apptainer", "--version"], capture_output=True, text=True).stdout.strip()
            status, err = r.returncode, r.stderr
        else:
            mounts = [helper.Mount(str(archive.parent), "/in"), helper.Mount(str(out.parent), "/out", read_only=False)]
            r = helper.run(["apptainer", "build", "--force", *extra, f"/out/{part.name}",
                            f"docker-archive:///in/{archive.name}"], mounts)
            tool = f"{helper.version()} (helper {helper.HELPER})"
            status, err = r.status, r.stderr
        tool += f", {os.environ.get('KIT_SIF_COMPRESSION', 'gzip')}"
        if status != 0:
            tail = " | ".join(err.strip().splitlines()[-4:])
            raise ImageError(f"apptainer build failed for {archive.name}: {tail}",
                             fix="read the message; the helper needs a working dockerd and enough disk in /tmp")
        os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    return tool
