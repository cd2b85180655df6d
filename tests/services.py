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


def let_kit_run_this_python(*also: Path) -> list[Path]:
    """Give others traverse-only (x) permission on the folders above this venv's python (a pyenv
    interpreter under /root, say) and above ALSO, so that the ordinary user `kit` can run it; returns
    the folders changed. Every test that runs kit as user kit calls it itself: no test may rely on
    another having run first."""
    import stat
    import sys

    changed = []
    for path in (Path(sys.executable), REPO / "kit", *also):
        for parent in reversed(Path(os.path.realpath(path)).parents):
            mode = parent.stat().st_mode
            if not mode & stat.S_IXOTH:
                parent.chmod(mode | stat.S_IXOTH)
                changed.append(parent)
    return changed


def let_kit_use_docker() -> None:
    """Put the ordinary user `kit` in the group `docker` (idempotent): its Slurm jobs then reach this
    machine's Docker engine, which the tests' apptainer stand-in runs Apptainer in (Debian 12 has no
    apptainer). Test machines only: the group is as good as root."""
    import grp

    if "kit" not in grp.getgrnam("docker").gr_mem:
        r = subprocess.run(["usermod", "-aG", "docker", "kit"], capture_output=True, text=True,
                           env={**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin") + ":" + SBIN})
        if r.returncode != 0:
            pytest.fail(f"usermod -aG docker kit: {r.stderr}", pytrace=False)
