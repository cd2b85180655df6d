"""Submission records: which job (array task) owns which shard of which pair list.

Kept beside sites.toml in `.kit/jobs/<site>.jsonl`, one JSON object per submission, so
`kit status` can map a missing pair back to the job that should have written it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kit import safejson
from kit.errors import SubmitError, warn
from kit.files import read_regular_file
from kit.files import write_bytes_atomic
from kit.plan import Pair


@dataclass
class SubmissionRecord:
    """One submission to one site."""

    site: str
    scheduler: str
    job_ids: list[str]                 # one per array task, in array order
    slots: list[int]                   # shard index run by each array task, same order
    shard_count: int
    pairs: list[list[str]]             # the sorted pair list the shards divide
    plan_file: str
    script: str
    command: list[str]
    submitted_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    exit_codes: dict[str, int] = field(default_factory=dict)   # known at once for the local scheduler

    def job_for(self, pair: Pair) -> str | None:
        """The job id of the array task whose shard holds `pair`, if this submission planned it."""
        key = [pair.run, pair.language]
        if key not in self.pairs:
            return None
        shard = self.pairs.index(key) % self.shard_count
        if shard not in self.slots:
            return None
        pos = self.slots.index(shard)
        return self.job_ids[pos] if pos < len(self.job_ids) else None


def records_file(state_dir: Path, site: str) -> Path:
    """Where a site's submission records live."""
    return Path(state_dir) / "jobs" / f"{site}.jsonl"


# How long a `kit run` waits for another one to finish adding its record to the same file.
LOCK_TIMEOUT_S = 120


def append_record(state_dir: Path, record: SubmissionRecord, *, update: bool = False) -> None:
    """Add a record; with `update`, put it in the place of this submission's newest record (the same first
    job id: a job run here is recorded when it starts and again as its tasks end). Concurrent `kit run`s
    take turns on a lock file beside the records (each keeps its record), and the file is rewritten
    atomically so a crash never leaves half a line."""
    from filelock import FileLock, Timeout

    path = records_file(state_dir, record.site)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    try:
        with FileLock(str(lock), timeout=LOCK_TIMEOUT_S):
            old = path.read_bytes().splitlines(keepends=True) if path.exists() else []
            line = json.dumps(asdict(record), sort_keys=True).encode() + b"\n"
            at = next((i for i in range(len(old) - 1, -1, -1) if _same_submission(old[i], record)), None) \
                if update else None
            if at is not None:
                old[at] = line
            else:
                if old and not old[-1].endswith(b"\n"):   # a file edited by hand: the record starts a line of its own
                    old[-1] += b"\n"
                old.append(line)
            write_bytes_atomic(path, b"".join(old))
    except Timeout:
        raise SubmitError(f"jobs {', '.join(record.job_ids)} were submitted to {record.site}, but their record "
                          f"was not written: {lock} stayed locked for {LOCK_TIMEOUT_S}s",
                          fix=f"find the kit process holding {lock} (fuser {lock}); until the record is "
                              "written, `kit status` shows these pairs as unclaimed") from None


def _same_submission(line: bytes, record: SubmissionRecord) -> bool:
    """Whether a line of the records file is an earlier record of this submission."""
    first = json.dumps(record.job_ids[0]).encode() if record.job_ids else None
    if first is None or first not in line:   # most lines are told apart without parsing them
        return False
    try:
        value = json.loads(line)
    except ValueError:   # (UnicodeDecodeError among them)
        return False
    return (isinstance(value, dict) and value.get("site") == record.site and isinstance(value.get("job_ids"), list)
            and value["job_ids"][:1] == record.job_ids[:1])


RECORDS_LIMIT_BYTES = 256 << 20   # years of submissions; a bound on what a bad file can cost


def load_records(state_dir: Path, site: str) -> list[SubmissionRecord]:
    """Every record of a site, oldest first; unreadable lines (bad JSON, bad UTF-8) are skipped. A
    records file that is not a regular file is a ConfigError."""
    path = records_file(state_dir, site)
    if not path.exists():
        return []
    data = read_regular_file(path, "the job records file", RECORDS_LIMIT_BYTES,
                             fix=f"move it aside (rename it to {path.name}.bak); kit starts a new one "
                                 "at the next submission")
    out, damaged = [], []
    for number, line in enumerate(data.splitlines(), 1):
        try:   # decoded line by line, so one damaged line costs that record only
            out.append(_record_of(safejson.loads(line.decode("utf-8"))))
        except (ValueError, TypeError):
            if line.strip():
                damaged.append(number)
    if damaged:   # a job it recorded is unknown to status and cancel: said, never silently dropped
        shown = ", ".join(map(str, damaged[:10])) + (f" ... ({len(damaged)} in all)" if len(damaged) > 10 else "")
        warn(f"{path}: line(s) {shown} are not job records and were skipped: the jobs they recorded are unknown "
             f"here (check them with the scheduler; move the file aside to start a new one)")
    return out


def _record_of(value: object) -> SubmissionRecord:
    """A record read back, each field of the type kit writes (a TypeError or ValueError otherwise: a line
    edited or damaged by hand is skipped, never a traceback in status or cancel)."""
    if not isinstance(value, dict):
        raise TypeError("not an object")
    record = SubmissionRecord(**value)

    def texts(items: object, n: int | None = None) -> bool:
        return isinstance(items, list) and all(isinstance(x, str) for x in items) and (n is None or len(items) == n)

    def number(x: object) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    sound = (all(isinstance(v, str) for v in (record.site, record.scheduler, record.plan_file, record.script,
                                              record.submitted_at))
             and texts(record.job_ids) and texts(record.command) and number(record.shard_count)
             and record.shard_count >= 1 and isinstance(record.slots, list)
             and all(number(x) and 0 <= x < record.shard_count for x in record.slots)
             and isinstance(record.pairs, list) and all(texts(p, 2) for p in record.pairs)
             and isinstance(record.exit_codes, dict) and all(number(c) for c in record.exit_codes.values()))
    if not sound:
        raise ValueError("a field of the wrong type")
    return record


def latest_jobs(records: list[SubmissionRecord], pairs: list[Pair]) -> dict[Pair, tuple[str, SubmissionRecord]]:
    """For each pair, the job of the newest submission that planned it."""
    out: dict[Pair, tuple[str, SubmissionRecord]] = {}
    for rec in records:  # oldest first: newer ones overwrite
        for pair in pairs:
            job = rec.job_for(pair)
            if job is not None:
                out[pair] = (job, rec)
    return out
