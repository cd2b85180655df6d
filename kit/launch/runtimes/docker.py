"""The `docker` runtime: `docker run --rm` of the built image (workstation clusters, tests).

Folders are bound at the same path so every path in the command stays valid; the
container runs as the submitting user; variables are passed by name (`-e NAME`), so
their values never appear on the command line. With `--gpus all` the container sees every
GPU of the node; CUDA_VISIBLE_DEVICES (set by Slurm for the job's GPUs) is passed in so
the worker uses only its own. /dev/shm is capped at 16g (`--shm-size`): Docker's 64 MiB
default stops vLLM's engine. Settings (sites.toml)::

    [site.workstation]
    scheduler = "slurm"
    runtime = "docker"
    docker_image = "kit/transformers-5.17:cpu"   # default: the tag in images.lock.json
"""

from __future__ import annotations

from kit.launch.jobscript import Expand
from kit.launch.runtimes.base import (GPU_ENV, Runtime, RuntimeContext, image_id_check_lines, list_paths,
                                      register_runtime)


SHM_SIZE = "16g"


@register_runtime("docker")
class DockerRuntime(Runtime):
    """docker run --rm [--gpus all] -e NAME ... -v P:P ... IMAGE kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The docker command line (user and group filled in by the job script)."""
        # /dev/shm: Docker's default 64 MiB stops vLLM's engine (its shared-memory queues want 160 MiB
        # even for a tiny model on CPU; NCCL wants more): a cap, taken from memory only when used
        argv = ["docker", "run", "--rm", "--init", "--user", Expand("${KIT_UID}:${KIT_GID}"), "--shm-size", SHM_SIZE,
                "-e", "HOME=/tmp"]
        if self.site.gpus_per_node:
            argv += ["--gpus", "all"]
        for name in dict.fromkeys([*ctx.env_names, *GPU_ENV]):
            argv += ["-e", name]
        mounts = ctx.mounts()
        list_paths(tuple(p for p, _ in mounts), "docker", sep=":")
        for b, ro in mounts:
            argv += ["-v", f"{b}:{b}:ro" if ro else f"{b}:{b}"]
        if ctx.workdir:
            argv += ["-w", ctx.workdir]
        return [*argv, ctx.image or self.site.docker_image or "IMAGE", "kit", *ctx.kit_args]

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """The numeric user and group the container runs as."""
        return ["KIT_UID=$(id -u)", "KIT_GID=$(id -g)", *image_id_check_lines(ctx.image or self.site.docker_image or "IMAGE")]
