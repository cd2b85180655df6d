"""Run names and the file stems of their checkpoints: string rules only, so that the commands that
read thousands of checkpoints (status, verify) need not import the roster's pydantic models."""

from __future__ import annotations

import re

# a shell and environment variable name, as POSIX shells take it (upper or lower case: http_proxy is one)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def run_file_stem(run: str) -> str:
    """Run name -> its checkpoint file stem ('org/name@v' -> 'org__name@v')."""
    return run.replace("/", "__")


def run_from_stem(stem: str) -> str:
    """Checkpoint file stem -> run name (inverse of run_file_stem)."""
    return stem.replace("__", "/")
