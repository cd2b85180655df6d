"""Signed evidence of a result: an in-toto Statement (v1) whose subjects are a checkpoint and its
:::MLLOG log by sha256 and whose predicate holds the result's provenance, in a DSSE envelope signed
with the user's key (kit.signing), kept beside the checkpoint as <stem>.intoto.jsonl
(kit.results.store.envelope_path: one envelope, one line).

A signature proves who published a file and that it has not changed since; it does not prove the
computation was honest (a rerun, `kit reproduce`, is that evidence). A result whose checkpoint,
metrics and log were rewritten together passes `kit check` without a signature, and fails
`kit check --trusted-keys` and `kit verify --trusted-keys`: its bytes are no longer the ones signed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import kit
from kit.files import file_sha256, regular_file_here, write_text_atomic
from kit.results import keys
from kit.results.keys import PairState
from kit.signing import STATEMENT_TYPE, SigningKey, envelope_line, open_envelope
from kit.results.store import envelope_path, mllog_path

RESULT_PREDICATE = "urn:kit-sweep:attestation:result:v1"
# how a statement says it was signed
BY_THE_JOB, AFTER_THE_FACT = "by the job that wrote it", "after the fact"


def subject_name(path: Path) -> str:
    """A file as a statement names it: its folder and its name (en/org__model.json), so that a statement
    of one language's result does not pass for another's."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}"


def result_statement(checkpoint: Path, data: Mapping[str, Any], key: SigningKey, *, when: str) -> dict[str, Any]:
    """The in-toto Statement of one checkpoint: its file and its log (when there) by sha256, and the
    result's identity and provenance as recorded, with who signed it, when and how (`when`)."""
    checkpoint = Path(checkpoint)
    subjects = [{"name": subject_name(checkpoint), "digest": {"sha256": file_sha256(checkpoint)}}]
    log = mllog_path(checkpoint)
    if log.is_file():
        subjects.append({"name": subject_name(log), "digest": {"sha256": file_sha256(log)}})
    meta = data.get(keys.METADATA) or {}
    result = {k: meta.get(k) for k in (keys.RUN, keys.RUN_ID, keys.MODEL_ID, keys.MODEL_REVISION, keys.LANGUAGE,
                                       keys.BENCHMARK_SHA256, keys.MANIFEST_SHA256, keys.PROMPT_SHA256) if k in meta}
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": RESULT_PREDICATE,
        "predicate": {
            "result": result,
            "provenance": data.get(keys.PROVENANCE),   # None for an lrb file: it records none
            "signing": {"signed": when, "keyid": key.keyid, "key": key.source.split(" ", 1)[0],
                        "signed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "kit_version": kit.__version__,
                        "proves": "who published these files and that they have not changed since; "
                                  "not that the computation was honest (kit reproduce is that evidence)"},
        },
    }


def sign_result(checkpoint: Path, data: Mapping[str, Any], key: SigningKey, *, when: str = AFTER_THE_FACT) -> Path:
    """Sign one checkpoint: its statement in a DSSE envelope signed with `key`, written atomically beside it."""
    path = envelope_path(checkpoint)
    write_text_atomic(path, envelope_line(result_statement(checkpoint, data, key, when=when), key))
    return path


def signature_reasons(checkpoint: Path, trusted: Sequence[Any]) -> list[str]:
    """Why a checkpoint is not signed evidence under the `trusted` public keys (empty: a trusted key
    signed a statement naming this checkpoint's bytes, and its log's). Each reason names the envelope
    file and the field."""
    checkpoint = Path(checkpoint)
    where = envelope_path(checkpoint)
    if not regular_file_here(where):
        return [f"unsigned: no {where.name} beside it (kit sign signs a result after the fact)"]
    statement, reasons = open_envelope(where, trusted)
    if statement is None:
        return reasons
    if statement.get("predicateType") != RESULT_PREDICATE:
        return [f"{where.name}: predicateType {statement.get('predicateType')!r} is not {RESULT_PREDICATE!r}"]
    subjects = {s.get("name"): s for s in statement.get("subject") or [] if isinstance(s, Mapping)}
    out = []
    for path in (checkpoint, mllog_path(checkpoint)):
        name = subject_name(path)
        subject = subjects.get(name)
        if subject is None:
            if path.is_file():
                out.append(f"{where.name}: its statement names no subject {name!r} (a statement of another file)")
            continue
        if not path.is_file():
            out.append(f"{where.name}: subject {name!r} is signed but the file is not there")
            continue
        recorded = (subject.get("digest") or {}).get("sha256") if isinstance(subject.get("digest"), Mapping) else None
        actual = file_sha256(path)
        if recorded != actual:
            out.append(f"{where.name}: subject {name!r} digest.sha256 {str(recorded)[:16]}... is not the file's "
                       f"{actual[:16]}... (the file changed after it was signed)")
    return out


def signed_notice(checkpoint: Path) -> str | None:
    """A short line saying who signed a checkpoint and how, as its envelope's statement says (not verified
    here: signature_reasons does that); None when that cannot be read."""
    statement, _ = open_envelope(envelope_path(checkpoint), None)
    try:
        signing = statement["predicate"]["signing"]
        return f"signed {signing['signed']} by key {signing['keyid'][:16]}..."
    except (KeyError, TypeError):
        return None


def held_to_keys(outcomes: Sequence[tuple[Path, Any]], trusted: Sequence[Any]) -> list[tuple[Path, Any]]:
    """(file, CheckpointState) outcomes with each complete one also held to the trusted keys: invalid,
    with the reasons, unless signed evidence (signature_reasons); an OK one notes who signed it."""
    out = []
    for path, state in outcomes:
        if state.state == PairState.COMPLETE:
            reasons = signature_reasons(path, trusted)
            if reasons:
                state = replace(state, state=PairState.INVALID, reasons=reasons)
            else:
                note = signed_notice(path)
                state = replace(state, notices=[*state.notices, note]) if note else state
        out.append((path, state))
    return out
