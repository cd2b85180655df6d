"""Plan a submission for one or more sites and submit it.

The launcher shards only the pairs that are not complete yet, writes that pair list to a
plan file the jobs read (so every shard sees the same list), renders one job script per
site and submits it. `dry_run` renders everything and submits nothing."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.project import Project
from kit.config.roster import Run
from kit.config.sites import Site
from kit.config.walltime import walltime_seconds
from kit.errors import ConfigError, KitError, SubmitError
from kit.launch.jobscript import JobScript, allow_listed_env, render_job_script
from kit.launch.jobsize import grown_filter, job_size
from kit.launch.owners import job_name, plan_file, shards_text
from kit.launch.paths import site_path
from kit.launch.request import JobRequest
from kit.launch.runtimes.base import RuntimeContext, get_runtime
from kit.launch.schedulers.base import Scheduler, Submission, get_scheduler
from kit.launch.tracking import SubmissionRecord, append_record
from kit.plan import Pair, plan_text, select_pairs, site_slots
from kit.results import keys


@dataclass
class SitePlan:
    """One job submission: a site, one backend image, its pairs, rendered and ready."""

    site: Site
    backend: str
    gpus: int
    pairs: list[Pair]
    slots: list[int]
    shard_count: int
    request: JobRequest
    script_path: Path
    script_text: str
    plan_path: Path
    plan_text: str
    submit_argv: list[str]
    env: dict[str, str]
    scheduler: Scheduler
    log_dir: Path
    inputs: dict[str, Path] = field(default_factory=dict)   # path on the frontend -> local file or folder to copy


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

    def as_dict(self) -> dict:
        """JSON-ready summary (no script text)."""
        return {
            "planned": len(self.planned), "pending": len(self.pending), "complete": self.complete,
            "invalid": [[p.run, p.language] for p in self.invalid],
            "stale": [[p.run, p.language] for p in self.stale],
            "owned": [{"run": p.run, "language": p.language, "job": job, "state": state}
                      for p, (job, state) in sorted(self.owned.items())],
            "jobs": [{"site": s.site.name, "backend": s.backend, "gpus": s.gpus, "pairs": len(s.pairs),
                      "slots": s.slots, "shard_count": s.shard_count, "array_size": s.request.array_size,
                      "walltime_s": s.request.walltime_s, "script": str(s.script_path), "plan": str(s.plan_path),
                      "command": s.submit_argv} for s in self.sites],
        }


# Variables the worker must see inside the container (values set by the job script).
CONTAINER_ENV = (
    "KIT_SITE", "KIT_SCHEDULER", "KIT_RUNTIME", "KIT_JOB_ID", "KIT_ARRAY_INDEX", "KIT_SHARD_INDEX", "KIT_GPUS",
    "KIT_IMAGE_DIGEST", "KIT_IMAGE_ARTIFACT", "KIT_IMAGE_SHA256", "KIT_LOCK_SHA256",
    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_CACHE", "HF_HOME", "TRITON_CACHE_DIR", "VLLM_CACHE_ROOT",
    "TORCHINDUCTOR_CACHE_DIR", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TOKENIZERS_PARALLELISM",
    "HF_TOKEN_PATH",
)


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
) -> RunPlan:
    """Plan every submission of a run: pending pairs, one job per (site, backend, GPU count).

    With `dry_run`, an image that is not built yet is shown as a placeholder (and a warning)
    instead of stopping the plan."""
    if not sites:
        raise ConfigError("no site given", fix="pass --site NAME (or --sites a,b)")
    planned = select_pairs(runs, project.benchmark, languages)
    first = sites[0]
    # a pair complete at any chosen site is done; remote sites are read from their local mirror
    from kit.launch.sitestatus import checkpoint_states

    states = checkpoint_states(project, sites, sites_dir, planned)
    pending = [s.pair for s in states if s.state in (keys.PENDING, keys.STALE)]   # a stale pair is rerun
    invalid = [s.pair for s in states if s.state == keys.INVALID]
    complete = sum(1 for s in states if s.state == keys.COMPLETE)
    warnings: list[str] = []
    owned = {} if resubmit else _owned(sites, sites_dir, dry_run, warnings)
    plan = RunPlan(planned, [p for p in pending if p not in owned], complete, invalid,
                   [s.pair for s in states if s.state == keys.STALE], owned={p: owned[p] for p in pending if p in owned},
                   warnings=warnings)
    pending = plan.pending
    if not pending:
        return plan
    by_name = {r.name: r for r in runs}
    if len(sites) > 1 and array:
        raise ConfigError("--array applies to one site", fix="give the sites weights in sites.toml instead")
    slots, count = site_slots([(s.name, s.weight) for s in sites])
    sizes = {(run, site.name): job_size(by_name[run], site, sites_dir) for run in sorted({p.run for p in pending})
             for site in sites}
    for (run, site_name), size in sizes.items():
        if not size.checked:
            plan.warnings.append(f"{run} at {site_name}: {size.note}")
    # pairs share a job when their backend and their GPU count at every site agree
    groups: dict[tuple[str, tuple[int, ...]], list[Pair]] = {}
    for pair in pending:
        gpus = tuple(sizes[pair.run, site.name].gpus for site in sites)
        groups.setdefault((by_name[pair.run].backend, gpus), []).append(pair)
    for (backend, gpus), pairs in sorted(groups.items()):
        # never more shards than pairs: an empty shard would only burn a job
        if len(sites) == 1:
            n = min(array or first.weight, len(pairs))
            group_slots, group_count = {first.name: list(range(n))}, n
        else:
            group_count = min(count, len(pairs))
            group_slots = {name: [s for s in mine if s < group_count] for name, mine in slots.items()}
        text = plan_text(pairs)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        for site, site_gpus in zip(sites, gpus):
            if group_slots[site.name]:
                floors = [sizes[run, site.name].min_gpu_mib for run in {p.run for p in pairs}]
                grown = grown_filter(site, max((f for f in floors if f), default=None))
                sized = site if grown == site.gpu_filter else site.model_copy(update={"gpu_filter": grown})
                plan.sites.append(_site_plan(project, sized, sites_dir, backend, site_gpus, pairs,
                                             group_slots[site.name], group_count, text, digest, walltime,
                                             allow_unpinned, images_lock, dry_run, plan.warnings))
    return plan


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


NOT_BUILT = "NOT-BUILT"


def _image_for(site: Site, backend: str, sites_dir: Path, images_lock: Path | None, dry_run: bool = False,
               warnings: list[str] | None = None) -> tuple[str | None, dict[str, str]]:
    """The image reference the runtime uses and the KIT_IMAGE_* facts passed to the job."""
    if site.runtime == "host":
        return None, {}
    from kit.errors import ImageError
    from kit.images.built import DEFAULT_LOCK, load_lock

    lock_path = images_lock or Path(os.environ.get("KIT_IMAGES_LOCK") or DEFAULT_LOCK)
    try:
        return _built_image_for(site, backend, sites_dir, load_lock(lock_path).get(backend, lock_path))
    except ImageError as exc:
        if not dry_run:
            raise
        if warnings is not None:
            warnings.append(f"{exc.one_line()} (the dry run shows a placeholder image)")
        kind = {"docker": "oci", "apptainer": "sif"}.get(site.runtime, "sqsh")
        ref = (f"kit/{backend}:{NOT_BUILT}" if kind == "oci"
               else str(site_path(site, site.images, sites_dir) / f"kit-{backend}-{NOT_BUILT}.{kind}"))
        return ref, {"KIT_IMAGE_DIGEST": NOT_BUILT, "KIT_IMAGE_ARTIFACT": kind}


def _built_image_for(site: Site, backend: str, sites_dir: Path, built) -> tuple[str | None, dict[str, str]]:
    """Reference and KIT_IMAGE_* facts of a built image for the site's runtime."""
    env = {"KIT_IMAGE_DIGEST": built.image_id, "KIT_LOCK_SHA256": built.lock_sha256}
    if site.runtime == "docker":
        env["KIT_IMAGE_ARTIFACT"] = "oci"
        return site.docker_image or built.tag, env
    kind = "sif" if site.runtime == "apptainer" else "sqsh"
    art = built.artifact(kind)
    env.update({"KIT_IMAGE_ARTIFACT": kind, "KIT_IMAGE_SHA256": art.sha256})
    return str(site_path(site, site.images, sites_dir) / art.file), env


