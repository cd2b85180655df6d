"""The `pyxis` runtime: Slurm's `srun --container-image` with an Enroot squashfs.

Pyxis treats the image as a file only when the path starts with `/` or `.`, so kit always
passes an absolute .sqsh path. The user's home is not mounted; the variables kit passes
are named in --container-env. Settings (sites.toml)::

    [site.cluster]
    scheduler = "slurm"
    runtime = "pyxis"
    images = "/lustre/me/kit-images"    # where kit-<backend>-<id>.sqsh files are
"""

from __future__ import annotations

from kit.launch.runtimes.base import Runtime, RuntimeContext, register_runtime


@register_runtime("pyxis")
class PyxisRuntime(Runtime):
    """srun --container-image=/abs/image.sqsh --container-mounts=... kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The srun command line."""
        argv = ["srun", f"--container-image={ctx.image or '/IMAGE.sqsh'}"]
        if ctx.binds:
            argv.append("--container-mounts=" + ",".join(f"{b}:{b}" for b in ctx.binds))
        argv.append("--no-container-mount-home")
        if ctx.env_names:
            argv.append("--container-env=" + ",".join(ctx.env_names))
        if ctx.workdir:
            argv.append(f"--container-workdir={ctx.workdir}")
        return [*argv, "kit", *ctx.kit_args]
