"""Which pairs your live jobs at a site already own, asked of the scheduler itself, so that no pair
is submitted twice, whichever machine submitted the first job.

A kit job is named `kit-<site>-<runs>-<plan digest>` (job_name); the digest names the plan file
the job reads on the cluster (`<root>/plans/plan-<digest>.json`), which lists its pairs, and the
job's shard sidecar (`<root>/jobs/<name>.json`: its shard slots and count) says which of them each
array task runs, so a task still finishing owns its own shard only."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kit import safejson
from kit.errors import ConfigError
from kit.launch.site import ResolvedSite
from kit.plan import Pair, PlanFile, read_plan_file

_DIGEST = re.compile(r"-([0-9a-f]{12})$")
_SHORT = re.compile(r"[^A-Za-z0-9._@+-]+")
SHORT_MAX = 28
_HEAD = 11   # a long name keeps its start and its end (where sizes and @variants are), the middle elided


def run_short_name(run: str) -> str:
    """A run's name as a job name shows it: the model's own name with its @variant (org dropped), in
    scheduler-safe characters, at most SHORT_MAX long: Qwen/Qwen3-32B@hf -> Qwen3-32B@hf,
    deepseek-ai/DeepSeek-R1-Distill-Qwen-32B -> DeepSeek-R1..still-Qwen-32B."""
    short = _SHORT.sub("_", run.rsplit("/", 1)[-1]) or "run"
    if len(short) > SHORT_MAX:
        short = short[:_HEAD] + ".." + short[len(short) - (SHORT_MAX - _HEAD - 2):]
    return short


def job_name(site: str, runs: list[str], digest: str) -> str:
    """kit-<site>-<first run's short name>[-and-N-more]-<digest>: `squeue`/`oarstat` show what a job
    runs (`-and-N-more`, not `+N`, which reads as one of lrb's `+variant` run names)."""
    short = run_short_name(runs[0]) if runs else "none"
    more = f"-and-{len(runs) - 1}-more" if len(runs) > 1 else ""
    return f"kit-{site}-{short}{more}-{digest}"


def shards_text(slots: list[int], shard_count: int) -> str:
    """The sidecar of a job: the shard slot each array task runs, in array order, and the count."""
    return json.dumps({"kit_job_version": 1, "slots": list(slots), "shard_count": int(shard_count)}) + "\n"


def owned_pairs(site: ResolvedSite) -> dict[Pair, tuple[str, str]]:
    """{pair: (job id, pending | running)} for every pair a live kit job (array task) of yours at the
    site runs (a SubmitError when the scheduler cannot list your jobs). Without a readable sidecar a
    job owns every pair of its plan."""
    owned: dict[Pair, tuple[str, str]] = {}
    plans: dict[str, list[Pair]] = {}
    scheduler = site.scheduler
    for job_id, job in sorted(scheduler.live_jobs().items()):
        m = _DIGEST.search(job.name)
        if not job.name.startswith(f"kit-{site.name}-") or not m:
            continue
        digest = m.group(1)
        if digest not in plans:
            path = site.paths.plan_file(digest)
            text = site.frontend.read_text(path)
            try:
                plans[digest] = read_plan_file(path, text) if text is not None else PlanFile([])
            except ConfigError:
                plans[digest] = PlanFile([])
        pairs = plans[digest].pairs
        shard = _shard_of(site, site.paths.shards_file(job.name), job.array_pos)
        if shard is not None:
            try:
                pairs = plans[digest].shard(*shard)
            except ConfigError:   # a sidecar that disagrees with its plan: the job may run any of them
                pass
        for pair in pairs:
            owned.setdefault(pair, (job_id, job.state))
    return owned


def _shard_of(site: ResolvedSite, sidecar: Path, array_pos: int) -> tuple[int, int] | None:
    """(shard index, count) an array task runs, from its job's sidecar; None when unknown."""
    text = site.frontend.read_text(sidecar)
    try:
        body = safejson.loads(text) if text is not None else None
        slots, count = body["slots"], int(body["shard_count"])
        return int(slots[array_pos]), count
    except (ValueError, KeyError, TypeError, IndexError):
        return None
