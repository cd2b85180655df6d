"""Facts about the job this worker runs in, read from the scheduler's and the launcher's
environment variables (the launcher passes KIT_* explicitly; nothing is guessed)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

# Variables the launcher sets in every job (see kit.launch.jobscript).
KIT_SITE = "KIT_SITE"
KIT_SCHEDULER = "KIT_SCHEDULER"
KIT_RUNTIME = "KIT_RUNTIME"
KIT_JOB_ID = "KIT_JOB_ID"
KIT_IMAGE_DIGEST = "KIT_IMAGE_DIGEST"
KIT_IMAGE_ARTIFACT = "KIT_IMAGE_ARTIFACT"
KIT_IMAGE_ARTIFACT_PATH = "KIT_IMAGE_ARTIFACT_PATH"
KIT_IMAGE_SHA256 = "KIT_IMAGE_SHA256"
KIT_LOCK_SHA256 = "KIT_LOCK_SHA256"
KIT_COMMIT = "KIT_COMMIT"


@dataclass(frozen=True)
class JobInfo:
    """Where this worker runs: site, scheduler, job and array ids, node, runtime."""

    site: str | None
    scheduler: str | None
    job_id: str | None
    array_index: int | None
    node: str
    runtime: str | None


def _first(env: dict[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def job_info(env: dict[str, str] | None = None) -> JobInfo:
    """Read the job facts from the environment (Slurm, OAR or kit's own variables)."""
    env = dict(os.environ if env is None else env)
    scheduler = env.get(KIT_SCHEDULER) or (
        "slurm" if "SLURM_JOB_ID" in env else "oar" if "OAR_JOB_ID" in env else None
    )
    index = _first(env, "SLURM_ARRAY_TASK_ID", "OAR_ARRAY_INDEX")
    return JobInfo(
        site=env.get(KIT_SITE),
        scheduler=scheduler,
        job_id=_first(env, "SLURM_JOB_ID", "OAR_JOB_ID", KIT_JOB_ID),
        array_index=int(index) if index and index.isdigit() else None,
        node=socket.gethostname(),
        runtime=env.get(KIT_RUNTIME),
    )
