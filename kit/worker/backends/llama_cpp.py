"""llama.cpp engine (llama-cpp-python): greedy generation from one GGUF file of the snapshot.

Images: gguf (llama.cpp built with CUDA; on CPU it runs the same code with n_gpu_layers ignored).

Each prompt becomes one user turn rendered with the chat template stored in the GGUF
(tokenizer.chat_template), tokenized with special tokens parsed and no extra BOS; a GGUF without
a template gets the raw prompt with the model's own BOS rule. Sampling is pinned to greedy:
temperature 0, top_k 1, top_p 1, min_p 0, repeat_penalty 1. Prompts run one at a time. A prompt
whose tokens plus max_new_tokens exceed n_ctx refuses the whole batch before anything runs.

Settings:
- `task` (default generate): generate only
- `max_new_tokens` (default 4096): the budget; prompt tokens + budget must fit n_ctx
- `seed` (default 0): passed to Llama(seed=...)
- `dtype` (default auto): not used; the GGUF's tensor types decide (see options.quantization)
- `options.gguf_file` (default the only *.gguf): the weights file, relative to the snapshot
- `options.quantization` (default none): the expected GGUF file type (F32, F16, BF16, Q8_0, Q4_K_M, ...); a GGUF of another type is refused
- `options.n_ctx` (default 0): context size in tokens; 0 takes the model's trained context
- `options.n_gpu_layers` (default -1): layers offloaded to the GPU; -1 offloads all
- `options.n_batch` (default 512): prompt-processing batch size
- `options.n_threads` (default none): CPU threads; none lets llama.cpp choose

Roster example:
    [[run]]
    model = "LiquidAI/LFM2.5-1.2B-Instruct-GGUF"
    revision = "<40-hex>"
    backend = "gguf"
    max_new_tokens = 4096
    options = { gguf_file = "LFM2.5-1.2B-Instruct-Q4_K_M.gguf", quantization = "Q4_K_M", n_ctx = 8192 }
"""

from __future__ import annotations

import platform
from pathlib import Path, PurePosixPath
from typing import Any

from kit.errors import ConfigError, MissingExtraError
from kit.worker.backends.base import Backend, Generation, package_version, register_backend
from kit.worker.backends.hf import check_lengths

# llama.h's llama_ftype values (general.file_type in a GGUF header).
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
    18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
    25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
}
_PACKAGES = ("llama_cpp_python", "numpy", "jinja2")


def gguf_path(snapshot: Path, gguf_file: str | None) -> Path:
    """The GGUF file a run names inside its snapshot (the only one when unnamed); else a ConfigError."""
    found = sorted(p.relative_to(snapshot).as_posix() for p in Path(snapshot).rglob("*.gguf"))
    if gguf_file is None:
        if len(found) == 1:
            return Path(snapshot) / found[0]
        raise ConfigError(f"snapshot {snapshot} holds {len(found)} .gguf files: {', '.join(found) or 'none'}",
                          fix="name the weights file with options.gguf_file")
    rel = PurePosixPath(gguf_file)
    if rel.is_absolute() or ".." in rel.parts or rel.as_posix() not in found:
        raise ConfigError(f"options.gguf_file {gguf_file!r} is not a .gguf file of snapshot {snapshot}",
                          fix=f"use a path relative to the snapshot, one of: {', '.join(found) or 'none'}")
    return Path(snapshot) / rel


def file_type_name(metadata: dict[str, str]) -> str | None:
    """The GGUF's quantization name (F32, Q4_K_M, ...) from its general.file_type, or None if unknown."""
    raw = metadata.get("general.file_type")
    try:
        return FILE_TYPES.get(int(raw)) if raw is not None else None
    except ValueError:
        return None


