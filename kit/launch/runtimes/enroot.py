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
from kit.launch.runtimes.base import Runtime, RuntimeContext, artifact_check_lines, list_paths, register_runtime


@register_runtime("enroot")
class EnrootRuntime(Runtime):
    """enroot start --mount P:P --env NAME ... kit-<job> kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The enroot start command line."""
        argv = ["enroot", "start"]
        # enroot's short SRC:DST form takes no flags: read-only folders are mounted as given. enroot reads
        # a mount as two runs of non-blanks around one ':' and turns each ':' into a blank
        mounts = ctx.mounts()
        list_paths(tuple(p for p, _ in mounts), "enroot", sep=":", whitespace=True)
        for b, _ in mounts:
            argv += ["--mount", f"{b}:{b}"]
        for name in ctx.env_names:
            argv += ["--env", name]
        return [*argv, Expand("kit-${KIT_JOB_ID:-$$}"), "kit", *ctx.kit_args]

    def cleanup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Remove the job's container (its unpacked root file system) when the job ends."""
        return ['enroot remove --force "kit-${KIT_JOB_ID:-$$}" >/dev/null 2>&1 || true']

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Create the container from the sqsh (--force replaces a leftover of an earlier job)."""
        image = shlex.quote(ctx.image or "/IMAGE.sqsh")
        return [*artifact_check_lines(ctx.image or "/IMAGE.sqsh"),
                f'enroot create --force --name "kit-${{KIT_JOB_ID:-$$}}" {image}']
