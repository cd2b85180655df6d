"""Plan a submission for one or more sites and submit it.

The launcher shards only the pairs that are not complete yet, writes that pair list to a
plan file the jobs read (so every shard sees the same list), renders one job script per
site and submits it. `dry_run` renders everything and submits nothing."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.project import Project
from kit.config.roster import Run
from kit.config.sites import Site, walltime_seconds
from kit.errors import ConfigError
from kit.launch.jobscript import JobScript, allow_listed_env, render_job_script
from kit.launch.paths import site_path
from kit.launch.request import JobRequest
from kit.launch.runtimes.base import RuntimeContext, get_runtime
from kit.launch.schedulers.base import Scheduler, Submission, get_scheduler
from kit.plan import Pair, select_pairs, site_slots
from kit.results import keys as K
from kit.results.status import pair_states
from kit.results.store import write_text_atomic


@dataclass
class SitePlan:
    """Everything one site's submission consists of, rendered and ready."""

    site: Site
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


@dataclass
class RunPlan:
    """A whole `kit run`: the pending pairs and each site's part."""

    planned: list[Pair]
    pending: list[Pair]
    complete: int
    invalid: list[Pair]
    sites: list[SitePlan] = field(default_factory=list)

    def as_dict(self) -> dict:
        """JSON-ready summary (no script text)."""
        return {
            "planned": len(self.planned), "pending": len(self.pending), "complete": self.complete,
            "invalid": [[p.run, p.language] for p in self.invalid],
            "sites": [{"site": s.site.name, "slots": s.slots, "shard_count": s.shard_count,
                       "array_size": s.request.array_size, "script": str(s.script_path),
                       "plan": str(s.plan_path), "command": s.submit_argv} for s in self.sites],
        }


def plan_text(pairs: list[Pair], runs: list[Run]) -> str:
    """The plan file the jobs read: the sorted pair list (and the runs it names)."""
    body = {"kit_plan_version": 1, "pairs": [[p.run, p.language] for p in sorted(pairs)],
            "runs": sorted({p.run for p in pairs})}
    return json.dumps(body, indent=1, sort_keys=True) + "\n"


def read_plan(path: Path) -> list[Pair]:
    """Pairs from a plan file written by `kit run`."""
    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
        return sorted(Pair(str(r), str(lang)) for r, lang in body["pairs"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a kit plan file ({exc})", fix="pass the plan file `kit run` wrote") from None


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
) -> RunPlan:
    """Plan every site's part of a run: pending pairs, shard slots, scripts and commands."""
    if not sites:
        raise ConfigError("no site given", fix="pass --site NAME (or --sites a,b)")
    planned = select_pairs(runs, project.benchmark, languages)
    first = sites[0]
    results = site_path(first, first.results, sites_dir)
    states = pair_states(results, planned, project.benchmark.item_ids) if not first.is_remote else []
    pending = [s.pair for s in states if s.state == K.PENDING] if states else list(planned)
    invalid = [s.pair for s in states if s.state == K.INVALID]
    complete = sum(1 for s in states if s.state == K.COMPLETE)
    plan = RunPlan(planned, pending, complete, invalid)
    if not pending:
        return plan
    if len(sites) == 1:
        # never more array tasks than pending pairs: an empty shard would only burn a job
        count = min(array or first.weight, len(pending))
        slots = {first.name: list(range(count))}
    else:
        if array:
            raise ConfigError("--array applies to one site", fix="give several sites weights in sites.toml instead")
        slots, count = site_slots([(s.name, s.weight) for s in sites])
    text = plan_text(pending, runs)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    for site in sites:
        plan.sites.append(_site_plan(project, site, sites_dir, slots[site.name], count, text, digest,
                                     walltime, allow_unpinned))
    return plan


def _site_plan(project: Project, site: Site, sites_dir: Path, slots: list[int], count: int, text: str,
               digest: str, walltime: str | None, allow_unpinned: bool) -> SitePlan:
    root = site_path(site, site.root, sites_dir)
    results = site_path(site, site.results, sites_dir)
    plan_path = root / "plans" / f"plan-{digest}.json"
    script_path = root / "jobs" / f"kit-{site.name}-{digest}.sh"
    log_dir = root / "logs"
    kit_args = ["shard", "--benchmark", str(project.benchmark.root), "--results", str(results),
                "--pairs", str(plan_path)]
    if project.roster_path:
        kit_args[1:1] = ["--roster", str(project.roster_path.resolve())]
    if allow_unpinned:
        kit_args.append("--allow-unpinned")
    runtime = get_runtime(site.runtime)(site)
    argv = runtime.worker_argv(RuntimeContext(tuple(kit_args)))
    env = {"KIT_SITE": site.name, "KIT_SCHEDULER": site.scheduler, "KIT_RUNTIME": site.runtime,
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
           "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    if site.weights:
        env["HF_HUB_CACHE"] = str(site_path(site, site.weights, sites_dir))
    scheduler = get_scheduler(site.scheduler)(site)
    request = JobRequest(name=f"kit-{site.name}", gpus=site.gpus_per_node,
                         walltime_s=walltime_seconds(walltime or site.walltime), array_size=len(slots))
    base = JobScript(job_name=request.name, worker_argv=tuple(argv), shard_slots=tuple(slots), shard_count=count,
                     env=env)
    script = render_job_script(scheduler.job_script(base, request, str(log_dir)))
    return SitePlan(site, slots, count, request, script_path, script, plan_path, text,
                    scheduler.submit_argv(request, script_path, str(log_dir)), env, scheduler, log_dir)


def submit_run(plan: RunPlan) -> list[Submission]:
    """Write plan files and scripts, then submit each site's job; never resubmits on failure."""
    out = []
    for sp in plan.sites:
        write_text_atomic(sp.plan_path, sp.plan_text)
        write_text_atomic(sp.script_path, sp.script_text)
        os.chmod(sp.script_path, 0o755)
        env = allow_listed_env(os.environ, sp.site.forward_env)
        out.append(sp.scheduler.submit(sp.request, sp.script_path, str(sp.log_dir), env))
    return out
