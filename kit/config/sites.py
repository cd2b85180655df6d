"""sites.toml: one [site.NAME] table per cluster (scheduler, runtime, paths, job defaults, policy)."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, StrictInt, ValidationInfo, field_validator,
                      model_validator)

from kit.config.names import ENV_NAME
from kit.config.loading import invalid, load_model
from kit.config.walltime import walltime_seconds
from kit.credentials import secret_name
from kit.errors import ConfigError
from kit.gpus import Capability, model_capability, parse_capability

G5K_JOB_TYPES = ("night",)
G5K_GPU_FILTER = "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
G5K_POLICY_CHECKS = ("usagepolicycheck -t",)
# OAR job types whose script does not run on the reserved node (Grid'5000: deploy jobs are for
# kadeploy, which installs a system on the nodes from the frontend)
FRONTEND_JOB_TYPES = {"deploy": "on the frontend (a deploy job is for kadeploy)",
                      "noop": "nowhere (a noop job runs no script: it only holds the nodes)",
                      "cosystem": "on OAR's cosystem host (a cosystem job holds the nodes for other jobs)"}
# OAR job types that say when a job may run: --job-type replaces these; a site's other types (exotic:
# the hardware it may reserve, which Lyon's sirius requires) stay whatever --job-type says
WHEN_JOB_TYPES = ("night", "besteffort", "day")
# an OAR job type: a word, or a word with its value (timesharing=user,*; container=42)
_JOB_TYPE = re.compile(r"^[a-z][a-z0-9_.-]*(?:=[A-Za-z0-9_.,*-]+)?\Z")
_TYPE_WORD = re.compile(r"^[a-z][a-z0-9_.-]*(?:=.*)?\Z")   # a piece that starts a job type of its own
_SITE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")
SITE_NAME_MAX = 40
_FEATURE = re.compile(r"^[A-Za-z0-9_.-]+\Z")     # a Slurm node feature name
_SCHEDULER_WORD = re.compile(r"^[A-Za-z0-9_.@+-]+\Z")   # an OAR queue or project, a Slurm account
# what may stand in an #SBATCH line's value: sbatch splits those lines itself, so values are checked,
# never quoted (a partition, QoS or reservation; a constraint, with Slurm's feature operators)
SBATCH_WORD = re.compile(r"^[A-Za-z0-9_.,:=+@-]+\Z")
SBATCH_CONSTRAINT = re.compile(r"^[A-Za-z0-9_.,:=+@&|\[\]()*-]+\Z")   # a100&ib, [rack1|rack2], (a|b)&ib


def split_job_types(values: Iterable[str]) -> tuple[str, ...]:
    """OAR job types, one per entry: 'night exotic' or 'night,exotic' give two; a type that OAR's -t
    would not read as one is a ConfigError-ready invalid()."""
    out: list[str] = []
    for value in values:
        # 'night,exotic' is two types, but the commas of a type's value stay (timesharing=user,*): a piece
        # that is no type of its own continues the value before it
        pieces: list[str] = []
        for word in (w for w in re.split(r"\s+", str(value).strip()) if w):
            for piece in word.split(","):
                # timesharing's value is two words (user,*; *,name): its second is never a type of its own
                two_words = bool(pieces) and pieces[-1].startswith("timesharing=") and "," not in pieces[-1]
                if pieces and "=" in pieces[-1] and (two_words or not _TYPE_WORD.match(piece)):
                    pieces[-1] += "," + piece
                else:
                    pieces.append(piece)
        for name in pieces:
            if not name:
                continue
            if not _JOB_TYPE.match(name):
                if _JOB_TYPE.match(name.lower()):
                    raise invalid(f"job type {name!r}: OAR's job types are lower-case, and OAR reads {name!r} as "
                                  "another type", fix=f"write {name.lower()!r}")
                raise invalid(f"job type {name!r} is not an OAR job type",
                              fix="write types like night, exotic or besteffort (lower-case letters, digits, _ = . -)")
            if name in FRONTEND_JOB_TYPES:
                raise invalid(f"job type {name!r} runs the job's script {FRONTEND_JOB_TYPES[name]}, not on the "
                              "GPU node it reserves",
                              fix=f"drop {name} from job_types (or --job-type): kit's jobs run on the node they "
                                  "reserve; use night, exotic or besteffort")
            if name not in out:
                out.append(name)
    return tuple(out)


# a quoted value of an OAR filter (SQL: '' inside single quotes is one quote)
FILTER_QUOTED = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"")


def filter_fault(gpu_filter: str) -> str | None:
    """What makes an OAR property filter (oarsub -p, an SQL WHERE clause) unreadable, or None: an
    unclosed quote, unbalanced parentheses outside the quoted values, a ';', a line break or a control
    character."""
    if any(ord(c) < 32 or ord(c) == 127 for c in gpu_filter):
        return "holds a line break or a control character"
    double = re.search(r'"([^"]*)"', re.sub(r"'(?:[^']|'')*'", "''", gpu_filter))
    if double:   # OAR's -p is SQL (PostgreSQL on Grid'5000), where "A100" names a column, not a value
        return (f"quotes {double.group(0)} in double quotes, which SQL reads as a column name: write the value in "
                f"single quotes ('{double.group(1)}')")
    bare = FILTER_QUOTED.sub("_", gpu_filter)
    if "'" in bare or '"' in bare:
        return "has a quote that is not closed"
    if ";" in bare:
        return "holds ';' outside a quoted value"
    if "--" in bare or "/*" in bare:   # what kit adds after the filter would be commented out
        return "holds an SQL comment ('--' or '/*') outside a quoted value, which would hide what kit adds after it"
    depth = 0
    for c in bare:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            break
    if depth:
        return "has unbalanced parentheses"
    return None


# options kit writes itself into oarsub's and sbatch's request (or that would take the job away from
# it: interactive, connect); submit_args may not repeat them
KIT_SUBMIT_OPTIONS = {
    "oar": frozenset({"-l", "--resource", "-t", "--type", "-q", "--queue", "-p", "--property", "--project",
                      "-n", "--name", "-d", "--directory", "-O", "--stdout", "-E", "--stderr", "--array",
                      "--array-param-file", "--checkpoint", "--signal", "-I", "--interactive", "-C", "--connect",
                      "-S", "--scanscript"}),
    "slurm": frozenset({"-t", "--time", "-a", "--array", "-J", "--job-name", "-o", "--output", "-e", "--error",
                        "--parsable", "--export", "-D", "--chdir", "--gres", "-G", "--gpus", "--gpus-per-node",
                        "-p", "--partition", "-A", "--account", "-q", "--qos", "-C", "--constraint", "--mem",
                        "--mem-per-gpu", "-c", "--cpus-per-task", "--reservation", "--exclusive", "--requeue",
                        "--no-requeue", "--wrap", "-N", "--nodes", "-n", "--ntasks",
                        # GPU counts beside kit's own request, which sbatch refuses or reads against it
                        "--gpus-per-task", "--gpus-per-socket", "--tres-per-task"}),
}


# options that would take the job away from what kit promises of it, with why: submit_args may not hold them
KIT_DENIED_OPTIONS = {
    "oar": {"-r": "books the job for a later start, which kit's day-window check (made at submission) cannot see",
            "--reservation": "books the job for a later start, which kit's day-window check (made at submission) "
                             "cannot see"},
    "slurm": {**dict.fromkeys(("--container-image", "--container-mounts", "--container-workdir", "--container-env",
                               "--container-name", "--container-save", "--container-writable",
                               "--container-readonly", "--container-remap-root", "--container-entrypoint",
                               "--container-mount-home", "--no-container-mount-home", "--no-container-remap-root",
                               "--no-container-entrypoint"),
                              "gives the job a container of its own beside the site's pinned image (runtime, images)"),
              "--get-user-env": "loads the login environment into the job, which kit's jobs leave out",
              "--test-only": "submits nothing, so kit would record no job",
              "-W": "makes sbatch wait until the job ends", "--wait": "makes sbatch wait until the job ends"},
}


# a site's gres template: a generic resource spec with the count as {gpus} (more resources may follow after
# a comma), or one of Slurm's GPU-count options
GRES_TEMPLATE = re.compile(r"(?:--gres=)?gpu(?::[A-Za-z0-9_.-]+)*:\{gpus\}(?:,(?!gpu\b)[A-Za-z0-9_:.-]+)*"
                           r"|--gpus(?:-per-node)?=(?:[A-Za-z0-9_.-]+:)?\{gpus\}")


def reserved_option(arg: str, reserved: frozenset[str]) -> str | None:
    """The option of `reserved` that the command-line word `arg` sets, as the scheduler's option parser
    reads it (sbatch's getopt_long, oarsub's Getopt::Long): the option itself, with its value after '='
    ("--time=5") or attached to a short one ("-t5", "-lhost=4"), or a long one abbreviated ("--tim=5":
    both parsers take any unambiguous prefix, so any prefix of a reserved option is refused); None when
    it sets none."""
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        if len(name) > 2:
            return next((option for option in sorted(reserved) if option.startswith(name)), None)
        return None
    if arg.startswith("-") and len(arg) > 1:
        # short options bundle ("-vt5": -v, then -t with 5): each letter is an option until one that
        # takes a value (the rest of the word is that value); a letter neither knows takes one
        for letter in arg[1:]:
            if f"-{letter}" in reserved:
                return f"-{letter}"
            if letter not in _SHORT_FLAGS:
                return None
    return None


# short options of sbatch and oarsub that take no value (so the next letter of a bundle is an option)
_SHORT_FLAGS = frozenset("hHkOQsuVvW")


# runtime names people write for one kit knows: Apptainer's command was Singularity's, and clusters such
# as Jean Zay still provide only singularity (SingularityCE 3.x, which has no `apptainer` command and reads
# SINGULARITYENV_ variables): a site that writes it runs the apptainer runtime with that command
_RUNTIME_ALIASES = {"singularity": "apptainer"}


def _common_spellings(data: Any) -> Any:
    """A site table with `scheduler` and `runtime` as kit spells them ('OAR' -> 'oar', 'Slurm' ->
    'slurm', 'singularity' -> 'apptainer'), a `job_types` string as its list and a `walltime` number as
    the same digits in the scheduler's grammar; anything else is left for validation to judge."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    if isinstance(data.get("job_types"), str):   # job_types = "night" or "night,exotic", as -t takes it
        data["job_types"] = [data["job_types"]]
    for key in ("gpu_model", "gpu_compute_capability"):   # one GPU as a string; 8.0 (or 9) written as a TOML number
        value = data.get(key)
        if isinstance(value, (str, float)) or (key == "gpu_compute_capability" and isinstance(value, int)
                                               and not isinstance(value, bool)):
            value = [value]
        if isinstance(value, list):
            data[key] = [repr(v) if isinstance(v, float) else
                         f"{v}.0" if key == "gpu_compute_capability" and isinstance(v, int) and not isinstance(v, bool)
                         else v for v in value]
    if isinstance(data.get("walltime"), datetime.time):   # walltime = 02:00:00 unquoted: TOML's time of day
        data["walltime"] = data["walltime"].isoformat()
    if isinstance(data.get("gpu_features"), dict):
        data["gpu_features"] = {k: repr(v) if isinstance(v, float) else v for k, v in data["gpu_features"].items()}
    if isinstance(data.get("walltime"), int) and not isinstance(data["walltime"], bool):
        data["walltime"] = str(data["walltime"])   # read as the scheduler reads a bare number (kit.config.walltime)
    for key in ("scheduler", "runtime"):
        if isinstance(data.get(key), str):
            value = data[key].strip().lower()
            if key == "runtime" and value == "singularity":
                data.setdefault("container_command", "singularity")
            data[key] = _RUNTIME_ALIASES.get(value, value) if key == "runtime" else value
    return data


