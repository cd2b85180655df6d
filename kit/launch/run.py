"""`kit run` as one library call, the one door into planning: each site resolved once with this
run's overrides, the project, the pairs and their states, the jobs (grouped, sized, sharded and
rendered per site), and the weights check, ready to print (a dry run) or to submit
(kit.launch.submit). `kit demo` and every caller plan through `prepare_kit_run`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kit.config.dataset import job_inputs_outside
from kit.config.project import Project
from kit.config.roster import Run
from kit.config.sites import Site
from kit.costs import PairTime
from kit.errors import ConfigError, KitError, SubmitError
from kit.launch.autowall import AUTO, SizedGroup, auto_size
from kit.launch.site import ResolvedSite
from kit.launch.siteplan import JobGroup, SitePlan, SubmitOptions
from kit.plan import Pair, plan_text, site_slots, spread_slots
from kit.results.keys import PairState


@dataclass(frozen=True)
class RunRequest:
    """What the user asked `kit run` for."""

    sites_file: Path
    site_names: tuple[str, ...]
    roster: Path
    benchmark: Path | None = None
    models: tuple[str, ...] = ()
    languages: tuple[str, ...] | None = None
    array: int | None = None
    walltime: str | None = None        # one value for every site, each in its scheduler's grammar, or "auto"
    job_types: tuple[str, ...] = ()    # OAR -t values replacing the sites' own
    dry_run: bool = False
    resubmit: bool = False
    allow_unpinned: bool = False
    images_lock: Path | None = None    # None: KIT_IMAGES_LOCK or containers/images.lock.json


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
    sizes: dict[tuple[str, str], Any] = field(default_factory=dict)   # (run, site) -> its JobSize

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
                      "image_digest": s.image.env.get("KIT_IMAGE_DIGEST"), "sizing": self._sizing(s), "policy": s.policy,
                      "script": str(s.script_path), "plan": str(s.plan_path),
                      "command": s.submit_argv} for s in self.sites],
            "warnings": list(self.warnings),
        }

    def _sizing(self, job: SitePlan) -> dict:
        """How a job was sized: each run's GPU count and its basis (size, source, memory, margin), the
        GPUs its image runs on and what the request asks for them, and the walltime's under --walltime auto."""
        runs = sorted({p.run for p in job.pairs})
        return {"gpus": [{"run": run, "gpus": size.gpus, "basis": size.note, "checked": size.checked}
                         for run in runs if (size := self.sizes.get((run, job.site.name))) is not None],
                "gpu_arch": job.arch_fit.as_dict(), "walltime": job.group.note or None}


@dataclass
class PreparedRun:
    """A planned `kit run`: its sites, every job, and where each run's weights stand."""

    sites: list[ResolvedSite]
    plan: RunPlan
    weights: object | None = None      # kit.launch.weights_check.WeightsPreflight; None when nothing is pending
    images: object | None = None       # kit.launch.images_check.ImagesPreflight; None when nothing is pending
    warnings: list[str] = field(default_factory=list)


def prepare_kit_run(req: RunRequest, now: datetime | None = None) -> PreparedRun:
    """Load the sites and the project, plan every job and check the weights and images; without `dry_run`
    a remote site's mirror is refreshed first (ssh) and missing weights or images stop the run
    (kit.launch.weights_check, kit.launch.images_check).
    `now` is the submission clock (--walltime auto reads the OAR day window at it)."""
    from kit.config.project import load_project
    from kit.launch.site import load_named_sites

    if not req.site_names:
        raise ConfigError("no site given", fix="pass --site NAME (or --sites a,b)")
    if len(req.site_names) > 1 and req.array:
        raise ConfigError("--array applies to one site", fix="give the sites weights in sites.toml instead")
    sites = [site_for_run(site, req.walltime, req.job_types) for site in load_named_sites(req.sites_file, list(req.site_names))]
    project = load_project(req.roster, req.benchmark, allow_unpinned=req.allow_unpinned)
    if not req.dry_run:  # which pairs a remote site already has: refresh its local mirror (ssh)
        from kit.launch.remote import sync_mirror

        for site in sites:
            if site.is_remote:
                sync_mirror(site)
    runs = project.roster.select(req.models)
    plan = _plan_jobs(project, sites, runs, req, now)
    prepared = PreparedRun(sites, plan, warnings=[*walltime_warnings([s.config for s in sites], req.walltime),
                                                  *(line for s in sites for line in s.config.ignored_keys()),
                                                  *plan.warnings])
    if plan.pending:
        from kit.launch.weights_check import preflight_weights

        # every language file a job will read parses and matches its pin: refused now (one line naming the
        # file and row), not by each job on its node
        languages = sorted({pair.language for pair in plan.pending})
        for language in languages:
            project.benchmark.load_language(language)
        # and it lies in the benchmark folder, which is all a job is given (bound into its container, or
        # copied to a remote site)
        pending_runs = {pair.run for pair in plan.pending}
        job_inputs_outside(project.benchmark, languages, [r for r in runs if r.name in pending_runs])

        # every run's weights must be where its jobs read them: refused now, not after a night in the queue
        prepared.weights = preflight_weights(plan, runs, dry_run=req.dry_run, roster=req.roster,
                                             sites_file=req.sites_file)
        prepared.warnings += prepared.weights.warnings
        from kit.launch.images_check import preflight_images

        # and every job's image where its runtime reads it, whole
        prepared.images = preflight_images(plan, dry_run=req.dry_run, sites_file=req.sites_file,
                                           images_lock=req.images_lock)
        if prepared.images.missing:
            summary = "; ".join(f"{c.backend} at {c.site}: {c.detail}" for c in prepared.images.missing)
            prepared.warnings.append(f"image missing, `kit run` will refuse: {summary}; fix: {prepared.images.fix}")
    return prepared


