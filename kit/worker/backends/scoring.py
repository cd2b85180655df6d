"""Score kinds of the transformers engine (a helper module, not an engine of its own).

Every kind turns one text into a Score: normalised yes/no probabilities (sum 1) and a native
score kept so that other thresholds can be applied later. Every kind except a two-label
classifier stores log-odds as its native score, so `yes == sigmoid(native)`:

| kind | model class | input | native |
| --- | --- | --- | --- |
| classifier | sequence classifier, 1 or 2 labels | the text | the yes logit |
| reranker | causal LM | prefix + text + suffix | log P(yes) - log P(no), next token |
| causal | causal LM | the text as one chat user turn | log P(yes) - log P(no), first answer token |
| nli | sequence classifier with entailment/contradiction labels | premise, hypothesis | entailment - contradiction logit |
| masked_lm | masked LM | the text with its one [MASK] | log P(yes) - log P(no) at the mask |

Every input is measured with the tokenizer before anything runs; a batch holding an input over
the model's limit is refused (never truncated).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kit.config.backends import OPTION_KINDS
from kit.errors import ConfigError
from kit.worker.backends.base import Score
from kit.worker.backends.hf import check_lengths, context_limit, render_prompts, uses_chat_template, yes_label_index

SCORE_KINDS = OPTION_KINDS["score_kind"].words   # the roster checks the same list (kit.config.backends)
DEFAULT_KIND = "classifier"
_AUTO = {"classifier": "AutoModelForSequenceClassification", "nli": "AutoModelForSequenceClassification",
         "masked_lm": "AutoModelForMaskedLM", "reranker": "AutoModelForCausalLM", "causal": "AutoModelForCausalLM"}
CAUSAL_KINDS = ("reranker", "causal")


def score_kind(options: dict[str, Any]) -> str:
    """The run's `options.score_kind` (default classifier); an unknown kind is a ConfigError."""
    kind = options.get("score_kind") or DEFAULT_KIND
    if kind not in SCORE_KINDS:
        raise ConfigError(f"options.score_kind = {kind!r} is not a score kind",
                          fix=f"use one of: {', '.join(SCORE_KINDS)}")
    return kind


def auto_class_name(task: str, kind: str) -> str:
    """The transformers Auto class that loads the model for a task and score kind."""
    return "AutoModelForCausalLM" if task == "generate" else _AUTO[kind]


def from_log_odds(native: float) -> Score:
    """A Score whose yes probability is sigmoid(native), computed stably in double precision."""
    native = float(native)
    if native >= 0:
        yes = 1.0 / (1.0 + math.exp(-native))
    else:
        e = math.exp(native)
        yes = e / (1.0 + e)
    return Score(yes=yes, no=1.0 - yes, native=native)


def split_premise_hypothesis(text: str, hypothesis_marker: str, premise_marker: str,
                             hypothesis: str | None) -> tuple[str, str]:
    """(premise, hypothesis) of an NLI input: the text split at `hypothesis_marker`, or the whole
    text as premise with the configured `hypothesis`; the premise starts after `premise_marker`."""
    if hypothesis is None:
        if not hypothesis_marker or hypothesis_marker not in text:
            raise ConfigError(f"NLI input has no {hypothesis_marker!r} line and options.hypothesis is not set",
                              fix="use a prompt with a HYPOTHESIS: line (prompt_zeroshot.txt) or set options.hypothesis")
        text, hypothesis = text.split(hypothesis_marker, 1)
    if premise_marker and premise_marker in text:
        text = text.split(premise_marker, 1)[1]
    return text.strip(), hypothesis.strip()


def answer_ids(tokenizer: Any, words: str | Sequence[str], key: str) -> list[int]:
    """The token ids of the answer words; each word must be exactly one token (else a ConfigError)."""
    out = []
    for word in [words] if isinstance(words, str) else list(words):
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ConfigError(f"options.{key} word {word!r} is {len(ids)} tokens for this tokenizer, not one",
                              fix=f"set options.{key} to a word the tokenizer keeps whole (often with a "
                                  "leading space, e.g. ' yes')")
        out.append(ids[0])
    return out


def score_texts(backend: Any, texts: list[str]) -> list[Score]:
    """Scores of `texts` for the backend's loaded model, by its run's score kind (see the table)."""
    kind = score_kind(backend.run.options)
    if not texts:
        return []
    if kind == "classifier":
        return _classifier(backend, texts)
    if kind == "nli":
        return _nli(backend, texts)
    if kind == "masked_lm":
        return _masked_lm(backend, texts)
    return _next_token(backend, texts, kind)


def _batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _classifier(b: Any, texts: list[str]) -> list[Score]:
    import torch

    tok, model = b.tokenizer, b.model
    check_lengths([len(i) for i in tok(texts)["input_ids"]], texts,
                  context_limit(model.config, tok, generation=False), 0)
    labels = model.config.num_labels
    if labels not in (1, 2):
        raise ConfigError(f"score needs a classifier with 1 or 2 labels; this model has {labels}",
                          fix="use a reranker / binary classifier, or task = 'generate'")
    yes_index = 0 if labels == 1 else yes_label_index(model.config.id2label)
    out: list[Score] = []
    for chunk in _batches(texts, b.run.batch_size):
        batch = tok(chunk, padding=True, return_tensors="pt").to(b.device)
        with torch.inference_mode():
            logits = model(**batch).logits.float()
        yes = torch.sigmoid(logits[:, 0]) if labels == 1 else torch.softmax(logits, dim=-1)[:, yes_index]
        out.extend(Score(yes=p, no=1.0 - p, native=n) for p, n in zip(yes.tolist(), logits[:, yes_index].tolist()))
    return out


