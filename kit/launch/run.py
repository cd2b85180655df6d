"""`kit run` as one library call: the sites with this run's overrides, the project, the plan of
every job, and the weights check, ready to print (a dry run) or to submit (kit.launch.submit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.launch.autowall import AUTO
from kit.launch.submit import RunPlan


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

    @property
    def sites_dir(self) -> Path:
        """The folder relative site paths are read against."""
        return self.sites_file.resolve().parent


@dataclass
class PreparedRun:
    """A planned `kit run`: its sites, every job, and where each run's weights stand."""

    sites: list[Site]
    plan: RunPlan
    weights: object | None = None      # kit.launch.weights_check.WeightsPreflight; None when nothing is pending
    warnings: list[str] = field(default_factory=list)


def prepare_kit_run(req: RunRequest, now: datetime | None = None) -> PreparedRun:
    """Load the sites and the project, plan every job and check the weights; without `dry_run` a
    remote site's mirror is refreshed first (ssh) and missing weights stop the run (kit.launch.weights_check).
    `now` is the submission clock (--walltime auto reads the OAR day window at it)."""
    from kit.config.project import load_project
    from kit.config.sites import load_sites
    from kit.launch.submit import prepare_run

    sites = [site_for_run(load_sites(req.sites_file).get(name), req.walltime, req.job_types)
             for name in req.site_names]
    project = load_project(req.roster, req.benchmark, allow_unpinned=req.allow_unpinned)
    if not req.dry_run:  # which pairs a remote site already has: refresh its local mirror (ssh)
        from kit.launch.remote import sync_mirror

        for site in sites:
            if site.is_remote:
                sync_mirror(site, req.sites_dir)
    runs = project.roster.select(req.models)
    plan = prepare_run(project, sites, req.sites_dir, runs, list(req.languages) if req.languages else None,
                       array=req.array, walltime=req.walltime, allow_unpinned=req.allow_unpinned,
                       dry_run=req.dry_run, resubmit=req.resubmit, now=now)
    prepared = PreparedRun(sites, plan, warnings=[*walltime_warnings(sites, req.walltime), *plan.warnings])
    if plan.pending:
        from kit.launch.weights_check import preflight_weights

        # every run's weights must be where its jobs read them: refused now, not after a night in the queue
        prepared.weights = preflight_weights(plan, runs, req.sites_dir, dry_run=req.dry_run, roster=req.roster,
                                             sites_file=req.sites_file)
        prepared.warnings += prepared.weights.warnings
    return prepared


def walltime_warnings(sites: list[Site], walltime: str | None) -> list[str]:
    """A line per site whose walltime (--walltime, else the site's own) is too short for any job,
    saying how its scheduler reads it (kit.config.walltime.short_walltime), or too long for any
    night window of an OAR site that submits night jobs."""
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
            out.append(f"{where}: walltime {text!r} is {duration_words(walltime_seconds(text, site.scheduler))}, "
                       f"longer than the longest night window (the weekend, Friday 19:00 to Monday 09:00, "
                       f"{duration_words(LONGEST_NIGHT_S)}): a night job this long never starts; shorten it "
                       "(--walltime auto packs shards to fit)")
    return out


def site_for_run(site: Site, walltime: str | None, job_types: tuple[str, ...]) -> Site:
    """The site with this run's --job-type values, after checking --walltime in its scheduler's grammar
    and that night jobs are taken there (a ConfigError naming the option otherwise)."""
    from kit.config.loading import invalid_parts

    if walltime and walltime != AUTO:
        from kit.config.walltime import walltime_seconds

        try:
            walltime_seconds(walltime, site.scheduler)
        except ValueError as exc:
            message, fix = invalid_parts(exc)
            raise ConfigError(f"--walltime: {message} (site {site.name}, {site.scheduler})",
                              fix=fix or "write it as the site's scheduler reads it, or in units: 90m, 1h30m, 2d") from None
    if not job_types:
        return site
    from kit.config.sites import split_job_types

    try:
        types = split_job_types(job_types)
    except ValueError as exc:
        message, fix = invalid_parts(exc)
        raise ConfigError(f"--job-type: {message}", fix=fix or "give OAR job types such as night, besteffort, exotic") from None
    if "night" in types and not site.night_jobs:
        raise ConfigError(f"site {site.name} takes no job type night (night_jobs = false in its sites.toml entry)",
                          fix=f"drop --job-type night for {site.name}: its day jobs must end before 09:00 or 19:00 "
                              "Europe/Paris (--walltime), or start after 19:00")
    return site.model_copy(update={"job_types": types})
