"""The `oar` scheduler: OAR 2.5 as on Grid'5000 (oarsub, oarstat, oardel on the site's frontend).

Every option goes on the oarsub command line and the job runs as `bash /abs/job-script`:
the line `kit run --dry-run` prints is the whole request, as a Grid'5000 user would type
it (no `#OAR` directives hidden in the script, whose quoting OAR parses with its own
rules), and bash runs the script whatever the user's login shell or the file's mode.
OAR does not pass the submitter's environment to the job: the script exports every
value the job needs, including the site's forward_env values (secrets refused).
OAR kills at the walltime and on a plain oardel with SIGKILL: a job of 10 minutes or more asks
for SIGTERM a minute before its walltime (`--checkpoint 60 --signal 15`), and `kit cancel` sends
running jobs SIGTERM (`oardel --signal SIGTERM`) before it deletes them, so the worker stops
cleanly (kit.worker.signals).

Settings (sites.toml); OAR sites get the Grid'5000 defaults runtime "apptainer",
job_types ["night"] (none with night_jobs = false) and gpu_filter
"gpu_compute_capability_major>=7 AND gpu_mem>=23040" (none with gpus_per_node = 0)::

    [site.lyon]
    scheduler = "oar"
    frontend = "lyon.g5k"            # ssh host, or "local" when kit runs on the frontend
    root = "/home/jdoe/kit"          # job scripts, plans, logs (OAR.<job id>.stdout / .stderr)
    job_types = ["exotic"]           # -t, repeated (Lyon's A100 cluster has no night queue)
    queue = "default"                # -q (optional)
    account = "myproject"            # --project (optional)
    walltime = "2:00"                # -l host=1/gpu=N,walltime=2:00
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kit.config.sites import Site
from kit.errors import SubmitError
from kit.launch.jobscript import JobScript, allow_listed_env, forwarded_env
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import JobState, JobStatus, LiveJob, Scheduler, Submission, register_scheduler

# OAR job state -> kit's normalized state. The names are the `jobs.state` ENUM of OAR 2.5:
# oar-team/oar sources/core/database/mysql_structure.sql and pg_structure.sql (installed by
# Debian's oar-server 2.5.9 as /usr/lib/oar/database/*_structure.sql).
OAR_STATES: dict[str, JobState] = {
    "Waiting": JobState.PENDING,            # queued for resources
    "Hold": JobState.PENDING,               # held (oarhold; new jobs may pass through it); oarresume releases it
    "toLaunch": JobState.PENDING,           # scheduled, about to launch
    "toAckReservation": JobState.PENDING,   # advance reservation being acknowledged
    "Suspended": JobState.RUNNING,          # stopped on the nodes it holds; resumes later (as Slurm's SUSPENDED)
    "Resuming": JobState.RUNNING,
    "Launching": JobState.RUNNING,
    "Running": JobState.RUNNING,
    "Finishing": JobState.RUNNING,          # epilogue running
    "toError": JobState.FAILED,
    "Terminated": JobState.COMPLETED,       # also after a non-zero exit: exit_code decides (see job_status)
    "Error": JobState.FAILED,               # oardel and walltime kills end here too: events decide
}
# Event types that explain an Error: WALLTIME is added by sarko (sources/core/modules/sarko.pl),
# FRAG_JOB_REQUEST by oardel (OAR::IO::frag_job, sources/core/common-libs/lib/OAR/IO.pm).
WALLTIME_EVENT = "WALLTIME"
DELETE_EVENT = "FRAG_JOB_REQUEST"
# Events of a job that was sent a signal (seen on OAR 2.5.9 here): CHECKPOINT when sarko sends the
# --checkpoint signal before the walltime, SIGNAL_SIGTERM after `oardel --signal SIGTERM`.
CHECKPOINT_EVENT = "CHECKPOINT"
SIGTERM_EVENT = "SIGNAL_SIGTERM"

# OAR kills a job at its walltime and on a plain oardel with SIGKILL, no warning. Jobs of at least
# CHECKPOINT_MIN_WALLTIME_S ask for SIGTERM STOP_BEFORE_WALLTIME_S before the walltime (--checkpoint
# --signal 15) so the worker can stop cleanly; `kit cancel` sends SIGTERM to running jobs and waits
# up to STOP_GRACE_S (Slurm's default KillWait) before it deletes them.
STOP_BEFORE_WALLTIME_S = 60
CHECKPOINT_MIN_WALLTIME_S = 600
STOP_GRACE_S = 30
_JOB_ID = re.compile(r"^OAR_JOB_ID=(\d+)\s*$", re.MULTILINE)


def is_finished(state: str) -> bool:
    """True once OAR is done with the job (Terminated or Error)."""
    return state in ("Terminated", "Error", "toError")


def exit_status(raw: object) -> int | None:
    """The exit code from OAR's exit_code, a raw wait status (768 -> 3; killed by signal S -> 128+S)."""
    if raw is None or raw == "":
        return None
    m = re.match(r"\s*(-?\d+)", str(raw))
    if not m:
        return None
    status = int(m.group(1))
    return status >> 8 if status & 0x7F == 0 else 128 + (status & 0x7F)


