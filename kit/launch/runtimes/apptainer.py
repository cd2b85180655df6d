"""The `apptainer` runtime: `apptainer exec --nv --containall --cleanenv` on a SIF.

With --cleanenv nothing from the job's environment enters the container except the
APPTAINERENV_<NAME> variables the job script exports for each name kit passes that is
set (plus CUDA_VISIBLE_DEVICES, the GPUs the scheduler gave the job). Every folder the
job reads or writes is bound at the same path. Under Slurm the container runs as a job
step (`srun apptainer exec ...`), so Slurm accounts and signals it. Settings (sites.toml)::

    [site.nancy]
    scheduler = "oar"                   # or "slurm"
    runtime = "apptainer"               # "singularity": the same, with the singularity command
    images = "/home/me/kit-images"      # where kit-<backend>-<id>.sif files are
"""

from __future__ import annotations

from kit.launch.runtimes.base import (GPU_ENV, Runtime, RuntimeContext, artifact_check_lines, list_paths,
                                      register_runtime)


@register_runtime("apptainer")
class ApptainerRuntime(Runtime):
    """[srun] apptainer exec --nv --containall --cleanenv --bind ... IMAGE.sif kit ..."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """The apptainer command line (a Slurm job step under Slurm)."""
        argv = ["srun"] if self.site.scheduler == "slurm" else []
        argv += [self.site.container_command, "exec", "--nv", "--containall", "--cleanenv", "--no-home"]
        mounts = ctx.mounts()
        if mounts:
            list_paths(tuple(p for p, _ in mounts), "apptainer")
            argv += ["--bind", ",".join(f"{p}:{p}:ro" if ro else p for p, ro in mounts)]
        if ctx.workdir:
            argv += ["--pwd", ctx.workdir]
        argv += [ctx.image or "IMAGE.sif", "kit", *ctx.kit_args]
        return argv

    def setup_lines(self, ctx: RuntimeContext) -> list[str]:
        """Export APPTAINERENV_<NAME> (SINGULARITYENV_<NAME> for the singularity command) for every variable
        the container must see and the job has."""
        names = dict.fromkeys([*ctx.env_names, *GPU_ENV])
        image = ctx.image or "IMAGE.sif"
        prefix = self.site.container_command.upper() + "ENV_"
        # an unset variable stays unset inside (an empty HF_TOKEN_PATH would name no file)
        return [f'[ -z "${{{name}+set}}" ] || export {prefix}{name}="${{{name}}}"' for name in names] + \
            artifact_check_lines(image)
