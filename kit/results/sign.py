"""`kit sign`: sign every complete checkpoint of a results tree after the fact (kit.results.attest), on
the user's machine, with the user's key; the statements say so (signed "after the fact", by which key)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import ConfigError
from kit.files import name_part
from kit.results.attest import AFTER_THE_FACT, sign_result, signature_reasons
from kit.results.checkpoint import validate_sealed
from kit.results.keys import PairState
from kit.signing import SigningKey, envelope_signers
from kit.results.store import ENVELOPE_SUFFIX, envelope_path, iter_checkpoint_files, keep_aside, left_out_note


@dataclass
class SignOutcome:
    """What `kit sign` did: envelopes written, checkpoints already signed (left), ones not signed and why."""

    signed: list[Path] = field(default_factory=list)
    already: list[Path] = field(default_factory=list)
    refused: dict[Path, list[str]] = field(default_factory=dict)
    not_counted: str | None = None   # the archive and deeper files not signed (kit.results.store.left_out_note)
    kept_aside: dict[Path, Path] = field(default_factory=dict)   # a file at an envelope's name that was none


def sign_tree(results: Path, key: SigningKey, *, force: bool = False) -> SignOutcome:
    """Sign each complete checkpoint of RESULTS (lrb's archive left out, as everywhere) that has no
    envelope yet (every one with `force`); a checkpoint that is not complete, or whose evidence is not
    whole (kit.results.evidence), is not signed: a signature must not vouch for a broken result."""
    results = Path(results)
    if not results.is_dir():
        raise ConfigError(f"{results}: no such results folder", fix="pass the folder holding <language>/<run>.json")
    files = iter_checkpoint_files(results)
    if not files:
        raise ConfigError(f"{results}: no checkpoint files", fix="pass the results folder of a sweep")
    out = SignOutcome(not_counted=left_out_note(results))
    for path in files:
        envelope = envelope_path(path)
        try:   # its statement's name is longer still: a name longer than kit makes has no room for it
            name_part(path.stem, "checkpoint name")
        except ConfigError as exc:
            out.refused[path] = [f"{exc.message}, so its signed statement (<name>{ENVELOPE_SUFFIX}) "
                                 "could not stand beside it: a run with a shorter name can be signed"]
            continue
        if os.path.lexists(envelope) and (envelope.is_symlink() or not envelope.is_file()):
            out.refused[path] = [f"{envelope.name} is not a regular file (a folder, link or pipe stands there): "
                                 "move it away, then sign again"]
            continue
        if envelope.is_file() and force:   # signed again: over this key's own envelope only
            signers = envelope_signers(envelope)
            if signers is not None and signers - {key.keyid}:
                out.refused[path] = [f"{envelope.name} carries the signature of another key "
                                     f"({', '.join(k[:16] for k in sorted(signers - {key.keyid}))}), which --force "
                                     "does not replace", "move the file away, then sign again"]
                continue
        if envelope.is_file() and not force:
            stale = signature_reasons(path, None)   # its statement still names these bytes, and its log's?
            if stale:
                out.refused[path] = [*stale, "kit sign --force signs it again (after you checked why)"]
            else:
                out.already.append(path)
            continue
        state = validate_sealed(path)
        if state.state != PairState.COMPLETE or state.data is None:
            out.refused[path] = state.reasons or [state.state]
            continue
        if envelope.is_file() and envelope_signers(envelope) is None:   # a damaged envelope, or someone's file
            out.kept_aside[path] = keep_aside(envelope, "not-an-envelope", ENVELOPE_SUFFIX)
        sign_result(path, state.data, key, when=AFTER_THE_FACT)
        out.signed.append(path)
    return out
