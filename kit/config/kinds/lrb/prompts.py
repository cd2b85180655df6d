"""Which prompt an lrb run is asked with, by lrb's rule: each kind of model has its own prompt file
in the benchmark folder, and a run may name another (roster key `prompt`).

| prompt kind | lrb file | runs |
| --- | --- | --- |
| generate | prompt.txt (or prompt_generate.txt) | generate; score_kind causal (lrb's log-probability read) |
| score | prompt_reranker.txt | score: rerankers and sequence classifiers (the default) |
| zeroshot | prompt_zeroshot.txt | score on gliner2 and gliclass (zero-shot classifiers), score_kind nli |
| masked_lm | prompt_masked_lm.txt | score with score_kind masked_lm |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kit.config.backends import ZERO_SHOT_BACKENDS

GENERATE = "generate"
RERANKER = "score"   # benchmark.toml's [prompts] score key: the reranker prompt
ZEROSHOT = "zeroshot"
MASKED_LM = "masked_lm"
PROMPT_KINDS = (GENERATE, RERANKER, ZEROSHOT, MASKED_LM)

# prompt kind -> the file names of an lrb folder, the first present wins
PROMPT_FILES: dict[str, tuple[str, ...]] = {
    GENERATE: ("prompt.txt", "prompt_generate.txt"),
    RERANKER: ("prompt_reranker.txt",),
    ZEROSHOT: ("prompt_zeroshot.txt",),
    MASKED_LM: ("prompt_masked_lm.txt",),
}
DESCRIPTIONS = {
    GENERATE: "generative", RERANKER: "reranker", ZEROSHOT: "zero-shot classifier", MASKED_LM: "masked-LM",
}

_BY_SCORE_KIND = {"nli": ZEROSHOT, "masked_lm": MASKED_LM, "causal": GENERATE}


# lrb's scoring files name no backend: their decision rule says how the model was asked
_LRB_RULE_WORDS = (("log-probabilit", GENERATE), ("zero-shot", ZEROSHOT), ("entailment", ZEROSHOT), ("mask", MASKED_LM))


def lrb_prompt_kind(decision_rule: Any) -> str:
    """The prompt kind of an lrb scoring file by its metadata.decision_rule: lrb reads its causal
    log-probability scorer with the generative prompt, zero-shot and NLI classifiers with
    prompt_zeroshot.txt, and every reranker and sequence classifier with prompt_reranker.txt."""
    rule = decision_rule.lower() if isinstance(decision_rule, str) else ""
    return next((kind for word, kind in _LRB_RULE_WORDS if word in rule), RERANKER)


def prompt_kind(task: str, backend: str | None, options: Mapping[str, Any] | None) -> str:
    """The prompt kind lrb gives a run of `task` on `backend` with these options (table above)."""
    if task == GENERATE:
        return GENERATE
    if backend in ZERO_SHOT_BACKENDS:
        return ZEROSHOT
    score_kind = (options or {}).get("score_kind")
    return _BY_SCORE_KIND.get(score_kind, RERANKER) if isinstance(score_kind, str) else RERANKER
