"""The backend families kit knows: each names one image and the worker engine inside it."""

from __future__ import annotations

# backend (image family) -> worker engine module under kit.worker.backends
BACKENDS: dict[str, str] = {
    "vllm": "vllm",
    "transformers-5.17": "transformers",
    "transformers-5.11": "transformers",
    "gliner2": "gliner2",
    "gguf": "llama_cpp",
    "gliclass": "gliclass",
}


# backends whose engine spreads one model over the GPUs of a node (vLLM's tensor parallelism); the
# others run a model on one GPU
SHARDING_BACKENDS = frozenset({"vllm"})


def shards(backend: str) -> bool:
    """True when the backend's engine shards a model over several GPUs."""
    return backend in SHARDING_BACKENDS


def engine_for(backend: str) -> str:
    """The worker engine that runs a backend family."""
    return BACKENDS[backend]
