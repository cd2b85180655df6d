"""roster.toml: the runs of a sweep (one [[run]] per model, model@variant or lrb's model+variant)."""

from __future__ import annotations

import difflib
import re
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from kit.config.backends import (BACKENDS, backend_from_id, backend_name, backends_for, option_fault, option_wanted,
                                 options_for, tasks_for)
from kit.config.loading import config_error_from, invalid, read_toml
from kit.config.names import run_file_stem
from kit.errors import ConfigError

HEX40 = re.compile(r"^[0-9a-f]{40}\Z")
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?\Z")
_VARIANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# What ends the Hub id in a run name: kit's '@variant' or lrb's '+Variant' ('+DSpark'); a Hub id holds neither.
_VARIANT_START = re.compile(r"[@+]")
_LANG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]+)?\Z")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMBT]?)\s*$", re.IGNORECASE)
_EXPERT_SIZE = re.compile(r"([0-9]+)\s*[xX]\s*([0-9]+(?:\.[0-9]+)?)\s*([KMBT])", re.IGNORECASE)   # "8x7B": experts x size
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
# the smallest bare number `params` takes: below it, "70" is surely 70B written without its unit (a count
# in billions stays under 10,000; the demo's tiny models have 400,000 parameters)
MIN_BARE_PARAMS = 10**4
# 255 bytes a name, less ".<stem>.json.XXXXXXXX.tmp" (the atomic writer's temporary file) and a margin
MAX_STEM_BYTES = 200

Dtype = Literal["auto", "float32", "float16", "bfloat16"]


def parse_param_count(value: int | float | str | None) -> int | None:
    """'2.6B' -> 2_600_000_000; a bare number is a count of parameters (7e10, "70000000000"); None stays None.
    A bare number under MIN_BARE_PARAMS is refused: `params = 70` means 70 parameters, not 70B."""
    if value is None:
        return value
    experts = _EXPERT_SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if experts:   # "8x7B", as the README reads it in a model id: 8 experts of 7B, 56B in all
        value = f"{int(experts.group(1)) * float(experts.group(2)):g}{experts.group(3)}"
    m = _SIZE.match(str(value)) if not isinstance(value, bool) else None
    if not m:
        raise invalid("not a parameter count", fix="write an integer or a size like '2.6B', '350M' or '8x7B'")
    count = int(round(float(m.group(1)) * _SCALE[m.group(2).upper()]))
    if count <= 0:   # "0B" as well as 0: no model has none, and sizing would silently fall back
        raise invalid(f"params = {value!r} is no parameters", fix='write the model\'s size, e.g. params = "2.6B" '
                                                                  '(or leave params out: kit reads the snapshot)')
    if not m.group(2) and count < MIN_BARE_PARAMS:
        raise invalid(f"params = {value!r} is read as {count} parameters",
                      fix=f'write the size with its unit, e.g. params = "{_number(m.group(1))}B" '
                          f"({_number(m.group(1))} billion) or params = {_number(m.group(1))}e9")
    return count


def _language_code(written: str) -> str:
    """A language code as the benchmark's folders spell it: 'FR' -> 'fr', 'pt_BR' -> 'pt-BR'."""
    primary, sep, rest = written.strip().replace("_", "-").partition("-")
    return primary.lower() + sep + rest


def _number(text: str) -> str:
    """'70' -> '70', '2.50' -> '2.5': a bare number as a person writes it."""
    return f"{float(text):g}"


