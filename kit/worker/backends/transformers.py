"""transformers engine: greedy generation (causal LM) and scoring (five score kinds), one model on
one device (CUDA when visible, else CPU), with plain transformers + torch.

Images: transformers-5.17, transformers-5.11 (the same engine at two pinned transformers versions).

Decoding is plain greedy: do_sample off, one beam, repetition_penalty 1.0 whatever the model's
generation_config says, so the same run means the same decoding on every engine. A tokenizer
with a chat template gets each prompt as one user turn plus the assistant prefix. Every batch is
measured with the tokenizer first; an input over the model's limit is refused, never truncated.

Settings:
- `task` (default generate): `generate`, or `score` with the kind set by options.score_kind
- `dtype` (default auto): auto takes the config's dtype, except that float16/bfloat16 becomes float32 on CPU and bfloat16 becomes float16 on a GPU without bf16; float32, float16, bfloat16 are used as is
- `batch_size` (default 16): static batches in input order, left padding for causal models
- `max_new_tokens` (default 4096): input tokens + max_new_tokens must fit the model's context
- `seed` (default 0): torch's seed before loading
- `trust_remote_code` (default false): honoured only with a 40-hex revision
- `options.score_kind` (default classifier): classifier, reranker (yes/no next token), causal (first answer token after the chat template), nli (entailment vs contradiction), masked_lm (yes/no at [MASK]); see kit/worker/backends/scoring.py
- `options.yes_token` (default "yes"): reranker, causal, masked_lm: the yes answer word(s), one token each; a list sums the words' probabilities
- `options.no_token` (default "no"): the same for no
- `options.prefix` (default ""): reranker: text put before each input (e.g. the model's system turn)
- `options.suffix` (default ""): reranker: text put after each input (e.g. the assistant turn opener)
- `options.hypothesis` (default none): nli: the hypothesis; unset, each input is split at options.hypothesis_marker
- `options.hypothesis_marker` (default "HYPOTHESIS:"): nli: where the hypothesis starts in an input
- `options.premise_marker` (default "TARGET SENTENCE:"): nli: the premise starts after it
- `options.mask` (default "[MASK]"): masked_lm: the placeholder replaced by the tokenizer's mask token
- `options.threshold` (default 0.5): score task: yes when the normalised yes-score reaches it (read by the worker)

Roster example:
    [[run]]
    model = "Qwen/Qwen3-Reranker-0.6B"
    revision = "<40-hex>"
    backend = "transformers-5.17"
    task = "score"
    batch_size = 16
    options = { score_kind = "reranker", prefix = "<|im_start|>user\\n", suffix = "<|im_end|>\\n<|im_start|>assistant\\n" }
"""

from __future__ import annotations

import platform
from typing import Any

from kit.errors import MissingExtraError
from kit.worker.backends.base import Backend, Generation, Score, package_version, register_backend
from kit.worker.backends.hf import (check_lengths, config_dtype, config_positions, context_limit, count_generated,
                                    eos_token_ids, render_prompts, resolve_dtype, text_config, uses_chat_template)

_PACKAGES = ("torch", "transformers", "tokenizers", "huggingface_hub", "safetensors")


