"""A job signs what it wrote (kit.results.attest, "signed by the job that wrote it") when it can reach a
key: KIT_SIGNING_KEY_PATH names a PEM or OpenSSH Ed25519 private key file, mode 600, that the job can
read (a site passes the variable with forward_env = ["KIT_SIGNING_KEY_PATH"]). Where it cannot, the
pair stays unsigned and the job says why; `kit sign` signs afterwards. Signing never fails a pair."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from kit.errors import KitError

@lru_cache(maxsize=4)
def _job_key(value: str) -> tuple[Any, str]:
    """(the signing key or None, why not), read once per job for a KIT_SIGNING_KEY_PATH value."""
    from kit.signing import load_signing_key

    try:
        return load_signing_key(Path(value)), ""
    except KitError as exc:
        return None, exc.one_line()
    except OSError as exc:
        return None, f"{value}: {exc.strerror or exc}"


def sign_in_job(checkpoint: Path, data: dict[str, Any]) -> str:
    """Sign a checkpoint the job just wrote with the key KIT_SIGNING_KEY_PATH names; a few words saying
    how it went (signed by which key, or unsigned and why)."""
    from kit.signing import KEY_PATH_ENV

    value = os.environ.get(KEY_PATH_ENV, "").strip()
    if not value:
        return f"unsigned ({KEY_PATH_ENV} not set: kit sign signs it afterwards)"
    key, why = _job_key(value)
    if key is None:
        return f"unsigned ({why})"
    from kit.results.attest import BY_THE_JOB, sign_result

    try:
        sign_result(checkpoint, data, key, when=BY_THE_JOB)
    except (KitError, OSError) as exc:
        return f"unsigned ({exc})"
    return f"signed by the job with key {key.keyid[:16]}..."
