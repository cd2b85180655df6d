"""Status across a site: checkpoints decide completion; the scheduler explains the rest.

Every planned pair ends up complete, invalid, running, queued, failed, timeout,
cancelled, unknown (the scheduler could not say, with the reason) or unclaimed (no
submission planned it)."""

from __future__ import annotations

import os
from pathlib import Path

from kit.launch.site import ResolvedSite
from kit.launch.schedulers.base import JobState, JobStatus, Scheduler
from kit.launch.tracking import SubmissionRecord, latest_jobs
from kit.results.keys import PairState
from kit.results.identity import PlanExpectations
from kit.results.status import PairStatus
from kit.results.tree import ResultsTree

# normalized job state -> pair state, for a pair whose checkpoint is not there
PAIR_STATE = {
    JobState.PENDING: PairState.QUEUED,
    JobState.RUNNING: PairState.RUNNING,
    JobState.COMPLETED: PairState.FAILED,   # the job ended but wrote no valid checkpoint for this pair
    JobState.FAILED: PairState.FAILED,
    JobState.TIMEOUT: PairState.TIMEOUT,
    JobState.CANCELLED: PairState.CANCELLED,
    JobState.UNKNOWN: PairState.UNKNOWN,
}


def explain_missing(statuses: list[PairStatus], records: list[SubmissionRecord],
                    scheduler: Scheduler | None) -> list[PairStatus]:
    """Fill in the job and its state for every pending pair (pairs no submission planned become
    unclaimed) and for every stale pair a job is rerunning now (the others stay stale)."""
    missing = [s for s in statuses if s.state in (PairState.PENDING, PairState.STALE)]
    jobs = latest_jobs(records, [s.pair for s in missing])
    known: dict[str, JobStatus] = {}
    for job, rec in jobs.values():
        if job in rec.exit_codes:
            code = rec.exit_codes[job]
            known[job] = JobStatus(job, JobState.COMPLETED if code == 0 else JobState.FAILED, code,
                                   "" if code == 0 else f"exited {code}")
    to_poll = sorted({job for job, _ in jobs.values()} - set(known))
    if to_poll:
        if scheduler is None:
            known.update({j: JobStatus(j, JobState.UNKNOWN, reason="no scheduler to ask") for j in to_poll})
        else:
            try:
                known.update(scheduler.poll(to_poll))
            except Exception as exc:  # noqa: BLE001 - a broken scheduler answer must not crash status
                from kit.errors import KitError

                why = exc.one_line() if isinstance(exc, KitError) else f"the scheduler's answer could not be read ({exc})"
                known.update({j: JobStatus(j, JobState.UNKNOWN, reason=why, unasked=True) for j in to_poll})
    for job, st in list(known.items()):
        if st.unasked:   # said once per site as it is said for a frontend that cannot be reached
            known[job] = JobStatus(job, JobState.UNKNOWN, reason=f"{NOT_ASKED}: {st.reason}")
        elif st.name is not None and not st.name.startswith(JOB_NAME_PREFIX):
            # the recorded id now names another job (ids reused, another cluster under the site's name):
            # never shown as kit's, never cancelled
            known[job] = JobStatus(job, JobState.UNKNOWN, reason=f"the scheduler's job {job} is now another job "
                                   f"({st.name[:60]!r}), not the kit job this machine submitted")
    for s in missing:
        if s.state == PairState.STALE:
            active = jobs.get(s.pair) and known.get(jobs[s.pair][0])
            if active and active.state in (JobState.RUNNING, JobState.PENDING):
                s.job, s.state = active.job_id, PAIR_STATE[active.state]
                s.reasons = [f"job {active.job_id} {active.state}: rerunning a stale checkpoint"]
            continue
        if s.pair not in jobs:
            s.state = PairState.UNCLAIMED
            s.reasons = ["no submission planned this pair"]
            continue
        job, _ = jobs[s.pair]
        st = known.get(job) or JobStatus(job, JobState.UNKNOWN, reason="the scheduler did not report this job")
        s.job = job
        s.state = PAIR_STATE.get(st.state, PairState.UNKNOWN)
        detail = st.reason or (f"exit code {st.exit_code}" if st.exit_code not in (None, 0) else "")
        if st.state == JobState.COMPLETED:
            detail = "job completed without writing a valid checkpoint for this pair"
        s.reasons = [f"job {job} {st.state}" + (f": {detail}" if detail else "")]
    return statuses


# the reason of every pair of a site whose checkpoints could not be read (its frontend unreachable)
NOT_READ = "checkpoints not read"
# the reason of a pair whose job the site's scheduler could not be asked about (unreachable, erring)
NOT_ASKED = "the scheduler could not be asked"
# every job kit submits is named so (kit.launch.siteplan): an id the scheduler names otherwise is not kit's
JOB_NAME_PREFIX = "kit-"


