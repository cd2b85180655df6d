"""Which environment variables are engine settings: what a job records in provenance.engine_env, what a
rerun is given again (kit.repro.rerun) and what `kit reproduce --engine-env` accepts."""

from __future__ import annotations

import os
import re

# Environment variables that change what an engine does or how much memory it takes (vLLM reads dozens of
# VLLM_* settings, its CPU backend's KV-cache size among them; thread counts change CPU kernels' order of
# summation). A rerun gets the recorded values (kit.repro.rerun); names that look like secrets never travel.
ENGINE_ENV_PREFIXES = ("VLLM_",)
ENGINE_ENV_NAMES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM", "CUBLAS_WORKSPACE_CONFIG")
_SECRET_LIKE = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|KEY", re.IGNORECASE)


def engine_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The engine settings the job's environment holds (ENGINE_ENV_PREFIXES, ENGINE_ENV_NAMES), sorted;
    a name that looks like a secret (VLLM_API_KEY) is left out."""
    env = dict(os.environ if env is None else env)
    return {name: value for name, value in sorted(env.items())
            if (name.startswith(ENGINE_ENV_PREFIXES) or name in ENGINE_ENV_NAMES) and not _SECRET_LIKE.search(name)}