def _plan_jobs(project: Project, sites: list[ResolvedSite], runs: list[Run], req: RunRequest,
               now: datetime | None) -> RunPlan:
    """Every submission of a run: pending pairs, one job per (site, backend, GPU count).

    In a dry run an image that is not built yet is shown as a placeholder (and a warning) instead
    of stopping the plan. Under --walltime auto shards are packed by the cost earlier checkpoints
    measured and each job's walltime fits its longest shard (kit.launch.autowall)."""
    from kit.launch.jobsize import grown_filter, job_size
    from kit.launch.siteplan import build_site_plan
    from kit.plan import select_pairs

    plan = _states(project, sites, select_pairs(runs, project.benchmark, list(req.languages) if req.languages else None))
    if not plan.pending:
        return plan
    by_name = {r.name: r for r in runs}
    # sized before the schedulers are asked anything: a job that cannot fit is refused without ssh
    sizes = {(run, site.name): job_size(by_name[run], site) for run in sorted({p.run for p in plan.pending})
             for site in sites}
    plan.sizes = sizes
    plan.warnings += [f"{run} at {site}: {size.note}" for (run, site), size in sizes.items() if not size.checked]
    if not req.resubmit:
        owned = _owned(sites, req.dry_run, plan.warnings)
        plan.owned = {p: owned[p] for p in plan.pending if p in owned}
        plan.pending = [p for p in plan.pending if p not in owned]
    if not plan.pending:
        return plan
    options = SubmitOptions(req.walltime, req.allow_unpinned, req.images_lock, req.dry_run, now)
    # pairs share a job when their backend and their GPU count at every site agree
    groups: dict[tuple[str, tuple[int, ...]], list[Pair]] = {}
    for pair in plan.pending:
        gpus = tuple(sizes[pair.run, site.name].gpus for site in sites)
        groups.setdefault((by_name[pair.run].backend, gpus), []).append(pair)
    history = None
    if req.walltime == AUTO:
        from kit.launch.history import measured_times

        history = measured_times(sites, {p.run for p in plan.pending}, project.benchmark.languages)
    configs = [s.config for s in sites]
    for (backend, gpus), pairs in sorted(groups.items()):
        for sized_group in _sized(pairs, configs, req.array, history, now, plan):
            group = _job_group(backend, sized_group)
            slots = _slots(sized_group.count, configs)
            for site, site_gpus in zip(sites, gpus):
                if not slots[site.name]:
                    continue
                floors = [sizes[run, site.name].min_gpu_mib for run in {p.run for p in group.pairs}]
                grown = grown_filter(site.config, max((f for f in floors if f), default=None))
                sized = site if grown == site.config.gpu_filter else site.with_config(gpu_filter=grown)
                job = build_site_plan(project, sized, group, site_gpus, slots[site.name], options)
                for warning in (job.image.warning, job.arch_fit.warning):
                    if warning and warning not in plan.warnings:
                        plan.warnings.append(warning)
                plan.sites.append(job)
    given = {job.where.name for job in plan.sites}
    idle = [site.name for site in sites if site.name not in given]
    if len(sites) > 1 and idle:   # named in --sites, yet no job there: said, never left out in silence
        plan.warnings.append(f"site{'s' if len(idle) > 1 else ''} {', '.join(idle)} get{'' if len(idle) > 1 else 's'} "
                             f"no job: {len(plan.pending)} pending pair(s) fill fewer shards than the sites' weights "
                             "give slots (consecutive by weight, in --sites order)")
    return plan


def _sized(pairs: list[Pair], sites: list[Site], array: int | None, history: list[PairTime] | None,
           now: datetime | None, plan: RunPlan) -> list[SizedGroup]:
    """A group's jobs: under --walltime auto packed by predicted cost (and calibration jobs; the pairs
    they wait for go to `plan.held`; `history` is None otherwise), else one job whose shards split the
    pairs by index: --array N shards at one site (one without it), the sites' weights summed over
    several, never more shards than pairs (an empty shard would only burn a job)."""
    if history is not None:
        auto = auto_size(pairs, history, sites, now or datetime.now(timezone.utc), array)
        plan.held += auto.held
        return auto.groups
    # one site: one job unless --array asks for more (a site's weight is its share of a multi-site run;
    # as an array size it would load a large model once per task for a handful of pairs)
    slots = array or (1 if len(sites) == 1 else sum(s.weight for s in sites))
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