class Run(BaseModel):
    """One roster entry: a model (maybe model@variant) at a pinned revision on one backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="Hub id, optionally with a variant: 'org/name@variant' or lrb's 'org/name+DSpark'")
    # before `revision`, so the revision check can see it
    trust_remote_code: StrictBool = Field(False, description="let the model repository's own Python code run (its "
                                          "*.py files are staged too); refused without a 40-hex revision")
    revision: str | None = Field(None, description="the model's 40-hex commit; required unless --allow-unpinned",
                                 validate_default=True)
    backend: str = Field(description="the image family that runs it: " + ", ".join(BACKENDS) + " (also written "
                         "vLLM, llama.cpp, GLiClass); may be left out when the model id names it (GGUF, gliclass, "
                         "gliner)")
    task: Literal["generate", "score"] = Field("generate", description="default: the backend's own "
                                                                      "(kit.config.backends.ENGINE_TASKS)")
    params: int | None = Field(None, description="parameter count, for GPU sizing: a size with its unit "
                                                 "(\"2.6B\", \"350M\") or a count (7e10)")
    dtype: Dtype = Field("auto", description="precision the weights are loaded and sized at; auto: the model "
                         "config's (float32 on CPU); gguf ignores it (the GGUF's tensor types decide)")
    batch_size: StrictInt = Field(16, ge=1, le=4096, description="inputs handed to the engine per call (lrb); a "
                                  "LightEval task goes to vLLM in one call")
    max_new_tokens: StrictInt = Field(4096, ge=1, le=1_000_000, description="token budget of each generated "
                                      "answer (generate runs); prompt plus budget must fit the model's context")
    seed: StrictInt = Field(0, ge=0, lt=2**32, description="the seed each engine is given (and recorded in the checkpoint); "
                         "numpy's range, which every engine accepts")
    languages: tuple[str, ...] | None = Field(None, description="omit the key for every language")
    options: dict[str, Any] = Field(default_factory=dict, description="the options its backend reads (docs/backends.md; "
                                    "others are refused), each checked against its kind when the roster is read "
                                    "(a count a positive integer, threshold a number from 0 to 1, score_kind one of "
                                    "its words, ...: kit.config.backends.OPTION_KINDS, which the worker checks too), "
                                    "recorded in results")
    prompt: str | None = Field(None, description="prompt file, relative to the benchmark folder; default: lrb's "
                                                 "file for the run's kind (kit.config.kinds.lrb.prompts)")

    @field_validator("model")
    @classmethod
    def _model_id(cls, v: str) -> str:
        base, variant = split_variant(v)
        if not _MODEL_ID.match(base) or ".." in base:
            raise invalid("not a model id", fix="write 'org/name', 'org/name@variant' or 'org/name+Variant' "
                                                "(letters, digits, . _ -)")
        if "--" in base:   # the Hub refuses it: its cache folder models--a--b--c would be two ids' (a--b/c, a/b--c)
            raise invalid("has '--', which no Hugging Face model id holds (its cache folder models--org--name "
                          "could then be another model's)", fix="check the model id")
        if variant is not None and not _VARIANT.match(variant):
            raise invalid(f"bad variant {variant!r}", fix="use letters, digits, . _ + - after '@' or '+'")
        size = len(run_file_stem(v).encode("utf-8"))
        if size > MAX_STEM_BYTES:
            raise invalid(f"makes a checkpoint file name of {size} bytes; with kit's temporary and log files "
                          f"at most {MAX_STEM_BYTES} fit a file system's 255",
                          fix="use a shorter @variant" if variant and len(run_file_stem(base).encode("utf-8")) <= MAX_STEM_BYTES
                          else "check the model id (a Hub repository name is at most 96 characters)")
        return v

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v: str | None) -> str | None:
        if v is None:
            return v
        path = PurePosixPath(v)
        if not v or "\\" in v or path.is_absolute() or ".." in path.parts:
            raise invalid(f"prompt {v!r} is not a file inside the benchmark folder",
                          fix="write a path relative to the benchmark folder, e.g. 'prompt_zeroshot.txt'")
        return v

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        if v not in BACKENDS:
            hint = " (say which: the images pin one version each)" if v.strip().lower() == "transformers" else ""
            raise invalid("unknown backend", fix=f"use one of {', '.join(BACKENDS)}{hint}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _default_task(cls, data: Any) -> Any:
        # a run without `backend` gets the one its model id names beyond doubt; without `task`, its
        # backend's own: a scoring-only backend must not get "generate"
        if isinstance(data, dict) and "backend" not in data and isinstance(data.get("model"), str):
            family = backend_from_id(data["model"])
            if family is None:
                raise invalid(f"run {data['model']!r}: backend is missing",
                              fix="add backend = one of " + ", ".join(BACKENDS) + " (a generative model: vllm or "
                                  "transformers-5.17; a reranker or classifier: transformers-5.17, or -5.11 "
                                  "for remote code written for it)")
            data = {**data, "backend": family}
        if isinstance(data, dict) and isinstance(data.get("backend"), str):
            data = {**data, "backend": backend_name(data["backend"])}
            if "task" not in data and data["backend"] in BACKENDS:
                data["task"] = tasks_for(data["backend"])[0]
        return data

    @field_validator("task")
    @classmethod
    def _task(cls, v: str, info: ValidationInfo) -> str:
        backend = info.data.get("backend")   # absent when the backend was refused
        if backend is None or v in tasks_for(backend):
            return v
        supported = tasks_for(backend)
        others = ", ".join(backends_for(v)) or "none"
        raise invalid(f"run {info.data.get('model', '?')!r}: backend {backend!r} runs task "
                      f"{' or '.join(supported)} only",
                      fix=f'set task = "{supported[0]}" or leave task out (it defaults to the backend\'s own), '
                          f"or use a backend that runs {v}: {others}")

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        backend = info.data.get("backend")   # absent when the backend was refused
        unknown = [key for key in v if backend is not None and key not in options_for(backend)]
        if unknown:
            known = options_for(backend)
            close = difflib.get_close_matches(unknown[0], known, n=1)
            raise invalid(f"options.{unknown[0]} is not an option the {backend} backend reads"
                          + (f" (did you mean {close[0]}?)" if close else ""),
                          fix=f"remove it (kit sizes GPUs and parallelism itself), or use one of: {', '.join(known)}")
        for key, value in v.items():
            kind = option_fault(key, value)
            if kind is not None:
                raise invalid(f"options.{key} = {value!r} is not {kind.what}",
                              fix=f"write {option_wanted(kind)}, or leave it out for the engine's default")
        return v

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return parse_param_count(v)

    @field_validator("languages")
    @classmethod
    def _languages(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is None:
            return v
        if not v:
            raise invalid("languages is empty", fix="list at least one code, or leave languages out for all the benchmark's")
        codes = [_language_code(lang) for lang in v]
        for lang in codes:
            if not _LANG.match(lang):
                raise invalid(f"bad language code {lang!r}", fix="use ISO codes such as 'en', 'fr', 'ceb'")
        return tuple(sorted(set(codes)))

    @field_validator("revision")
    @classmethod
    def _pinning(cls, v: str | None, info: ValidationInfo) -> str | None:
        allow_unpinned = bool((info.context or {}).get("allow_unpinned"))
        if v is not None and not HEX40.match(v):
            if HEX40.match(v.lower()):   # the Hub names commits in lower case only
                raise invalid(f"revision {v!r} is written in upper case; the Hub's commit hashes are lower-case",
                              fix=f"write revision = '{v.lower()}'")
            raise invalid(f"revision {v!r} is not a 40-hex commit", fix="pin the model's full commit hash from its Hub page")
        if v is None and info.data.get("trust_remote_code"):
            raise invalid("trust_remote_code needs a pinned 40-hex revision", fix="add revision = '<commit>' so the remote code is the reviewed one")
        if v is None and not allow_unpinned:
            raise invalid("revision is missing", fix="add revision = '<40-hex commit>' or pass --allow-unpinned")
        return v

    @property
    def name(self) -> str:
        """The run name: the model string as written, variant included."""
        return self.model

    @property
    def model_id(self) -> str:
        """The Hub id without the @variant or +variant."""
        return split_variant(self.model)[0]

    @property
    def file_stem(self) -> str:
        """Checkpoint file name stem: '/' becomes '__'."""
        return self.model.replace("/", "__")


class Roster(BaseModel):
    """The whole roster file."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str | None = Field(None, description="benchmark folder, relative to the roster file")
    run: tuple[Run, ...] = Field(default=(), description="[[run]] entries")

    @model_validator(mode="after")
    def _unique(self) -> "Roster":
        # checkpoint file stem, as a case- and normalisation-insensitive filesystem (macOS, Windows) compares
        # it -> (the stem, the run that writes it)
        seen: dict[str, tuple[str, str]] = {}
        names = set()
        for i, r in enumerate(self.run):
            stem = run_file_stem(r.name)
            if r.name in names:
                raise invalid(f"duplicate run run[{i}] {r.name!r}", fix="give each variant its own @suffix or remove the duplicate")
            key = unicodedata.normalize("NFC", stem).casefold()
            if key in seen:
                other_stem, other = seen[key]
                where = "" if other_stem == stem else " on a filesystem that ignores case (macOS, Windows: a pulled tree)"
                raise invalid(f"runs {other!r} and run[{i}] {r.name!r} would write the same checkpoint file "
                              f"{stem}.json{where}", fix="rename one of them, e.g. with an @variant suffix")
            seen[key] = (stem, r.name)
            names.add(r.name)
        return self

    def select(self, models: tuple[str, ...] | list[str] | None) -> list[Run]:
        """Runs whose name or model id is in `models` (all when empty); unknown names are a ConfigError."""
        if not models:
            return list(self.run)
        out = []
        for m in models:
            hits = [r for r in self.run if r.name == m] or [r for r in self.run if r.model_id == m]
            if not hits:
                names = ", ".join(r.name for r in self.run) or "(empty roster)"
                raise ConfigError(f"model {m!r} is not in the roster", fix=f"add a [[run]] for it or use one of: {names}")
            out.extend(h for h in hits if h not in out)
        return out


def split_variant(run: str) -> tuple[str, str | None]:
    """'org/name@v' or 'org/name+v' -> ('org/name', 'v'); a plain Hub id -> (id, None)."""
    m = _VARIANT_START.search(run)
    return (run, None) if m is None else (run[:m.start()], run[m.end():])


def load_roster(path: Path, *, allow_unpinned: bool = False) -> tuple[Roster, Path]:
    """Load and validate roster.toml; returns the roster and its folder (for relative paths)."""
    path = Path(path)
    data = read_toml(path, "roster")
    text = path.read_text(encoding="utf-8")
    try:
        roster = Roster.model_validate(data, context={"allow_unpinned": allow_unpinned})
    except ValidationError as exc:
        raise config_error_from(exc, path, text, Roster) from None
    if not roster.run:
        raise ConfigError(f"{path}: the roster has no [[run]]", fix="add a [[run]] with model, revision and backend")
    return roster, path.resolve().parent
