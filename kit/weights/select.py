"""Which files of a model repo a backend needs, so staging downloads those and nothing else.

- llama.cpp (`gguf`): the one GGUF file the run names (`options.gguf_file`), or the only one.
- every other engine (Transformers, vLLM, GLiNER2, GLiClass): the safetensors weights (pickled
  `pytorch_model*.bin` only when the repo has no safetensors) and the configuration and tokenizer
  files (`*.json`, `*.jinja`, `*.txt`, `*.model`, `*.tiktoken`), plus `*.py` when the run trusts
  remote code. A `consolidated*.safetensors` copy beside sharded safetensors is left out."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePosixPath

from kit.config.backends import engine_for
from kit.errors import ConfigError

SUPPORT_PATTERNS = ("*.json", "*.jinja", "*.txt", "*.model", "*.tiktoken")


def is_gguf_backend(backend: str) -> bool:
    """True when the backend's engine reads one GGUF file (llama.cpp)."""
    return engine_for(backend) == "llama_cpp"


def files_for(backend: str, repo_files: Iterable[str], *, model: str, gguf_file: str | None = None,
              trust_remote_code: bool = False) -> list[str]:
    """The repo files a run on `backend` needs (sorted); a ConfigError when the repo lacks them."""
    names = sorted(set(repo_files))
    if is_gguf_backend(backend):
        return [gguf_choice(names, model, gguf_file)]
    weights = [n for n in names if n.endswith(".safetensors")]
    if len(weights) > 1:
        weights = [n for n in weights if not PurePosixPath(n).name.startswith("consolidated")] or weights
    if not weights:
        weights = [n for n in names if fnmatch.fnmatch(PurePosixPath(n).name, "pytorch_model*.bin")]
    if not weights:
        raise ConfigError(f"model {model}: the repo has no *.safetensors (nor pytorch_model*.bin) weights at this "
                          f"revision, which backend {backend} loads",
                          fix="check the roster's model and revision (a GGUF repo needs backend = \"gguf\")")
    patterns = SUPPORT_PATTERNS + (("*.py",) if trust_remote_code else ())
    support = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    return sorted({*weights, *support})


def gguf_choice(names: list[str], model: str, gguf_file: str | None) -> str:
    """The GGUF file a run uses among a repo's files: the named one, else the only one."""
    ggufs = [n for n in names if n.endswith(".gguf")]
    if gguf_file is not None:
        if gguf_file in ggufs:
            return gguf_file
        raise ConfigError(f"model {model}: options.gguf_file {gguf_file!r} is not a file of the repo at this revision",
                          fix=f"name one of: {', '.join(ggufs) or '(no .gguf file)'}")
    if len(ggufs) == 1:
        return ggufs[0]
    raise ConfigError(f"model {model}: the repo holds {len(ggufs)} .gguf files, and the run names none",
                      fix=f"set options.gguf_file in the roster to one of: {', '.join(ggufs[:8]) or '(none)'}")


def missing_for(backend: str, staged: Iterable[str], gguf_file: str | None = None) -> str | None:
    """Why a staged file set cannot serve a run on `backend` (None when it can): the GGUF file the
    run names (or a single one), or for the other engines at least one weight file."""
    names = sorted(set(staged))
    if is_gguf_backend(backend):
        ggufs = [n for n in names if n.endswith(".gguf")]
        if gguf_file is not None:
            return None if gguf_file in ggufs else f"the staged files hold no {gguf_file}"
        return None if len(ggufs) == 1 else f"the staged files hold {len(ggufs)} .gguf files and the run names none"
    if any(n.endswith((".safetensors", ".bin")) for n in names):
        return None
    return f"the staged files hold no safetensors weights for backend {backend}"
