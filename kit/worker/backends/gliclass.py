"""GLiClass engine: zero-shot relevance with GLiClass's pipeline, one label, multi-label mode.

Images: gliclass (transformers>=5, which gliclass 0.1.21 requires).

Each input is split into the target sentence and the hypothesis (the zero-shot prompt's
HYPOTHESIS line); the hypothesis, or options.label, is the one label, scored in multi-label mode
(an independent sigmoid). Every batch is first rendered exactly as the pipeline will render it
and measured with the model's tokenizer; one input over options.max_length (or the encoder's
limit) refuses the batch, so the pipeline's own truncation never fires.

Score: yes = the label's sigmoid score, no = 1 - yes, native = the same score.

Settings:
- `task` (default score): score only
- `dtype` (default auto): as the transformers engine resolves it (float32 on CPU)
- `batch_size` (default 16): the pipeline's batch size
- `trust_remote_code` (default false): for the tokenizer only (one with code of its own needs it); the GLiClass model loads no remote code
- `options.label` (default the hypothesis): the one label; unset, each input must hold a HYPOTHESIS line
- `options.max_length` (default 512): the token cap of one rendered input (refused above, never truncated)
- `options.hypothesis_marker` (default "HYPOTHESIS:"): where the hypothesis starts in an input
- `options.premise_marker` (default "TARGET SENTENCE:"): the target sentence starts after it
- `options.threshold` (default 0.5): yes when the normalised yes-score reaches it (read by the worker)

Roster example:
    [[run]]
    model = "knowledgator/gliclass-multilang-ultra"
    revision = "<40-hex>"
    backend = "gliclass"
    task = "score"
    dtype = "bfloat16"
    batch_size = 16
    options = { max_length = 512 }
"""

from __future__ import annotations

import platform
from typing import Any

from kit.errors import MissingExtraError
from kit.worker.backends.base import Backend, Score, package_version, register_backend
from kit.worker.backends.hf import check_lengths, config_dtype, context_limit, resolve_dtype, text_config
from kit.worker.backends.scoring import split_premise_hypothesis

_PACKAGES = ("gliclass", "torch", "transformers", "tokenizers", "huggingface_hub")


@register_backend("gliclass")
class GliclassBackend(Backend):
    """A GLiClass model scoring one label per text."""

    pipeline: Any = None
    model: Any = None
    tokenizer: Any = None
    device: str | None = None

    def load(self) -> None:
        """Load model and tokenizer from the snapshot, offline, and build the zero-shot pipeline."""
        try:
            import torch
            import transformers
            from gliclass import GLiClassModel, ZeroShotClassificationPipeline
        except ImportError as exc:
            raise MissingExtraError("the gliclass backend", exc.name or "gliclass", "gliclass") from None
        if self.run.task != "score":
            raise self._unsupported(self.run.task)
        torch.manual_seed(self.run.seed)
        cuda = torch.cuda.is_available()
        self.device = "cuda" if cuda else "cpu"
        local = {"local_files_only": True, "trust_remote_code": self.remote_code()}
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.snapshot, **local)
        model = GLiClassModel.from_pretrained(self.snapshot, local_files_only=True)
        dtype = resolve_dtype(self.run.dtype, config_dtype(model.config), cuda=cuda,
                              bf16=cuda and torch.cuda.is_bf16_supported())
        self.model = model.to(device=self.device, dtype=getattr(torch, dtype)).eval()
        self.pipeline = ZeroShotClassificationPipeline(
            self.model, self.tokenizer, classification_type="multi-label", device=self.device,
            max_length=self.option("max_length", 512, int), progress_bar=False,
        )

    def split(self, texts: list[str]) -> list[tuple[str, str]]:
        """(target sentence, label) of each input."""
        return [split_premise_hypothesis(t, self.option("hypothesis_marker", "HYPOTHESIS:", str),
                                         self.option("premise_marker", "TARGET SENTENCE:", str),
                                         self.option("label", None, str)) for t in texts]

    def score(self, texts: list[str]) -> list[Score]:
        """Scores in input order; refuses the call if any rendered input exceeds the token cap."""
        import torch

        pairs = self.split(texts)
        inner = self.pipeline.pipe
        rendered = [inner.prepare_input(t, [label]) if hasattr(inner, "prepare_input") else t for t, label in pairs]
        lengths = [len(ids) for ids in self.tokenizer(rendered)["input_ids"]]
        cap = self.option("max_length", 512, int)
        limit = context_limit(text_config(self.model.config.encoder_config), self.tokenizer, generation=False)
        check_lengths(lengths, texts, min(cap, limit) if limit else cap, 0)
        out: list[Score] = []
        for start in range(0, len(pairs), self.run.batch_size):
            chunk = pairs[start:start + self.run.batch_size]
            labels = [[label] for _t, label in chunk]
            with torch.inference_mode():
                results = self.pipeline([t for t, _l in chunk], labels, threshold=0.0, batch_size=len(chunk))
            for result in results:
                # One label at threshold 0: the pipeline returns exactly that label's score.
                p = float(result[0]["score"])
                out.append(Score(yes=p, no=1.0 - p, native=p))
        return out

    def versions(self) -> dict[str, str | None]:
        """Versions of python, gliclass and the libraries it runs on."""
        return {"python": platform.python_version(), **{name: package_version(name) for name in _PACKAGES}}

    def close(self) -> None:
        """Drop pipeline, model and tokenizer."""
        self.pipeline = self.model = self.tokenizer = None
