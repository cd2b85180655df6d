"""Run a command inside each artifact form, the way the clusters' runtimes do:

- oci:  `docker run --rm --user UID:GID` with bound folders and explicit variables;
- sif:  `apptainer exec --unsquash --containall --cleanenv --no-home --bind ...` (the host's
        apptainer, else inside the helper image as uid 1000), variables as APPTAINERENV_*;
- sqsh: as Enroot starts a container: the squashfs unpacked (unsquashfs) into a tmpfs, a new
        mount and PID namespace (unshare) with /proc, /dev and the bound folders mounted, then
        chroot as the given user and `/bin/sh /etc/rc CMD` with /etc/environment's variables
        plus the given ones and nothing else. Needs root on the host.
Bound folders keep their host paths inside."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit.errors import ImageError
from kit.images import engine, helper
from kit.settings import setting_int


@dataclass
class Outcome:
    """Exit status and output of a command run in an artifact."""

    status: int
    stdout: str
    stderr: str


# as kit.launch.runtimes.docker: vLLM's engine needs more /dev/shm than Docker's 64 MiB (a cap, not an allocation)
SHM_SIZE = "16g"


def run_oci(image: str, argv: list[str], binds: list[str], env: dict[str, str], user: str = "1000:1000") -> Outcome:
    """docker run --rm of the image."""
    import docker.types

    c = engine.client().containers.create(
        image, command=argv, user=user, environment={"HOME": "/tmp", **env}, detach=True,
        mounts=[docker.types.Mount(b, b, type="bind") for b in binds], shm_size=SHM_SIZE)
    try:
        c.start()
        status = c.wait(timeout=3600).get("StatusCode", 1)
        return Outcome(status, c.logs(stdout=True, stderr=False).decode(errors="replace"),
                       c.logs(stdout=False, stderr=True).decode(errors="replace"))
    finally:
        c.remove(force=True)


def run_sif(sif: Path, argv: list[str], binds: list[str], env: dict[str, str]) -> Outcome:
    """apptainer exec of the SIF, on the host or in the helper image."""
    sif = Path(sif).resolve()
    bind = ["--bind", ",".join(binds)] if binds else []
    if shutil.which("apptainer"):
        cmd = ["apptainer", "exec", "--containall", "--cleanenv", "--no-home", *bind, str(sif), *argv]
        penv = {**os.environ, **{f"APPTAINERENV_{k}": v for k, v in env.items()}}
        r = subprocess.run(cmd, capture_output=True, text=True, env=penv)
        return Outcome(r.returncode, r.stdout, r.stderr)
    cmd = ["apptainer", "exec", "--unsquash", "--containall", "--cleanenv", "--no-home", *bind,
           f"/sif/{sif.name}", *argv]
    mounts = [helper.Mount(str(sif.parent), "/sif"), *[helper.Mount(b, b, read_only=False) for b in binds]]
    r = helper.run(cmd, mounts, user="1000:1000", unconfined=True, tmpfs_mb=setting_int("KIT_SIF_TMP_MB", 6000),
                   env={f"APPTAINERENV_{k}": v for k, v in env.items()})
    return Outcome(r.status, r.stdout, r.stderr)


def read_environment(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an Enroot /etc/environment (comments and blanks skipped)."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def _enter_script(rootfs: Path, binds: list[str], user: str, env: dict[str, str], argv: list[str]) -> str:
    q = shlex.quote
    lines = ["set -e", f"R={q(str(rootfs))}", 'mount -t proc proc "$R/proc"', 'mount --rbind /dev "$R/dev"',
             'mount --rbind /sys "$R/sys"']
    for b in binds:
        lines += [f'mkdir -p "$R"{q(b)}', f'mount --bind {q(b)} "$R"{q(b)}']
    assigns = " ".join(q(f"{k}={v}") for k, v in env.items())
    lines.append(f'exec chroot --userspec={q(user)} "$R" /usr/bin/env -i {assigns} /bin/sh /etc/rc '
                 + " ".join(q(a) for a in argv))
    return "\n".join(lines) + "\n"


def run_sqsh(sqsh: Path, argv: list[str], binds: list[str], env: dict[str, str], user: str = "1000:1000") -> Outcome:
    """Unpack the sqsh and enter it as Enroot would (root only; see the module docstring)."""
    if os.geteuid() != 0 or not shutil.which("unsquashfs") or not shutil.which("unshare"):
        raise ImageError("entering a sqsh without Enroot needs root, unsquashfs and unshare",
                         fix="run as root with squashfs-tools and util-linux installed (or use enroot start)")
    work = Path(tempfile.mkdtemp(prefix="kit-sqsh-", dir="/var/tmp"))
    size = os.environ.get("KIT_SQSH_TMPFS", "16g")  # a limit, not an allocation; unpacked on disk without it
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "kit-sqsh", str(work)],
                             capture_output=True).returncode == 0
    try:
        rootfs = work / "rootfs"
        r = subprocess.run(["unsquashfs", "-no-xattrs", "-q", "-n", "-d", str(rootfs), str(sqsh)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ImageError(f"unsquashfs {sqsh} failed: {r.stderr.strip()[-300:]}", fix="convert the image again")
        full_env = {**read_environment(rootfs / "etc/environment"), "HOME": "/tmp", **env}
        script = _enter_script(rootfs, binds, user, full_env, argv)
        r = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True)
        return Outcome(r.returncode, r.stdout, r.stderr)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(work)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