@register_backend("llama_cpp")
class LlamaCppBackend(Backend):
    """A GGUF model run with llama-cpp-python."""

    llm: Any = None
    template: Any = None
    path: Path | None = None
    quantization: str | None = None

    def load(self) -> None:
        """Open the GGUF offline, check its quantization, and prepare its chat template."""
        try:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise MissingExtraError("the gguf backend", "llama_cpp", "gguf") from None
        if self.run.task != "generate":
            raise self._unsupported(self.run.task)
        self.path = gguf_path(self.snapshot, self.option("gguf_file", None, str))
        threads = self.option("n_threads", None, int)
        self.llm = llama_cpp.Llama(
            model_path=str(self.path), n_ctx=self.option("n_ctx", 0, int), seed=self.run.seed,
            n_gpu_layers=self.option("n_gpu_layers", -1, int), n_batch=self.option("n_batch", 512, int),
            verbose=False, **({"n_threads": threads} if threads else {}),
        )
        self.quantization = file_type_name(self.llm.metadata)
        wanted = self.option("quantization", None, str)
        if wanted is not None and wanted.upper() != (self.quantization or "").upper():
            raise ConfigError(f"{self.path.name} is {self.quantization or 'of an unknown type'}, not {wanted}",
                              fix="set options.quantization to the file's type or name the right options.gguf_file")
        template = self.llm.metadata.get("tokenizer.chat_template")
        if template:
            self.template = Jinja2ChatFormatter(template=template, eos_token=self._text(self.llm.token_eos()),
                                                bos_token=self._text(self.llm.token_bos()),
                                                add_generation_prompt=True)

    def encode(self, prompt: str) -> list[int]:
        """The prompt's token ids as generation sees them (chat-rendered when the GGUF has a template)."""
        if self.template is None:
            return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        rendered = self.template(messages=[{"role": "user", "content": prompt}]).prompt
        return self.llm.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)

    def generate(self, prompts: list[str]) -> list[Generation]:
        """Greedy answers in input order; refuses the call if any prompt plus budget exceeds n_ctx."""
        import llama_cpp

        encoded = [self.encode(p) for p in prompts]
        budget = self.run.max_new_tokens
        check_lengths([len(ids) for ids in encoded], prompts, self.n_ctx(), budget)
        vocab = self.llm._model.vocab  # noqa: SLF001 - the end-of-generation test needs the vocab handle
        out = []
        for ids in encoded:
            new: list[int] = []
            stopped = False
            for token in self.llm.generate(ids, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0,
                                           reset=True):
                new.append(int(token))
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    stopped = True
                    break
                if len(new) >= budget:
                    break
            text = self.llm.detokenize(new[:-1] if stopped else new).decode("utf-8", errors="replace")
            out.append(Generation(text, not stopped and len(new) >= budget, len(new), tuple(new)))
        return out

    def n_ctx(self) -> int:
        """The usable context in tokens: llama.cpp may round the context up; llama-cpp-python's buffers do not."""
        return min(self.llm.n_ctx(), self.llm.context_params.n_ctx)

    def versions(self) -> dict[str, str | None]:
        """Versions of python and of llama-cpp-python and its Python dependencies."""
        return {"python": platform.python_version(), **{name: package_version(name) for name in _PACKAGES}}

    def model_info(self) -> dict[str, Any]:
        """Facts of the loaded GGUF: file, quantization, context sizes, chat template presence."""
        return {"gguf_file": self.path.relative_to(self.snapshot).as_posix(), "quantization": self.quantization,
                "n_ctx": self.n_ctx(), "n_ctx_train": _trained_context(self.llm.metadata),
                "chat_template": self.template is not None}

    def close(self) -> None:
        """Free the llama.cpp model and context."""
        if self.llm is not None:
            self.llm.close()
        self.llm = self.template = None

    def _text(self, token: int) -> str:
        return "" if token < 0 else self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")


def _trained_context(metadata: dict[str, str]) -> int | None:
    raw = metadata.get(f"{metadata.get('general.architecture', '')}.context_length")
    return int(raw) if raw and raw.isdigit() else None
