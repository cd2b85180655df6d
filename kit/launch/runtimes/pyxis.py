"""The `pyxis` runtime: Slurm's `srun --container-image` with an Enroot squashfs.

Pyxis treats the image as a file only when the path starts with `/` or `.` (anything else
is a registry reference it would try to pull), so kit requires an absolute .sqsh path.
Every folder the job uses is mounted at the same path; the user's home is not mounted;
the variables kit passes are named in --container-env so the image's values never win
over the job's; the worker starts in kit's root folder. Settings (sites.toml)::

    [site.cluster]
    scheduler = "slurm"
    runtime = "pyxis"
    images = "/lustre/me/kit-images"    # absolute: where kit-<backend>-<id>.sqsh files are
"""

from __future__ import annotations

from kit.errors import ConfigError
from kit.launch.runtimes.base import Runtime, RuntimeContext, artifact_check_lines, list_paths, register_runtime


@register_runtime("pyxis")
class PyxisRuntime(Runtime):
    """srun --container-image=/abs/image.sqsh --container-mounts=... --no-container-mount-home ... kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The srun command line."""
        image = ctx.image or "/IMAGE.sqsh"
        if not image.startswith("/"):
            raise ConfigError(f"site {self.site.name!r}: the pyxis image {image!r} is not an absolute path "
                              "(pyxis would read it as a registry reference)",
                              fix="set images to an absolute folder in sites.toml")
        argv = ["srun", f"--container-image={image}"]
        mounts = ctx.mounts()
        if mounts:
            list_paths(tuple(p for p, _ in mounts), "pyxis", whitespace=True)   # (each mount an fstab line)
            argv.append("--container-mounts=" + ",".join(f"{b}:{b}:ro" if ro else f"{b}:{b}" for b, ro in mounts))
        argv.append("--no-container-mount-home")
        if ctx.env_names:
            argv.append("--container-env=" + ",".join(ctx.env_names))
        if ctx.workdir:
            argv.append(f"--container-workdir={ctx.workdir}")
        return [*argv, "kit", *ctx.kit_args]

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Refuse to start unless the sqsh is readable and has the recorded sha256."""
        return artifact_check_lines(ctx.image or "/IMAGE.sqsh")