def shell_syntax_fault(text: str) -> str | None:
    """What `bash -n` says of these shell lines (None when they parse, or when this machine has no bash)."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        return None
    # extglob: a setup line may enable it (shopt -s extglob) and use it; bash -n parses before running it
    done = subprocess.run([bash, "-O", "extglob", "-n"], input=text, capture_output=True, text=True, timeout=30)
    # an unclosed here-document is only a warning to bash -n, but in the job it swallows the script's rest
    if done.returncode == 0 and "here-document" not in done.stderr:
        return None
    said = [re.sub(r"^\S*bash: ", "", line).strip() for line in done.stderr.splitlines() if line.strip()]
    return "; ".join(said)[:300] or f"bash -n exited {done.returncode}"


class Site(BaseModel):
    """A cluster entry: where and how jobs run, and where results and images live."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("", description="the site's name: set from its [site.NAME] table (a value written here "
                      "is replaced)")
    scheduler: Literal["oar", "slurm", "local"] = Field(description="how jobs are submitted: oarsub, sbatch, or "
                                                        "local (run here, one after the other); any case")
    runtime: Literal["apptainer", "pyxis", "enroot", "docker", "host"] = Field(
        "host", description="what runs the worker: a SIF (apptainer; singularity is read as apptainer), a sqsh "
        "(pyxis, enroot), a docker image, or a Python on the node (host); OAR sites default to apptainer")
    frontend: str = Field("local", description="'local' or an ssh host that runs the scheduler commands")
    root: str = Field(".", description="kit's working folder on the frontend (job scripts, logs)")
    results: str = Field("results", description="results tree, as the job sees it")
    images: str = Field("images", description="where SIF/sqsh artifacts live on the cluster")
    scratch: str = Field("/tmp", description="node-local scratch for caches")
    weights: str | None = Field(None, description="staged Hugging Face cache (HF_HOME/hub layout)")
    job_types: tuple[str, ...] = Field((), description="OAR: job types (-t), e.g. night or exotic; a string "
                                       "\"night,exotic\" is split; OAR default: [\"night\"] (none when "
                                       "night_jobs = false)")
    night_jobs: bool = Field(True, description="OAR: whether the site accepts job type night (Lyon's sirius does not)")
    queue: str | None = Field(None, description="OAR: the queue (-q), one name (letters, digits, . _ - @ +); other "
                                                "schedulers ignore it, and `kit run` says so")
    partition: str | None = Field(None, description="Slurm: --partition")
    account: str | None = Field(None, description="Slurm: --account; OAR: --project; one name, as for queue")
    qos: str | None = Field(None, description="Slurm: --qos")
    gpu_filter: str | None = Field(None, description="OAR: the property filter (-p), raised when it guarantees "
                                   f"less GPU memory than a job needs (an empty filter guarantees none); OAR "
                                   f"default: {G5K_GPU_FILTER} (none when gpus_per_node = 0)")
    gres: str | None = Field(None, description="Slurm: the GPU request with a {gpus} placeholder, e.g. "
                             "'gpu:a100:{gpus}' or '--gpus={gpus}'; unset: --gres=gpu:N")
    gpus_per_node: StrictInt = Field(1, ge=0, le=64, description="GPUs of one node (0: CPU only); a job is sized to "
                               "fit one node")
    gpu_memory_gib: float | None = Field(None, gt=0, le=4096, description="memory of one GPU (GiB); for a filtered "
                                         "OAR site, the largest GPU its filter can give; kit refuses what cannot fit")
    gpu_model: tuple[str, ...] = Field((), description="the GPU model of the site's nodes as nvidia-smi or "
                                       "Grid'5000's gpu_model property names it ('A100-SXM4-80GB', 'Tesla "
                                       "V100-SXM2-32GB'), a list for several; kit knows their compute capability "
                                       "and refuses a job whose image they cannot run")
    gpu_compute_capability: tuple[str, ...] = Field((), description="the compute capability of the site's GPUs "
                                                    "('8.0', as nvidia-smi --query-gpu=compute_cap prints it; a list "
                                                    "for several), for a GPU kit does not know by name")
    gpu_features: dict[str, str] = Field(default_factory=dict, description="Slurm: node feature -> the GPU model "
                                         "or compute capability of the nodes that have it ({ v100 = \"V100\", a100 = "
                                         "\"8.0\" }); kit adds --constraint for the features whose GPUs run the job's "
                                         "image")
    cpus_per_task: StrictInt | None = Field(None, ge=1, le=4096, description="CPU cores per job: Slurm "
                                            "--cpus-per-task; OAR "
                                      "core=N for a job without GPUs; unset: the scheduler's default")
    mem_gb: StrictInt | None = Field(None, ge=0, le=65536, description="memory per job (GB); 0: all of the "
                                     "node's memory (Slurm "
                               "--mem=0); Slurm sites may instead give mem_per_gpu_gb")
    mem_per_gpu_gb: StrictInt | None = Field(None, ge=1, le=4096, description="Slurm: memory per allocated GPU "
                                             "(--mem-per-gpu)")
    exclusive: StrictBool = Field(False, description="Slurm: --exclusive (the whole node)")
    constraint: str | None = Field(None, description="Slurm: --constraint, e.g. 'a100&ib'")
    reservation: str | None = Field(None, description="Slurm: --reservation")
    requeue: StrictBool | None = Field(None, description="Slurm: --requeue (true) or --no-requeue (false)")
    setup: tuple[str, ...] = Field((), description="shell lines the job runs before the worker, e.g. "
                                                    "'module load apptainer', with set +u and after /etc/profile "
                                                    "when `module` is undefined (kit.launch.jobscript.render_site_setup)")
    walltime: str = Field("1h", description="per job, in the scheduler's own grammar or units (kit.config.walltime)")
    weight: StrictInt = Field(1, ge=1, le=1000, description="its share of the shard slots in a multi-site run "
                              "(kit run --sites "
                        "a,b): consecutive slots by weight; a run at this site alone is one job unless --array N")
    policy_checks: tuple[str, ...] = Field((), description="commands run on the frontend before submitting; a "
                                           "non-zero exit blocks the submission; OAR default: "
                                           "[\"usagepolicycheck -t\"]")
    submit_args: tuple[str, ...] = Field((), description="more oarsub/sbatch options, one argument each, e.g. "
                                         "'--exclude=node07' or '--mail-type=END' (not those kit sets itself, in any "
                                         "spelling the scheduler reads as one of them: -t5, -lhost=4, a bundle such "
                                         "as -vt5, an abbreviation such as --tim=5)")
    forward_env: tuple[str, ...] = Field((), description="names of environment variables passed from kit's "
                                         "environment to the job and its container (secret-looking names are "
                                         "refused)")
    hf_token_file: str | None = Field(None, description="file with the HF token, mode 600, on this machine: "
                                      "`kit weights stage --site NAME` uses it for gated models; jobs never get it")
    python: str | None = Field(None, description="host runtime: the python that has kit's worker installed "
                               "(default on a local site: the launcher's; a remote site must set it)")
    docker_image: str | None = Field(None, description="docker runtime: image reference")
    container_command: Literal["apptainer", "singularity"] = Field(
        "apptainer", description="apptainer runtime: the command the job runs, apptainer or singularity (a "
        "cluster whose module provides only singularity; runtime = \"singularity\" sets it), with its own "
        "environment prefix (APPTAINERENV_ or SINGULARITYENV_)")

    @model_validator(mode="before")
    @classmethod
    def _grid5000_defaults(cls, data: Any) -> Any:
        data = _common_spellings(data)
        if isinstance(data, dict) and data.get("scheduler") == "oar":
            data = dict(data)
            data.setdefault("runtime", "apptainer")
            data.setdefault("policy_checks", list(G5K_POLICY_CHECKS))
        return data

    @field_validator("walltime")
    @classmethod
    def _walltime(cls, v: str, info: ValidationInfo) -> str:
        # in the grammar of the site's own scheduler (declared above, so validated first)
        walltime_seconds(v, info.data.get("scheduler", "local"))
        return v

    @field_validator("gpu_model")
    @classmethod
    def _gpu_model(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if model_capability(name) is None:
                raise invalid(f"gpu_model {name!r} is not a GPU kit knows the compute capability of",
                              fix="write it as nvidia-smi names it (e.g. 'A100-SXM4-80GB'), or give "
                                  "gpu_compute_capability = \"8.6\" instead (nvidia-smi --query-gpu=compute_cap)")
        return v

    @field_validator("gpu_compute_capability")
    @classmethod
    def _gpu_compute_capability(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for text in v:
            try:
                parse_capability(text)
            except ValueError as exc:
                raise invalid(f"gpu_compute_capability {text!r}: {exc}", fix="e.g. gpu_compute_capability = \"8.0\"") from None
        return v

    @field_validator("gpu_features")
    @classmethod
    def _gpu_features(cls, v: dict[str, str]) -> dict[str, str]:
        for feature, gpu in v.items():
            if not _FEATURE.fullmatch(feature):
                raise invalid(f"gpu_features key {feature!r} is not a Slurm node feature name",
                              fix="name features as sinfo -o '%N %f' lists them (letters, digits, _ . -)")
            if _gpu_capability(gpu) is None:
                raise invalid(f"gpu_features {feature} = {gpu!r} is neither a GPU model kit knows nor a compute "
                              "capability", fix=f"write {feature} = \"A100\" (a model) or {feature} = \"8.0\"")
        return v

    def stated_gpus(self) -> dict[str, Capability]:
        """The GPUs the site says its jobs can land on, each with its compute capability: gpu_model,
        gpu_compute_capability and the GPUs of gpu_features (empty when it says nothing)."""
        out: dict[str, Capability] = {}
        for gpu in (*self.gpu_model, *self.gpu_compute_capability, *self.gpu_features.values()):
            cc = _gpu_capability(gpu)
            if cc is not None:
                out.setdefault(gpu, cc)
        return out

    def feature_capabilities(self) -> dict[str, Capability]:
        """gpu_features with each feature's compute capability."""
        return {f: cc for f, gpu in self.gpu_features.items() if (cc := _gpu_capability(gpu)) is not None}

    @field_validator("setup")
    @classmethod
    def _setup(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for line in v:
            if "\n" in line or "\r" in line or "\0" in line:
                raise invalid(f"setup line {line[:40]!r} holds a line break",
                              fix="write one shell line per entry: setup = [\"module load apptainer\", ...]")
        fault = shell_syntax_fault("\n".join(v)) if v else None
        if fault:   # said now, not by the job on its node after a night in the queue
            raise invalid(f"setup lines are not valid shell: {fault}",
                          fix="close every quote and block (if/fi, { }); bash -n checks them as the job would run them")
        return v

    @field_validator("gres")
    @classmethod
    def _gres(cls, v: str | None) -> str | None:
        # a GPU request and nothing else: --gres=<name>[:<type>]:{gpus}, --gpus={gpus} or --gpus-per-node={gpus}
        # (any other option here would pass kit's reserved-option rule, --time={gpus} or --array included)
        if v is None or GRES_TEMPLATE.fullmatch(v):
            return v
        raise invalid(f"gres {v!r} is not a GPU request kit can fill in",
                      fix="write gres = \"gpu:{gpus}\", \"gpu:a100:{gpus}\", \"--gpus={gpus}\" or "
                          "\"--gpus-per-node={gpus}\" (one {gpus} where the count goes)")

    @model_validator(mode="after")
    def _cpus(self) -> "Site":
        per_gpu = [a for a in self.submit_args if a.split("=", 1)[0] == "--cpus-per-gpu"]
        if per_gpu and self.cpus_per_task is not None:
            raise invalid(f"submit_args entry {per_gpu[0]!r} beside kit's --cpus-per-task (cpus_per_task)",
                          fix="keep one: sbatch refuses --cpus-per-gpu with --cpus-per-task")
        return self

    @model_validator(mode="after")
    def _memory(self) -> "Site":
        if self.mem_gb is not None and self.mem_per_gpu_gb:
            raise invalid("mem_gb and mem_per_gpu_gb are both set", fix="keep one: Slurm refuses --mem with --mem-per-gpu")
        per_cpu = [a for a in self.submit_args if a.split("=", 1)[0] == "--mem-per-cpu"]
        if per_cpu and (self.mem_gb is not None or self.mem_per_gpu_gb):
            raise invalid(f"submit_args entry {per_cpu[0]!r} beside kit's "
                          f"{'--mem' if self.mem_gb is not None else '--mem-per-gpu'} (mem_gb or mem_per_gpu_gb)",
                          fix="keep one memory option: Slurm refuses --mem, --mem-per-cpu and --mem-per-gpu together")
        slurm_only = [k for k in ("mem_per_gpu_gb", "constraint", "reservation") if getattr(self, k)]
        slurm_only += [k for k in ("exclusive", "requeue") if getattr(self, k) not in (None, False)]
        if self.scheduler != "slurm" and slurm_only:
            raise invalid(f"{', '.join(slurm_only)} apply to Slurm sites only",
                          fix="remove them, or write the OAR request in gpu_filter and job_types")
        return self

    @field_validator("submit_args")
    @classmethod
    def _submit_args(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        scheduler = info.data.get("scheduler")
        kit_sets = KIT_SUBMIT_OPTIONS.get(scheduler, frozenset())
        if v and scheduler not in KIT_SUBMIT_OPTIONS:
            raise invalid(f"submit_args on a {scheduler} site", fix="remove it: only oar and slurm sites submit")
        for at, arg in enumerate(v):
            # an option, or the value of the option before it (["--notify", "mail:me@example.org"])
            if ((at == 0 and not arg.startswith("-")) or arg in ("", "-", "--") or any(c in arg for c in "\n\r\0")
                    or re.search(r"\s-", arg)   # "--exclude=a --qos=b" would reach sbatch as one word
                    or (arg.startswith("-") and re.search(r"\s", arg.split("=", 1)[0]))):   # "--time 5"
                raise invalid(f"submit_args entry {arg!r} is not one option",
                              fix="write each option as one string starting with '-', e.g. \"--exclude=node07\"")
            denied = KIT_DENIED_OPTIONS.get(scheduler, {})
            refused = reserved_option(arg, frozenset(denied)) if arg.startswith("-") else None
            if refused is not None:
                raise invalid(f"submit_args entry {arg!r} ({refused}) {denied[refused]}",
                              fix="remove it: kit's jobs run as the site and the plan say")
            reserved = reserved_option(arg, kit_sets) if arg.startswith("-") else None
            if reserved is not None:
                raise invalid(f"submit_args entry {arg!r} sets what kit sets from the site and the plan ({reserved})",
                              fix="use the site key for it (walltime, gres, partition, account, qos, queue, "
                                  "job_types, gpu_filter, ...) or --walltime/--job-type")
        return v

    @field_validator("gpu_filter")
    @classmethod
    def _gpu_filter(cls, v: str | None) -> str | None:
        # OAR's -p is an SQL WHERE clause the frontend parses: checked here, not when oarsub refuses it
        if v is None:
            return None
        text = v.strip()
        fault = filter_fault(text)
        if fault:
            raise invalid(f"gpu_filter {v!r} {fault}", fix="write one OAR property expression, e.g. \"gpu_mem>=40000 "
                                                           "AND cluster='chuc'\" (or \"\" for none)")
        return text

    @field_validator("partition", "qos", "reservation", "constraint")
    @classmethod
    def _sbatch_value(cls, v: str | None, info: ValidationInfo) -> str | None:
        pattern = SBATCH_CONSTRAINT if info.field_name == "constraint" else SBATCH_WORD
        if v is not None and not pattern.fullmatch(v):
            raise invalid(f"{info.field_name} {v!r} cannot go into an #SBATCH line (sbatch splits it at spaces and "
                          "quotes)", fix=f"write the {info.field_name} as the scheduler lists it: letters, digits and "
                                     ". _ - : , = + @" + (" & | [ ] ( ) *" if info.field_name == "constraint" else ""))
        return v

    @field_validator("queue", "account")
    @classmethod
    def _scheduler_word(cls, v: str | None, info: ValidationInfo) -> str | None:
        # one word of the scheduler's own names: oarsub -q/--project and #SBATCH --account take nothing else
        if v is not None and not _SCHEDULER_WORD.fullmatch(v):
            raise invalid(f"{info.field_name} {v!r} is not a name the scheduler knows (spaces, quotes or ; are not "
                          "part of one)", fix=f"write the {info.field_name} as the scheduler lists it: letters, digits "
                                              "and . _ - (e.g. default, besteffort, my-project)")
        return v

    @field_validator("job_types")
    @classmethod
    def _job_types(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return split_job_types(v)

    @model_validator(mode="after")
    def _night(self) -> "Site":
        if self.scheduler == "oar":   # Grid'5000's defaults, from the values as validated ("false" is false)
            unset = {"job_types", "gpu_filter"} - self.model_fields_set
            if "job_types" in unset:
                object.__setattr__(self, "job_types", G5K_JOB_TYPES if self.night_jobs else ())
            if "gpu_filter" in unset and self.gpus_per_node:   # a CPU-only site asks for no GPU property
                object.__setattr__(self, "gpu_filter", G5K_GPU_FILTER)
        if "night" in self.job_types and not self.night_jobs:
            raise invalid("job type night, but night_jobs = false",
                          fix="drop night from job_types, or set night_jobs = true if the site accepts night jobs")
        return self

    @model_validator(mode="after")
    def _runtime_fits_scheduler(self) -> "Site":
        # pyxis is a Slurm plugin (srun --container-image): an OAR node or this machine has no srun to run it
        if self.runtime == "pyxis" and self.scheduler != "slurm":
            raise invalid(f"runtime pyxis runs only under Slurm (srun --container-image is a Slurm plugin), and this "
                          f"site's scheduler is {self.scheduler}",
                          fix='use runtime = "enroot" (the same sqsh, started with enroot) or "apptainer"')
        return self

    @model_validator(mode="after")
    def _remote_python(self) -> "Site":
        # the Python running the launcher is a path on this machine, not on the cluster's nodes
        if self.runtime == "host" and self.is_remote and not self.python:
            raise invalid("runtime host on a remote site needs python: the interpreter on the cluster's nodes that "
                          "has kit's worker installed",
                          fix='set python = "/home/<login>/kit-venv/bin/python" (a path on the cluster), or use '
                              "runtime apptainer")
        return self

    @field_validator("forward_env")
    @classmethod
    def _env_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not ENV_NAME.fullmatch(name):
                raise invalid(f"{name!r} is not an environment variable name", fix="use names like HF_HOME")
            if secret_name(name):
                raise invalid(f"{name!r} looks like a secret; kit passes secrets only as files readable by you alone",
                              fix="put the value in a mode-600 file and set hf_token_file (or forward NAME_PATH)")
        return v

    @field_validator("frontend")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v or v.startswith("-") or any(c.isspace() for c in v):
            raise invalid(f"frontend {v!r} is not an ssh host", fix="write 'local' or a host name or alias, e.g. nancy.g5k")
        return v

    @property
    def walltime_s(self) -> int:
        """The default walltime in seconds."""
        return walltime_seconds(self.walltime, self.scheduler)

    @property
    def is_remote(self) -> bool:
        """True when scheduler commands run over ssh."""
        return self.frontend != "local"

    def ignored_keys(self) -> list[str]:
        """A line for each key set in this entry that its scheduler or runtime does not read (an OAR `queue`
        on a Slurm site, a Slurm `partition` on an OAR site, `docker_image` under apptainer), saying what
        the scheduler reads instead."""
        out = []
        for key in sorted(self.model_fields_set - {"name"}):
            readers = _SCHEDULER_KEYS.get(key)
            value = getattr(self, key)
            if readers and self.scheduler not in readers and value not in (None, (), False):
                instead = _INSTEAD.get((key, self.scheduler), "")
                out.append(f"site {self.name}: `{key}` is read by {' and '.join(readers)} only; the {self.scheduler} "
                           f"scheduler ignores it" + (f" ({instead})" if instead else ""))
        for key in sorted(self.model_fields_set & _RUNTIME_KEYS.keys()):
            if self.runtime != _RUNTIME_KEYS[key] and getattr(self, key) is not None:
                out.append(f"site {self.name}: `{key}` is read by runtime {_RUNTIME_KEYS[key]} only; this site's "
                           f"runtime, {self.runtime}, ignores it")
        if "cpus_per_task" in self.model_fields_set and self.scheduler == "oar" and self.gpus_per_node:
            out.append(f"site {self.name}: `cpus_per_task` is read by oar for jobs without GPUs only (core=N); a GPU "
                       "job gets the cores OAR gives with its GPUs (/gpu=N)")
        return out


def _gpu_capability(gpu: str) -> Capability | None:
    """A GPU model's or a written compute capability's (8, 0); None for neither."""
    try:
        return parse_capability(gpu)
    except ValueError:
        return model_capability(gpu)


# keys only some schedulers read (the others ignore them: Site.ignored_keys says so)
_SCHEDULER_KEYS = {
    "queue": ("oar",), "gpu_filter": ("oar",), "job_types": ("oar",),
    "partition": ("slurm",), "qos": ("slurm",), "gres": ("slurm",), "mem_per_gpu_gb": ("slurm",),
    "exclusive": ("slurm",), "constraint": ("slurm",), "reservation": ("slurm",), "requeue": ("slurm",),
    "gpu_features": ("slurm",), "mem_gb": ("slurm",),
    "account": ("slurm", "oar"),
}
# keys one runtime reads (the others ignore them: Site.ignored_keys says so)
_RUNTIME_KEYS = {"container_command": "apptainer", "docker_image": "docker", "python": "host"}
_INSTEAD = {
    ("queue", "slurm"): "a Slurm queue is a partition: write partition = ...",
    ("partition", "oar"): "an OAR queue is `queue`; GPUs are picked with gpu_filter",
    ("gpu_filter", "slurm"): "Slurm picks GPUs with gres or constraint",
    ("constraint", "oar"): "OAR picks resources with gpu_filter",
    ("gres", "oar"): "OAR picks GPUs with gpu_filter",
    ("gpu_features", "oar"): "OAR picks GPUs with gpu_filter, to which kit adds the image's compute capability",
    ("mem_gb", "oar"): "OAR gives a job the memory of the resources it reserves",
}


def _named_tables(tables: list[Any]) -> dict[str, Any]:
    """[[site]] tables, each with its `name`, as the [site.NAME] tables kit documents."""
    named: dict[str, Any] = {}
    for at, table in enumerate(tables):
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(name, str) or not name:
            raise invalid(f"site[{at}]: a [[site]] table without a name",
                          fix='write each site as [site.NAME] (e.g. [site.lyon]), or give its [[site]] a name = "lyon"')
        if name in named:
            raise invalid(f"site[{at}]: site {name!r} is defined twice", fix="keep one table per site")
        named[name] = {k: v for k, v in table.items() if k != "name"}
    return named


class SitesFile(BaseModel):
    """The whole sites.toml."""

    model_config = ConfigDict(extra="forbid")

    site: dict[str, Site] = Field(default_factory=dict)
    _source: str | None = PrivateAttr(None)   # the file it was read from, for errors

    @property
    def source(self) -> str | None:
        """The path of the file these sites were read from (None when built in code)."""
        return self._source

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("site"), list):
            data = {**data, "site": _named_tables(data["site"])}
        if isinstance(data, dict) and isinstance(data.get("site"), dict):
            data = dict(data)
            named = {}
            for key, value in data["site"].items():
                if isinstance(value, dict):
                    value = {**value, "name": key}
                named[key] = value
            data["site"] = named
        return data

    @field_validator("site")
    @classmethod
    def _site_names(cls, v: dict[str, Site]) -> dict[str, Site]:
        for key in v:
            if not _SITE_NAME.match(key):
                raise invalid(f"site name {key!r}", fix="begin with a lower-case letter or a digit, then use lower-case "
                                                          "letters, digits, '-' and '_' (lyon, jean-zay)")
            if len(key) > SITE_NAME_MAX:   # it names job scripts, job records and mirror folders
                raise invalid(f"site name {key[:24]!r}... is {len(key)} characters long, more than the "
                              f"{SITE_NAME_MAX} kit names files and jobs with", fix="use a shorter name, such as the "
                                                                                "cluster's own (lyon, jean-zay)")
        return v

    def get(self, name: str) -> Site:
        """The named site, or a ConfigError listing the configured ones."""
        if name not in self.site:
            known = ", ".join(self.site) or "(none)"
            raise ConfigError(f"site {name!r} is not configured",
                              fix=f"use one of: {known}, or add [site.{name}] to {self.source or 'sites.toml'}")
        return self.site[name]


def load_sites(path: Path) -> SitesFile:
    """Load and validate sites.toml."""
    sites = load_model(SitesFile, Path(path), "sites")
    sites._source = str(path)
    return sites