def _name(info: object) -> str | None:
    """A job record's name as oarstat reports it (None: the record names none)."""
    return str(info["name"]) if isinstance(info, dict) and info.get("name") else None


def job_status(job_id: str, info: dict) -> JobStatus:
    """Normalize one `oarstat -f -J` job record (state, exit_code, events) into a JobStatus."""
    state = str(info.get("state", ""))
    listed = info.get("events")
    events = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
    types = {e.get("type") for e in events}
    if state not in OAR_STATES:
        return JobStatus(job_id, JobState.UNKNOWN, reason=f"unknown OAR state {state!r}")
    code = exit_status(info.get("exit_code"))
    if state == "Terminated":
        if code in (None, 0):
            return JobStatus(job_id, JobState.COMPLETED, code)
        if CHECKPOINT_EVENT in types:
            return JobStatus(job_id, JobState.TIMEOUT, code, f"OAR Terminated: stopped by SIGTERM before the walltime, exited {code}")
        if SIGTERM_EVENT in types:
            return JobStatus(job_id, JobState.CANCELLED, code, f"OAR Terminated: stopped by oardel --signal SIGTERM, exited {code}")
        return JobStatus(job_id, JobState.FAILED, code, f"OAR Terminated, exited {code}")
    if state in ("Error", "toError"):
        if WALLTIME_EVENT in types:
            return JobStatus(job_id, JobState.TIMEOUT, code, "OAR Error: walltime reached")
        if DELETE_EVENT in types:
            who = next(e.get("description", "") for e in events if e.get("type") == DELETE_EVENT)
            return JobStatus(job_id, JobState.CANCELLED, code, f"OAR Error: deleted with oardel ({who})")
        told = [e.get("description", "") for e in events if not str(e.get("type", "")).startswith("SWITCH_INTO")]
        return JobStatus(job_id, JobState.FAILED, code, "OAR Error" + (f": {told[-1]}" if told else ""))
    return JobStatus(job_id, OAR_STATES[state], code, f"OAR {state}")


def parse_job_ids(stdout: str) -> list[str]:
    """Job ids from oarsub's output (its OAR_JOB_ID= lines, one per array job, in index order)."""
    return _JOB_ID.findall(stdout)


def parse_oarstat(stdout: str) -> dict[str, dict]:
    """Job id -> record from `oarstat -f -J` output: nothing at all, one JSON object, or several."""
    out: dict[str, dict] = {}
    decoder, text, pos = json.JSONDecoder(), stdout.strip(), 0
    while pos < len(text):
        doc, end = decoder.raw_decode(text, pos)
        if isinstance(doc, dict):
            out.update({str(k): v for k, v in doc.items() if isinstance(v, dict)})
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def oar_walltime(seconds: int) -> str:
    """H:MM (or H:MM:SS when seconds remain), as Grid'5000 users write it."""
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}" + (f":{s:02d}" if s else "")


def forwarded_values(site: Site, source: dict[str, str]) -> dict[str, str]:
    """The site's forward_env values, to be written into an OAR job script (secret-looking names refused
    when the sites file is read, credential-looking values here: kit.launch.jobscript.forwarded_env)."""
    return forwarded_env(source, site.forward_env)


