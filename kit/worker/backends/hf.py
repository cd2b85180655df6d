"""What every engine built on Hugging Face tokenizers and configs shares (transformers, vLLM, llama.cpp,
GLiNER2, GLiClass, kit's LightEval model): chat rendering, the context limit and the refusal of
over-long inputs (kit never truncates), dtype choice, end-of-sequence accounting, yes-label lookup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kit.errors import ConfigError

_HALF = ("float16", "bfloat16")
_DTYPES = ("float32", *_HALF)
# transformers' "no limit" model_max_length is about 1e30; anything this large means unknown.
_NO_LIMIT = 10**9
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
_YES_NAMES = ("yes", "relevant")


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
    from_config = config_positions(text_config(config))
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


def text_config(config: Any) -> Any:
    """The config that holds the language model's limits (multimodal configs keep them in a sub-config)."""
    getter = getattr(config, "get_text_config", None)
    return getter() if callable(getter) else config


def config_positions(config: Any) -> int | None:
    """The longest position a config declares, by the first of its known keys that is set; None without one."""
    for key in _POSITION_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def config_dtype(config: Any) -> str | None:
    """The dtype a config declares (dtype or torch_dtype), without the 'torch.' prefix; None when it declares none."""
    value = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return None if value is None else str(value).removeprefix("torch.")
