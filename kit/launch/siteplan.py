"""One job at one site, resolved once: the site's folders, the image for its runtime, the GPU
request, the pairs and their shard slots, what the site's policy gates would say; the job script
and the submit command are rendered from that one object (kit.launch.submit groups pairs into
jobs, checks the gates again at submission time and submits)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kit.config.project import Project
from kit.config.sites import Site
from kit.config.walltime import walltime_seconds
from kit.gpus import GpuArchs
from kit.launch.gpu_arch import ArchFit, fit_image_gpus
from kit.launch.jobscript import JobScript, render_job_script, render_site_setup
from kit.launch.owners import job_name
from kit.launch.paths import SitePaths
from kit.launch.request import JobRequest
from kit.launch.runtimes.base import RuntimeContext, get_runtime
from kit.launch.schedulers.base import Scheduler
from kit.launch.site import ResolvedSite
from kit.plan import Pair

# Variables the worker must see inside the container (values set by the job script).
CONTAINER_ENV = (
    "KIT_SITE", "KIT_SCHEDULER", "KIT_RUNTIME", "KIT_JOB_ID", "KIT_ARRAY_INDEX", "KIT_SHARD_INDEX", "KIT_GPUS",
    "KIT_IMAGE_DIGEST", "KIT_IMAGE_ARTIFACT", "KIT_IMAGE_SHA256", "KIT_LOCK_SHA256",
    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_CACHE", "HF_HOME", "TRITON_CACHE_DIR", "VLLM_CACHE_ROOT",
    "TORCHINDUCTOR_CACHE_DIR", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TOKENIZERS_PARALLELISM",
    "HF_TOKEN_PATH",
)

# Every job runs offline from staged weights, quietly.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}

NOT_BUILT = "NOT-BUILT"


@dataclass(frozen=True)
class JobGroup:
    """Pending pairs that share one job: one backend, one GPU count per site, one plan file."""

    backend: str
    pairs: tuple[Pair, ...]
    shard_count: int
    plan_text: str
    digest: str           # of plan_text: names the plan file and the job
    walltime_s: int | None = None   # --walltime auto: what the longest packed shard needs
    note: str = ""                  # how the group was sized, for the dry run


@dataclass(frozen=True)
class SubmitOptions:
    """The choices of one `kit run` that every job of it shares."""

    walltime: str | None = None        # --walltime; None: each site's own
    allow_unpinned: bool = False
    images_lock: Path | None = None    # None: KIT_IMAGES_LOCK or containers/images.lock.json
    dry_run: bool = False              # an image not built yet becomes a placeholder and a warning
    now: datetime | None = None        # the submission clock the policy notes are read at (None: now)

    @property
    def site_walltime(self) -> str | None:
        """--walltime as a fixed value for every job (None: each site's own, also under auto)."""
        return None if self.walltime == "auto" else self.walltime


@dataclass(frozen=True)
class ImageChoice:
    """The image a job runs in: the runtime's reference and the KIT_IMAGE_* facts its provenance records."""

    ref: str | None                    # docker reference, .sif or .sqsh path; None on the host runtime
    env: dict[str, str] = field(default_factory=dict)
    warning: str | None = None         # set when a dry run shows a placeholder for an image not built yet
    gpu_code: GpuArchs | None = None   # the GPUs its CUDA code runs on (None: a CPU image, or not known)


@dataclass
class SitePlan:
    """One job submission: a site, one backend image, its pairs, rendered and ready."""

    where: ResolvedSite
    group: JobGroup
    gpus: int
    slots: list[int]
    image: ImageChoice
    request: JobRequest
    env: dict[str, str]
    script_text: str
    submit_argv: list[str]
    inputs: dict[str, Path] = field(default_factory=dict)   # path on the frontend -> local file or folder to copy
    policy: list[str] = field(default_factory=list)          # what the site's gates would say (kit.launch.policy)
    arch_fit: ArchFit = field(default_factory=ArchFit)       # the GPUs asked for, held to the image's code

    @property
    def site(self) -> Site:
        """The site's sites.toml entry, with the run's overrides."""
        return self.where.config

    @property
    def paths(self) -> SitePaths:
        """The site's folders."""
        return self.where.paths

    @property
    def scheduler(self) -> Scheduler:
        """The site's scheduler."""
        return self.where.scheduler

    @property
    def backend(self) -> str:
        """The backend (and image) of every pair of the job."""
        return self.group.backend

    @property
    def pairs(self) -> list[Pair]:
        """Every pair of the job's plan file (its shards split them)."""
        return list(self.group.pairs)

    @property
    def shard_count(self) -> int:
        """How many shards the plan is split into (all sites together)."""
        return self.group.shard_count

    @property
    def plan_text(self) -> str:
        """The plan file's content."""
        return self.group.plan_text

    @property
    def plan_path(self) -> Path:
        """Where the jobs read the plan file."""
        return self.paths.plan_file(self.group.digest)

    @property
    def script_path(self) -> Path:
        """Where the job script is written."""
        return self.paths.script(self.request.name)

    @property
    def log_dir(self) -> Path:
        """The scheduler's log folder for the job."""
        return self.paths.logs


def lock_path_of(images_lock: Path | None) -> Path:
    """The lock of built images a command reads: the one given, else KIT_IMAGES_LOCK, else the repository's."""
    from kit.images.built import DEFAULT_LOCK

    return Path(images_lock or os.environ.get("KIT_IMAGES_LOCK") or DEFAULT_LOCK)


def resolve_image(resolved: ResolvedSite, backend: str, images_lock: Path | None,
                  dry_run: bool = False) -> ImageChoice:
    """The built image of a backend for the site's runtime, as the artifact its runtime reads (an
    ImageError when it is not built or not converted to that artifact, except in a dry run, which
    gets a placeholder and a warning)."""
    site, paths = resolved.config, resolved.paths
    if site.runtime == "host":
        return ImageChoice(None)
    from kit.errors import ImageError
    from kit.images.built import load_lock

    lock_path = lock_path_of(images_lock)
    kind = {"docker": "oci", "apptainer": "sif"}.get(site.runtime, "sqsh")
    built = None
    try:
        built = load_lock(lock_path).get(backend, lock_path)
        code = built.gpu_code() or planned_gpu_code(lock_path, backend, built.variant)
        env = {"KIT_IMAGE_DIGEST": built.image_id, "KIT_LOCK_SHA256": built.lock_sha256, "KIT_IMAGE_ARTIFACT": kind}
        if kind == "oci":
            # a site's own docker_image is not the lock's build: what GPUs it runs on is not known here
            return ImageChoice(site.docker_image or built.tag, env, gpu_code=None if site.docker_image else code)
        art = built.artifact(kind)
    except ImageError as exc:
        if not dry_run:
            raise
        ref = f"kit/{backend}:{NOT_BUILT}" if kind == "oci" else str(paths.images / f"kit-{backend}-{NOT_BUILT}.{kind}")
        said = f"{exc.one_line()} (the dry run shows a placeholder image)"
        if not (Path(lock_path).parent / "images.toml").is_file():   # outside the repository: said, not silent
            said += (f"; the GPUs image {backend} runs on are not checked either: no images.toml beside "
                     f"{lock_path} (run kit from the repository's root, or set KIT_IMAGES_LOCK to its "
                     "containers/images.lock.json)")
        return ImageChoice(ref, {"KIT_IMAGE_DIGEST": NOT_BUILT, "KIT_IMAGE_ARTIFACT": kind}, said,
                           planned_gpu_code(lock_path, backend, built.variant if built else None))
    return ImageChoice(str(paths.images / art.file), {**env, "KIT_IMAGE_SHA256": art.sha256}, gpu_code=code)


def planned_gpu_code(lock_path: Path, backend: str, variant: str | None) -> GpuArchs | None:
    """The GPU code images.toml (beside the lock, in containers/) says the image has or will have: for
    a lock entry recorded before kit recorded it, and for an image not built yet (None when that file
    is not there or does not name the image)."""
    from kit.errors import KitError
    from kit.images.spec import target

    images_file = Path(lock_path).parent / "images.toml"
    if not images_file.is_file():
        return None
    try:
        return target(backend, variant, images_file).spec.cuda_code()
    except KitError:
        return None


def build_site_plan(project: Project, resolved: ResolvedSite, group: JobGroup, gpus: int, slots: list[int],
                    options: SubmitOptions) -> SitePlan:
    """Resolve one job of a group at a site and render its script and submit command. The site's GPU
    request is first narrowed to the GPUs the job's image runs on (kit.launch.gpu_arch)."""
    site, paths = resolved.config, resolved.paths
    image = resolve_image(resolved, group.backend, options.images_lock, options.dry_run)
    arch_fit = fit_image_gpus(site, group.backend, image.gpu_code, gpus)
    name = job_name(site.name, sorted({p.run for p in group.pairs}), group.digest)
    roster = project.roster_path.resolve() if project.roster_path else None
    bench_dir, inputs = project.benchmark.root.resolve(), {}
    if site.is_remote:  # the jobs read copies on the cluster (kit.launch.remote)
        from kit.launch.remote import check_remote_paths, staged_inputs

        check_remote_paths(site)
        roster, bench_dir, inputs = staged_inputs(paths.root, roster, bench_dir)
    kit_args = ["shard", *(["--roster", str(roster)] if roster else []), "--benchmark", str(bench_dir),
                "--results", str(paths.results), "--pairs", str(paths.plan_file(group.digest)),
                *(["--allow-unpinned"] if options.allow_unpinned else [])]
    env = {"KIT_SITE": site.name, "KIT_SCHEDULER": site.scheduler, "KIT_RUNTIME": site.runtime,
           "KIT_GPUS": str(gpus), **OFFLINE_ENV, **image.env}
    binds = [str(paths.results), str(paths.root), str(paths.scratch)]   # written by the job
    ro_binds = [str(bench_dir)]                                          # only read: MLPerf mounts its inputs :ro
    if roster:
        ro_binds.append(str(roster.parent))
    if paths.weights:
        env["HF_HUB_CACHE"] = str(paths.weights)
        ro_binds.append(str(paths.weights))
    # no token reaches a job: jobs run offline from staged weights; `kit weights stage` uses the
    # site's hf_token_file on this machine
    runtime = get_runtime(site.runtime)(site)
    ctx = RuntimeContext(tuple(kit_args), tuple(dict.fromkeys(binds)),
                         tuple(dict.fromkeys([*CONTAINER_ENV, *site.forward_env])), image.ref, str(paths.root),
                         ro_binds=tuple(dict.fromkeys(ro_binds)))
    scheduler = resolved.scheduler
    walltime = group.walltime_s or walltime_seconds(options.site_walltime or site.walltime, site.scheduler)
    request = JobRequest(name=name, gpus=gpus, walltime_s=walltime,
                         array_size=len(slots), mem_gb=site.mem_gb, cpus=site.cpus_per_task,
                         mem_per_gpu_gb=site.mem_per_gpu_gb, gpu_filter=arch_fit.gpu_filter,
                         constraint=arch_fit.constraint)
    base = JobScript(job_name=name, worker_argv=tuple(runtime.worker_argv(ctx)), shard_slots=tuple(slots),
                     shard_count=group.shard_count, env=env,
                     setup=(*render_site_setup(site.setup), *runtime.setup_lines(ctx)),
                     cache_root=str(paths.scratch), cleanup=tuple(runtime.cleanup_lines(ctx)))
    script = render_job_script(scheduler.job_script(base, request, str(paths.logs)))
    argv = scheduler.submit_argv(request, paths.script(name), str(paths.logs))
    from kit.launch.policy import describe, parse_now

    policy = describe(site, request.walltime_s, options.now or parse_now(None))
    return SitePlan(resolved, group, gpus, list(slots), image, request, env, script, argv, inputs,
                    policy, arch_fit)
