"""The Hugging Face token, read only from a file that only its owner can read."""

from __future__ import annotations

from pathlib import Path

from kit.errors import ConfigError


def check_token_file(path: Path) -> None:
    """A ConfigError unless the HF token file exists and only its owner can read it."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        raise ConfigError(f"HF token file {path} does not exist", fix="write the token there (chmod 600) or "
                          "remove hf_token_file from the site") from None
    if mode & 0o077:
        raise ConfigError(f"HF token file {path} is readable by group or others (mode {mode:o})",
                          fix=f"chmod 600 {path}")


def read_token_file(path: Path) -> str:
    """The token in a mode-600 file (a ConfigError when the file is missing, too open or empty)."""
    path = path.expanduser()
    check_token_file(path)
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError(f"HF token file {path} is empty", fix="write the token in it (chmod 600)")
    return token
