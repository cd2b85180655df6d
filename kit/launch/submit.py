"""Plan a submission for one or more sites and submit it.

The launcher shards only the pairs that are not complete yet, groups them into jobs (one backend
and one GPU count per site each), writes each group's pair list to a plan file the jobs read (so
every shard sees the same list), resolves each job at each site once (kit.launch.siteplan) and
submits it. `dry_run` renders everything and submits nothing."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kit.config.project import Project
from kit.config.roster import Run
from kit.config.sites import Site
from kit.errors import ConfigError, KitError, SubmitError
from kit.launch.jobscript import allow_listed_env
from kit.launch.jobsize import grown_filter, job_size
from kit.launch.owners import shards_text
from kit.launch.schedulers.base import Submission, get_scheduler
from kit.costs import PairTime
from kit.launch.autowall import AUTO, SizedGroup, auto_size
from kit.launch.history import measured_times
from kit.launch.siteplan import JobGroup, SitePlan, SubmitOptions, build_site_plan
from kit.launch.tracking import SubmissionRecord, append_record
from kit.plan import Pair, plan_text, select_pairs, site_slots, spread_slots
from kit.results import keys


@dataclass
class RunPlan:
    """A whole `kit run`: the pending pairs and each submission."""

    planned: list[Pair]
    pending: list[Pair]
    complete: int
    invalid: list[Pair]
    stale: list[Pair] = field(default_factory=list)   # among `pending`: rerun, their old checkpoints kept aside
    owned: dict[Pair, tuple[str, str]] = field(default_factory=dict)  # not pending: a live job has them (site:id, state)
    sites: list[SitePlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    held: list[Pair] = field(default_factory=list)    # pending, waiting for a calibration job (--walltime auto)

    def as_dict(self) -> dict:
        """JSON-ready summary (no script text)."""
        return {
            "planned": len(self.planned), "pending": len(self.pending), "complete": self.complete,
            "invalid": [[p.run, p.language] for p in self.invalid],
            "stale": [[p.run, p.language] for p in self.stale],
            "held": [[p.run, p.language] for p in self.held],
            "owned": [{"run": p.run, "language": p.language, "job": job, "state": state}
                      for p, (job, state) in sorted(self.owned.items())],
            "jobs": [{"site": s.site.name, "backend": s.backend, "gpus": s.gpus, "pairs": len(s.pairs),
                      "slots": s.slots, "shard_count": s.shard_count, "array_size": s.request.array_size,
                      "walltime_s": s.request.walltime_s, "image": s.image.ref,
                      "image_digest": s.image.env.get("KIT_IMAGE_DIGEST"), "sizing": s.group.note or None, "policy": s.policy,
                      "script": str(s.script_path), "plan": str(s.plan_path),
                      "command": s.submit_argv} for s in self.sites],
        }


def prepare_run(
    project: Project,
    sites: list[Site],
    sites_dir: Path,
    runs: list[Run],
    languages: list[str] | None,
    *,
    array: int | None = None,
    walltime: str | None = None,
    allow_unpinned: bool = False,
    images_lock: Path | None = None,
    dry_run: bool = False,
    resubmit: bool = False,
    now: datetime | None = None,
) -> RunPlan:
    """Plan every submission of a run: pending pairs, one job per (site, backend, GPU count).

    With `dry_run`, an image that is not built yet is shown as a placeholder (and a warning)
    instead of stopping the plan. With `walltime` "auto", shards are packed by the cost earlier
    checkpoints measured and each job's walltime fits its longest shard (kit.launch.autowall);
    `now` is the submission clock the OAR day window is read at (tests)."""
    if not sites:
        raise ConfigError("no site given", fix="pass --site NAME (or --sites a,b)")
    if len(sites) > 1 and array:
        raise ConfigError("--array applies to one site", fix="give the sites weights in sites.toml instead")
    plan = _states(project, sites, sites_dir, select_pairs(runs, project.benchmark, languages))
    if not plan.pending:
        return plan
    by_name = {r.name: r for r in runs}
    # sized before the schedulers are asked anything: a job that cannot fit is refused without ssh
    sizes = {(run, site.name): job_size(by_name[run], site, sites_dir) for run in sorted({p.run for p in plan.pending})
             for site in sites}
    plan.warnings += [f"{run} at {site}: {size.note}" for (run, site), size in sizes.items() if not size.checked]
    if not resubmit:
        owned = _owned(sites, sites_dir, dry_run, plan.warnings)
        plan.owned = {p: owned[p] for p in plan.pending if p in owned}
        plan.pending = [p for p in plan.pending if p not in owned]
    if not plan.pending:
        return plan
    options = SubmitOptions(walltime, allow_unpinned, images_lock, dry_run, now)
    # pairs share a job when their backend and their GPU count at every site agree
    groups: dict[tuple[str, tuple[int, ...]], list[Pair]] = {}
    for pair in plan.pending:
        gpus = tuple(sizes[pair.run, site.name].gpus for site in sites)
        groups.setdefault((by_name[pair.run].backend, gpus), []).append(pair)
    history = (measured_times(sites, sites_dir, {p.run for p in plan.pending}, project.benchmark.languages)
               if walltime == AUTO else None)
    for (backend, gpus), pairs in sorted(groups.items()):
        for sized_group in _sized(pairs, sites, array, history, now, plan):
            group = _job_group(backend, sized_group)
            slots = _slots(sized_group.count, sites)
            for site, site_gpus in zip(sites, gpus):
                if not slots[site.name]:
                    continue
                floors = [sizes[run, site.name].min_gpu_mib for run in {p.run for p in group.pairs}]
                grown = grown_filter(site, max((f for f in floors if f), default=None))
                sized = site if grown == site.gpu_filter else site.model_copy(update={"gpu_filter": grown})
                job = build_site_plan(project, sized, sites_dir, group, site_gpus, slots[site.name], options)
                if job.image.warning:
                    plan.warnings.append(job.image.warning)
                plan.sites.append(job)
    return plan


def _sized(pairs: list[Pair], sites: list[Site], array: int | None, history: list[PairTime] | None,
           now: datetime | None, plan: RunPlan) -> list[SizedGroup]:
    """A group's jobs: under --walltime auto packed by predicted cost (and calibration jobs; the pairs
    they wait for go to `plan.held`; `history` is None otherwise), else one job whose shards split the
    pairs by index, never more shards than pairs (an empty shard would only burn a job)."""
    if history is not None:
        auto = auto_size(pairs, history, sites, now or datetime.now(timezone.utc), array)
        plan.held += auto.held
        return auto.groups
    slots = array or (sites[0].weight if len(sites) == 1 else sum(s.weight for s in sites))
    return [SizedGroup(pairs, min(slots, len(pairs)), None, None, "")]


def _job_group(backend: str, sized: SizedGroup) -> JobGroup:
    """The job group of sized pairs, with its plan file text and digest."""
    text = plan_text(sized.pairs, sized.shards)
    return JobGroup(backend, tuple(sized.pairs), sized.count, text, hashlib.sha256(text.encode()).hexdigest()[:12],
                    sized.walltime_s, sized.note)


def _slots(count: int, sites: list[Site]) -> dict[str, list[int]]:
    """Each site's shard slots of a group of `count` shards: consecutive by weight."""
    if len(sites) == 1:
        return {sites[0].name: list(range(count))}
    slots, total = site_slots([(s.name, s.weight) for s in sites])
    if count <= total:
        return {name: [s for s in mine if s < count] for name, mine in slots.items()}
    return spread_slots(count, [(s.name, s.weight) for s in sites])


