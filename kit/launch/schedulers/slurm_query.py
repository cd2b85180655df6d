"""Slurm's answers, read: job state names, `squeue --json` and `sacct --parsable2` output.

Pure functions over text, so every shape Slurm prints (22.05 and later) is unit-tested
without a cluster. Array tasks are always named `<array job id>_<task id>`, the form
`sbatch` users type, `scancel` accepts and kit records; plain jobs by their id."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any

from kit.launch.schedulers.base import JobState, JobStatus

# Every Slurm job state name -> kit's normalized state. Names from Slurm's squeue(1) and
# sacct(1) "JOB STATE CODES" (22.05; the same strings job_state_string() in
# src/common/slurm_protocol_defs.c prints); verified on 22.05.8 for JobState.PENDING, JobState.RUNNING,
# JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED and JobState.TIMEOUT on the dev cluster (scripts/dev/slurm.sh; tests/e2e/test_slurm_sweep.py).
SLURM_STATES: dict[str, JobState] = {
    "PENDING": JobState.PENDING,            # PD: awaiting resource allocation
    "CONFIGURING": JobState.PENDING,        # CF: allocated, nodes booting
    "REQUEUED": JobState.PENDING,           # RQ: completing job is being requeued
    "REQUEUE_HOLD": JobState.PENDING,       # RH: held job is being requeued
    "REQUEUE_FED": JobState.PENDING,        # RF: requeued by a federation
    "RESV_DEL_HOLD": JobState.PENDING,      # RD: held after its reservation was deleted
    "RUNNING": JobState.RUNNING,            # R
    "COMPLETING": JobState.RUNNING,         # CG: some processes still running
    "STAGE_OUT": JobState.RUNNING,          # SO: staging out files
    "SIGNALING": JobState.RUNNING,          # SI: being signaled
    "RESIZING": JobState.RUNNING,           # RS: about to change size
    "SUSPENDED": JobState.RUNNING,          # S: has an allocation, execution suspended
    "STOPPED": JobState.RUNNING,            # ST: has an allocation, execution stopped (SIGSTOP)
    "COMPLETED": JobState.COMPLETED,        # CD: all processes exited 0
    "FAILED": JobState.FAILED,              # F: non-zero exit code or other failure
    "BOOT_FAIL": JobState.FAILED,           # BF: launch failure (hardware)
    "NODE_FAIL": JobState.FAILED,           # NF: an allocated node failed
    "OUT_OF_MEMORY": JobState.FAILED,       # OOM
    "SPECIAL_EXIT": JobState.FAILED,        # SE: requeued in a special state after a failure
    "TIMEOUT": JobState.TIMEOUT,            # TO: reached its time limit
    "DEADLINE": JobState.TIMEOUT,           # DL: terminated on its --deadline
    "CANCELLED": JobState.CANCELLED,        # CA: by the user or an administrator
    "PREEMPTED": JobState.CANCELLED,        # PR: terminated by preemption
    "REVOKED": JobState.CANCELLED,          # RV: federation sibling removed
}


def base_state(raw: Any) -> str:
    """The bare state name: 'JobState.CANCELLED by 0' -> 'JobState.CANCELLED', 'JobState.CANCELLED+' -> 'JobState.CANCELLED', and
    a Slurm 23+ state list ['JobState.RUNNING', 'COMPLETING'] -> its first known name."""
    names = raw if isinstance(raw, list) else [raw]
    words = [str(n).split()[0].rstrip("+").upper() for n in names if str(n).strip()]
    for word in words:
        if word in SLURM_STATES:
            return word
    return words[0] if words else ""


def normalize(raw: Any) -> str:
    """kit's state for a Slurm state name; `unknown` for a name the table does not hold."""
    return SLURM_STATES.get(base_state(raw), JobState.UNKNOWN)


def is_finished(raw: Any) -> bool:
    """True once the job has ended, whatever the outcome."""
    return normalize(raw) in (JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT, JobState.CANCELLED)


