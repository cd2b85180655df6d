"""Render the job script every scheduler runs: a clean environment, the job's facts as
KIT_* variables, then the runtime's command running `kit shard` for one shard slot.

Pure functions returning text; every interpolated value goes through shlex.quote."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kit.config.names import ENV_NAME
from kit.credentials import credential_shape
from kit.errors import ConfigError


_EXPAND_SAFE = re.compile(r"^[A-Za-z0-9_${}:./@=+-]*\Z")


class Expand(str):
    """An argument the job's shell must expand (e.g. "${KIT_UID}:${KIT_GID}"): rendered in double
    quotes. Only kit's own fixed strings may be Expand; user values always go through shlex.quote."""

    def __new__(cls, value: str) -> "Expand":
        if not _EXPAND_SAFE.match(value) or "$(" in value or "`" in value:
            raise ValueError(f"unsafe shell expansion {value!r}")
        return super().__new__(cls, value)


def render_argv(argv: Sequence[str]) -> str:
    """Join argv for bash: every value quoted, Expand values in double quotes."""
    return " ".join(f'"{a}"' if isinstance(a, Expand) else shlex.quote(a) for a in argv)


_DQ_SAFE = re.compile(r'^[^"$`\\!\n]*$')


def readable_join(argv: Sequence[str]) -> str:
    """Join argv for display as a person would type it: like shlex.join, but a value holding
    single quotes (e.g. "cluster='sirius'") goes in double quotes when nothing in it expands."""
    return " ".join(f'"{a}"' if "'" in a and _DQ_SAFE.match(a) else shlex.quote(a) for a in argv)


# Variables a job always gets from the submitter's side, rebuilt from this allow-list.
BASE_ENV = ("PATH", "HOME", "USER", "LANG", "TZ")


@dataclass(frozen=True)
class JobScript:
    """Everything a job script needs, already resolved."""

    job_name: str
    worker_argv: tuple[str, ...]          # the runtime's full argv up to and including `kit shard ...` (no --shard)
    shard_slots: tuple[int, ...]          # the shard indexes this job's array tasks run, in array order
    shard_count: int
    env: Mapping[str, str] = field(default_factory=dict)      # explicit exports (values known at submit time)
    array_index_expr: str = "${KIT_ARRAY_INDEX:-0}"           # shell expression giving the 0-based array index
    prelude: tuple[str, ...] = ()                             # scheduler directives (#SBATCH / #OAR lines)
    setup: tuple[str, ...] = ()                               # extra shell lines, already quoted by their renderer
                                                              # (a site's own: render_site_setup)
    cache_root: str | None = None                             # node-local scratch for writable caches
    cleanup: tuple[str, ...] = ()                             # shell lines run when the job ends, however it ends


def render_exports(env: Mapping[str, str]) -> list[str]:
    """`export NAME=value` lines, sorted, values quoted; bad names are refused."""
    lines = []
    for name in sorted(env):
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"bad environment variable name {name!r}")
        lines.append(f"export {name}={shlex.quote(str(env[name]))}")
    return lines


# The job refuses a token file that others can read (checked again on the node: the
# launcher cannot stat a file on a remote cluster). The token itself is never read here.
TOKEN_CHECK = [
    "# the HF token file must be readable by its owner only",
    'case "$(stat -L -c %a "$HF_TOKEN_PATH" 2>/dev/null || echo missing)" in',
    "  [0-7]00) ;;",
    '  *) echo "kit: HF token file $HF_TOKEN_PATH is missing or readable by group/others; fix: chmod 600 it" >&2; exit 2 ;;',
    "esac",
]
# The profile that defines Lmod's (or Environment Modules') `module` shell function on a cluster.
SYSTEM_PROFILE = "/etc/profile"


def render_site_setup(lines: Sequence[str], profile: str = SYSTEM_PROFILE) -> list[str]:
    """A site's own setup lines (sites.toml `setup`) as the job runs them: with `set +u` around them, and
    after sourcing `profile` when no `module` command is defined; nothing when the site has none."""
    if not lines:
        return []
    # a batch job's shell may lack `module` (Slurm's --export list does not carry exported shell
    # functions; OAR runs a non-login shell), and Lmod's functions read unset variables, so `set -u`
    # would end the job; a profile that is missing or fails must not end it either (`|| true`
    # also turns `set -e` off inside the sourced file), nor drop the job's PATH (Debian's resets it)
    return ["# the site's setup lines, without set -u (Lmod reads unset variables); `module` from the profile",
            "set +u",
            f"if ! command -v module >/dev/null 2>&1 && [ -r {shlex.quote(profile)} ]; then",
            '  KIT_PATH="$PATH"',
            f"  . {shlex.quote(profile)} || true",
            '  export PATH="$KIT_PATH${PATH:+:$PATH}"',
            "fi",
            *lines,
            "set -u"]