def site_pair_status(project, site: ResolvedSite, runs, languages) -> list[PairStatus]:
    """Every planned pair of `runs` at one site, from its checkpoints and then its scheduler.

    A remote site's checkpoints are read from the local mirror, refreshed over ssh first;
    when its frontend cannot be reached every pair is `unknown`, with the reason."""
    from kit.errors import KitError
    from kit.launch.remote import sync_mirror
    from kit.launch.tracking import load_records
    from kit.plan import select_pairs

    pairs = select_pairs(runs, project.benchmark, languages)
    if site.is_remote:
        try:
            sync_mirror(site)
        except KitError as exc:
            return [PairStatus(p, PairState.UNKNOWN, Path(site.config.results), [f"{NOT_READ}: {exc.one_line()}"])
                    for p in sorted(pairs)]
    said_if_absent(site)
    with ResultsTree(site.checkpoints) as tree:
        statuses = tree.pair_states(pairs, PlanExpectations(project.benchmark, runs))
    records = load_records(site.state_dir, site.name)
    jobs = latest_jobs(records, [s.pair for s in statuses if s.state == PairState.COMPLETE])
    for s in statuses:  # the job that was to write a complete pair, for the table
        if s.pair in jobs:
            s.job = jobs[s.pair][0]
    return claimed_elsewhere(explain_missing(statuses, records, site.scheduler), site)


def claimed_elsewhere(statuses: list[PairStatus], site: ResolvedSite) -> list[PairStatus]:
    """Unclaimed pairs (no record here) that a live kit job of yours owns, submitted from another
    machine: asked of the scheduler (kit.launch.owners), so they show as queued or running."""
    from kit.errors import KitError
    from kit.launch.owners import owned_pairs

    unclaimed = [s for s in statuses if s.state == PairState.UNCLAIMED]
    if not unclaimed:
        return statuses
    try:
        owners = owned_pairs(site)
    except KitError as exc:
        for s in unclaimed:
            s.reasons.append(f"your live jobs could not be listed: {exc.one_line()}")
        return statuses
    for s in unclaimed:
        if s.pair in owners:
            job, state = owners[s.pair]
            s.job, s.state = job, PAIR_STATE[state]
            s.reasons = [f"job {job} {state} (found at the scheduler; no record of it on this machine)"]
    return statuses


# when sites disagree about a pair, the first state in this list is the one shown
MERGE_ORDER = (PairState.COMPLETE, PairState.RUNNING, PairState.QUEUED, PairState.FAILED, PairState.TIMEOUT, PairState.CANCELLED, PairState.INVALID, PairState.STALE, PairState.UNKNOWN,
               PairState.PENDING, PairState.UNCLAIMED)


def merge_sites(per_site: dict[str, list[PairStatus]]) -> list[PairStatus]:
    """One status per pair over several sites (the most advanced one), reasons prefixed with the site."""
    best: dict = {}
    rank = {state: i for i, state in enumerate(MERGE_ORDER)}
    for site, statuses in per_site.items():
        for st in statuses:
            st.reasons = [f"[{site}] " + "; ".join(st.reasons)] if st.reasons else [f"[{site}]"]
            cur = best.get(st.pair)
            if cur is None or rank.get(st.state, len(rank)) < rank.get(cur.state, len(rank)):
                best[st.pair] = st
    return [best[p] for p in sorted(best)]


def statuses_at_sites(project, sites: list[ResolvedSite], runs, languages) -> tuple[list[PairStatus], list[str]]:
    """Every planned pair over these sites: one row per pair, its most advanced state (complete
    anywhere wins), the site in its detail; and, one line each, every site whose checkpoints could not
    be read (taken before the merge, where a reachable site's state would hide an unreachable one)."""
    per_site = {site.name: site_pair_status(project, site, runs, languages) for site in sites}
    unread = [f"[{name}] {reason}" for name, statuses in per_site.items() for reason in unread_reasons(statuses)]
    return merge_sites(per_site), unread


def unread_reasons(statuses: list[PairStatus]) -> list[str]:
    """Why one site's checkpoints could not be read (its frontend unreachable) or its scheduler could not
    be asked about its jobs, each once; [] when both answered."""
    found = set()
    for st in statuses:
        for reason in st.reasons:
            if reason.startswith(NOT_READ):
                found.add(reason)
            elif NOT_ASKED in reason:   # ("job 500_1 unknown: the scheduler could not be asked: ...")
                found.add(reason[reason.index(NOT_ASKED):])
    return sorted(found)


def said_if_absent(site: ResolvedSite) -> None:
    """A warning when a local site's results folder does not exist though jobs were submitted there: its
    `results` is not where its jobs write (an unmounted file system, a typo), which would otherwise read as
    "nothing has run" without a word (a remote site's mirror says so when it is refreshed)."""
    from kit.errors import warn
    from kit.launch.tracking import records_file

    # a first sweep has no folder yet: said only once jobs were submitted to the site
    if not site.is_remote and not os.path.lexists(site.checkpoints) and records_file(site.state_dir, site.name).exists():
        warn(f"site {site.name}: its results folder {site.checkpoints} does not exist, though jobs were submitted "
             "there (its file system is not mounted, or the site's `results` is not where its jobs write)")


def checkpoint_states(project, sites: list[ResolvedSite], pairs) -> list[PairStatus]:
    """Checkpoint state of each pair over the sites' results trees, as of now (no ssh): complete
    anywhere wins, then invalid; a remote site never synced counts as having nothing yet."""
    per_site = {}
    expect = PlanExpectations(project.benchmark, list(project.roster.run))
    for site in sites:
        said_if_absent(site)
        with ResultsTree(site.checkpoints) as tree:
            per_site[site.name] = tree.pair_states(pairs, expect)
    return merge_sites(per_site)