def _explain(state: str, *details: str) -> str:
    """The reason text: Slurm's own state name when it says more than kit's, then the details."""
    named = state if state.lower() != normalize(state) else ""
    return "; ".join(x for x in (named, *details) if x)


def parse_sbatch_id(stdout: str) -> str | None:
    """The job id from `sbatch --parsable` ('12' or '12;cluster'), on whichever line it stands (a site's
    submit plugin may print a note before or after it); None unless exactly one line is an id."""
    ids = [m.group(1) for line in stdout.splitlines() if (m := re.fullmatch(r"\s*(\d+)(?:;\S+)?\s*", line))]
    return ids[0] if len(ids) == 1 else None


def _task_ranges(text: str) -> list[range]:
    """The ranges of task ids a pending array record's task string names ('2-3,5', '0-6:2%1')."""
    out = []
    for part in text.split("%")[0].split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+)(?::(\d+))?)?\s*", part)
        if not m:
            continue
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.append(range(lo, hi + 1, max(1, int(m.group(3) or 1))))
    return out


def expand_task_string(text: str, limit: int | None = None) -> list[int]:
    """Task ids of a pending array record: '2-3,5' -> [2, 3, 5]; '0-6:2%1' -> [0, 2, 4, 6]; a ValueError
    when they are more than `limit`."""
    ranges = _task_ranges(text)
    if limit is not None and sum(len(r) for r in ranges) > limit:
        raise ValueError(f"a pending array record names more than {limit:,} tasks ({text[:40]})")
    return [t for r in ranges for t in r]


def in_task_string(text: str, task: int) -> bool:
    """Whether a pending array record's task string names this task id (without spelling the ids out)."""
    return any(task in r for r in _task_ranges(text))


def _number(value: Any) -> int | None:
    """An integer field as 22.05 prints it (a plain int) or as 23+ does ({"set", "number"})."""
    if isinstance(value, dict):
        return int(value["number"]) if value.get("set", True) and "number" in value else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _exit(value: Any) -> tuple[int | None, str]:
    """(exit code, detail) from squeue's exit_code: a raw wait status in 22.05, a dict later."""
    if isinstance(value, dict):
        code = _number(value.get("return_code"))
        sig = _number((value.get("signal") or {}).get("id")) if isinstance(value.get("signal"), dict) else None
        return code, f"signal {sig}" if sig else ""
    raw = _number(value)
    if raw is None:
        return None, ""
    if raw & 0x7F:
        return None, f"signal {raw & 0x7F}"
    return raw >> 8, ""


