"""`kit reproduce --as`: rerun a result on purpose on another engine or dtype, to measure how far its
verdicts drift. Which changes are asked, whether they make sense for the result, and the roster
fields they change."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from kit.config.backends import BACKENDS, backend_name, options_for, tasks_for
from kit.config.roster import Dtype
from kit.errors import ConfigError
from kit.results import keys

DTYPES = tuple(d for d in get_args(Dtype) if d != "auto")
# backends that read another file format than a Hugging Face snapshot: the same weights must be named
GGUF_BACKENDS = ("gguf",)
_MODEL_AT = re.compile(r"(?P<model>[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@(?P<rev>[0-9a-f]{40}))?")


@dataclass(frozen=True)
class Deliberate:
    """What a deliberate rerun changes: the backend (engine), the dtype, and for an engine that reads
    another format (a GGUF for llama.cpp) the model that holds the same weights in it (id, revision)."""

    backend: str | None = None
    dtype: str | None = None
    model: str | None = None
    revision: str | None = None
    options: dict[str, Any] = field(default_factory=dict)   # options of the engine rerun on (--as-option)

    def __bool__(self) -> bool:
        return bool(self.backend or self.dtype)

    def as_dict(self) -> dict[str, str]:
        """The changes as the verdict records them (only those asked)."""
        out: dict[str, Any] = {k: v for k, v in (("backend", self.backend), ("dtype", self.dtype),
                                                 ("model", self.model), ("revision", self.revision)) if v}
        if self.options:
            out["options"] = dict(sorted(self.options.items()))
        return out

    def describe(self) -> str:
        """'as backend gguf (model org/name), dtype bfloat16' for messages."""
        parts = [f"backend {self.backend}" + (f" (model {self.model})" if self.model else "")] if self.backend else []
        parts += [f"dtype {self.dtype}"] if self.dtype else []
        return "as " + ", ".join(parts)


def parse_as(values: tuple[str, ...], as_model: str | None, as_options: tuple[str, ...] = ()) -> Deliberate:
    """--as values (a backend such as vllm, gguf, llama.cpp, transformers-5.11; or a dtype such as
    bfloat16), --as-model ORG/NAME[@REVISION] and --as-option KEY=VALUE -> Deliberate; a ConfigError
    names a value that is neither, a second engine or dtype, --as-model without an engine that needs it,
    or an option that engine does not read."""
    backend = dtype = None
    for value in values:
        text = value.strip()
        if text.lower() in DTYPES:
            if dtype and dtype != text.lower():
                raise ConfigError(f"--as {value}: a second dtype (already {dtype})", fix="give one dtype per rerun")
            dtype = text.lower()
            continue
        name = backend_name(text)
        if name not in BACKENDS:
            raise ConfigError(f"--as {value!r} is neither an engine nor a dtype",
                              fix=f"use one of the backends {', '.join(BACKENDS)} (also vLLM, llama.cpp) or the "
                                  f"dtypes {', '.join(DTYPES)}")
        if backend and backend != name:
            raise ConfigError(f"--as {value}: a second engine (already {backend})", fix="give one engine per rerun")
        backend = name
    model = revision = None
    if as_model is not None:
        match = _MODEL_AT.fullmatch(as_model.strip())
        if not match:
            raise ConfigError(f"--as-model {as_model!r} is not ORG/NAME or ORG/NAME@<40-hex revision>",
                              fix="name the repository holding the same weights in the engine's format, e.g. "
                                  "--as-model org/model-GGUF")
        if backend not in GGUF_BACKENDS:
            raise ConfigError(f"--as-model {as_model}: only an engine that reads another format needs it "
                              f"({', '.join(GGUF_BACKENDS)})", fix="leave --as-model out, or add --as gguf")
        model, revision = match["model"], match["rev"]
    if backend in GGUF_BACKENDS and model is None:
        raise ConfigError(f"--as {backend}: llama.cpp reads a GGUF file, not the result's snapshot",
                          fix="name the GGUF of the same weights: --as-model ORG/NAME[@REVISION] (kit demo's: "
                              "kit-demo/tiny-llama-gguf)")
    if backend in GGUF_BACKENDS and dtype:
        raise ConfigError(f"--as {dtype} with --as {backend}: llama.cpp ignores dtype (the GGUF's tensor types decide)",
                          fix="choose the GGUF file of the precision to measure with --as-model")
    if as_options and not (backend or dtype):
        raise ConfigError("--as-option without --as: options change only a deliberate rerun",
                          fix="add --as ENGINE (or --as DTYPE) to say what the rerun measures")
    return Deliberate(backend, dtype, model, revision, dict(_option(text, backend) for text in as_options))


def _option(text: str, backend: str | None) -> tuple[str, Any]:
    """KEY=VALUE of --as-option -> (key, value), the value read as a TOML value (true, 8, 0.5, "text"; a bare
    word is text), the key one the engine reads."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--as-option {text!r} is not KEY=VALUE", fix="write e.g. --as-option enforce_eager=true")
    if backend and key not in options_for(backend):
        raise ConfigError(f"--as-option {key}: {backend} does not read it",
                          fix=f"use one of {', '.join(options_for(backend))} (docs/backends.md)")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    if not _plain(parsed):
        raise ConfigError(f"--as-option {key}: {value.strip()!r} is not a text, number, true/false or a list of them",
                          fix="write e.g. --as-option max_model_len=1024 or --as-option 'gguf_file=\"model.gguf\"'")
    return key, parsed