def _label_index(id2label: dict, fragment: str) -> int:
    for index, name in sorted((int(i), str(n).lower()) for i, n in id2label.items()):
        if fragment in name:
            return index
    raise ConfigError(f"the NLI model has no label containing {fragment!r} (labels: {dict(id2label)})",
                      fix="use an NLI model whose config names its entailment and contradiction labels")


def _nli(b: Any, texts: list[str]) -> list[Score]:
    import torch

    tok, model = b.tokenizer, b.model
    pairs = [split_premise_hypothesis(t, b.option("hypothesis_marker", "HYPOTHESIS:", str),
                                      b.option("premise_marker", "TARGET SENTENCE:", str),
                                      b.option("hypothesis", None, str)) for t in texts]
    premises, hypotheses = [p for p, _ in pairs], [h for _, h in pairs]
    check_lengths([len(i) for i in tok(premises, hypotheses)["input_ids"]], texts,
                  context_limit(model.config, tok, generation=False), 0)
    entail = _label_index(model.config.id2label, "entail")
    contra = _label_index(model.config.id2label, "contradict")
    out: list[Score] = []
    for chunk in _batches(list(range(len(texts))), b.run.batch_size):
        batch = tok([premises[i] for i in chunk], [hypotheses[i] for i in chunk], padding=True,
                    return_tensors="pt").to(b.device)
        with torch.inference_mode():
            logits = model(**batch).logits.float()
        out.extend(from_log_odds(n) for n in (logits[:, entail] - logits[:, contra]).tolist())
    return out


def _yes_no_log_odds(log_probs: Any, yes: list[int], no: list[int]) -> list[float]:
    return (log_probs[:, yes].logsumexp(-1) - log_probs[:, no].logsumexp(-1)).tolist()


def _masked_lm(b: Any, texts: list[str]) -> list[Score]:
    import torch

    tok, model = b.tokenizer, b.model
    if tok.mask_token is None:
        raise ConfigError("score_kind masked_lm needs a tokenizer with a mask token", fix="use a masked-LM model")
    placeholder = b.option("mask", "[MASK]", str)
    bad = [i for i, t in enumerate(texts) if t.count(placeholder) != 1]
    if bad:
        raise ConfigError(f"input {bad[0]} holds {texts[bad[0]].count(placeholder)} {placeholder!r} placeholders, not one",
                          fix="use a prompt with exactly one [MASK] (prompt_masked_lm.txt) or set options.mask")
    filled = [t.replace(placeholder, tok.mask_token) for t in texts]
    check_lengths([len(i) for i in tok(filled)["input_ids"]], texts,
                  context_limit(model.config, tok, generation=False), 0)
    yes = answer_ids(tok, b.option("yes_token", "yes", (str, list)), "yes_token")
    no = answer_ids(tok, b.option("no_token", "no", (str, list)), "no_token")
    out: list[Score] = []
    for chunk in _batches(filled, b.run.batch_size):
        batch = tok(chunk, padding=True, return_tensors="pt").to(b.device)
        rows, cols = (batch["input_ids"] == tok.mask_token_id).nonzero(as_tuple=True)
        if len(rows) != len(chunk):
            raise ConfigError("the mask token appears more than once in a tokenized input",
                              fix="remove literal mask tokens from the sentences or the prompt")
        with torch.inference_mode():
            logits = model(**batch).logits[rows, cols].float()
        out.extend(from_log_odds(n) for n in _yes_no_log_odds(logits.log_softmax(-1), yes, no))
    return out


def _next_token(b: Any, texts: list[str], kind: str) -> list[Score]:
    import torch

    tok, model = b.tokenizer, b.model
    if kind == "causal":
        inputs, special = render_prompts(tok, texts), not uses_chat_template(tok)
    else:
        prefix, suffix = b.option("prefix", "", str), b.option("suffix", "", str)
        inputs, special = [prefix + t + suffix for t in texts], True
    encode = {"add_special_tokens": special, "return_token_type_ids": False}
    check_lengths([len(i) for i in tok(inputs, **encode)["input_ids"]], texts,
                  context_limit(model.config, tok, generation=True), 0)
    yes = answer_ids(tok, b.option("yes_token", "yes", (str, list)), "yes_token")
    no = answer_ids(tok, b.option("no_token", "no", (str, list)), "no_token")
    out: list[Score] = []
    for chunk in _batches(inputs, b.run.batch_size):
        batch = tok(chunk, padding=True, return_tensors="pt", **encode).to(b.device)
        # Left padding: positions count real tokens only, so a padded row scores as it would alone.
        positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = model(**batch, position_ids=positions).logits[:, -1, :].float()
        out.extend(from_log_odds(n) for n in _yes_no_log_odds(logits.log_softmax(-1), yes, no))
    return out
