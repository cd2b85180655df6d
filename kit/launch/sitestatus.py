"""Status across a site: checkpoints decide completion; the scheduler explains the rest.

Every planned pair ends up complete, invalid, running, queued, failed, timeout,
cancelled, unknown (the scheduler could not say, with the reason) or unclaimed (no
submission planned it)."""

from __future__ import annotations

from pathlib import Path

from kit.launch.schedulers.base import (CANCELLED, COMPLETED, FAILED, PENDING, RUNNING, TIMEOUT, UNKNOWN, JobStatus,
                                        Scheduler)
from kit.launch.tracking import SubmissionRecord, latest_jobs
from kit.results import keys
from kit.results.identity import PlanExpectations
from kit.results.status import PairStatus, pair_states

# normalized job state -> pair state, for a pair whose checkpoint is not there
PAIR_STATE = {
    PENDING: keys.QUEUED,
    RUNNING: keys.RUNNING,
    COMPLETED: keys.FAILED,   # the job ended but wrote no valid checkpoint for this pair
    FAILED: keys.FAILED,
    TIMEOUT: keys.TIMEOUT,
    CANCELLED: keys.CANCELLED,
    UNKNOWN: keys.UNKNOWN,
}


def explain_missing(statuses: list[PairStatus], records: list[SubmissionRecord],
                    scheduler: Scheduler | None) -> list[PairStatus]:
    """Fill in the job and its state for every pending pair (pairs no submission planned become
    unclaimed) and for every stale pair a job is rerunning now (the others stay stale)."""
    missing = [s for s in statuses if s.state in (keys.PENDING, keys.STALE)]
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
        if s.state == keys.STALE:
            active = jobs.get(s.pair) and known.get(jobs[s.pair][0])
            if active and active.state in (RUNNING, PENDING):
                s.job, s.state = active.job_id, PAIR_STATE[active.state]
                s.reasons = [f"job {active.job_id} {active.state}: rerunning a stale checkpoint"]
            continue
        if s.pair not in jobs:
            s.state = keys.UNCLAIMED
            s.reasons = ["no submission planned this pair"]
            continue
        job, _ = jobs[s.pair]
        st = known.get(job) or JobStatus(job, UNKNOWN, reason="the scheduler did not report this job")
        s.job = job
        s.state = PAIR_STATE.get(st.state, keys.UNKNOWN)
        detail = st.reason or (f"exit code {st.exit_code}" if st.exit_code not in (None, 0) else "")
        if st.state == COMPLETED:
            detail = "job completed without writing a valid checkpoint for this pair"
        s.reasons = [f"job {job} {st.state}" + (f": {detail}" if detail else "")]
    return statuses


def state_dir_for(sites_file: Path) -> Path:
    """Where kit keeps its submission records: .kit/ beside sites.toml."""
    return Path(sites_file).resolve().parent / ".kit"


# the reason of every pair of a site whose checkpoints could not be read (its frontend unreachable)
NOT_READ = "checkpoints not read"


def site_pair_status(project, site, sites_file: Path, runs, languages) -> list[PairStatus]:
    """Every planned pair of `runs` at one site, from its checkpoints and then its scheduler.

    A remote site's checkpoints are read from the local mirror, refreshed over ssh first;
    when its frontend cannot be reached every pair is `unknown`, with the reason."""
    from kit.errors import KitError
    from kit.launch.remote import sync_mirror
    from kit.launch.schedulers.base import get_scheduler
    from kit.launch.tracking import load_records
    from kit.plan import select_pairs

    pairs = select_pairs(runs, project.benchmark, languages)
    sites_dir = Path(sites_file).resolve().parent
    if site.is_remote:
        try:
            sync_mirror(site, sites_dir)
        except KitError as exc:
            return [PairStatus(p, keys.UNKNOWN, Path(site.results), [f"{NOT_READ}: {exc.one_line()}"])
                    for p in sorted(pairs)]
    statuses = pair_states(results_dir(site, sites_dir), pairs, PlanExpectations(project.benchmark, runs))
    scheduler = get_scheduler(site.scheduler)(site)
    records = load_records(state_dir_for(sites_file), site.name)
    jobs = latest_jobs(records, [s.pair for s in statuses if s.state == keys.COMPLETE])
    for s in statuses:  # the job that was to write a complete pair, for the table
        if s.pair in jobs:
            s.job = jobs[s.pair][0]
    return claimed_elsewhere(explain_missing(statuses, records, scheduler), site, scheduler, sites_dir)


def claimed_elsewhere(statuses: list[PairStatus], site, scheduler, sites_dir: Path) -> list[PairStatus]:
    """Unclaimed pairs (no record here) that a live kit job of yours owns, submitted from another
    machine: asked of the scheduler (kit.launch.owners), so they show as queued or running."""
    from kit.errors import KitError
    from kit.launch.owners import owned_pairs

    unclaimed = [s for s in statuses if s.state == keys.UNCLAIMED]
    if not unclaimed:
        return statuses
    try:
        owners = owned_pairs(site, scheduler, sites_dir)
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


def results_dir(site, sites_dir: Path) -> Path:
    """Where kit reads a site's checkpoints here: its results tree, or a remote site's local mirror."""
    from kit.launch.paths import site_paths
    from kit.launch.remote import mirror_dir

    return mirror_dir(sites_dir, site.name) if site.is_remote else site_paths(site, sites_dir).results


# when sites disagree about a pair, the first state in this list is the one shown
MERGE_ORDER = (keys.COMPLETE, keys.RUNNING, keys.QUEUED, keys.FAILED, keys.TIMEOUT, keys.CANCELLED, keys.INVALID, keys.STALE, keys.UNKNOWN,
               keys.PENDING, keys.UNCLAIMED)


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


def statuses_at_sites(project, sites_file: Path, names: list[str] | None, runs, languages) -> list[PairStatus]:
    """Every planned pair over the named sites of sites.toml (all of them when `names` is None): one
    row per pair, its most advanced state (complete anywhere wins), the site in its detail."""
    from kit.config.sites import load_sites

    cfg = load_sites(sites_file)
    chosen = list(cfg.site) if names is None else names
    return merge_sites({name: site_pair_status(project, cfg.get(name), sites_file, runs, languages) for name in chosen})


def checkpoint_states(project, sites, sites_dir: Path, pairs) -> list[PairStatus]:
    """Checkpoint state of each pair over the sites' results trees, as of now (no ssh): complete
    anywhere wins, then invalid; a remote site never synced counts as having nothing yet."""
    per_site = {}
    expect = PlanExpectations(project.benchmark, list(project.roster.run))
    from kit.results.cache import CheckpointCache

    for site in sites:
        folder = results_dir(site, sites_dir)
        cache = CheckpointCache.open(folder, sections=False)
        per_site[site.name] = pair_states(folder, pairs, expect, cache.validate_all)
        cache.save()
    return merge_sites(per_site)
