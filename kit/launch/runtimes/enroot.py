"""The `enroot` runtime: plain Enroot without Pyxis (`enroot create` then `enroot start`).

Settings (sites.toml)::

    [site.cluster]
    scheduler = "slurm"
    runtime = "enroot"
    images = "/lustre/me/kit-images"    # where kit-<backend>-<id>.sqsh files are
"""

from __future__ import annotations

import shlex

from kit.launch.jobscript import Expand
from kit.launch.runtimes.base import Runtime, RuntimeContext, artifact_check_lines, register_runtime


@register_runtime("enroot")
class EnrootRuntime(Runtime):
    """enroot start --mount P:P --env NAME ... kit-<job> kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The enroot start command line."""
        argv = ["enroot", "start"]
        for b in ctx.binds:
            argv += ["--mount", f"{b}:{b}"]
        for name in ctx.env_names:
            argv += ["--env", name]
        return [*argv, Expand("kit-${KIT_JOB_ID:-$$}"), "kit", *ctx.kit_args]

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Create the container from the sqsh (--force replaces a leftover of an earlier job)."""
        image = shlex.quote(ctx.image or "/IMAGE.sqsh")
        return [*artifact_check_lines(ctx.image or "/IMAGE.sqsh"),
                f'enroot create --force --name "kit-${{KIT_JOB_ID:-$$}}" {image}']
