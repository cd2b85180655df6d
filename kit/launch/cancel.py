"""`kit cancel`: stop the jobs of a site that still own pairs without a checkpoint.

Which jobs: for every selected pair that is not complete, the job (array task) of the
newest submission that planned it (kit.launch.tracking), kept when the scheduler says it
is queued or running. Finished jobs are left alone; so are pairs no job owns."""

from __future__ import annotations

from dataclasses import dataclass, field
from kit.launch.site import ResolvedSite
from kit.plan import Pair
from kit.results.keys import PairState
from kit.results.status import PairStatus

LIVE = (PairState.QUEUED, PairState.RUNNING)


@dataclass
class CancelPlan:
    """The jobs to cancel at one site, the pairs each one owns, and the exact command."""

    site: str
    jobs: dict[str, list[Pair]] = field(default_factory=dict)     # job id -> its pending pairs
    command: list[str] = field(default_factory=list)
    not_live: dict[str, str] = field(default_factory=dict)       # job id -> why it is left alone
    unknown: list[str] = field(default_factory=list)             # why the site's jobs could not be known
    done: bool = False

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"site": self.site, "command": self.command, "cancelled": self.done,
                "jobs": {j: [[p.run, p.language] for p in pairs] for j, pairs in self.jobs.items()},
                "left_alone": self.not_live, "unknown": self.unknown}


def jobs_to_cancel(site: str, statuses: list[PairStatus]) -> CancelPlan:
    """Pure: the queued or running jobs that own pairs without a complete checkpoint."""
    plan = CancelPlan(site)
    for st in statuses:
        if st.job is None or st.state == PairState.COMPLETE:
            continue
        if st.state in LIVE:
            plan.jobs.setdefault(st.job, []).append(st.pair)
        else:
            plan.not_live.setdefault(st.job, st.state)
    plan.jobs = dict(sorted(plan.jobs.items()))
    return plan


def cancel_site(project, site: ResolvedSite, runs, languages, *, dry_run: bool = False) -> CancelPlan:
    """Find this site's live jobs that own pending pairs of `runs` and cancel them (unless dry_run)."""
    from kit.launch.sitestatus import site_pair_status, unread_reasons

    statuses = site_pair_status(project, site, runs, languages)
    plan = jobs_to_cancel(site.name, statuses)
    plan.unknown = unread_reasons(statuses)   # the frontend could not be asked: say so, not "nothing to cancel"
    if not plan.jobs:
        return plan
    scheduler = site.scheduler
    plan.command = scheduler.cancel_argv(list(plan.jobs))
    if not dry_run:
        scheduler.cancel(list(plan.jobs))
        plan.done = True
    return plan
