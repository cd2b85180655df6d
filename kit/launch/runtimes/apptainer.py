"""The `apptainer` runtime: `apptainer exec --nv --containall --cleanenv` on a SIF.

With --cleanenv nothing from the job's environment enters the container except the
APPTAINERENV_<NAME> variables the job script exports for each name kit passes. Every
folder the job reads or writes is bound at the same path. Settings (sites.toml)::

    [site.nancy]
    scheduler = "oar"
    runtime = "apptainer"
    images = "/home/me/kit-images"      # where kit-<backend>-<id>.sif files are
"""

from __future__ import annotations

import shlex

from kit.launch.runtimes.base import Runtime, RuntimeContext, register_runtime


@register_runtime("apptainer")
class ApptainerRuntime(Runtime):
    """apptainer exec --nv --containall --cleanenv --bind ... IMAGE.sif kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The apptainer command line."""
        argv = ["apptainer", "exec", "--nv", "--containall", "--cleanenv", "--no-home"]
        if ctx.binds:
            argv += ["--bind", ",".join(ctx.binds)]
        argv += [ctx.image or "IMAGE.sif", "kit", *ctx.kit_args]
        return argv

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Export APPTAINERENV_<NAME> for every variable the container must see."""
        return [f'export APPTAINERENV_{name}="${{{name}:-}}"' for name in ctx.env_names] + [
            f"test -r {shlex.quote(ctx.image or 'IMAGE.sif')} || {{ echo \"kit: image not readable: "
            f"{(ctx.image or 'IMAGE.sif')!s}\" >&2; exit 2; }}"
        ]
