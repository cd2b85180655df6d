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
from collections.abc import Iterable, Mapping
from typing import Any

from kit.errors import ConfigError, MissingExtraError
from kit.worker.backends.base import Backend, Generation, Score, register_backend

_HALF = ("float16", "bfloat16")
_DTYPES = ("float32", *_HALF)
# transformers' "no limit" model_max_length is about 1e30; anything this large means unknown.
_NO_LIMIT = 10**9
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
_YES_NAMES = ("yes", "relevant")
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
        self.dtype = resolve_dtype(self.run.dtype, _config_dtype(config), cuda=cuda,
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
        lengths = [len(ids) for ids in tok(texts, **encode)["input_ids"]]
        check_lengths(lengths, texts, context_limit(model.config, tok, generation=True), max_new)
        eos = eos_token_ids(model.generation_config, tok)
        out: list[Generation] = []
        for start in range(0, len(texts), self.run.batch_size):
            batch = tok(texts[start:start + self.run.batch_size], padding=True, return_tensors="pt",
                        **encode).to(self.device)
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
        return {"python": platform.python_version(), **{name: _version(name) for name in _PACKAGES}}

    def model_info(self) -> dict[str, Any]:
        """Facts of the loaded model: parameter count, attention heads, context, dtype, device."""
        text = _text_config(self.model.config)
        return {
            "num_parameters": self.model.num_parameters(),
            "num_attention_heads": getattr(text, "num_attention_heads", None),
            "max_position_embeddings": _config_positions(text),
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


def uses_chat_template(tokenizer: Any) -> bool:
    """True when the tokenizer ships a chat template, so prompts are rendered as a chat."""
    return bool(getattr(tokenizer, "chat_template", None))


def render_prompts(tokenizer: Any, prompts: list[str]) -> list[str]:
    """Each prompt as one user turn plus the assistant prefix, or unchanged without a chat template."""
    if not uses_chat_template(tokenizer):
        return list(prompts)
    return [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                          add_generation_prompt=True) for p in prompts]


def resolve_dtype(requested: str, config_dtype: str | None, *, cuda: bool, bf16: bool) -> str:
    """The torch dtype name to load with (see the module docstring for what `auto` picks)."""
    if requested != "auto":
        return requested
    name = config_dtype if config_dtype in _DTYPES else "float32"
    if not cuda and name in _HALF:
        return "float32"  # half-precision matmuls on CPU are slow and not what a GPU computes anyway
    if name == "bfloat16" and not bf16:
        return "float16"
    return name


def context_limit(config: Any, tokenizer: Any, *, generation: bool) -> int | None:
    """The longest sequence the model takes, in tokens, or None when neither config nor tokenizer says.

    Generation trusts the config's position limit (the tokenizer only when the config has none);
    scoring takes the smaller of both, since encoders such as RoBERTa reserve positions.
    """
    from_config = _config_positions(_text_config(config))
    limit = getattr(tokenizer, "model_max_length", None)
    from_tokenizer = limit if isinstance(limit, int) and 0 < limit < _NO_LIMIT else None
    if generation and from_config is not None:
        return from_config
    known = [n for n in (from_config, from_tokenizer) if n is not None]
    return min(known) if known else None


def check_lengths(lengths: list[int], texts: list[str], context: int | None, reserve: int) -> None:
    """Raise a ConfigError naming the first input longer than `context - reserve` tokens."""
    if context is None:
        return
    room = context - reserve
    if room <= 0:
        raise ConfigError(f"max_new_tokens {reserve} leaves no room for input in the model's {context}-token context",
                          fix=f"set max_new_tokens below {context} in the roster")
    too_long = [i for i, n in enumerate(lengths) if n > room]
    if too_long:
        i = too_long[0]
        raise ConfigError(
            f"input {i} of this batch ({texts[i][:60]!r}...) is {lengths[i]} tokens; the model takes at most {room} "
            f"({context} context - {reserve} max_new_tokens); {len(too_long)} of {len(lengths)} inputs are too long",
            fix="shorten those inputs, lower max_new_tokens, or use a model with a longer context "
                "(kit never truncates inputs)",
        )


def eos_token_ids(generation_config: Any, tokenizer: Any) -> list[int]:
    """The end-of-sequence ids generation stops at: the generation config's, else the tokenizer's."""
    eos = getattr(generation_config, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return []
    return [eos] if isinstance(eos, int) else [int(e) for e in eos]


def count_generated(new_ids: list[int], eos_ids: Iterable[int], max_new_tokens: int) -> tuple[int, bool]:
    """(tokens generated up to and including the first eos, truncated = max_new_tokens hit without eos)."""
    stop = set(eos_ids)
    for i, token in enumerate(new_ids):
        if token in stop:
            return i + 1, False
    return len(new_ids), len(new_ids) >= max_new_tokens


def yes_label_index(id2label: Mapping[Any, str]) -> int:
    """Index of the yes-like label ("yes", "relevant") of a two-label classifier; 1 when none is named so."""
    for index, label in sorted((int(i), str(n).strip().lower()) for i, n in id2label.items()):
        if label in _YES_NAMES:
            return index
    return 1


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


def _text_config(config: Any) -> Any:
    # Multimodal configs keep the language model's limits in a sub-config.
    getter = getattr(config, "get_text_config", None)
    return getter() if callable(getter) else config


def _config_positions(config: Any) -> int | None:
    for key in _POSITION_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _config_dtype(config: Any) -> str | None:
    value = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return None if value is None else str(value).removeprefix("torch.")


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
