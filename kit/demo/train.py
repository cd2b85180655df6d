"""Fit the demo's tiny models to the demo task for a few seconds, so `kit demo` shows real scores.

The models are fitted to the demo benchmark's own items, as the worker will see them (the demo
prompt around each sentence; the Llama through its chat template), with a share of labels flipped
per model and language (FLIPS). Their scores therefore sit clearly above chance and differ by model
and language; they show the pipeline at work, not a model's quality.

Fitting is deterministic: one seed, deterministic algorithms, one CPU thread, no dropout, batches
drawn from a seeded generator. The same torch build on the same CPU gives the same weight bytes, so
the content-hash revision is stable and reruns compare equal.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Bumped whenever the recipe below changes: it is written into the model's config.json, so a cached
# model fitted by another recipe is rebuilt.
RECIPE = "demo-task-v1"
SEED = 0
# Items whose label the model is taught wrong, per language: the model's errors on the demo benchmark.
FLIPS = {
    "llama": {"en": 1, "fr": 3, "de": 5},
    "reranker": {"en": 2, "fr": 4, "de": 3},
}
LLAMA_STEPS, LLAMA_BATCH, LLAMA_LR = 400, 12, 4e-3
CLASSIFIER_STEPS, CLASSIFIER_BATCH, CLASSIFIER_LR = 150, 8, 1.5e-3


def training_items(model: str) -> list[tuple[str, str, str]]:
    """(language, sentence, taught label) for every demo item, with FLIPS[model] labels flipped."""
    from kit.demo.dataset import labelled_sentences

    items = labelled_sentences()
    flipped: set[tuple[str, int]] = set()
    for language, count in FLIPS[model].items():
        rows = sorted(i for lang, i, _s, _l in items if lang == language)
        flipped |= {(language, i) for i in random.Random(f"{model}-{language}-{SEED}").sample(rows, count)}
    other = {"yes": "no", "no": "yes"}
    return [(lang, sentence, other[label] if (lang, i) in flipped else label) for lang, i, sentence, label in items]


def fit_llama(model: Any, tokenizer: Any) -> None:
    """Teach the causal LM to answer the demo generate prompt with `yes` or `no` and stop.

    Only the top of the model learns (the last layer's queries, output projection and MLP, the final
    norm and the head): everything below stays as built, so each prompt's keys and values are
    computed once and each step runs the answer tokens alone, a few milliseconds on one CPU thread.
    """
    import torch
    from transformers import DynamicCache

    from kit.demo.dataset import demo_prompt

    before, after = demo_prompt("generate").split("{}")
    last = model.model.layers[-1]
    learning = {id(p) for part in (last.self_attn.q_proj, last.self_attn.o_proj, last.post_attention_layernorm,
                                   last.mlp, model.model.norm, model.lm_head) for p in part.parameters()}
    for param in model.parameters():
        param.requires_grad_(id(param) in learning)
    model.eval()  # no dropout: the same steps give the same weights
    prompts, answers = [], []
    for _lang, sentence, label in training_items("llama"):
        text = tokenizer.apply_chat_template([{"role": "user", "content": before + sentence + after}],
                                             tokenize=False, add_generation_prompt=True)
        prompts.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        answers.append(tokenizer(label, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
    with _deterministic():
        keys, values, seen = _prompt_caches(model, [p[:-1] for p in prompts])
        width = max(len(a) for a in answers)
        # Each row: the prompt's last token, then the answer but its last token; each target the next token.
        steps_in = torch.full((len(prompts), width), tokenizer.pad_token_id)
        targets = torch.full((len(prompts), width), -100)
        for n, (p, a) in enumerate(zip(prompts, answers)):
            steps_in[n, :len(a)] = torch.tensor([p[-1], *a[:-1]])
            targets[n, :len(a)] = torch.tensor(a)
        lengths = torch.tensor([len(p) - 1 for p in prompts])
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LLAMA_LR,
                                      weight_decay=0.0)
        for batch in _batches(len(prompts), LLAMA_BATCH, LLAMA_STEPS):
            cache = DynamicCache()
            for layer, (k, v) in enumerate(zip(keys, values)):
                cache.update(k[batch], v[batch], layer)
            mask = torch.cat([seen[batch], (targets[batch] != -100).long()], dim=1)
            positions = lengths[batch, None] + torch.arange(width)
            logits = model(input_ids=steps_in[batch], attention_mask=mask, position_ids=positions,
                           past_key_values=cache, use_cache=True).logits
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets[batch].flatten(), ignore_index=-100)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    for param in model.parameters():
        param.requires_grad_(True)


def _prompt_caches(model: Any, prompts: list[list[int]]) -> tuple[list[Any], list[Any], Any]:
    """Each layer's keys and values of every prompt, left-padded to the longest, and the mask of real ones."""
    import torch

    longest = max(len(p) for p in prompts)
    per_prompt = []
    with torch.no_grad():
        for p in prompts:
            cache = model(input_ids=torch.tensor([p]), use_cache=True).past_key_values
            per_prompt.append([(layer.keys, layer.values) for layer in cache.layers])
    keys, values = [], []
    for layer in range(len(per_prompt[0])):
        keys.append(torch.cat([_left_pad(kv[layer][0], longest) for kv in per_prompt]))
        values.append(torch.cat([_left_pad(kv[layer][1], longest) for kv in per_prompt]))
    seen = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts])
    return keys, values, seen


def _left_pad(tensor: Any, length: int) -> Any:
    """A (1, heads, n, dim) tensor left-padded with zeros to (1, heads, length, dim)."""
    import torch

    pad = torch.zeros((*tensor.shape[:2], length - tensor.shape[2], tensor.shape[3]), dtype=tensor.dtype)
    return torch.cat([pad, tensor], dim=2)


def fit_classifier(model: Any, tokenizer: Any) -> None:
    """Teach the one-logit sequence classifier to score the demo reranker prompt: log-odds of yes."""
    import torch

    from kit.demo.dataset import demo_prompt

    before, after = demo_prompt("score").split("{}")
    items = training_items("reranker")
    encoded = tokenizer([before + sentence + after for _lang, sentence, _label in items], padding=True,
                        return_tensors="pt")
    target = torch.tensor([1.0 if label == "yes" else 0.0 for _lang, _sentence, label in items])
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.eval()  # no dropout: the same steps give the same weights
    with _deterministic():
        optimizer = torch.optim.AdamW(model.parameters(), lr=CLASSIFIER_LR, weight_decay=0.0)
        for batch in _batches(len(items), CLASSIFIER_BATCH, CLASSIFIER_STEPS):
            logits = model(**{k: v[batch] for k, v in encoded.items()}).logits[:, 0]
            loss_fn(logits, target[batch]).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def _batches(count: int, size: int, steps: int) -> Iterator[Any]:
    """`steps` index batches of `size`, drawn epoch by epoch from seeded permutations of range(count)."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    order: list[int] = []
    for _ in range(steps):
        while len(order) < size:
            order += torch.randperm(count, generator=generator).tolist()
        yield torch.tensor(order[:size])
        order = order[size:]


@contextmanager
def _deterministic() -> Iterator[None]:
    """One thread, deterministic kernels, a fixed seed and no deprecation noise while fitting; then as before."""
    import torch

    from transformers.utils import logging as hf_logging

    threads, strict = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    verbosity = hf_logging.get_verbosity()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEED)
    hf_logging.set_verbosity_error()  # transformers 5.2x renames past_key_values; older 5.x only know that name
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        torch.use_deterministic_algorithms(strict)
        torch.set_num_threads(threads)
