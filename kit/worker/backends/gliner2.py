"""GLiNER2 engine: yes/no text classification with GLiNER2's classify_text, one item at a time.

Images: gliner2 (transformers<5, which gliner2 2.1.0 runs on).

Each input is classified into one of two labels (options.labels, the yes label first) as a
single-label GLiNER2 task, whose label probabilities are a softmax over the two labels. When the
input holds a HYPOTHESIS line (the zero-shot prompt), only the target sentence before it is
classified. Each input is first turned into GLiNER2's own model input and measured; one longer
than the encoder's limit refuses the batch (GLiNER2 itself would not truncate it).

Score: yes = P(yes label) from GLiNER2's softmax, no = 1 - yes, native = the same probability.

Settings:
- `task` (default score): score only
- `dtype` (default auto): float32 on CPU; the config's dtype on a GPU (float16/bfloat16 as the transformers engine resolves it)
- `batch_size` (default 16): inputs per worker batch; GLiNER2 still classifies one at a time
- `trust_remote_code` (default false): not used; GLiNER2 loads no remote code
- `options.labels` (default ["relevant", "not relevant"]): the yes label and the no label
- `options.task_name` (default "relevance"): the GLiNER2 classification task name
- `options.hypothesis_marker` (default "HYPOTHESIS:"): text from here on is not classified
- `options.premise_marker` (default "TARGET SENTENCE:"): the classified text starts after it
- `options.threshold` (default 0.5): yes when the normalised yes-score reaches it (read by the worker)

Roster example:
    [[run]]
    model = "fastino/gliner2-multi-v1"
    revision = "<40-hex>"
    backend = "gliner2"
    task = "score"
    options = { labels = ["land use", "not land use"] }
"""

from __future__ import annotations

import platform
from typing import Any

from kit.errors import ConfigError, MissingExtraError
from kit.worker.backends.base import Backend, Score, package_version, register_backend
from kit.worker.backends.hf import check_lengths, context_limit, resolve_dtype, text_config

_PACKAGES = ("gliner2", "torch", "transformers", "tokenizers", "huggingface_hub")


def premise_of(text: str, hypothesis_marker: str, premise_marker: str) -> str:
    """The text to classify: what precedes the hypothesis marker, after the premise marker."""
    if hypothesis_marker and hypothesis_marker in text:
        text = text.split(hypothesis_marker, 1)[0]
    if premise_marker and premise_marker in text:
        text = text.split(premise_marker, 1)[1]
    return text.strip()


@register_backend("gliner2")
class Gliner2Backend(Backend):
    """A GLiNER2 model classifying texts into yes/no labels."""

    model: Any = None
    device: str | None = None

    def load(self) -> None:
        """Load the GLiNER2 model from the snapshot, offline."""
        try:
            import torch
            from gliner2 import GLiNER2
        except ImportError as exc:
            raise MissingExtraError("the gliner2 backend", exc.name or "gliner2", "gliner2") from None
        if self.run.task != "score":
            raise self._unsupported(self.run.task)
        torch.manual_seed(self.run.seed)
        cuda = torch.cuda.is_available()
        self.device = "cuda" if cuda else "cpu"
        model = GLiNER2.from_pretrained(str(self.snapshot), map_location=self.device)
        config = text_config(model.encoder.config)
        dtype = resolve_dtype(self.run.dtype, str(getattr(config, "dtype", None) or "float32").removeprefix("torch."),
                              cuda=cuda, bf16=cuda and torch.cuda.is_bf16_supported())
        self.model = model.to(device=self.device, dtype=getattr(torch, dtype)).eval()
        labels = self.labels()
        if len(labels) != 2 or len(set(labels)) != 2:
            raise ConfigError(f"options.labels = {labels!r} must be two different labels",
                              fix='set options.labels = ["<yes label>", "<no label>"]')

    def labels(self) -> list[str]:
        """The [yes, no] labels of the run."""
        return list(self.option("labels", ["relevant", "not relevant"], list))

    def score(self, texts: list[str]) -> list[Score]:
        """Scores in input order; refuses the call if any input exceeds the encoder's limit."""
        import torch

        marker, premise = self.option("hypothesis_marker", "HYPOTHESIS:", str), \
            self.option("premise_marker", "TARGET SENTENCE:", str)
        items = [premise_of(t, marker, premise) for t in texts]
        yes, no = self.labels()
        name = self.option("task_name", "relevance", str)
        tasks = {name: [yes, no]}
        schema = self.model._classification_schema(tasks)  # noqa: SLF001 - the schema classify_text builds
        lengths = [len(self.model.processor.transform_record(t, schema).input_ids) for t in items]
        check_lengths(lengths, texts, context_limit(self.model.encoder.config, self.model.processor.tokenizer,
                                                    generation=False), 0)
        out = []
        for text in items:
            with torch.inference_mode():
                result = self.model.classify_text(text, tasks, include_confidence=True)[name]
            p = float(result["confidence"])
            p_yes = p if result["label"] == yes else 1.0 - p
            out.append(Score(yes=p_yes, no=1.0 - p_yes, native=p_yes))
        return out

    def versions(self) -> dict[str, str | None]:
        """Versions of python, gliner2 and the libraries it runs on."""
        return {"python": platform.python_version(), **{name: package_version(name) for name in _PACKAGES}}

    def close(self) -> None:
        """Drop the model."""
        self.model = None
