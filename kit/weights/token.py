"""The Hugging Face token, read only from a file that only its owner can read."""

from __future__ import annotations

from pathlib import Path

from kit.errors import ConfigError
from kit.files import owner_only_file


def check_token_file(path: Path) -> None:
    """A ConfigError unless the HF token file exists and only its owner can read it."""
    owner_only_file(path, "HF token file")


def read_token_file(path: Path) -> str:
    """The token in a mode-600 file (a ConfigError when the file is missing, too open or empty)."""
    path = path.expanduser()
    check_token_file(path)
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError(f"HF token file {path} is empty", fix="write the token in it (chmod 600)")
    return token