@register_scheduler("oar")
class OarScheduler(Scheduler):
    """oarsub [options] 'bash SCRIPT'; array index in OAR_ARRAY_INDEX (1-based)."""

    array_index_expr = "$(( ${OAR_ARRAY_INDEX:-1} - 1 ))"

    def resources(self, request: JobRequest) -> str:
        """The -l value: host=1/gpu=N (or core=N without GPUs) and the walltime."""
        unit = f"gpu={request.gpus}" if request.gpus else f"core={request.cpus or 1}"
        return f"host=1/{unit},walltime={oar_walltime(request.walltime_s)}"

    def options(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """oarsub's options: name, types, queue, project, property filter, resources, SIGTERM before the
        walltime, array, files."""
        opts = ["-n", request.name]
        for job_type in self.site.job_types:
            opts += ["-t", job_type]
        if self.site.queue:
            opts += ["-q", self.site.queue]
        if self.site.account:
            opts += ["--project", self.site.account]
        gpu_filter = self._filter(request)
        if gpu_filter:
            opts += ["-p", gpu_filter]
        opts += ["-l", self.resources(request)]
        if request.walltime_s >= CHECKPOINT_MIN_WALLTIME_S:
            opts += ["--checkpoint", str(STOP_BEFORE_WALLTIME_S), "--signal", "15"]
        if request.array_size > 1:
            opts += ["--array", str(request.array_size)]
        return opts + ["-d", str(Path(script).parent), "-O", f"{log_dir}/OAR.%jobid%.stdout",
                       "-E", f"{log_dir}/OAR.%jobid%.stderr"]

    def _filter(self, request: JobRequest) -> str | None:
        """The job's property filter: its own (the site's narrowed to its image's GPUs), else the site's."""
        return request.gpu_filter if request.gpu_filter is not None else self.site.gpu_filter

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """The oarsub command (the site's submit_args after kit's options); its last argument is the quoted
        command OAR's shell runs."""
        return ["oarsub", *self.options(request, script, log_dir), *self.site.submit_args,
                shlex.join(["bash", str(script)])]

    def job_script(self, base: JobScript, request: JobRequest, log_dir: str) -> JobScript:
        """The common script with OAR's array index, plus the forwarded variables written out."""
        spec = super().job_script(base, request, log_dir)
        return replace(spec, env={**forwarded_values(self.site, dict(os.environ)), **spec.env})

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str],
               started: Callable[[Submission], None] | None = None) -> Submission:
        """Run oarsub on the frontend once (never again after a refusal); returns one id per array job."""
        self.frontend.run(["mkdir", "-p", log_dir], env=env, check=True)
        argv = self.submit_argv(request, script, log_dir)
        res = self.frontend.run(argv, env=env)
        ids = parse_job_ids(res.stdout)
        if res.returncode != 0 or not ids:
            said = " ".join(line.strip() for line in (res.stderr + "\n" + res.stdout).splitlines()
                            if line.strip() and not line.startswith(("OAR_JOB_ID=", "[ADMISSION RULE] Modify")))
            raise SubmitError(f"site {self.site.name}: oarsub on {self.frontend.where} refused the job "
                              f"(exit {res.returncode}): {said[-400:] or 'no job id printed'}",
                              fix=self._refusal_fix(said, request))
        return Submission(self.site.name, ids, argv, script, output=res.stdout + res.stderr)

    def _refusal_fix(self, said: str, request: JobRequest) -> str:
        name = self.site.name
        if "not enough resources" in said:
            narrowed = (" (kit added the compute capability the job's image runs on: an image built for these GPUs, "
                        "or another site, is the fix then)" if request.gpu_filter is not None else "")
            return (f"no resource matches -p {self._filter(request)!r} with -l {self.resources(request)}{narrowed}: "
                    f"relax gpu_filter (or the GPU count) of [site.{name}] in sites.toml, or see `oarnodes` on the "
                    "frontend")
        if "unknown job type" in said:
            return (f"set job_types of [site.{name}] to types this OAR accepts "
                    "(Lyon's A100 cluster: job_types = [\"exotic\"] with queue = \"default\")")
        if "not allowed to submit" in said:
            return "OAR refuses root: run kit as your own user, or use an ssh frontend that logs in as you"
        return "read OAR's message; kit does not resubmit by itself: fix the request, then run kit again"

    def poll(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """State of each job from `oarstat -f -J -j ID ...` (one call per 100 ids)."""
        out: dict[str, JobStatus] = {}
        for i in range(0, len(job_ids), 100):
            chunk = [str(j) for j in job_ids[i:i + 100]]
            records, why = self._records(chunk)
            for j in chunk:
                out[j] = (replace(job_status(j, records[j]), name=_name(records[j])) if j in records
                          else JobStatus(j, JobState.UNKNOWN, reason=why or "oarstat does not know this job (purged, "
                                         "or another OAR)", unasked=bool(why)))
        return out

    def live_jobs(self) -> dict[str, LiveJob]:
        """Your jobs OAR still holds (not Terminated or Error), from `oarstat -u -J` (array_index is 1-based)."""
        res = self.frontend.run(["oarstat", "-u", "-J"], env=self._env())
        if res.returncode != 0:
            raise SubmitError(f"site {self.site.name!r}: oarstat -u exited {res.returncode}: {res.stderr.strip()[-200:]}",
                              fix="check the frontend and OAR, then retry")
        try:
            records = parse_oarstat(res.stdout)
        except ValueError as exc:
            raise SubmitError(f"site {self.site.name!r}: oarstat -u printed something that is not JSON ({exc})",
                              fix="check the frontend and OAR, then retry") from None
        out = {}
        for job_id, info in records.items():
            state = OAR_STATES.get(str(info.get("state")), JobState.UNKNOWN)
            index = info.get("array_index")
            if state in (JobState.PENDING, JobState.RUNNING):
                out[job_id] = LiveJob(str(info.get("name") or ""), state,
                                      index - 1 if isinstance(index, int) and index >= 1 else 0)
        return out

    def _records(self, job_ids: list[str]) -> tuple[dict[str, dict], str]:
        """oarstat's record of each job it knows, and why there are none when it failed."""
        res = self.frontend.run(["oarstat", "-f", "-J", *[a for j in job_ids for a in ("-j", j)]], env=self._env())
        if res.returncode != 0:
            return {}, f"oarstat exited {res.returncode}: {res.stderr.strip()[-200:]}"
        try:
            return parse_oarstat(res.stdout), ""
        except ValueError as exc:
            return {}, f"oarstat printed something that is not JSON ({exc})"

    def _env(self) -> dict[str, str]:
        return allow_listed_env(os.environ, self.site.forward_env)

    def cancel_argv(self, job_ids: list[str]) -> list[str]:
        """oardel ID ... (array jobs are deleted one by one, by their own ids); `cancel` sends the
        running ones SIGTERM first."""
        return ["oardel", *map(str, job_ids)]

    def cancel(self, job_ids: list[str]) -> None:
        """Send SIGTERM to the running jobs (oardel --signal: the worker stops its pair cleanly and exits
        143), wait up to STOP_GRACE_S for them to end, then oardel every job not known to be finished."""
        if not job_ids:
            return
        # only a Running job has a worker to signal (OAR refuses it for a Launching one)
        records = {}
        for i in range(0, len(job_ids), 100):
            records.update(self._records([str(j) for j in job_ids[i:i + 100]])[0])
        running = [str(j) for j in job_ids if records.get(str(j), {}).get("state") == "Running"]
        if running:
            # best effort: a job that ends meanwhile refuses the signal; the oardel below covers the rest
            self.frontend.run(["oardel", "--signal", "SIGTERM", *running], env=self._env())
            end = time.monotonic() + STOP_GRACE_S
            while time.monotonic() < end and any(st.state == JobState.RUNNING for st in self.poll(running).values()):
                time.sleep(1)
        live = [j for j, st in self.poll(job_ids).items() if st.state in (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)]
        if live:
            self.frontend.run(self.cancel_argv(live), env=self._env(), check=True)
