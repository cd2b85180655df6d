"""Which pairs your live jobs at a site already own, asked of the scheduler itself, so that no pair
is submitted twice, whichever machine submitted the first job.

A kit job is named `kit-<site>-<runs>-<plan digest>` (job_name); the digest names the plan file
the job reads on the cluster (`<root>/plans/plan-<digest>.json`), which lists its pairs."""

from __future__ import annotations

import re
from pathlib import Path

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.launch.paths import site_path
from kit.launch.schedulers.base import Scheduler
from kit.plan import Pair, read_plan

_DIGEST = re.compile(r"-([0-9a-f]{12})$")
_SHORT = re.compile(r"[^A-Za-z0-9._-]+")
SHORT_MAX = 24


def job_name(site: str, runs: list[str], digest: str) -> str:
    """kit-<site>-<first run's short name>[+N more]-<digest>: `squeue`/`oarstat` show what a job runs."""
    short = _SHORT.sub("_", runs[0].rsplit("/", 1)[-1].split("@")[0])[:SHORT_MAX] if runs else "none"
    more = f"+{len(runs) - 1}" if len(runs) > 1 else ""
    return f"kit-{site}-{short}{more}-{digest}"


def plan_file(site: Site, sites_dir: Path, digest: str) -> Path:
    """Where the jobs of a plan read its pair list on the cluster."""
    return site_path(site, site.root, sites_dir) / "plans" / f"plan-{digest}.json"


def owned_pairs(site: Site, scheduler: Scheduler, sites_dir: Path) -> dict[Pair, tuple[str, str]]:
    """{pair: (job id, pending | running)} for every pair a live kit job of yours at the site plans
    (a SubmitError when the scheduler cannot list your jobs)."""
    owned: dict[Pair, tuple[str, str]] = {}
    plans: dict[str, list[Pair]] = {}
    for job_id, (name, state) in sorted(scheduler.live_jobs().items()):
        m = _DIGEST.search(name)
        if not name.startswith(f"kit-{site.name}-") or not m:
            continue
        digest = m.group(1)
        if digest not in plans:
            path = plan_file(site, sites_dir, digest)
            text = scheduler.frontend.read_text(path)
            try:
                plans[digest] = read_plan(path, text) if text is not None else []
            except ConfigError:
                plans[digest] = []
        for pair in plans[digest]:
            owned.setdefault(pair, (job_id, state))
    return owned