def _states(project: Project, sites: list[ResolvedSite], planned: list[Pair]) -> RunPlan:
    """The plan's pairs sorted by state: a pair complete at any chosen site is done (a remote site is
    read from its local mirror), a stale one is rerun with the pending ones."""
    from kit.launch.sitestatus import checkpoint_states

    states = checkpoint_states(project, sites, planned)
    return RunPlan(planned, [s.pair for s in states if s.state in (PairState.PENDING, PairState.STALE)],
                   sum(1 for s in states if s.state == PairState.COMPLETE),
                   [s.pair for s in states if s.state == PairState.INVALID], [s.pair for s in states if s.state == PairState.STALE])


def _owned(sites: list[ResolvedSite], dry_run: bool, warnings: list[str]) -> dict[Pair, tuple[str, str]]:
    """Pairs your live kit jobs at these sites own (the scheduler asked; not in a dry run of a remote site)."""
    from kit.launch.owners import owned_pairs

    owned: dict[Pair, tuple[str, str]] = {}
    for site in sites:
        if dry_run and site.is_remote:
            warnings.append(f"site {site.name}: your live jobs there are not asked in a dry run (no ssh); "
                            "`kit run` asks before it submits")
            continue
        try:
            found = owned_pairs(site)
        except KitError as exc:
            if not dry_run:   # kit will not risk submitting a pair twice
                raise SubmitError(f"site {site.name}: your live jobs could not be listed: {exc.one_line()}",
                                  fix="retry when the scheduler answers, or pass --resubmit to submit anyway") from None
            warnings.append(f"site {site.name}: your live jobs could not be listed ({exc.one_line()})")
            continue
        for pair, job in found.items():
            owned.setdefault(pair, (f"{site.name}:{job[0]}", job[1]))
    return owned


def walltime_warnings(sites: list[Site], walltime: str | None) -> list[str]:
    """A line per site whose walltime (--walltime, else the site's own) is short enough to be a
    mistake, saying how its scheduler reads it (kit.config.walltime.short_walltime): a warning, as a
    short job may be meant (a tiny model, a timeout test). A walltime that cannot run at all, an OAR
    night job longer than the longest night window, is a ConfigError: it would never start."""
    from kit.config.walltime import duration_words, short_walltime, walltime_seconds
    from kit.launch.policy import LONGEST_NIGHT_S, NIGHT_TYPE

    given = walltime if walltime and walltime != AUTO else None
    out = []
    for site in sites:
        text, where = given or site.walltime, f"site {site.name}{' (--walltime)' if given else ''}"
        note = short_walltime(text, site.scheduler)
        if note:
            out.append(f"{where}: {note}")
        elif site.scheduler == "oar" and NIGHT_TYPE in site.job_types \
                and walltime_seconds(text, site.scheduler) > LONGEST_NIGHT_S:
            raise ConfigError(f"{where}: walltime {text!r} is {duration_words(walltime_seconds(text, site.scheduler))}, "
                              f"longer than the longest night window (the weekend, Friday 19:00 to Monday 09:00, "
                              f"{duration_words(LONGEST_NIGHT_S)}): a night job this long never starts",
                              fix="shorten it (--walltime auto packs shards to fit), or submit it as another job type "
                                  "(--job-type besteffort)")
    return out


def site_for_run(resolved: ResolvedSite, walltime: str | None, job_types: tuple[str, ...]) -> ResolvedSite:
    """The site with this run's --job-type values, after checking --walltime in its scheduler's grammar
    and that night jobs are taken there (a ConfigError naming the option otherwise)."""
    from kit.config.loading import invalid_parts

    site = resolved.config
    if walltime and walltime != AUTO:
        from kit.config.walltime import walltime_seconds

        try:
            walltime_seconds(walltime, site.scheduler)
        except ValueError as exc:
            message, fix = invalid_parts(exc)
            raise ConfigError(f"--walltime: {message} (site {site.name}, {site.scheduler})",
                              fix=fix or "write it as the site's scheduler reads it, or in units: 90m, 1h30m, 2d") from None
    if not job_types:
        return resolved
    from kit.config.sites import split_job_types

    try:
        types = split_job_types(job_types)
    except ValueError as exc:
        message, fix = invalid_parts(exc)
        raise ConfigError(f"--job-type: {message}", fix=fix or "give OAR job types such as night, besteffort, exotic") from None
    if not types:   # `--job-type ''` would drop the site's night type without a word
        raise ConfigError(f"--job-type {' '.join(map(repr, job_types))} names no job type",
                          fix="give OAR job types such as night, besteffort, exotic, or leave --job-type out for "
                              "the site's own")
    if "night" in types and not site.night_jobs:
        raise ConfigError(f"site {site.name} takes no job type night (night_jobs = false in its sites.toml entry)",
                          fix=f"drop --job-type night for {site.name}: its day jobs must end before 09:00 or 19:00 "
                              "Europe/Paris (--walltime), or start after 19:00")
    from kit.config.sites import WHEN_JOB_TYPES

    kept = tuple(t for t in site.job_types if t not in WHEN_JOB_TYPES)   # exotic and the like stay
    return resolved.with_config(job_types=(*kept, *(t for t in types if t not in kept)))
