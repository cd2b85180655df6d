"""Where scheduler commands run: here (`frontend = "local"`) or on a cluster frontend over
ssh (connection reuse, a timeout, one clear error when the host cannot be reached).

The remote side always runs under `env -i` with an explicit allow-list, so nothing from
the caller's shell leaks into a submission."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kit.errors import SubmitError

SSH_CONNECT_TIMEOUT_S = 10


@dataclass
class CommandResult:
    """What a frontend command printed and returned."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


class Frontend:
    """Runs commands and writes files where the scheduler lives."""

    def __init__(self, host: str = "local", *, timeout_s: int = 120, control_dir: Path | None = None) -> None:
        self.host = host
        self.timeout_s = timeout_s
        self.control_dir = control_dir or Path(os.environ.get("KIT_SSH_CONTROL_DIR", Path.home() / ".ssh"))

    @property
    def is_local(self) -> bool:
        """True when commands run on this machine."""
        return self.host == "local"

    def ssh_argv(self) -> list[str]:
        """The ssh prefix: batch mode, connect timeout, shared master connection."""
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_S}",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/kit-%C",
                "-o", "ControlPersist=600", self.host]

    def command(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
        """The exact argv that runs `argv` on the frontend in a clean, allow-listed environment.

        Locally the environment is exactly `env`. Remotely PATH, HOME and USER come from the
        frontend's own login shell (site modules, its PATH), plus the forwarded `env` values."""
        env = dict(env or {})
        if self.is_local:
            return ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), *argv]
        forwarded = [shlex.quote(f"{k}={v}") for k, v in sorted(env.items())
                     if k not in ("PATH", "HOME", "USER", "LOGNAME")]
        remote = " ".join(['env -i HOME="$HOME" USER="$USER" LOGNAME="${LOGNAME:-$USER}"', *forwarded,
                           "bash -lc", shlex.quote(shlex.join(argv))])
        return [*self.ssh_argv(), "--", remote]

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, input: str | None = None,
            check: bool = False, timeout_s: int | None = None, cwd: str | None = None) -> CommandResult:
        """Run a command on the frontend; an unreachable host or a timeout is a SubmitError."""
        full = self.command(argv, env)
        if cwd and not self.is_local:
            full[-1] = f"cd {shlex.quote(cwd)} && {full[-1]}"
        try:
            proc = subprocess.run(full, input=input, capture_output=True, text=True,
                                  timeout=timeout_s or self.timeout_s, cwd=cwd if self.is_local else None)
        except subprocess.TimeoutExpired:
            raise SubmitError(f"{self.where}: {shlex.join(argv)} did not answer within {timeout_s or self.timeout_s}s",
                              fix="check the frontend and the scheduler, then retry") from None
        except FileNotFoundError as exc:
            raise SubmitError(f"{self.where}: {exc.filename} not found",
                              fix="install the scheduler client tools or set the site's frontend") from None
        if not self.is_local and proc.returncode == 255:
            raise SubmitError(f"cannot reach frontend {self.host!r} over ssh: {proc.stderr.strip()[-300:]}",
                              fix=f"check `ssh {self.host} true` works without a password (ssh-agent, ~/.ssh/config)")
        result = CommandResult(list(argv), proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise SubmitError(f"{self.where}: {shlex.join(argv)} exited {proc.returncode}: "
                              f"{(proc.stderr or proc.stdout).strip()[-400:]}", fix="see the scheduler's message above")
        return result

    def read_text(self, path: str | Path) -> str | None:
        """A text file on the frontend; None when it does not exist or cannot be read."""
        if self.is_local:
            try:
                return Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        res = self.run(["cat", str(path)])
        return res.stdout if res.returncode == 0 else None

    def write_text(self, path: str | Path, text: str, mode: int = 0o644) -> None:
        """Write a file on the frontend (atomically: temporary name, then rename)."""
        path = str(path)
        if self.is_local:
            from kit.files import write_text_atomic

            write_text_atomic(Path(path), text)
            os.chmod(path, mode)
            return
        tmp = f"{path}.kit-tmp"
        script = (f"mkdir -p {shlex.quote(os.path.dirname(path) or '.')} && cat > {shlex.quote(tmp)} && "
                  f"chmod {mode:o} {shlex.quote(tmp)} && mv -f {shlex.quote(tmp)} {shlex.quote(path)}")
        self.run(["sh", "-c", script], input=text, check=True)

    @property
    def where(self) -> str:
        """'local' or 'frontend HOST', for messages."""
        return "local" if self.is_local else f"frontend {self.host}"
