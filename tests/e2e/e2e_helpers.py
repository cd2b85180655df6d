"""Helpers for the e2e tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def kit(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Run the kit CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
