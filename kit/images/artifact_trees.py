"""Digest trees of the three artifact forms: the OCI image (its `docker save` layers applied in
order, whiteouts honoured), a squashfs (sqsh, read with sqfs2tar) and a SIF (its system
partition, read the same way)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from kit.errors import ImageError
from kit.images.digest_tree import Entry, add_tar
from kit.images.sif import extract_partition


def oci_tree(archive: Path) -> tuple[dict[str, Entry], dict]:
    """The flattened filesystem of a `docker save` archive, and the image config."""
    with tarfile.open(archive) as outer:
        try:
            manifest = json.load(outer.extractfile("manifest.json"))[0]
        except (KeyError, ValueError, IndexError):
            raise ImageError(f"{archive}: not a docker save archive", fix="save the image again") from None
        config = json.load(outer.extractfile(manifest["Config"]))
        tree: dict[str, Entry] = {}
        for layer in manifest["Layers"]:
            with tarfile.open(fileobj=outer.extractfile(layer), mode="r|*") as tar:
                add_tar(tree, tar, whiteouts=True)
    return tree, config


def squashfs_tree(path: Path) -> dict[str, Entry]:
    """The filesystem of a squashfs image, streamed through sqfs2tar (no extraction to disk)."""
    if not shutil.which("sqfs2tar"):
        raise ImageError("sqfs2tar is not installed (needed to read squashfs files)",
                         fix="apt-get install squashfs-tools-ng (make image-tools)")
    proc = subprocess.Popen(["sqfs2tar", "--no-skip", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tree: dict[str, Entry] = {}
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            add_tar(tree, tar)
    finally:
        err = proc.stderr.read().decode(errors="replace")
        status = proc.wait()
    if status != 0:
        raise ImageError(f"sqfs2tar failed on {path}: {' | '.join(err.strip().splitlines()[-3:])}",
                         fix="convert the image again; the file may be truncated")
    return tree


def sif_tree(path: Path) -> dict[str, Entry]:
    """The filesystem of a SIF's system partition."""
    with tempfile.TemporaryDirectory(prefix="kit-sif-") as tmp:
        part = extract_partition(path, Path(tmp) / "system.sqfs")
        return squashfs_tree(part)
