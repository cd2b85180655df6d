"""The model LightEval evaluates: a LightevalModel backed by kit's vLLM engine.

LightEval 0.13's own VLLMModel requires vllm<0.10.2 (checked against the installed version at
run time) and calls `LLM.generate(prompt_token_ids=...)`, which later vLLM releases removed; the
vllm image pins vLLM 0.33 (torch 2.14, CUDA 13). LightEval's documented way to plug any engine is
a custom LightevalModel, which this is: LightEval still builds every prompt (its PromptManager,
the tokenizer's chat template), decides stop sequences and sample counts, and scores the
answers; this class only turns prompts into generations, through the same engine start as
kit's `vllm` backend. Unlike LightEval's VLLMModel it never truncates a prompt: a prompt whose
tokens plus the generation budget exceed the context is refused, as everywhere in kit.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lighteval.models.abstract_model import LightevalModel, ModelConfig
from lighteval.models.model_input import GenerationParameters
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.prompt_manager import PromptManager
from lighteval.tasks.requests import Doc
from lighteval.utils.cache_management import SampleCache

from kit.config.kinds.lighteval.suite import SamplingSettings
from kit.config.roster import Run
from kit.errors import ConfigError
from kit.worker.backends.base import package_version
from kit.worker.backends.hf import check_lengths, uses_chat_template
from kit.worker.backends.vllm import VllmBackend


class KitVllmModel(LightevalModel):
    """LightEval's view of one loaded model: generation through vLLM, settings from the roster run
    (seed, max_new_tokens, dtype, engine options) and the suite ([generation] sampling)."""

    def __init__(self, run: Run, snapshot: Path, generation: SamplingSettings, work_dir: Path) -> None:
        self.engine = VllmBackend(run, snapshot)
        self.engine.load()
        self.run = run
        self.sampling = generation
        self.config = ModelConfig(
            model_name=run.model_id,
            generation_parameters=GenerationParameters(
                temperature=generation.temperature, top_p=generation.top_p, max_new_tokens=run.max_new_tokens,
                seed=run.seed),
            # LightEval's sample cache would hand a rerun the stored answers: it lives in the
            # pair's scratch folder, and generation is never wrapped in its @cached.
            cache_dir=str(work_dir / "lighteval-cache"),
        )
        self.use_chat_template = uses_chat_template(self.engine.tokenizer)
        self.prompt_manager = PromptManager(self.use_chat_template, self.tokenizer, None)
        self._cache = SampleCache(self.config)
        self.generated_tokens = 0
        self.finish_reasons: dict[str, list[str]] = {}  # doc id -> vLLM finish_reason per sample

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer (the snapshot's)."""
        return self.engine.tokenizer

    @property
    def add_special_tokens(self) -> bool:
        """A chat template already holds the special tokens; plain prompts get the tokenizer's."""
        return not self.use_chat_template

    @property
    def max_length(self) -> int:
        """The context length vLLM runs with."""
        return int(self.engine.max_model_len)

    def greedy_until(self, docs: list[Doc]) -> list[ModelResponse]:
        """Generate for every doc: LightEval's prompt, its stop sequences (plain prompts only) and
        sample count; the suite's temperature and top_p; the run's seed and max_new_tokens."""
        from vllm import SamplingParams

        if not docs:
            return []
        contexts = [self.prompt_manager.prepare_prompt(doc) for doc in docs]
        ids = self.tokenizer(contexts, add_special_tokens=self.add_special_tokens)["input_ids"]
        budget = self.run.max_new_tokens
        check_lengths([len(i) for i in ids], contexts, self.max_length, budget)
        groups: dict[tuple, list[int]] = {}
        for n, doc in enumerate(docs):
            stops = () if self.use_chat_template else tuple(doc.stop_sequences or ())
            groups.setdefault((stops, int(doc.num_samples or 1)), []).append(n)
        responses: list[ModelResponse | None] = [None] * len(docs)
        for (stops, samples), members in groups.items():
            if samples > 1 and self.sampling.temperature == 0:
                raise ConfigError(f"task {docs[members[0]].task_name} asks {samples} samples per item at temperature 0",
                                  fix="set [generation] temperature > 0 in the suite's benchmark.toml (Open-R1: 0.6)")
            params = SamplingParams(n=samples, temperature=self.sampling.temperature, top_p=self.sampling.top_p,
                                    max_tokens=budget, stop=list(stops) or None, seed=self.run.seed)
            t0 = time.perf_counter()
            outs = self.engine.llm.generate([{"prompt_token_ids": list(ids[n])} for n in members], params,
                                            use_tqdm=False)
            seconds = time.perf_counter() - t0
            made = 0
            for n, out in zip(members, outs, strict=True):
                tokens = [list(o.token_ids) for o in out.outputs]
                made += sum(len(t) for t in tokens)
                responses[n] = ModelResponse(
                    input=contexts[n], input_tokens=list(ids[n]), text=[o.text for o in out.outputs],
                    output_tokens=tokens, truncated_tokens_count=0, padded_tokens_count=0)
                self.finish_reasons[str(docs[n].id)] = [str(o.finish_reason) for o in out.outputs]
            self.generated_tokens += made
            self.engine.record_generation(made, seconds)
        return responses  # type: ignore[return-value]

    def loglikelihood(self, docs: list[Doc]) -> list[ModelResponse]:
        """Not offered: Open-R1's suites are generative; a log-likelihood task is refused."""
        raise ConfigError(f"task {docs[0].task_name if docs else '?'} needs log-likelihoods, which kit's LightEval model does not compute",
                          fix="use generative LightEval tasks (Open-R1's math_500, aime24, gpqa:diamond, lcb are)")

    def loglikelihood_rolling(self, docs: list[Doc]) -> list[ModelResponse]:
        """Not offered (see loglikelihood)."""
        return self.loglikelihood(docs)

    def versions(self) -> dict[str, str | None]:
        """The engine's package versions plus LightEval's."""
        return {**self.engine.versions(), "lighteval": package_version("lighteval")}

    def cleanup(self) -> None:
        """Stop the engine (LightEval's name for it)."""
        self.engine.close()

    def close(self) -> None:
        """Stop the engine (the shard loop's name for it)."""
        self.cleanup()
