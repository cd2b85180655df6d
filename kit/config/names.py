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


def same_run(asked: str, run: str) -> bool:
    """Whether a run asked for by name names `run`: as the roster names it (org/model) or as its file does
    (org__model); one spelling of a model id holding "__" is both."""
    return asked == run or run_file_stem(asked) == run_file_stem(run)


def language_key(code: str) -> str:
    """A language code compared without regard to case or to '_' against '-' (pt_BR, PT-br, pt-BR)."""
    return code.strip().lower().replace("_", "-")


def same_language(asked: str, language: str) -> bool:
    """Whether a language asked for names `language`, as people write codes (see language_key)."""
    return language_key(asked) == language_key(language)
