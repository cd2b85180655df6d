"""Apptainer where the host has none: the helper image kit/apptainer:sid (Debian sid's apptainer,
made by scripts/dev/apptainer-image.sh from a debootstrapped base), run through the docker SDK.

Building a SIF runs as root in the helper. Executing one runs as an ordinary user (uid 1000)
with seccomp, AppArmor and system paths unconfined: Apptainer needs unprivileged user
namespaces and its own /proc mount, and root inside a container lacks the capabilities it asks
for. `--unsquash` extracts the SIF to a temporary folder (a tmpfs here) because /dev/fuse is
not open to that user."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kit.errors import ImageError
from kit.images import engine

HELPER = os.environ.get("KIT_APPTAINER_HELPER", "kit/apptainer:sid")
EXEC_SECURITY = ["seccomp=unconfined", "apparmor=unconfined"]


@dataclass
class Mount:
    """A host folder or file bound into the helper container."""

    source: str
    target: str
    read_only: bool = True


@dataclass
class Result:
    """Exit status and output of a helper run."""

    status: int
    stdout: str
    stderr: str
    argv: list[str] = field(default_factory=list)


def ensure_helper() -> str:
    """The helper image tag, or an ImageError saying how to make it."""
    if not engine.has_image(HELPER):
        raise ImageError(f"the Apptainer helper image {HELPER} is not in the local engine and this host has no "
                         "apptainer", fix="sudo scripts/dev/apptainer-image.sh (or install apptainer)")
    return HELPER


def run(argv: list[str], mounts: list[Mount], *, user: str | None = None, env: dict[str, str] | None = None,
        unconfined: bool = False, tmpfs_mb: int = 0, timeout: int = 3600, workdir: str | None = None) -> Result:
    """Run argv in a fresh helper container and wait; the container is always removed."""
    import docker.types

    image = ensure_helper()
    api = engine.client().api
    host = api.create_host_config(
        mounts=[docker.types.Mount(m.target, m.source, type="bind", read_only=m.read_only) for m in mounts],
        security_opt=EXEC_SECURITY if unconfined else None,
        tmpfs={"/tmp": f"rw,exec,nosuid,size={tmpfs_mb}m,mode=1777"} if tmpfs_mb else None)
    if unconfined:
        # what the CLI's `--security-opt systempaths=unconfined` sends: no masked or read-only
        # /proc and /sys paths (the API itself does not know that option)
        host["MaskedPaths"], host["ReadonlyPaths"] = [], []
    cid = api.create_container(image, command=argv, user=user, environment=env or {}, host_config=host,
                               working_dir=workdir)["Id"]
    try:
        api.start(cid)
        status = api.wait(cid, timeout=timeout).get("StatusCode", 1)
        out = api.logs(cid, stdout=True, stderr=False).decode(errors="replace")
        err = api.logs(cid, stdout=False, stderr=True).decode(errors="replace")
    finally:
        api.remove_container(cid, force=True)
    return Result(status, out, err, list(argv))


def version() -> str:
    """`apptainer --version` inside the helper."""
    r = run(["apptainer", "--version"], [])
    return r.stdout.strip() or "apptainer (unknown version)"
