"""Submit a planned `kit run` (kit.launch.run): check every site's policy gates again at
submission time, write each job's plan file, shard sidecar and script where its site reads them,
submit it and keep its record beside sites.toml (kit.launch.tracking)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kit.launch.jobscript import allow_listed_env
from kit.launch.owners import shards_text
from kit.launch.schedulers.base import Submission
from kit.launch.tracking import SubmissionRecord, append_record

if TYPE_CHECKING:
    from kit.launch.run import RunPlan


def submit_run(plan: RunPlan, *, record: bool = True, now=None, show=lambda line: None) -> list[Submission]:
    """Check every site's policy (kit.launch.policy), then write plan files and scripts, submit each
    site's job and (with `record`) record it in its site's state folder; never resubmits on failure.
    `now` is the submission clock (tests)."""
    from kit.launch.policy import check_before_submit

    check_before_submit(plan.sites, now, show)
    out = []
    for sp in plan.sites:
        frontend = sp.where.frontend
        if sp.inputs:
            from kit.launch.remote import upload_inputs

            upload_inputs(frontend, sp.inputs)
        frontend.write_text(sp.plan_path, sp.plan_text)
        # beside the script (SitePaths.shards_file): which shard each array task runs
        frontend.write_text(sp.paths.shards_file(sp.request.name), shards_text(sp.slots, sp.shard_count))
        frontend.write_text(sp.script_path, sp.script_text, mode=0o700)   # it may hold forward_env values
        env = allow_listed_env(os.environ, sp.site.forward_env)

        kept: list[bool] = []

        def keep(sub: Submission, sp=sp, kept=kept) -> None:
            """This submission's record, written anew in place of the one kept when it started (if any)."""
            append_record(sp.where.state_dir, SubmissionRecord(
                site=sp.site.name, scheduler=sp.site.scheduler, job_ids=list(sub.job_ids), slots=list(sp.slots),
                shard_count=sp.shard_count, pairs=[[p.run, p.language] for p in sp.pairs],
                plan_file=str(sp.plan_path), script=str(sp.script_path), command=list(sub.command),
                exit_codes=dict(sub.exit_codes)), update=bool(kept))
            kept.append(True)

        # a job run here (local) is recorded as it starts, so that status and another kit run see it live
        sub = sp.scheduler.submit(sp.request, sp.script_path, str(sp.log_dir), env, started=keep if record else None)
        out.append(sub)
        if record:
            keep(sub)
        if sub.stopped_by:   # stopped by a signal (a job run here): no further site is submitted
            break
    return out