def parse_squeue_json(text: str, wanted: Collection[str] | None = None) -> dict[str, JobStatus]:
    """Every job in a `squeue --json` answer, keyed by plain id or `<array>_<task>` (only the `wanted` ids,
    when given: a pending array of millions of tasks, anyone's, is never spelled out task by task).

    Raises ValueError when the text is not a squeue JSON document, or when it reports errors: squeue
    exits 0 with an empty job list and an `errors` entry when it could not reach the controller, and
    that empty list is not "no jobs"."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise ValueError("no 'jobs' list in the squeue --json answer")
    if data.get("errors"):
        raise ValueError(f"squeue reports {_slurm_errors(data['errors'])}")
    out: dict[str, JobStatus] = {}
    if not all(isinstance(job, dict) for job in data["jobs"]):
        raise ValueError("an entry of the squeue --json answer's job list is not an object")
    for job in data["jobs"]:
        state = base_state(job.get("job_state"))
        code, detail = _exit(job.get("exit_code"))
        reason = str(job.get("state_reason") or "")
        reason = "" if reason == "None" else reason
        text_reason = _explain(state, reason, f"exit code {code}" if code else "", detail)
        name = str(job["name"]) if job.get("name") else None
        for job_id in _ids(job, wanted):
            out[job_id] = JobStatus(job_id, normalize(state), code, text_reason, name=name)
    return out


def _slurm_errors(errors: Any) -> str:
    """An `errors` list of Slurm's JSON output as one phrase: each entry's description and source."""
    entries = errors if isinstance(errors, list) else [errors]
    said = []
    for entry in entries:
        if isinstance(entry, dict):
            words = [str(entry.get(k)) for k in ("description", "error") if entry.get(k)]
            source = f" ({entry['source']})" if entry.get("source") else ""
            said.append((words[0] if words else "an error") + source)
        else:
            said.append(str(entry))
    return "; ".join(said)[:300]


# the most tasks of one pending array record spelled out when no ids are asked for (Slurm's MaxArraySize
# is 1001 by default; kit's own arrays have one task per shard)
MAX_EXPANDED_TASKS = 100_000


def _ids(job: dict, wanted: Collection[str] | None = None) -> list[str]:
    """A squeue --json job's ids: plain, or `<array>_<task>` for each task it stands for (only the `wanted`
    ones, when given)."""
    array = _number(job.get("array_job_id")) or 0
    task = _number(job.get("array_task_id"))
    if array and task is not None:
        ids = [f"{array}_{task}"]
    elif array and job.get("array_task_string"):
        tasks = str(job["array_task_string"])
        if wanted is None:
            return [f"{array}_{t}" for t in expand_task_string(tasks, limit=MAX_EXPANDED_TASKS)]
        prefix = f"{array}_"
        asked = sorted({int(w[len(prefix):]) for w in wanted if w.startswith(prefix) and w[len(prefix):].isdigit()})
        return [f"{array}_{t}" for t in asked if in_task_string(tasks, t)]
    else:
        ids = [str(_number(job.get("job_id")))]
    return ids if wanted is None else [i for i in ids if i in wanted]


def parse_squeue_names(text: str, name_prefix: str = "") -> dict[str, tuple[str, str]]:
    """{job id: (job name, kit's state)} of every job in a `squeue --json` answer whose name begins with
    `name_prefix` (ids as parse_squeue_json)."""
    parse_squeue_json(text, wanted=())   # the answer's shape and errors checked, no ids spelled out
    out = {}
    for job in json.loads(text)["jobs"]:
        name = str(job["name"]) if job.get("name") else None
        if name.startswith(name_prefix):
            state = normalize(base_state(job.get("job_state")))
            out.update((job_id, (name, state)) for job_id in _ids(job))
    return out


def parse_sacct(text: str, wanted: Collection[str] | None = None) -> dict[str, JobStatus]:
    """Rows of `sacct --parsable2 --noheader -o JobID,State,ExitCode` (slurmdbd or `-c`).

    Step rows ('12.batch') are skipped; 'JobState.CANCELLED by 0' reads as JobState.CANCELLED; ExitCode is
    'code:signal' (sacct's --json in 22.05 reports 0 for failed jobs, this column does not)."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3:
            continue
        pending = re.fullmatch(r"(\d+)_\[(.+)\]", fields[0])   # a pending array record: 12_[2-5]
        if pending and wanted is not None:   # only the tasks asked for: a record may span millions
            ids = [j for j in wanted if j.partition("_")[0] == pending.group(1) and j.partition("_")[2].isdigit()
                   and in_task_string(pending.group(2), int(j.partition("_")[2]))]
        elif pending:
            ids = [f"{pending.group(1)}_{t}" for t in expand_task_string(pending.group(2), MAX_EXPANDED_TASKS)]
        elif re.fullmatch(r"\d+(_\d+)?", fields[0]):
            ids = [fields[0]]
        else:
            continue                                               # steps: 12.batch, 12.0
        state, exit_text = base_state(fields[1]), fields[2]
        m = re.fullmatch(r"(\d+):(\d+)", exit_text.strip())
        code = int(m.group(1)) if m else None
        detail = f"signal {m.group(2)}" if m and m.group(2) != "0" else ""
        for job_id in ids:
            out[job_id] = JobStatus(job_id, normalize(state), code,
                                    _explain(state, f"exit code {code}" if code else "", detail))
    return out


def plain_ids(job_ids: Iterable[str]) -> list[str]:
    """The ids that are not array tasks (the only ones `sacct -c` can look up)."""
    return [j for j in job_ids if j.isdigit()]
