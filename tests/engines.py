"""The engines' own virtual environments (scripts/backends/*.sh), set up on demand by tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def engine_venv(script: str, venv: str, *args: str) -> Path:
    """Set a backend venv up through its script (idempotent); its python. Skips only off root on Debian."""
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file():
        pytest.skip(f"scripts/backends/{script} installs build tools and engines: needs root on Debian (as in CI)")
    r = subprocess.run(["bash", str(REPO / "scripts" / "backends" / script), *args], cwd=REPO, capture_output=True,
                       text=True, timeout=3000)
    assert r.returncode == 0, f"{script} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return REPO / venv / "bin" / "python"


def local_site(python: Path, weights: Path, forward_env: tuple[str, ...] = ()) -> str:
    """sites.toml text of a `local` site whose host runtime is an engine venv's python."""
    forward = ", ".join(f'"{name}"' for name in forward_env)
    return ('[site.local]\nscheduler = "local"\nruntime = "host"\nroot = "."\nresults = "results"\n'
            f'weights = "{weights}"\npython = "{python}"\ngpus_per_node = 0\nwalltime = "0:30"\n'
            f"forward_env = [{forward}]\n")