def _plain(value: Any) -> bool:
    """Whether a value is one a roster option holds and the rerun's roster writes as it is read."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, (str, int, float, bool)) and (not isinstance(value, float) or value == value)


def check_applies(deliberate: Deliberate, result: dict[str, Any], where: Path) -> None:
    """A ConfigError when the change cannot apply to this result: the same backend or dtype it ran
    with, an engine that does not run the result's task, or an option the engine rerun on does not read."""
    meta = result.get(keys.METADATA, {})
    engine = deliberate.backend or backend_name(str(meta.get(keys.BACKEND)))
    unread = sorted(k for k in deliberate.options if engine not in BACKENDS or k not in options_for(engine))
    if unread:
        raise ConfigError(f"{where}: --as-option {unread[0]}: the {engine} engine the rerun uses does not read it",
                          fix=f"use one of {', '.join(options_for(engine)) if engine in BACKENDS else 'its options'}"
                              " (docs/backends.md)")
    if deliberate.backend:
        if deliberate.backend == meta.get(keys.BACKEND):
            raise ConfigError(f"{where}: --as {deliberate.backend} is the backend the result ran on",
                              fix="rerun without --as to reproduce it, or name another engine")
        task = meta.get(keys.TASK, keys.TASK_GENERATE)
        if task not in tasks_for(deliberate.backend):
            raise ConfigError(f"{where}: the result's task {task!r} does not run on {deliberate.backend} "
                              f"(it runs {', '.join(tasks_for(deliberate.backend))})",
                              fix="choose an engine that runs the task")
    if deliberate.dtype and deliberate.dtype == meta.get(keys.DTYPE) and not deliberate.backend:
        raise ConfigError(f"{where}: --as {deliberate.dtype} is the dtype the result ran with",
                          fix="rerun without --as to reproduce it, or name another dtype")


def changed_run(run: dict[str, Any], deliberate: Deliberate, revision: str | None) -> dict[str, Any]:
    """The roster run (as TOML keys, kit.repro.resolve.recorded_run) with the deliberate changes: the
    backend, the dtype, and for a GGUF engine the model at `revision` (resolved in the weights cache)
    and no options of the engine it leaves (they would be refused)."""
    run = dict(run)
    if deliberate.backend:   # the recorded options the new engine reads too (the sizing ones) carry over
        run["backend"] = deliberate.backend
        run["options"] = {k: v for k, v in (run.get("options") or {}).items() if k in options_for(deliberate.backend)}
    run["options"] = {**(run.get("options") or {}), **deliberate.options}
    if deliberate.dtype:
        run["dtype"] = deliberate.dtype
    if deliberate.model:
        run["model"] = deliberate.model
        run.pop("revision", None)
        if revision:
            run["revision"] = revision
        run.pop("trust_remote_code", None)
    return run


def parse_engine_env(values: tuple[str, ...]) -> dict[str, str]:
    """--engine-env NAME=VALUE values -> {NAME: VALUE}; only the engine settings a job records
    (kit.config.engine_env: VLLM_*, thread counts), never a secret-looking name, so
    what the rerun was given is what its provenance says. A ConfigError names a bad one."""
    from kit.config.engine_env import engine_environment

    env: dict[str, str] = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise ConfigError(f"--engine-env {value!r} is not NAME=VALUE", fix="write e.g. VLLM_CPU_KVCACHE_SPACE=1")
        if name not in engine_environment({name: setting}) or "\0" in setting:
            raise ConfigError(f"--engine-env {name}: not an engine setting a rerun records (VLLM_*, OMP_NUM_THREADS, "
                              "MKL_NUM_THREADS, TOKENIZERS_PARALLELISM, CUBLAS_WORKSPACE_CONFIG; never a secret)",
                              fix="pass only engine settings; other variables do not reach the rerun")
        env[name] = setting
    return env
