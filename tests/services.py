"""Start the real services the slow tiers use (scripts/dev/*.sh: slurm, oar, sshd, dockerd) from a test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"


def start_service(name: str) -> None:
    """`scripts/dev/NAME.sh start` (idempotent); the test fails with its output when it cannot."""
    env = {**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin") + ":" + SBIN}
    r = subprocess.run(["bash", str(REPO / "scripts" / "dev" / f"{name}.sh"), "start"], capture_output=True,
                       text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        pytest.fail(f"scripts/dev/{name}.sh start exited {r.returncode}\n{r.stdout}\n{r.stderr}", pytrace=False)