def check_token_file(path: Path) -> None:
    """A ConfigError unless the HF token file exists and only its owner can read it."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        raise ConfigError(f"HF token file {path} does not exist", fix="write the token there (chmod 600) or "
                          "remove hf_token_file from the site") from None
    if mode & 0o077:
        raise ConfigError(f"HF token file {path} is readable by group or others (mode {mode:o})",
                          fix=f"chmod 600 {path}")


def _site_plan(project: Project, site: Site, sites_dir: Path, backend: str, gpus: int, pairs: list[Pair],
               slots: list[int], count: int, text: str, digest: str, walltime: str | None, allow_unpinned: bool,
               images_lock: Path | None, dry_run: bool = False, warnings: list[str] | None = None) -> SitePlan:
    root = site_path(site, site.root, sites_dir)
    results = site_path(site, site.results, sites_dir)
    scratch = site_path(site, site.scratch, sites_dir)
    name = job_name(site.name, sorted({p.run for p in pairs}), digest)
    plan_path = plan_file(site, sites_dir, digest)
    script_path = root / "jobs" / f"{name}.sh"
    log_dir = root / "logs"
    roster = project.roster_path.resolve() if project.roster_path else None
    bench_dir, inputs = project.benchmark.root.resolve(), {}
    if site.is_remote:  # the jobs read copies on the cluster (kit.launch.remote)
        from kit.launch.remote import check_remote_paths, staged_inputs

        check_remote_paths(site)
        roster, bench_dir, inputs = staged_inputs(root, roster, bench_dir)
    kit_args = ["shard", "--benchmark", str(bench_dir), "--results", str(results),
                "--pairs", str(plan_path)]
    if roster:
        kit_args[1:1] = ["--roster", str(roster)]
    if allow_unpinned:
        kit_args.append("--allow-unpinned")
    image, image_env = _image_for(site, backend, sites_dir, images_lock, dry_run, warnings)
    env = {"KIT_SITE": site.name, "KIT_SCHEDULER": site.scheduler, "KIT_RUNTIME": site.runtime,
           "KIT_GPUS": str(gpus), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
           **image_env}
    binds = [str(results), str(root), str(scratch)]          # written by the job
    ro_binds = [str(bench_dir)]                               # only read: MLPerf mounts its inputs :ro
    if roster:
        ro_binds.append(str(roster.parent))
    if site.weights:
        weights = str(site_path(site, site.weights, sites_dir))
        env["HF_HUB_CACHE"] = weights
        ro_binds.append(weights)
    # no token reaches a job: jobs run offline from staged weights; `kit weights stage` uses the
    # site's hf_token_file on this machine
    runtime = get_runtime(site.runtime)(site)
    ctx = RuntimeContext(tuple(kit_args), tuple(dict.fromkeys(binds)),
                         tuple(dict.fromkeys([*CONTAINER_ENV, *site.forward_env])), image, str(root),
                         ro_binds=tuple(dict.fromkeys(ro_binds)))
    scheduler = get_scheduler(site.scheduler)(site)
    request = JobRequest(name=name, gpus=gpus, walltime_s=walltime_seconds(walltime or site.walltime, site.scheduler),
                         array_size=len(slots), mem_gb=site.mem_gb, cpus=site.cpus_per_task,
                         mem_per_gpu_gb=site.mem_per_gpu_gb)
    base = JobScript(job_name=name, worker_argv=tuple(runtime.worker_argv(ctx)), shard_slots=tuple(slots),
                     shard_count=count, env=env, setup=(*site.setup, *runtime.setup_lines(ctx)),
                     cache_root=str(scratch), cleanup=tuple(runtime.cleanup_lines(ctx)))
    script = render_job_script(scheduler.job_script(base, request, str(log_dir)))
    return SitePlan(site, backend, gpus, pairs, slots, count, request, script_path, script, plan_path, text,
                    scheduler.submit_argv(request, script_path, str(log_dir)), env, scheduler, log_dir, inputs)


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
