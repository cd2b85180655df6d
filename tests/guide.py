"""Run the command blocks of REPRODUCE.md: each ```bash block starts with `# step: NAME`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "REPRODUCE.md"
_BLOCK = re.compile(r"```bash\n# step: ([a-z-]+)\n(.*?)```", re.S)

HOST_STEPS = ("setup", "demo", "verify", "rerun-host", "cluster", "against", "everything")
IMAGE_STEPS = ("image", "convert", "published")


def steps(text: str | None = None) -> dict[str, str]:
    """step name -> its commands, in the guide's order."""
    return {m.group(1): m.group(2) for m in _BLOCK.finditer(text if text is not None else GUIDE.read_text())}


def venv_is_current() -> bool:
    """True when .venv was installed from this pyproject.toml (so the guide's `make venv` is a no-op
    and cannot reinstall the shared venv from the sandbox)."""
    import hashlib

    stamp = REPO / ".venv" / ".kit-installed"
    digest = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return stamp.is_file() and stamp.read_text().split(" ", 1)[0] == digest


def sandbox(dest: Path) -> Path:
    """A copy of the repository's files (tracked and untracked-not-ignored) with the venv linked in."""
    if not venv_is_current():
        raise RuntimeError("the .venv was not installed from the current pyproject.toml: run `make venv` first "
                           "(the guide's own `make venv` would otherwise reinstall it from the sandbox copy)")
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        src = REPO / rel
        if src.is_file():
            dst = dest / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
            dst.chmod(src.stat().st_mode & 0o777)
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def run_step(name: str, cwd: Path, env: dict[str, str], timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run one step's commands with bash -e in the sandbox."""
    script = steps()[name]
    full_env = {**env, "PATH": f"{cwd / '.venv' / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)
