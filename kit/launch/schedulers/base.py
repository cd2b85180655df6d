"""The scheduler interface, its registry, and the submission record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.launch.frontend import Frontend
from kit.launch.jobscript import JobScript
from kit.launch.request import JobRequest
from kit.registry import Registry



class JobState(StrEnum):
    """kit's normalized job states: each scheduler's own names map onto these (a pair's state is
    kit.results.keys.PairState, a different word list)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


KNOWN_SCHEDULERS = ("local", "slurm", "oar")
SCHEDULERS: Registry[type["Scheduler"]] = Registry("scheduler", "kit.launch.schedulers", KNOWN_SCHEDULERS)


@dataclass
class Submission:
    """What a submission produced: job ids (one per array task when known) and the command run."""

    site: str
    job_ids: list[str]
    command: list[str]
    script: Path
    output: str = ""
    exit_codes: dict[str, int] = field(default_factory=dict)
    stopped_by: int | None = None   # the signal that stopped a job run here (local) before its end


@dataclass(frozen=True)
class LiveJob:
    """One of your jobs (or array tasks) the scheduler still holds: its name, state (pending or
    running) and 0-based position in its array (0 for a plain job)."""

    name: str
    state: str
    array_pos: int = 0


@dataclass(frozen=True)
class JobStatus:
    """One job's (or array task's) normalized state, with the exit code and reason when known."""

    job_id: str
    state: str
    exit_code: int | None = None
    reason: str = ""
    name: str | None = None   # the job's name as the scheduler reports it (None: not reported)
    unasked: bool = False     # the scheduler itself gave no answer (unreachable, an error, no readable reply)


class Scheduler:
    """Renders directives, submits scripts, polls and cancels jobs for one site."""

    name = ""
    array_index_expr = "${KIT_ARRAY_INDEX:-0}"

    def __init__(self, site: Site, frontend: Frontend | None = None) -> None:
        self.site = site
        self.frontend = frontend or Frontend(site.frontend)

    def poll(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """Normalized state of each job id; a missing or broken answer gives `unknown` with the reason."""
        return {j: JobStatus(j, JobState.UNKNOWN, reason=f"the {self.name} scheduler cannot be polled") for j in job_ids}

    def live_jobs(self) -> dict[str, LiveJob]:
        """{job id: LiveJob} of your jobs the scheduler still holds (pending or running); a SubmitError
        when it cannot say."""
        return {}

    def cancel(self, job_ids: list[str]) -> None:
        """Cancel these jobs."""
        raise NotImplementedError

    def cancel_argv(self, job_ids: list[str]) -> list[str]:
        """The exact command that cancels these jobs (printed by `kit cancel --dry-run`)."""
        raise ConfigError(f"the {self.name} scheduler cannot cancel jobs", fix="cancel them with the scheduler's tools")

    def prelude(self, request: JobRequest, log_dir: str) -> list[str]:
        """Directive lines for the top of the job script (#SBATCH, #OAR); none by default."""
        return []

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """The exact command that submits the script."""
        raise NotImplementedError

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str],
               started: Callable[[Submission], None] | None = None) -> Submission:
        """Submit the script; returns the job ids. A scheduler that runs the job before returning (local)
        calls `started` with the submission before the job starts and as each of its tasks ends, so that
        it is recorded while it runs; the others never call it."""
        raise NotImplementedError

    def job_script(self, base: JobScript, request: JobRequest, log_dir: str) -> JobScript:
        """The scheduler's version of a job script: its directives and array index variable."""
        from dataclasses import replace

        return replace(base, prelude=tuple(self.prelude(request, log_dir)), array_index_expr=self.array_index_expr)


def register_scheduler(name: str):
    """Class decorator adding a scheduler to the registry."""
    return SCHEDULERS.register(name)


def get_scheduler(name: str) -> type[Scheduler]:
    """The scheduler class registered under `name`; a ConfigError lists the known ones."""
    return SCHEDULERS.get(name)
