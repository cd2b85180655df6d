"""Tiny random-weight scoring models for the transformers engine's score kinds, in a hub cache.

- `build_tiny_nli`: a BERT sequence classifier with three NLI labels
  (entailment, neutral, contradiction), for score_kind "nli";
- `build_tiny_masked_lm`: a BERT masked LM, for score_kind "masked_lm".

Both use kit's locally built WordPiece tokenizer (which keeps "yes" and "no" whole) and
weights from one seeded generator, like build_tiny_classifier; the causal kinds ("reranker",
"causal") use build_tiny_llama.
"""

from __future__ import annotations

from pathlib import Path

from kit.demo.model import CLASSIFIER_CONTEXT, _fill_seeded, _install, _normalize_json, _wordpiece_tokenizer

NLI_LABELS = ("entailment", "neutral", "contradiction")
_SHAPE = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
          "max_position_embeddings": CLASSIFIER_CONTEXT}


def build_tiny_nli(hub_cache: Path, repo_id: str = "kit-demo/tiny-nli") -> tuple[str, str]:
    """Build (once) a tiny random BERT NLI classifier; returns (repo_id, revision)."""
    return repo_id, _install(Path(hub_cache), repo_id, {**_SHAPE, "num_labels": 3}, _write_nli)


def build_tiny_masked_lm(hub_cache: Path, repo_id: str = "kit-demo/tiny-masked-lm") -> tuple[str, str]:
    """Build (once) a tiny random BERT masked LM; returns (repo_id, revision)."""
    return repo_id, _install(Path(hub_cache), repo_id, dict(_SHAPE), _write_masked_lm)


def _config(num_labels: int | None = None):
    from transformers import BertConfig

    tokenizer = _wordpiece_tokenizer()
    extra = {}
    if num_labels:
        extra = {"num_labels": num_labels, "id2label": dict(enumerate(NLI_LABELS)),
                 "label2id": {name: i for i, name in enumerate(NLI_LABELS)}}
    config = BertConfig(vocab_size=len(tokenizer), intermediate_size=2 * _SHAPE["hidden_size"],
                        pad_token_id=tokenizer.pad_token_id, **_SHAPE, **extra)
    return tokenizer, config


def _write_nli(out: Path) -> None:
    from transformers import BertForSequenceClassification

    tokenizer, config = _config(num_labels=len(NLI_LABELS))
    model = BertForSequenceClassification(config)
    _fill_seeded(model)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _normalize_json(out)


def _write_masked_lm(out: Path) -> None:
    from transformers import BertForMaskedLM

    tokenizer, config = _config()
    model = BertForMaskedLM(config)
    _fill_seeded(model)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _normalize_json(out)
