"""The backend families kit knows: each names one image and the worker engine inside it; each
engine's facts are in its one EngineSpec, from which every table below, the roster's checks, the
engine reference (kit.worker.backends.reference) and `kit images lint` derive."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineSpec:
    """One worker engine (a module under kit.worker.backends): the tasks it runs (its default first;
    its docstring's "`task` (default ...)" line says the same), the roster `options` it reads (its
    docstring lists them as "- `options.KEY`"; a unit test keeps both in step), the libraries its
    image must import (`kit images lint`), whether it spreads one model over a node's GPUs, and
    whether it scores as a zero-shot classifier (lrb's prompt_zeroshot.txt)."""

    name: str
    tasks: tuple[str, ...]
    options: tuple[str, ...]
    modules: tuple[str, ...]
    shards_model: bool = False
    zero_shot: bool = False
    package: str = ""      # the distribution whose version names the engine's (provenance.packages)


ENGINE_SPECS: dict[str, EngineSpec] = {e.name: e for e in (
    EngineSpec("vllm", ("generate",),
               ("max_num_seqs", "max_model_len", "gpu_memory_utilization", "enforce_eager", "max_num_batched_tokens"),
               ("vllm",), shards_model=True, package="vllm"),
    EngineSpec("transformers", ("generate", "score"),
               ("score_kind", "yes_token", "no_token", "prefix", "suffix", "hypothesis", "hypothesis_marker",
                "premise_marker", "mask", "threshold"),
               ("torch", "transformers"), package="transformers"),
    EngineSpec("gliner2", ("score",), ("labels", "task_name", "hypothesis_marker", "premise_marker", "threshold"),
               ("gliner2",), zero_shot=True, package="gliner2"),
    EngineSpec("llama_cpp", ("generate",), ("gguf_file", "quantization", "n_ctx", "n_gpu_layers", "n_batch", "n_threads"),
               ("llama_cpp",), package="llama_cpp_python"),
    EngineSpec("gliclass", ("score",), ("label", "max_length", "hypothesis_marker", "premise_marker", "threshold"),
               ("gliclass",), zero_shot=True, package="gliclass"),
)}

# backend (image family) -> worker engine module under kit.worker.backends
BACKENDS: dict[str, str] = {
    "vllm": "vllm",
    "transformers-5.17": "transformers",
    "transformers-5.11": "transformers",
    "gliner2": "gliner2",
    "gguf": "llama_cpp",
    "gliclass": "gliclass",
}

# other names people write for a backend family (compared lower-cased, spaces and '_' as '-')
_ALIASES = {"llama.cpp": "gguf", "llama-cpp": "gguf", "llamacpp": "gguf", "llama-cpp-python": "gguf",
            "gliner": "gliner2", "transformers-5.17.0": "transformers-5.17", "transformers-5.11.0": "transformers-5.11"}


def backend_name(written: str) -> str:
    """The backend family a roster's `backend` names: as written, or its canonical spelling when
    written in another case or by a common other name ('vLLM', 'llama.cpp', 'GLiClass'); unknown
    names come back as written."""
    key = written.strip().lower().replace(" ", "-").replace("_", "-")
    key = _ALIASES.get(key, key)
    return key if key in BACKENDS else written


# words of a Hub id that name its backend family beyond doubt (checked in order, case-insensitively)
# ('gliner2' only: urchade/gliner_multi-v2.1 and knowledgator/gliner-multitask-* are models of the first
# GLiNER library, which the gliner2 package does not load)
_ID_FAMILIES = (("gguf", "gguf"), ("gliclass", "gliclass"), ("gliner2", "gliner2"))


def backend_from_id(model: str) -> str | None:
    """The backend family a model id names beyond doubt ('...-GGUF' -> gguf, '.../gliclass-...' ->
    gliclass, '.../gliner2-...' -> gliner2), or None when only the roster can say (a causal LM runs
    on vllm or transformers; a reranker's remote code may need transformers-5.11)."""
    lowered = model.lower()
    return next((family for word, family in _ID_FAMILIES if word in lowered), None)


# views of ENGINE_SPECS by engine name
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {name: e.options for name, e in ENGINE_SPECS.items()}
ENGINE_TASKS: dict[str, tuple[str, ...]] = {name: e.tasks for name, e in ENGINE_SPECS.items()}
ENGINE_MODULES: dict[str, tuple[str, ...]] = {name: e.modules for name, e in ENGINE_SPECS.items()}
# options every backend takes: the model's head counts, for GPU sizing (kit.sizing)
SIZING_OPTIONS = ("attention_heads", "kv_heads")


@dataclass(frozen=True)
class OptionKind:
    """What a roster `options.KEY` may hold: values of `types` (a bool is never an int or float here),
    numbers within [low, high] (`above` low when the low end is open), and for text, one of `words`
    when any are listed. `what` names it in an error, `note` adds to the fix."""

    types: tuple[type, ...]
    what: str
    note: str = ""
    low: float | None = None
    high: float | None = None
    above: bool = False
    words: tuple[str, ...] = ()
    path_suffix: str | None = None   # text that is a path inside the model's snapshot, ending so


_COUNT = OptionKind((int,), "a positive integer", low=1)
_TEXT = OptionKind((str,), "a text")
_SHARE = OptionKind((int, float), "a number from 0 to 1", low=0, high=1)
# every option an engine reads (ENGINE_SPECS) or kit sizes GPUs by (SIZING_OPTIONS), as the worker reads it
OPTION_KINDS: dict[str, OptionKind] = {
    "max_num_seqs": _COUNT, "max_model_len": _COUNT, "max_num_batched_tokens": _COUNT,
    "gpu_memory_utilization": OptionKind((int, float), "a share of the GPU", "a number above 0 and at most 1; "
                                         "vLLM's default: 0.9", low=0, high=1, above=True),
    "enforce_eager": OptionKind((bool,), "true or false"),
    "score_kind": OptionKind((str,), "a score kind", words=("classifier", "reranker", "causal", "nli", "masked_lm")),
    "yes_token": OptionKind((str, list), "a text, or a list of texts"),
    "no_token": OptionKind((str, list), "a text, or a list of texts"),
    "prefix": _TEXT, "suffix": _TEXT, "hypothesis": _TEXT, "hypothesis_marker": _TEXT, "premise_marker": _TEXT,
    "mask": _TEXT, "task_name": _TEXT, "label": _TEXT, "quantization": _TEXT,
    "gguf_file": OptionKind((str,), "a .gguf file's path inside the model's snapshot", path_suffix=".gguf"),
    "threshold": _SHARE,
    "labels": OptionKind((list,), "a list of texts"),
    "n_ctx": OptionKind((int,), "an integer, 0 or more", "0: the model's own context", low=0),
    "n_gpu_layers": OptionKind((int,), "an integer, -1 or more", "-1: every layer on the GPU", low=-1),
    "n_batch": _COUNT, "n_threads": _COUNT, "max_length": _COUNT,
    "attention_heads": _COUNT, "kv_heads": _COUNT,
}


def option_fault(key: str, value: object) -> OptionKind | None:
    """The kind `value` should be of when it cannot be the roster's `options.KEY`; None when it can (and
    for a key OPTION_KINDS does not hold)."""
    import math

    kind = OPTION_KINDS.get(key)
    if kind is None or value is None:
        return None
    if not isinstance(value, kind.types) or (isinstance(value, bool) and bool not in kind.types):
        return kind
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (isinstance(value, float) and not math.isfinite(value)) or (kind.low is not None and (
                value < kind.low or (kind.above and value == kind.low))) or (kind.high is not None and value > kind.high):
            return kind
    if isinstance(value, list) and not (value and all(isinstance(x, str) for x in value)):
        return kind
    if kind.words and value not in kind.words:
        return kind
    if kind.path_suffix is not None:
        from pathlib import PurePosixPath

        inside = PurePosixPath(str(value))
        if inside.is_absolute() or ".." in inside.parts or not str(value).endswith(kind.path_suffix) \
                or inside.name == kind.path_suffix or "\\" in str(value):
            return kind
    return None


def option_wanted(kind: OptionKind) -> str:
    """What a fix asks an option of this kind to be, in words."""
    return kind.what + (f" ({kind.note})" if kind.note else "") + (f": one of {', '.join(kind.words)}" if kind.words else "")


def options_for(backend: str) -> tuple[str, ...]:
    """The `options` keys a run on this backend family may set."""
    return ENGINE_OPTIONS[BACKENDS[backend]] + SIZING_OPTIONS


# backends whose engine spreads one model over the GPUs of a node (vLLM's tensor parallelism); the
# others run a model on one GPU
SHARDING_BACKENDS = frozenset(b for b, engine in BACKENDS.items() if ENGINE_SPECS[engine].shards_model)
# backends whose engine scores as a zero-shot classifier
ZERO_SHOT_BACKENDS = frozenset(b for b, engine in BACKENDS.items() if ENGINE_SPECS[engine].zero_shot)


def shards(backend: str) -> bool:
    """True when the backend's engine shards a model over several GPUs."""
    return backend in SHARDING_BACKENDS


def engine_package(backend: str) -> str:
    """The package whose version is the engine's version for a backend family ('' for an unknown one)."""
    engine = ENGINE_SPECS.get(BACKENDS.get(backend, ""))
    return engine.package if engine else ""


def engine_for(backend: str) -> str:
    """The worker engine that runs a backend family."""
    return BACKENDS[backend]


def tasks_for(backend: str) -> tuple[str, ...]:
    """The tasks a backend family runs, its default first."""
    return ENGINE_TASKS[BACKENDS[backend]]


def backends_for(task: str) -> list[str]:
    """The backend families that run a task."""
    return [b for b in BACKENDS if task in tasks_for(b)]
