"""Which prompt an lrb run is asked with, by lrb's rule: each kind of model has its own prompt file
in the benchmark folder, and a run may name another (roster key `prompt`).

| prompt kind | lrb file | runs |
| --- | --- | --- |
| generate | prompt.txt (or prompt_generate.txt) | generate; score_kind causal (lrb's log-probability read) |
| score | prompt_reranker.txt | score: rerankers and sequence classifiers (the default) |
| zeroshot | prompt_zeroshot.txt | score on gliner2 and gliclass (zero-shot classifiers), score_kind nli |
| masked_lm | prompt_masked_lm.txt | score with score_kind masked_lm |

A prompt file holds exactly one `{}` where the target sentence goes. A `benchmark.toml` names the
files under `[prompts]` (PromptFiles) and only those are used; without one they are found by the
lrb names above. A run whose prompt is missing is an error: no built-in prompt stands in.
PromptChoice answers which template a task or a run gets; kit.config.kinds.lrb.benchmark holds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kit.config.backends import ZERO_SHOT_BACKENDS
from kit.config.dataset import Prompt
from kit.errors import ConfigError

if TYPE_CHECKING:
    from kit.config.roster import Run

PLACEHOLDER = "{}"
TASKS = ("generate", "score")

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


# lrb's scoring files name no backend: their decision rule says how the model was asked, when its words
# tell (lrb's rerankers and sequence classifiers decide by their relevance logit)
_LRB_RULE_WORDS = (("log-probabilit", GENERATE), ("zero-shot", ZEROSHOT), ("entailment", ZEROSHOT), ("mask", MASKED_LM),
                   ("relevance", RERANKER))


def lrb_prompt_kind(decision_rule: Any) -> str | None:
    """The prompt kind of an lrb scoring file by its metadata.decision_rule: lrb reads its causal
    log-probability scorer with the generative prompt, zero-shot and NLI classifiers with
    prompt_zeroshot.txt, masked LMs with prompt_masked_lm.txt, and rerankers and sequence classifiers
    that decide by a relevance logit with prompt_reranker.txt. None when the rule does not tell: lrb's
    "argmax over the native yes/no scores" is a reranker's rule and may be a masked LM's."""
    rule = decision_rule.lower() if isinstance(decision_rule, str) else ""
    return next((kind for word, kind in _LRB_RULE_WORDS if word in rule), None)


def prompt_kind(task: str, backend: str | None, options: Mapping[str, Any] | None) -> str:
    """The prompt kind lrb gives a run of `task` on `backend` with these options (table above)."""
    if task == GENERATE:
        return GENERATE
    if backend in ZERO_SHOT_BACKENDS:
        return ZEROSHOT
    score_kind = (options or {}).get("score_kind")
    return _BY_SCORE_KIND.get(score_kind, RERANKER) if isinstance(score_kind, str) else RERANKER


def _task_of(kind: str) -> str:
    return "generate" if kind == GENERATE else "score"


# --- prompt files -------------------------------------------------------------------


def read_prompt(path: Path, task: str, named_by: str) -> Prompt:
    """Read a prompt template that must hold exactly one `{}`; `named_by` says where the path came from."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: prompt file for task {task!r} not found ({named_by})", fix="create it or correct the path")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: prompt file is not UTF-8 text", fix="save the file as UTF-8") from None
    if text.startswith("\ufeff"):   # kept, it would be the first character of every prompt the model reads
        raise ConfigError(f"{path}: prompt file begins with a byte order mark (U+FEFF)",
                          fix="save the file as UTF-8 without a BOM (an editor's \"UTF-8\", not \"UTF-8 with BOM\")")
    if "{" + PLACEHOLDER + "}" in text:   # Python's str.format reads it as a literal "{}"; kit fills the inner one
        raise ConfigError(f"{path}: prompt for task {task!r} holds '{{{{}}}}', which would put the sentence "
                          "inside braces", fix="write the placeholder as a single {} (kit does not use "
                          "str.format: other braces stay as written)")
    count = text.count(PLACEHOLDER)
    if count != 1:
        raise ConfigError(
            f"{path}: prompt for task {task!r} has {count} '{{}}' placeholders, needs exactly one",
            fix="keep a single {} where the target sentence goes and write no other empty brace pair",
        )
    return Prompt(task=task, text=text, sha256=hashlib.sha256(data).hexdigest(), path=path)


def format_prompt(prompt: Prompt, sentence: str) -> str:
    """`prompt` with its `{}` replaced by `sentence`; other braces stay as written."""
    before, after = prompt.text.split(PLACEHOLDER)
    return before + sentence + after


