"""The runtime interface and its registry."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.registry import Registry

KNOWN_RUNTIMES = ("host", "docker", "apptainer", "pyxis", "enroot")
RUNTIMES: Registry[type["Runtime"]] = Registry("runtime", "kit.launch.runtimes", KNOWN_RUNTIMES)


@dataclass(frozen=True)
class RuntimeContext:
    """What a runtime needs to build its command."""

    kit_args: tuple[str, ...]                   # arguments after `kit`, e.g. ("shard", "--roster", ...)
    binds: tuple[str, ...] = ()                 # host folders the job writes (results, scratch, kit's root)
    env_names: tuple[str, ...] = ()             # variables to pass into the container by name
    image: str | None = None                    # docker reference, .sif or .sqsh path
    workdir: str | None = None                  # working folder inside the container
    ro_binds: tuple[str, ...] = ()              # host folders the job only reads (weights, inputs, token)

    def mounts(self) -> list[tuple[str, bool]]:
        """Every folder to mount as (path, read-only), parents before children, so a writable results
        folder inside a read-only workspace stays writable; a path in both lists is writable."""
        writable = set(self.binds)
        paths = dict.fromkeys([*self.binds, *self.ro_binds])
        return sorted(((p, p not in writable) for p in paths), key=lambda m: (m[0].rstrip("/").count("/"), m[0]))


# Variables a container runtime passes in on top of kit's list: the GPUs the scheduler gave the job.
GPU_ENV = ("CUDA_VISIBLE_DEVICES",)


def list_paths(paths: tuple[str, ...], runtime: str, sep: str = ",", *, whitespace: bool = False) -> tuple[str, ...]:
    """The paths, checked for what a runtime's bind/mount list cannot hold: its list separator `sep`, ':'
    (between a mount's source and target), a newline, and with `whitespace` any blank (a runtime that
    writes its mounts as fstab lines, or reads them with a pattern of non-blanks)."""
    held = ", ".join([*([repr(sep)] if sep != ":" else []), "':'", "a newline", *(["a blank"] if whitespace else [])])
    for p in paths:
        if sep in p or ":" in p or "\n" in p or (whitespace and any(c.isspace() for c in p)):
            raise ConfigError(f"the {runtime} runtime cannot bind the path {p!r} (its mounts cannot hold {held})",
                              fix=f"use folders without {held} (results, root, scratch, weights, benchmark)")
    return paths


class Runtime:
    """Builds the argv that runs kit inside (or outside) a container."""

    name = ""

    def __init__(self, site: Site) -> None:
        self.site = site

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The full command line of the worker."""
        raise NotImplementedError

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Shell lines the job script runs before the worker (already quoted)."""
        return []

    def cleanup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Shell lines the job script runs when it ends, however it ends (already quoted)."""
        return []


def register_runtime(name: str):
    """Class decorator adding a runtime to the registry."""
    return RUNTIMES.register(name)


def get_runtime(name: str) -> type[Runtime]:
    """The runtime class registered under `name`; a ConfigError lists the known ones."""
    return RUNTIMES.get(name)


def artifact_check_lines(image: str) -> list[str]:
    """Job-script lines that refuse to start unless the SIF/sqsh is readable and its sha256 is the one
    the launcher passed (KIT_IMAGE_SHA256): the job re-checks what the result will record."""
    q = shlex.quote(image)
    unreadable = shlex.quote(f"kit: image not readable: {image}; put it there: kit images push --site ")
    return [
        f'test -r {q} || {{ echo {unreadable}"${{KIT_SITE:-SITE}}" >&2; exit 2; }}',
        'if [ -n "${KIT_IMAGE_SHA256:-}" ]; then',
        f"  KIT_SEEN_SHA256=$(sha256sum {q} | cut -d' ' -f1)",
        '  [ "$KIT_SEEN_SHA256" = "$KIT_IMAGE_SHA256" ] || { echo "kit: image sha256 $KIT_SEEN_SHA256 is not the '
        'recorded $KIT_IMAGE_SHA256 (a half copy or another build); push the lock\'s image again: kit images push '
        '--site ${KIT_SITE:-SITE}" >&2; exit 2; }',
        "fi",
    ]


def image_id_check_lines(image: str) -> list[str]:
    """Job-script lines that refuse to start unless the Docker image's id is KIT_IMAGE_DIGEST."""
    q = shlex.quote(image)
    return [
        'if [ -n "${KIT_IMAGE_DIGEST:-}" ]; then',
        f"  KIT_SEEN_ID=$(docker image inspect --format '{{{{.Id}}}}' {q})",
        '  [ "$KIT_SEEN_ID" = "$KIT_IMAGE_DIGEST" ] || { echo "kit: image id $KIT_SEEN_ID is not the recorded '
        '$KIT_IMAGE_DIGEST; load or build that image (make image-BACKEND)" >&2; exit 2; }',
        "fi",
    ]