def _states(project: Project, sites: list[Site], sites_dir: Path, planned: list[Pair]) -> RunPlan:
    """The plan's pairs sorted by state: a pair complete at any chosen site is done (a remote site is
    read from its local mirror), a stale one is rerun with the pending ones."""
    from kit.launch.sitestatus import checkpoint_states

    states = checkpoint_states(project, sites, sites_dir, planned)
    return RunPlan(planned, [s.pair for s in states if s.state in (keys.PENDING, keys.STALE)],
                   sum(1 for s in states if s.state == keys.COMPLETE),
                   [s.pair for s in states if s.state == keys.INVALID], [s.pair for s in states if s.state == keys.STALE])


def _owned(sites: list[Site], sites_dir: Path, dry_run: bool, warnings: list[str]) -> dict[Pair, tuple[str, str]]:
    """Pairs your live kit jobs at these sites own (the scheduler asked; not in a dry run of a remote site)."""
    from kit.launch.owners import owned_pairs

    owned: dict[Pair, tuple[str, str]] = {}
    for site in sites:
        if dry_run and site.is_remote:
            warnings.append(f"site {site.name}: your live jobs there are not asked in a dry run (no ssh); "
                            "`kit run` asks before it submits")
            continue
        try:
            found = owned_pairs(site, get_scheduler(site.scheduler)(site), sites_dir)
        except KitError as exc:
            if not dry_run:   # kit will not risk submitting a pair twice
                raise SubmitError(f"site {site.name}: your live jobs could not be listed: {exc.one_line()}",
                                  fix="retry when the scheduler answers, or pass --resubmit to submit anyway") from None
            warnings.append(f"site {site.name}: your live jobs could not be listed ({exc.one_line()})")
            continue
        for pair, job in found.items():
            owned.setdefault(pair, (f"{site.name}:{job[0]}", job[1]))
    return owned


def submit_run(plan: RunPlan, state_dir: Path | None = None, *, now=None, show=lambda line: None) -> list[Submission]:
    """Check every site's policy (kit.launch.policy), then write plan files and scripts, submit each
    site's job and record it; never resubmits on failure. `now` is the submission clock (tests)."""
    from kit.launch.policy import check_before_submit

    check_before_submit(plan.sites, now, show)
    out = []
    for sp in plan.sites:
        frontend = sp.scheduler.frontend
        if sp.inputs:
            from kit.launch.remote import upload_inputs

            upload_inputs(frontend, sp.inputs)
        frontend.write_text(sp.plan_path, sp.plan_text)
        # beside the script (owners.shards_file): which shard each array task runs
        frontend.write_text(sp.script_path.with_suffix(".json"), shards_text(sp.slots, sp.shard_count))
        frontend.write_text(sp.script_path, sp.script_text, mode=0o755)
        env = allow_listed_env(os.environ, sp.site.forward_env)
        sub = sp.scheduler.submit(sp.request, sp.script_path, str(sp.log_dir), env)
        out.append(sub)
        if state_dir is not None:
            append_record(state_dir, SubmissionRecord(
                site=sp.site.name, scheduler=sp.site.scheduler, job_ids=list(sub.job_ids), slots=list(sp.slots),
                shard_count=sp.shard_count, pairs=[[p.run, p.language] for p in sp.pairs],
                plan_file=str(sp.plan_path), script=str(sp.script_path), command=list(sub.command),
                exit_codes=dict(sub.exit_codes)))
    return out