class PromptFiles(BaseModel):
    """[prompts] of benchmark.toml: one template file per prompt kind (kit.config.kinds.lrb.prompts), relative to
    benchmark.toml: generate, score (the reranker prompt), zeroshot, masked_lm."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generate: str | None = Field(None, description="generative prompt (lrb's prompt.txt): generate runs and "
                                 "score_kind causal")
    score: str | None = Field(None, description="reranker prompt (lrb's prompt_reranker.txt): score runs of "
                              "rerankers and sequence classifiers")
    zeroshot: str | None = Field(None, description="zero-shot classifier prompt (lrb's prompt_zeroshot.txt): "
                                 "gliner2, gliclass and score_kind nli")
    masked_lm: str | None = Field(None, description="masked-LM prompt (lrb's prompt_masked_lm.txt): score_kind "
                                  "masked_lm")


def named_prompts(root: Path, files: PromptFiles, config: Path) -> dict[str, Prompt]:
    """prompt kind -> its template, for the files benchmark.toml `config` names under [prompts]
    (relative to `root`, the benchmark folder); a named file that is missing or malformed is a ConfigError."""
    prompts = {}
    for kind in PROMPT_KINDS:
        name = getattr(files, kind)
        if name is not None:
            prompts[kind] = read_prompt(root / name, _task_of(kind), named_by=f"{config}: prompts.{kind}")
    return prompts


def unread_prompt_files(root: Path) -> list[str]:
    """A line for each prompt file in folder `root` that found_prompts passes over because an earlier name of
    its kind is there too (prompt_generate.txt beside prompt.txt), naming the one read."""
    out = []
    for kind in PROMPT_KINDS:
        there = [name for name in PROMPT_FILES[kind] if (root / name).is_file()]
        out += [f"{name} is there too and not read: {there[0]} is the {DESCRIPTIONS[kind]} prompt (the first of "
                f"{', '.join(PROMPT_FILES[kind])})" for name in there[1:]]
    return out


def found_prompts(root: Path) -> dict[str, Prompt]:
    """prompt kind -> its template, for the lrb file names (PROMPT_FILES) present in folder `root`;
    a kind with none is left out, a malformed file is a ConfigError."""
    prompts = {}
    for kind in PROMPT_KINDS:
        found = next((root / name for name in PROMPT_FILES[kind] if (root / name).is_file()), None)
        if found is not None:
            prompts[kind] = read_prompt(found, _task_of(kind), named_by="found by name")
    return prompts


# --- the choice ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PromptChoice:
    """The prompt templates of one lrb benchmark by prompt kind, and which of them a task or a run
    is asked with. `benchmark` (its name), `root` and `config_path` (its benchmark.toml, if any) are
    for the messages and for the prompt files runs name."""

    benchmark: str
    root: Path
    templates: Mapping[str, Prompt]
    config_path: Path | None = None
    # for_run's answers by run (id -> (run, prompt)): a sweep asks once per pair, thousands of times
    _by_run: dict[int, tuple[Any, Prompt]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def for_task(self, task: str) -> Prompt:
        """The prompt template of `task` (generate, or the reranker prompt for score); a task without
        one is a ConfigError naming the file or benchmark.toml key to add."""
        if task not in TASKS:
            raise ConfigError(f"unknown task {task!r}", fix=f"use one of {', '.join(TASKS)}")
        return self._of_kind(task, f"task {task!r}")

    def for_run(self, run: "Run") -> Prompt:
        """The prompt template a run's pairs are built from: the file the run names, else the benchmark's
        prompt for the run's kind (lrb's defaults, the table above); a missing one is a ConfigError."""
        known = self._by_run.get(id(run))
        if known is not None and known[0] is run:
            return known[1]
        prompt = self._choose(run)
        self._by_run[id(run)] = (run, prompt)
        return prompt

    def _choose(self, run: "Run") -> Prompt:
        if run.prompt is not None:
            return read_prompt(self.root / run.prompt, run.task, named_by=f"run {run.name!r}: prompt")
        kind = prompt_kind(run.task, run.backend, run.options)
        prompt = self._of_kind(kind, f"run {run.name!r} ({DESCRIPTIONS[kind]})",
                               also=f", or name one with prompt = \"<file>\" in run {run.name!r}")
        return Prompt(task=run.task, text=prompt.text, sha256=prompt.sha256, path=prompt.path)

    def _of_kind(self, kind: str, what: str, also: str = "") -> Prompt:
        if kind in self.templates:
            return self.templates[kind]
        if self.config_path is not None:
            fix = f'set [prompts] {kind} = "<file>" in {self.config_path}'
        else:
            fix = f"add {PROMPT_FILES[kind][0]} (lrb's {DESCRIPTIONS[kind]} prompt) to {self.root}"
        raise ConfigError(f"{self.root}: benchmark {self.benchmark!r} has no prompt for {what}", fix=fix + also)
