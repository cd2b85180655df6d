"""Inputs for one-pair runs of any backend: the demo benchmark with a score prompt that suits the
engine, and a roster of the runs (used by the backends' integration tests and for trying an engine).

Score prompts (kit's own wording, in the shapes the lrb prompts use), each under its prompt kind
(kit.config.kinds.lrb.prompts), so a run gets the one lrb gives its kind:
- `reranker`: the demo's Instruct/Query/Document prompt (classifier and reranker kinds);
- `zeroshot`: TARGET SENTENCE plus a HYPOTHESIS line (nli kind, gliner2, gliclass);
- `masked_lm`: ends in `ANSWER: [MASK]` (masked_lm kind).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.demo.dataset import ZEROSHOT_PROMPT, write_demo_benchmark
from kit.files import write_text_atomic

SCORE_PROMPTS = {
    "zeroshot": ZEROSHOT_PROMPT,      # the demo benchmark's own
    "masked_lm": (
        "Does the target sentence say something about its place that would be visible from above "
        "(crops, forest, water, buildings, roads)? Fill the blank with yes or no.\n\n"
        "TARGET SENTENCE: {}\n"
        "ANSWER: [MASK]\n"
    ),
}


def write_backend_benchmark(dest: Path, score_prompt: str = "reranker") -> Path:
    """The demo benchmark in `dest` with the `score_prompt` one (reranker, zeroshot, masked_lm) among its prompts."""
    if score_prompt != "reranker" and score_prompt not in SCORE_PROMPTS:
        raise ValueError(f"unknown score prompt {score_prompt!r}; use reranker, {', '.join(SCORE_PROMPTS)}")
    dest = write_demo_benchmark(Path(dest))
    if score_prompt in ("reranker", "zeroshot"):     # the demo benchmark has both
        return dest
    name = f"prompt_{score_prompt}.txt"
    write_text_atomic(dest / name, SCORE_PROMPTS[score_prompt])
    toml = dest / "benchmark.toml"
    lines = [line for line in toml.read_text(encoding="utf-8").splitlines()
             if not line.startswith(f"{score_prompt} = ")]
    write_text_atomic(toml, "\n".join([*lines, f'{score_prompt} = "{name}"']) + "\n")
    return dest


def toml_value(value: Any) -> str:
    """A Python value (str, bool, int, float, list, dict) as a TOML inline value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def roster_text(runs: list[dict[str, Any]], benchmark: Path | None = None) -> str:
    """A roster.toml with one [[run]] per dict (keys as in the roster), optionally naming the benchmark."""
    out = ["# written by kit.demo.backends.roster_text"]
    if benchmark is not None:
        out.append(f"benchmark = {toml_value(str(benchmark))}")
    for run in runs:
        out += ["", "[[run]]"] + [f"{key} = {toml_value(value)}" for key, value in run.items()]
    return "\n".join(out) + "\n"
