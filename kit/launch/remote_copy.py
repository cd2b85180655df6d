"""Copying one large file to a frontend and hashing files there: the transfer that `kit weights push`
and `kit images push` share. A copy streams onto a partial file over the frontend's shared ssh
connection (or here for `frontend = "local"`), appending from where an earlier copy stopped, so an
interrupted push resumes; sha256sum runs on the frontend, so what is checked is what the site holds."""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kit.errors import SubmitError
from kit.launch.frontend import Frontend
from kit.launch.remote import run_bytes

Show = Callable[[str], None]
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}
_BLOCK = 4 << 20
_SEND = 'mkdir -p "$(dirname "$1")" || exit 1; if [ "$2" = new ]; then exec cat > "$1"; else exec cat >> "$1"; fi'
_HASH = 'cd "$1" 2>/dev/null || exit 0; xargs -0 sha256sum -z -- 2>/dev/null; exit 0'
HASH_BYTES_PER_S = 50e6   # a slow frontend disk: how long sha256sum there may take


def send_file(frontend: Frontend, local: Path, remote: str, offset: int, show: Show, label: str, again: str) -> int:
    """Stream `local` from `offset` onto the remote file (appending, or anew at 0), showing progress;
    the bytes sent. A copy that stops is a SubmitError whose fix is `again` (the same command: it resumes)."""
    argv = frontend.command(["sh", "-c", _SEND, "sh", remote, "append" if offset else "new"], _ENV)
    total = local.stat().st_size
    t0 = time.monotonic()
    sent, last = 0, t0
    with tempfile.TemporaryFile() as err, open(local, "rb") as fh:
        fh.seek(offset)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
        try:
            while block := fh.read(_BLOCK):
                proc.stdin.write(block)
                sent += len(block)
                now = time.monotonic()
                if now - last >= 2:
                    last = now
                    show(f"  {label}: {(offset + sent) / 1e6:.1f}/{total / 1e6:.1f} MB "
                         f"({100 * (offset + sent) / max(total, 1):.0f}%), {sent / 1e6 / max(now - t0, 1e-6):.1f} MB/s")
            proc.stdin.close()
        except BrokenPipeError:
            pass
        code = proc.wait()
        err.seek(0)
        message = err.read().decode(errors="replace").strip()[-300:]
    if code != 0:
        raise SubmitError(f"{frontend.where}: copying {label} stopped after {offset + sent} of {total} bytes "
                          f"(exit {code}: {message})", fix=f"run the same `{again}` again: it resumes where it stopped")
    show(f"  {label}: {total / 1e6:.1f} MB sent ({sent / 1e6:.1f} MB now"
         + (f", resumed at {offset / 1e6:.1f} MB" if offset else "") + f") in {time.monotonic() - t0:.1f}s")
    return sent


def hash_timeout(total_bytes: int) -> int:
    """Seconds to allow sha256sum on the frontend for this many bytes."""
    return max(600, int(total_bytes / HASH_BYTES_PER_S))


def remote_sha256(frontend: Frontend, folder: str, names: list[str], total_bytes: int) -> dict[str, str]:
    """sha256 of the named files of a folder on the frontend (sha256sum there); missing ones are absent."""
    if not names:
        return {}
    out = run_bytes(frontend, ["sh", "-c", _HASH, "sh", folder], "\0".join(names).encode() + b"\0",
                    timeout_s=hash_timeout(total_bytes))
    digests = {}
    for record in out.split(b"\0"):
        line = record.decode("utf-8", errors="replace")
        if len(line) > 66 and line[64:66] == "  ":
            digests[line[66:]] = line[:64]
    return digests


def size_text(size: int) -> str:
    """A byte count as people read it (decimal units: 700.0 kB, 61.2 MB, 4.51 GB)."""
    if size < 1_000_000:
        return f"{size / 1e3:.1f} kB"
    if size < 1_000_000_000:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e9:.2f} GB"
