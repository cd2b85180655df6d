"""sqsh (Enroot) artifacts: the flattened rootfs of an image as a reproducible squashfs, with
the configuration files Enroot derives from the image config.

Route without Enroot (as `enroot import dockerd://` does it): `docker export` of a container,
less `.dockerenv` and the contents of /dev (Enroot mounts /dev at run time), plus /etc/rc (the
entry point and command), /etc/rc.local, /etc/environment (the config's Env) and /etc/fstab
(the config's volumes) in Enroot's formats. The tar stream goes straight into `mksquashfs -tar`
with fixed times, every file owned by root (as Enroot's -all-root), a 0755 root and zstd level
3, so two conversions of one image are byte-identical."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from kit.errors import ImageError
from kit.images import engine
from kit.images.digest_tree import norm

EPOCH = 1700000000
ENROOT_FILES = ("etc/rc", "etc/rc.local", "etc/environment", "etc/fstab")
MKSQUASHFS_ARGS = ["-tar", "-noappend", "-all-root", "-no-xattrs", "-comp", "zstd", "-Xcompression-level", "3",
                   "-root-mode", "0755", "-quiet", "-no-progress"]


def enroot_files(config: dict[str, Any], uri: str) -> dict[str, str]:
    """/etc/rc, /etc/rc.local, /etc/environment and /etc/fstab for an image config (Enroot's formats)."""
    cfg = config.get("Config") or config.get("config") or {}
    entrypoint, cmd = list(cfg.get("Entrypoint") or []), list(cfg.get("Cmd") or [])
    if not entrypoint and not cmd:
        cmd = ["/bin/sh"]
    workdir = cfg.get("WorkingDir") or "/"
    labels = "".join(f"# {k} {' '.join(str(v).splitlines())}\n" for k, v in sorted((cfg.get("Labels") or {}).items()))
    ep = " ".join(shlex.quote(a) for a in entrypoint)
    rc = (f"# enroot-provenance: {uri}\n{labels}\n"
          f"mkdir -p {shlex.quote(workdir)} 2> /dev/null\n"
          f"cd {shlex.quote(workdir)} && unset OLDPWD || exit 1\n\n"
          "if [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n\n"
          f"if [ $# -gt 0 ]; then\n    exec {ep + ' ' if ep else ''}\"$@\"\n"
          f"else\n    exec {' '.join(shlex.quote(a) for a in [*entrypoint, *cmd])}\nfi\n")
    volumes = sorted((cfg.get("Volumes") or {}).keys())
    return {
        "etc/rc": rc,
        "etc/rc.local": "# This file is sourced by /etc/rc when the container starts.\n"
                        "# It can be used to manipulate the entrypoint or the command of the container.\n",
        "etc/environment": "".join(f"{e}\n" for e in cfg.get("Env") or []),
        "etc/fstab": "".join(f"${{ENROOT_ROOTFS}}{v} {v} none x-create=dir,bind,rw,nosuid,nodev\n" for v in volumes),
    }


def _skip(name: str) -> bool:
    path = norm(name)
    return path == ".dockerenv" or path.startswith("dev/") or path in ENROOT_FILES


def filter_export(src: tarfile.TarFile, dst: tarfile.TarFile, extra: dict[str, str]) -> None:
    """Copy an exported rootfs tar, dropping what Enroot drops and appending its config files."""
    for member in src:
        if _skip(member.name):
            continue
        dst.addfile(member, src.extractfile(member) if member.isreg() else None)
    for name, text in sorted(extra.items()):
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, EPOCH
        dst.addfile(info, io.BytesIO(data))


def mksquashfs_version() -> str:
    """`mksquashfs -version`, first line; an ImageError when it is missing."""
    if not shutil.which("mksquashfs"):
        raise ImageError("mksquashfs is not installed", fix="apt-get install squashfs-tools (make image-tools)")
    out = subprocess.run(["mksquashfs", "-version"], capture_output=True, text=True).stdout
    return (out.splitlines() or ["mksquashfs"])[0]


def build_sqsh(ref: str, out: Path) -> str:
    """Convert a local image to an Enroot sqsh at `out`; returns the tool description."""
    if shutil.which("enroot") and os.environ.get("KIT_SQSH_TOOL", "auto") != "kit":
        return _enroot_import(ref, out)
    tool = mksquashfs_version()
    attrs = engine.image_attrs(ref)
    extra = enroot_files(attrs, f"dockerd://{attrs['Id']}")
    out = Path(out)
    tmp = out.with_name(f".{out.name}.part")
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    # -e would swallow every later word as an exclude; nothing follows the fixed options
    proc = subprocess.Popen(["mksquashfs", "-", str(tmp), *MKSQUASHFS_ARGS, "-mkfs-time", str(EPOCH),
                             "-all-time", str(EPOCH)], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        return _squash(ref, out, tmp, proc, extra, tool)
    finally:   # an interrupt or any failure leaves no mksquashfs running and no part behind
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        tmp.unlink(missing_ok=True)


def _squash(ref: str, out: Path, tmp: Path, proc: subprocess.Popen, extra: Any, tool: str) -> str:
    container, chunks = engine.export_stream(ref)
    try:
        # GNU, not PAX: mksquashfs 4.5.1 drops the leading "/" of a PAX linkpath (any symlink
        # target with a non-ASCII character), breaking absolute links such as /etc/ssl/certs/*.pem
        with engine.open_stream(chunks) as src, tarfile.open(fileobj=proc.stdin, mode="w|",
                                                             format=tarfile.GNU_FORMAT) as dst:
            filter_export(src, dst, extra)
        proc.stdin.close()
        err = proc.stderr.read().decode(errors="replace")
        status = proc.wait()
    except BrokenPipeError:
        status, err = proc.wait(), proc.stderr.read().decode(errors="replace")
    finally:
        container.remove(force=True)
    if status != 0:
        raise ImageError(f"mksquashfs failed for {ref}: {' | '.join(err.strip().splitlines()[-3:])}",
                         fix="check free disk space and squashfs-tools >= 4.5 (for -tar)")
    os.replace(tmp, out)
    return f"{tool} (kit: docker export | mksquashfs -tar)"


def _enroot_import(ref: str, out: Path) -> str:
    out = Path(out)
    part = out.with_name(f".{out.name}.part")   # imported beside: a failed import leaves the one there whole
    part.unlink(missing_ok=True)  # enroot refuses to overwrite
    env = {**os.environ, "ENROOT_SQUASH_OPTIONS": "-comp zstd -Xcompression-level 3 -noappend"}
    try:
        r = subprocess.run(["enroot", "import", "-o", str(part), f"dockerd://{ref}"], capture_output=True, text=True,
                           env=env)
        if r.returncode != 0:
            raise ImageError(f"enroot import failed for {ref}: {' | '.join(r.stderr.strip().splitlines()[-3:])}",
                             fix="set KIT_SQSH_TOOL=kit to convert without enroot")
        os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    version = subprocess.run(["enroot", "version"], capture_output=True, text=True).stdout.strip()
    return f"enroot {version} (import dockerd://)"