def render_job_script(spec: JobScript) -> str:
    """The bash text of a job script."""
    slots = " ".join(str(int(s)) for s in spec.shard_slots)
    lines = ["#!/bin/bash", *spec.prelude, f"# kit job {shlex.quote(spec.job_name)}", "set -euo pipefail", ""]
    lines += render_exports(spec.env)
    lines += [
        "# the scheduler's job id and raw array index, under names every runtime passes on",
        'export KIT_JOB_ID="${SLURM_JOB_ID:-${OAR_JOB_ID:-${KIT_JOB_ID:-$$}}}"',
        'export KIT_ARRAY_INDEX="${SLURM_ARRAY_TASK_ID:-${OAR_ARRAY_INDEX:-${KIT_ARRAY_INDEX:-0}}}"',
    ]
    # the shard is known before any setup line runs, so runtimes can pass KIT_SHARD_INDEX on
    lines += [
        "",
        f"KIT_SLOTS=({slots})",
        f"KIT_ARRAY_POS={spec.array_index_expr}",
        'if [ "$KIT_ARRAY_POS" -lt 0 ] || [ "$KIT_ARRAY_POS" -ge "${#KIT_SLOTS[@]}" ]; then',
        '  echo "kit: array index $KIT_ARRAY_POS has no shard slot (${#KIT_SLOTS[@]} slots)" >&2; exit 2',
        "fi",
        'KIT_SHARD_INDEX="${KIT_SLOTS[$KIT_ARRAY_POS]}"',
        "export KIT_SHARD_INDEX",
    ]
    cleanup = list(spec.cleanup)
    if spec.cache_root:
        cache = shlex.quote(spec.cache_root) + '"/kit-cache-$KIT_JOB_ID"'
        lines += [
            "# writable caches on node-local scratch (weights stay read-only in HF_HUB_CACHE), removed at the end",
            f"KIT_CACHE={cache}",
            'export HF_HOME="$KIT_CACHE/hf" TRITON_CACHE_DIR="$KIT_CACHE/triton" VLLM_CACHE_ROOT="$KIT_CACHE/vllm" '
            'TORCHINDUCTOR_CACHE_DIR="$KIT_CACHE/inductor"',
            'mkdir -p "$HF_HOME" "$TRITON_CACHE_DIR" "$VLLM_CACHE_ROOT" "$TORCHINDUCTOR_CACHE_DIR"',
        ]
        cleanup.append('rm -rf -- "$KIT_CACHE"')
    if cleanup:
        lines += ["kit_cleanup() {", *[f"  {c}" for c in cleanup], "}", "trap kit_cleanup EXIT"]
    if "HF_TOKEN_PATH" in spec.env:
        lines += TOKEN_CHECK
    lines += list(spec.setup)
    worker = f"{render_argv(spec.worker_argv)} --shard \"$KIT_SHARD_INDEX/{int(spec.shard_count)}\""
    lines.append(f'echo "kit: job ${{KIT_JOB_ID:-?}} shard $KIT_SHARD_INDEX/{int(spec.shard_count)} on $(hostname)" >&2')
    if not cleanup:
        return "\n".join([*lines, f"exec {worker}", ""])
    return "\n".join([*lines, *WAIT_FOR_WORKER[0], f"{worker} &", *WAIT_FOR_WORKER[1], ""])


# With something to clean up, the worker runs as a child instead of replacing the shell: the shell
# passes SIGTERM, SIGINT and SIGHUP on (schedulers send them at the walltime and on cancel; a closed
# terminal sends the last), waits for the worker's own exit status, and its EXIT trap then cleans up.
WAIT_FOR_WORKER = (
    ["# the worker runs as a child so that the cleanup runs after it; signals are passed on"],
    ["KIT_WORKER=$!",
     "trap 'kill -TERM \"$KIT_WORKER\" 2>/dev/null || true' TERM",
     "trap 'kill -INT \"$KIT_WORKER\" 2>/dev/null || true' INT",
     "trap 'kill -HUP \"$KIT_WORKER\" 2>/dev/null || true' HUP",
     "KIT_STATUS=0",
     'wait "$KIT_WORKER" || KIT_STATUS=$?',
     '# a trapped signal ends `wait` early: wait again for the worker\'s own exit status',
     'while kill -0 "$KIT_WORKER" 2>/dev/null; do KIT_STATUS=0; wait "$KIT_WORKER" || KIT_STATUS=$?; done',
     'exit "$KIT_STATUS"'],
)


def allow_listed_env(source: Mapping[str, str], forward: Sequence[str]) -> dict[str, str]:
    """The submitter's variables that may reach the job: the base allow-list plus the site's forward_env
    (forwarded_env: a credential among them refused)."""
    return {**{n: source[n] for n in BASE_ENV if n in source}, **forwarded_env(source, forward)}


def forwarded_env(source: Mapping[str, str], forward: Sequence[str]) -> dict[str, str]:
    """The values of a site's forward_env names in `source`; a ConfigError naming the variable (never its
    value) when one holds a credential, which would then sit in the job's environment and, for OAR, in
    its script on the cluster's disk."""
    out = {}
    for name in forward:
        if name not in source:
            continue
        shape = credential_shape(source[name])
        if shape is not None:
            raise ConfigError(f"forward_env {name}: its value here holds {shape}, which kit never passes to a job",
                              fix=f"unset {name} before kit run, or drop it from forward_env; a job that needs a "
                                  "secret reads it from a mode-600 file whose path it is given (NAME_PATH)")
        out[name] = source[name]
    return out
