"""Status across a site: checkpoints decide completion; the scheduler explains the rest.

Every planned pair ends up complete, invalid, running, queued, failed, timeout,
cancelled, unknown (the scheduler could not say, with the reason) or unclaimed (no
submission planned it)."""

from __future__ import annotations

from pathlib import Path

from kit.launch.schedulers.base import (CANCELLED, COMPLETED, FAILED, PENDING, RUNNING, TIMEOUT, UNKNOWN, JobStatus,
                                        Scheduler)
from kit.launch.tracking import SubmissionRecord, latest_jobs
from kit.results import keys as K
from kit.results.status import PairStatus

# normalized job state -> pair state, for a pair whose checkpoint is not there
PAIR_STATE = {
    PENDING: K.QUEUED,
    RUNNING: K.RUNNING,
    COMPLETED: K.FAILED,   # the job ended but wrote no valid checkpoint for this pair
    FAILED: K.FAILED,
    TIMEOUT: K.TIMEOUT,
    CANCELLED: K.CANCELLED,
    UNKNOWN: K.UNKNOWN,
}


def explain_missing(statuses: list[PairStatus], records: list[SubmissionRecord],
                    scheduler: Scheduler | None) -> list[PairStatus]:
    """Fill in the job and its state for every pending pair; pairs no submission planned become unclaimed."""
    missing = [s for s in statuses if s.state == K.PENDING]
    jobs = latest_jobs(records, [s.pair for s in missing])
    known: dict[str, JobStatus] = {}
    for job, rec in jobs.values():
        if job in rec.exit_codes:
            code = rec.exit_codes[job]
            known[job] = JobStatus(job, COMPLETED if code == 0 else FAILED, code,
                                   "" if code == 0 else f"exited {code}")
    to_poll = sorted({job for job, _ in jobs.values()} - set(known))
    if to_poll:
        if scheduler is None:
            known.update({j: JobStatus(j, UNKNOWN, reason="no scheduler to ask") for j in to_poll})
        else:
            try:
                known.update(scheduler.poll(to_poll))
            except Exception as exc:  # noqa: BLE001 - a broken scheduler answer must not crash status
                known.update({j: JobStatus(j, UNKNOWN, reason=f"{type(exc).__name__}: {exc}") for j in to_poll})
    for s in missing:
        if s.pair not in jobs:
            s.state = K.UNCLAIMED
            s.reasons = ["no submission planned this pair"]
            continue
        job, _ = jobs[s.pair]
        st = known.get(job) or JobStatus(job, UNKNOWN, reason="the scheduler did not report this job")
        s.job = job
        s.state = PAIR_STATE.get(st.state, K.UNKNOWN)
        detail = st.reason or (f"exit code {st.exit_code}" if st.exit_code not in (None, 0) else "")
        if st.state == COMPLETED:
            detail = "job completed without writing a valid checkpoint for this pair"
        s.reasons = [f"job {job} {st.state}" + (f": {detail}" if detail else "")]
    return statuses


def state_dir_for(sites_file: Path) -> Path:
    """Where kit keeps its submission records: .kit/ beside sites.toml."""
    return Path(sites_file).resolve().parent / ".kit"


def site_pair_status(project, site, sites_file: Path, runs, languages) -> list[PairStatus]:
    """Every planned pair of `runs` at one site, from its checkpoints and then its scheduler."""
    from kit.errors import SubmitError
    from kit.launch.paths import site_path
    from kit.launch.schedulers.base import get_scheduler
    from kit.launch.tracking import load_records
    from kit.plan import select_pairs
    from kit.results.status import pair_states

    pairs = select_pairs(runs, project.benchmark, languages)
    sites_dir = Path(sites_file).resolve().parent
    if site.is_remote:
        raise SubmitError(f"site {site.name!r}: status of a remote results tree is not available yet",
                          fix=f"copy the results here and run `kit status DIR`")
    statuses = pair_states(site_path(site, site.results, sites_dir), pairs, project.benchmark.item_ids)
    scheduler = get_scheduler(site.scheduler)(site)
    return explain_missing(statuses, load_records(state_dir_for(sites_file), site.name), scheduler)
