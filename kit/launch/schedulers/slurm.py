"""The `slurm` scheduler: one sbatch script per job (an array when shards > 1), status from
`squeue --json` then `sacct`, cancellation with `scancel`. Example (sites.toml)::

    [site.cluster]
    scheduler = "slurm"
    frontend = "login.cluster.example"   # ssh host that runs sbatch, or "local"
    runtime = "pyxis"                    # pyxis | apptainer | docker | host | enroot
    partition = "gpu"
    account = "proj123"
    qos = "normal"
    gres = "gpu:a100:{gpus}"             # default "gpu:{gpus}"; "--gpus={gpus}" for a --gpus site
    gpus_per_node = 4
    cpus_per_task = 8
    mem_gb = 64
    walltime = "2:00:00"                 # Slurm reads "2:00" as two minutes
    root = "/lustre/me/kit"              # job scripts, plan files, logs
    results = "/lustre/me/kit/results"
    images = "/lustre/me/kit-images"     # kit-<backend>-<id>.sqsh / .sif
    weights = "/lustre/me/hf-hub"        # staged Hugging Face cache, read offline
    scratch = "/tmp"                     # node-local: HF_HOME, TRITON_CACHE_DIR, ... go here
    hf_token_file = "/home/me/.config/kit/hf_token"   # mode 600; used when staging weights, never by jobs

Environment. The frontend runs `sbatch` under `env -i` with only the allow-list (PATH,
HOME, USER, LANG, TZ and the site's `forward_env`), and the script asks for
`--export=<those names>`, so their values travel by name (never on a command line) and no
other variable of the submitter's shell reaches the job. `--export=NONE` was not chosen:
it cannot carry `forward_env` values without writing them into the script. With either
form Slurm 22.05 also loads the user's login environment on the node (measured:
SLURM_GET_USER_ENV=1), so the script is self-sufficient: it exports every value the
worker needs itself, containers get only named variables (Apptainer --cleanenv, Docker
-e), and `SLURM_EXPORT_ENV=ALL` lets its `srun` steps see that environment instead of
inheriting the batch job's export list."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kit.config.sites import Site
from kit.config.sites import SBATCH_CONSTRAINT, SBATCH_WORD
from kit.errors import ConfigError, SubmitError
from kit.launch.frontend import CommandResult
from kit.launch.jobscript import BASE_ENV, JobScript, allow_listed_env
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import JobState, JobStatus, LiveJob, Scheduler, Submission, register_scheduler
from kit.launch.schedulers.slurm_query import (parse_sacct, parse_sbatch_id, parse_squeue_json, parse_squeue_names,
                                               plain_ids)

# What may stand in an #SBATCH line: sbatch splits those lines itself, so values are
# checked rather than quoted (a partition, account or path with spaces or quotes is refused).
_WORD, _CONSTRAINT = SBATCH_WORD, SBATCH_CONSTRAINT   # (kit.config.sites checks a site's own as it is read)
_PATH = re.compile(r"^/?[A-Za-z0-9_.,:=+@/-]+\Z")
SACCT_FIELDS = "JobID,State,ExitCode"


def _checked(value: str, what: str, site: Site, pattern: re.Pattern = _WORD) -> str:
    if not pattern.fullmatch(value):
        raise ConfigError(f"site {site.name!r}: {what} {value!r} cannot go into an #SBATCH line",
                          fix=f"set {what} to letters, digits and . _ - : , = + @" + (" /" if pattern is _PATH else ""))
    return value


def slurm_time(seconds: int) -> str:
    """--time value: H:MM:SS, or D-HH:MM:SS from one day up."""
    days, rem = divmod(int(seconds), 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}" if days else f"{hours}:{minutes:02d}:{secs:02d}"


def gpu_option(site: Site, gpus: int) -> str | None:
    """The GPU request: --gres=gpu:N by default, or the site's `gres` template with {gpus}
    filled in ('gpu:a100:{gpus}' -> --gres=gpu:a100:N; '--gpus={gpus}' is used as written)."""
    if gpus <= 0:
        return None
    template = site.gres or "gpu:{gpus}"
    if "{gpus}" not in template:
        raise ConfigError(f"site {site.name!r}: gres {template!r} has no {{gpus}} placeholder",
                          fix="write e.g. gres = \"gpu:a100:{gpus}\" so kit can ask for the GPUs each model needs")
    text = template.replace("{gpus}", str(int(gpus)))
    option = text if text.startswith("--") else f"--gres={text}"
    return _checked(option, "gres", site)


def export_names(site: Site) -> list[str]:
    """The variables sbatch passes from the (allow-listed) submit environment to the job."""
    return list(dict.fromkeys([*BASE_ENV, *site.forward_env]))


@register_scheduler("slurm")
class SlurmScheduler(Scheduler):
    """sbatch/squeue/sacct/scancel; array task ids are `<array job id>_<task id>`, task ids 0-based."""

    def prelude(self, request: JobRequest, log_dir: str) -> list[str]:
        """The #SBATCH lines: name, partition/account/qos, one node and task, GPUs, time, array, log, export."""
        site = self.site
        opts = [f"--job-name={_checked(request.name, 'job name', site)}"]
        for key, value in (("partition", site.partition), ("account", site.account), ("qos", site.qos)):
            if value:
                opts.append(f"--{key}={_checked(value, key, site)}")
        opts += ["--nodes=1", "--ntasks=1"]
        gpus = gpu_option(site, request.gpus)
        if gpus:
            opts.append(gpus)
        if request.cpus:
            opts.append(f"--cpus-per-task={int(request.cpus)}")
        if request.mem_gb == 0:   # all of the node's memory, as MLPerf's Slurm scripts ask it
            opts.append("--mem=0")
        elif request.mem_gb:
            opts.append(f"--mem={int(request.mem_gb)}G")
        if request.mem_per_gpu_gb and request.gpus > 0:   # grows with the GPUs the model gets
            opts.append(f"--mem-per-gpu={int(request.mem_per_gpu_gb)}G")
        for key in ("constraint", "reservation"):
            value = request.constraint if key == "constraint" and request.constraint is not None else getattr(site, key)
            if value:
                opts.append(f"--{key}={_checked(value, key, site, _CONSTRAINT if key == 'constraint' else _WORD)}")
        if site.exclusive:
            opts.append("--exclusive")
        if site.requeue is not None:
            opts.append("--requeue" if site.requeue else "--no-requeue")
        opts.append(f"--time={slurm_time(request.walltime_s)}")
        if request.array_size > 1:
            opts.append(f"--array=0-{int(request.array_size) - 1}")
        log_name = "%x-%A_%a.out" if request.array_size > 1 else "%x-%j.out"
        opts.append(f"--output={_checked(str(log_dir), 'root (its logs folder)', site, _PATH)}/{log_name}")
        opts.append("--export=" + ",".join(export_names(site)))
        return [f"#SBATCH {o}" for o in opts]

    def job_script(self, base: JobScript, request: JobRequest, log_dir: str) -> JobScript:
        """Directives, plus the lines that make `srun` steps see the script's own environment."""
        spec = super().job_script(base, request, log_dir)
        lines = ["# srun steps get this script's environment, not the batch job's --export list",
                 "export SLURM_EXPORT_ENV=ALL"]
        if request.cpus:
            # since 22.05 srun no longer reads SLURM_CPUS_PER_TASK from the batch job
            lines.append('export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK:-1}"')
        return replace(spec, setup=(*lines, *spec.setup))

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """`sbatch --parsable [submit_args] SCRIPT` (kit's options are #SBATCH lines of the script; the
        site's submit_args come on the command line)."""
        return ["sbatch", "--parsable", *self.site.submit_args, str(script)]

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str],
               started: Callable[[Submission], None] | None = None) -> Submission:
        """Submit; job ids are `<id>` or, for an array, `<id>_<task>` for every task."""
        # Slurm does not create the --output folder; a job whose log cannot open fails silently.
        if self.frontend.is_local:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
        else:
            self.frontend.run(["mkdir", "-p", log_dir], check=True)
        argv = self.submit_argv(request, script, log_dir)
        result = self.frontend.run(argv, env=env, check=True)
        job = parse_sbatch_id(result.stdout)
        if job is None:
            raise SubmitError(f"site {self.site.name!r}: sbatch exited 0 but printed no single job id, so the job may "
                              f"have been submitted without kit's record: {result.stdout.strip()[-300:]!r}",
                              fix="look for it with `squeue --me` before submitting again; kit status shows its "
                                  "pairs as unclaimed until they are written")
        ids = [f"{job}_{i}" for i in range(request.array_size)] if request.array_size > 1 else [job]
        return Submission(self.site.name, ids, argv, script, output=(result.stdout + result.stderr).strip())

    def poll(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """squeue --json for jobs Slurm still holds, then sacct; `unknown` with the reason otherwise."""
        found: dict[str, JobStatus] = {}
        problems: list[str] = []
        try:
            live = parse_squeue_json(self._ask(["squeue", "--json"]).stdout, wanted=set(job_ids))
            found.update({j: live[j] for j in job_ids if j in live})
        except (SubmitError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"squeue --json: {exc}")
        rest = [j for j in job_ids if j not in found]
        if rest:
            try:
                found.update(self._accounting(rest))
            except (SubmitError, ValueError) as exc:
                problems.append(f"sacct: {exc}")
        why = "; ".join(problems) or "neither squeue nor sacct reports this job"
        # squeue could not answer: a job it did not report may be live, and the scheduler was not asked
        unasked = any(p.startswith("squeue") for p in problems)
        return {j: found.get(j) or JobStatus(j, JobState.UNKNOWN, reason=why, unasked=unasked) for j in job_ids}

    def live_jobs(self) -> dict[str, LiveJob]:
        """Your pending and running kit jobs (named kit-...) and their array tasks (`<id>_<task>`, tasks 0-based),
        from `squeue --json --me`."""
        try:
            return {j: LiveJob(name, state, int(j.rpartition("_")[2]) if "_" in j else 0) for j, (name, state) in
                    parse_squeue_names(self._ask(["squeue", "--json", "--me"]).stdout, "kit-").items()
                    if state in (JobState.PENDING, JobState.RUNNING)}
        except (ValueError, KeyError, TypeError) as exc:
            raise SubmitError(f"site {self.site.name!r}: squeue --json --me gave no job list ({exc})",
                              fix="check the scheduler answers, then retry") from None

    def _ask(self, argv: list[str], check: bool = True) -> CommandResult:
        return self.frontend.run(argv, env=allow_listed_env(os.environ, ()), check=check)

    def _accounting(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """sacct with slurmdbd; without it, the jobcomp file (`sacct -c`), which knows only plain ids."""
        dbd = self._ask(["sacct", "--parsable2", "--noheader", "-X", "-j", ",".join(job_ids), "-o", SACCT_FIELDS],
                        check=False)
        if dbd.returncode == 0:
            return parse_sacct(dbd.stdout, wanted=set(job_ids))
        plain = plain_ids(job_ids)
        found = {}
        if plain:
            found = parse_sacct(self._ask(["sacct", "-c", "--parsable2", "--noheader", "-j", ",".join(plain),
                                           "-o", SACCT_FIELDS]).stdout, wanted=set(job_ids))
        lost = (f"array task left the queue and this site has no slurmdbd: `sacct -c` (jobcomp) records "
                f"array tasks under raw job ids only ({(dbd.stderr or dbd.stdout).strip()[:120]}); read the job log")
        return {j: found.get(j) or JobStatus(j, JobState.UNKNOWN, reason=lost) for j in job_ids if j in found or "_" in j}

    def cancel_argv(self, job_ids: list[str]) -> list[str]:
        """`scancel ID ...` (array task ids as `<id>_<task>`)."""
        return ["scancel", *job_ids]

    def cancel(self, job_ids: list[str]) -> None:
        """Cancel these jobs or array tasks."""
        if job_ids:
            self.frontend.run(self.cancel_argv(job_ids), env=allow_listed_env(os.environ, ()), check=True)
