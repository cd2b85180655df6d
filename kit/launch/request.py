"""One generic job request, translated by each scheduler (units in the names)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobRequest:
    """What a job asks the scheduler for."""

    name: str
    gpus: int
    walltime_s: int
    array_size: int = 1
    mem_gb: int | None = None
    cpus: int | None = None
    mem_per_gpu_gb: int | None = None
    gpu_filter: str | None = None       # OAR -p for this job (the site's narrowed to its image's GPUs); None: the site's
    constraint: str | None = None       # Slurm --constraint for this job, likewise; None: the site's

    @property
    def walltime_hms(self) -> str:
        """H:MM:SS, the form both OAR and Slurm accept."""
        h, rem = divmod(self.walltime_s, 3600)
        m, s = divmod(rem, 60)
        return f"{h}:{m:02d}:{s:02d}"