@register_backend("transformers")
class TransformersBackend(Backend):
    """A Hugging Face model run with plain transformers + torch."""

    tokenizer: Any = None
    model: Any = None
    device: str | None = None
    dtype: str | None = None

    def load(self) -> None:
        """Load tokenizer and model from the snapshot, offline, on CUDA when visible else CPU."""
        from kit.worker.backends.scoring import CAUSAL_KINDS, auto_class_name, score_kind

        torch, transformers = _import_libs()
        torch.manual_seed(self.run.seed)
        cuda = torch.cuda.is_available()
        self.device = "cuda" if cuda else "cpu"
        kind = score_kind(self.run.options) if self.run.task == "score" else None
        local = {"trust_remote_code": self.remote_code(), "local_files_only": True}
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.snapshot, **local)
        config = transformers.AutoConfig.from_pretrained(self.snapshot, **local)
        self.dtype = resolve_dtype(self.run.dtype, config_dtype(config), cuda=cuda,
                                   bf16=cuda and torch.cuda.is_bf16_supported())
        auto = getattr(transformers, auto_class_name(self.run.task, kind))
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        model = auto.from_pretrained(self.snapshot, config=config, dtype=getattr(torch, self.dtype), **local)
        self.model = model.to(self.device).eval()
        if self.tokenizer.pad_token_id is None and self.tokenizer.eos_token is not None:
            # Many decoder-only tokenizers ship no pad token; batching needs one.
            self.tokenizer.pad_token = self.tokenizer.eos_token
            self.model.config.pad_token_id = self.tokenizer.pad_token_id
        if self.run.task == "generate" or kind in CAUSAL_KINDS:
            self.tokenizer.padding_side = "left"

    def generate(self, prompts: list[str]) -> list[Generation]:
        """Greedy answers in input order; refuses the call if any input does not fit the context."""
        import torch

        tok, model, max_new = self.tokenizer, self.model, self.run.max_new_tokens
        if not prompts:
            return []
        texts = render_prompts(tok, prompts)
        # A rendered chat template already holds its special tokens.
        encode = {"add_special_tokens": not uses_chat_template(tok), "return_token_type_ids": False}
        encoded = tok(texts, **encode)["input_ids"]   # once: the lengths here, the batches below
        check_lengths([len(ids) for ids in encoded], texts, context_limit(model.config, tok, generation=True), max_new)
        eos = eos_token_ids(model.generation_config, tok)
        out: list[Generation] = []
        for start in range(0, len(texts), self.run.batch_size):
            batch = tok.pad({"input_ids": encoded[start:start + self.run.batch_size]}, padding=True,
                            return_tensors="pt", return_attention_mask=True).to(self.device)
            with torch.inference_mode():
                ids = model.generate(**batch, do_sample=False, num_beams=1, repetition_penalty=1.0,
                                     max_new_tokens=max_new, eos_token_id=eos or None,
                                     pad_token_id=tok.pad_token_id)
            for row in ids[:, batch["input_ids"].shape[1]:].tolist():
                n, truncated = count_generated(row, eos, max_new)
                # The text leaves out the end-of-sequence token, as vLLM and llama.cpp do.
                shown = row[:n - 1] if n and not truncated and row[n - 1] in eos else row[:n]
                out.append(Generation(tok.decode(shown, skip_special_tokens=True), truncated, n, tuple(row[:n])))
        return out

    def score(self, texts: list[str]) -> list[Score]:
        """Scores in input order by options.score_kind; refuses the call if any input does not fit."""
        from kit.worker.backends.scoring import score_texts

        return score_texts(self, texts)

    def versions(self) -> dict[str, str | None]:
        """Versions of python and of the packages this engine imports."""
        return {"python": platform.python_version(), **{name: package_version(name) for name in _PACKAGES}}

    def model_info(self) -> dict[str, Any]:
        """Facts of the loaded model: parameter count, attention heads, context, dtype, device."""
        text = text_config(self.model.config)
        return {
            "num_parameters": self.model.num_parameters(),
            "num_attention_heads": getattr(text, "num_attention_heads", None),
            "max_position_embeddings": config_positions(text),
            "dtype": self.dtype,
            "device": self.device,
        }

    def speed_facts(self) -> dict[str, Any]:
        """Peak GPU memory torch allocated since load (bytes); {} on CPU."""
        if self.device != "cuda":
            return {}
        import torch

        return {"peak_gpu_memory_bytes": int(torch.cuda.max_memory_allocated())}

    def close(self) -> None:
        """Drop the model and tokenizer and return cached GPU memory."""
        self.model = self.tokenizer = None
        if self.device == "cuda":
            import torch

            torch.cuda.empty_cache()


def _import_libs() -> tuple[Any, Any]:
    try:
        import torch
    except ImportError:
        raise MissingExtraError("the transformers backend", "torch", "worker") from None
    try:
        import transformers
    except ImportError:
        raise MissingExtraError("the transformers backend", "transformers", "worker") from None
    return torch, transformers
