"""The interface every inference engine implements, its result types, and the registry by name.

An engine module (`kit.worker.backends.<engine>`) registers its class with
`@register_backend("<engine>")`; `get_backend` imports the module only when that engine
is picked, so importing this module never imports torch or any other heavy library.
"""

from __future__ import annotations

import abc
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kit.config.backends import BACKENDS, option_fault, option_wanted
from kit.errors import ConfigError
from kit.registry import Registry

if TYPE_CHECKING:
    from kit.config.roster import Run


_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_MISSING = object()


@dataclass(frozen=True)
class Generation:
    """One generated answer: decoded new text, whether it hit max_new_tokens, tokens generated.

    `token_ids` (the new token ids, end-of-sequence token included) is filled by engines that
    expose them, so outputs can be compared token for token across engines; None otherwise.
    """

    text: str
    truncated: bool
    generated_tokens: int
    token_ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Score:
    """One classifier verdict: yes/no probabilities (sum 1) and the model's native score."""

    yes: float
    no: float
    native: float


class Backend(abc.ABC):
    """One loaded model on one engine; `run` holds the settings, `snapshot` the weights folder."""

    name: ClassVar[str] = ""

    def __init__(self, run: Run, snapshot: Path) -> None:
        self.run = run
        self.snapshot = Path(snapshot)

    @abc.abstractmethod
    def load(self) -> None:
        """Load tokenizer and model from the snapshot, offline."""

    def generate(self, prompts: list[str]) -> list[Generation]:
        """Greedy answers to `prompts`, in input order."""
        raise self._unsupported("generate")

    def score(self, texts: list[str]) -> list[Score]:
        """Classifier scores of `texts`, in input order."""
        raise self._unsupported("score")

    @abc.abstractmethod
    def versions(self) -> dict[str, str | None]:
        """Versions of the packages this engine uses (None when one is not installed)."""

    def close(self) -> None:
        """Release the model and its memory; the backend may not be used afterwards."""

    def speed_facts(self) -> dict[str, Any]:
        """Engine-measured figures for the pair's speed block (e.g. peak_gpu_memory_bytes); {} when none."""
        return {}

    def option(self, key: str, default: Any, kind: type | tuple[type, ...] | None = None) -> Any:
        """The roster's `options.<key>`, else `default`; a value not of `kind` is a ConfigError."""
        value = self.run.options.get(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        wrong = option_fault(key, value)   # as the roster checks it (a run made without the roster's checks)
        if wrong is not None:
            raise ConfigError(f"options.{key} = {value!r} is not {wrong.what}",
                              fix=f"set options.{key} to {option_wanted(wrong)} in the roster run for {self.run.name}")
        kinds = kind if isinstance(kind, tuple) else (kind,) if kind else ()
        if kinds and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            names = " or ".join(k.__name__ for k in kinds)
            raise ConfigError(f"options.{key} = {value!r} is not a {names}",
                              fix=f"set options.{key} to a {names} in the roster run for {self.run.name}")
        return value

    def remote_code(self) -> bool:
        """trust_remote_code for this load: True only for a run that opts in with a 40-hex revision."""
        return remote_code_allowed(self.run)

    def _unsupported(self, task: str) -> ConfigError:
        return ConfigError(
            f"backend {self.name or type(self).__name__} does not support task {task}",
            fix="set the run's task to one the backend supports, or pick another backend",
        )


@functools.lru_cache(maxsize=None)
def package_version(dist: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed (looked up once per
    process: a job's packages do not change between its pairs)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def remote_code_allowed(run: Any) -> bool:
    """True only when the run sets trust_remote_code and pins a 40-hex revision."""
    return bool(getattr(run, "trust_remote_code", False)) and bool(_HEX40.match(getattr(run, "revision", None) or ""))


ENGINES: Registry[type[Backend]] = Registry("backend engine", "kit.worker.backends", sorted(set(BACKENDS.values())))


def register_backend(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator: make a Backend subclass available to `get_backend(name)`."""
    return ENGINES.register(name)


def known_backends() -> list[str]:
    """Every name `get_backend` accepts: backend families and the engines they run on."""
    return sorted(set(BACKENDS) | set(BACKENDS.values()))


def get_backend(name: str) -> type[Backend]:
    """The Backend class of an engine ("transformers") or a backend family ("transformers-5.17")."""
    if name not in BACKENDS and name not in ENGINES.names:
        raise ConfigError(f"unknown backend {name!r}", fix=f"use one of: {', '.join(known_backends())}")
    return ENGINES.get(BACKENDS.get(name, name))
