"""The evidence policy (docs/checkpoint-format.md, "What counts as evidence"): what a checkpoint needs
before any command counts it, shows it as complete or publishes it.

- A kit checkpoint (one with a provenance block, a key only kit writes, or a log beside it) counts
  only with its provenance and its :::MLLOG log, a regular file beside it; its verdicts are re-read
  from the raw answers by its kind's rules (kit.results.kinds: every parse mode, `truncated`
  honoured).
- An lrb file (lrb's own keys only, no log) is legacy evidence: counted by lrb's rules of its version,
  and marked as such wherever it is shown (a notice).
- Commands that publish or certify (check, collect, release, export) also hold a kit checkpoint to
  its log: the sha256 and the metrics its job logged (sealed=True).

validate_checkpoint (kit.results.checkpoint) applies the unsealed policy, so status, verify, report
and every reader get it through the one function they already call."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kit.files import what_stands
from kit.results import keys
from kit.results.compliance import edited_since_logged
from kit.results.store import mllog_path

# metadata keys lrb's result files never hold: a file with one of them was written by kit
KIT_ONLY_METADATA = (keys.RUN, keys.BACKEND, keys.TASK, keys.OPTIONS, keys.MANIFEST_SHA256, keys.PROMPT_FILE,
                     keys.TRUST_REMOTE_CODE)
# said under every verdict of `kit verify` and `kit check` (docs/checkpoint-format.md)
NOT_PROVEN = ("what this does not prove: someone who can edit both a checkpoint and its log can rewrite the answers, "
              "metrics and logged digest consistently, and no check here can tell; the cache and lrb files are "
              "trusted as documented in docs/checkpoint-format.md (evidence policy)")
NOT_PROVEN_SIGNED = ("what this does not prove: that the computation was honest; a signature proves who published "
                     "a result and that it has not changed since (kit reproduce reruns a result)")
LEGACY_NOTICE = "legacy evidence: an lrb file (no provenance, no log; its verdicts are lrb's own)"


def is_kit_checkpoint(data: Mapping[str, Any]) -> bool:
    """True when `data` was written by kit (a provenance block or a metadata key only kit writes)."""
    meta = data.get(keys.METADATA)
    return keys.PROVENANCE in data or (isinstance(meta, Mapping) and any(k in meta for k in KIT_ONLY_METADATA))


def evidence_reasons(path: Path, data: Mapping[str, Any], *, sealed: bool = False) -> list[str]:
    """Why the checkpoint at `path` (holding `data`) is not evidence under the policy; empty when it is.
    `sealed` adds the log's recorded sha256 and metrics (for the commands that publish or certify)."""
    log = mllog_path(path)
    try:
        log_mode: int | None = os.lstat(log).st_mode
    except (OSError, ValueError):   # as os.path.lexists has it: no log
        log_mode = None
    if not is_kit_checkpoint(data) and log_mode is None:
        return []
    reasons = []
    if not isinstance(data.get(keys.PROVENANCE), Mapping):
        reasons.append("a kit checkpoint without its provenance block is not evidence (rerun the pair)")
    if log_mode is None:
        reasons.append(f"its :::MLLOG log {log.name} is missing: a kit checkpoint is evidence only with the log "
                       "its job wrote (restore the log, or rerun the pair)")
    elif not stat.S_ISREG(log_mode):
        reasons.append(f"its log {log.name} is {what_stands(log)}, not a regular file: kit reads only the file "
                       "its job wrote")
    elif not os.access(log, os.R_OK):   # evidence that cannot be read is none (check, export and collect read it)
        reasons.append(f"its log {log.name} cannot be read by this user (permission denied): give read permission "
                       "on it (chmod u+r), or run kit as its owner")
    elif sealed and not reasons:
        edited = edited_since_logged(Path(path))
        if edited:
            reasons.append(edited)
    return reasons


def evidence_notices(path: Path, data: Mapping[str, Any]) -> list[str]:
    """The notice every display of this checkpoint carries: that an lrb file is legacy evidence."""
    if is_kit_checkpoint(data) or os.path.lexists(mllog_path(path)):
        return []
    return [LEGACY_NOTICE]
