"""What the data of every benchmark kind offers (kit.config.kinds lists the kinds): the `Dataset`
protocol that planning, the worker, status and check use, and the types both kinds share.

A kind's unit of work is called a language throughout (an lrb language; a LightEval task): a
pair is (run, language), a checkpoint lives at RESULTS/<language>/<run>.json."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kit.errors import ConfigError

if TYPE_CHECKING:
    from kit.config.roster import Run


@dataclass(frozen=True)
class LanguageData:
    """The checked items of one language file (or task data file), in order, and the file's digest.
    Every item has an `item_id`; what else it holds is the kind's."""

    language: str
    items: tuple[Any, ...]
    file_sha256: str
    path: Path


@dataclass(frozen=True)
class Prompt:
    """What builds a task's model inputs, as read from its file, with the file's digest: an lrb prompt
    template ("generate" or "score"), or a LightEval suite's custom-tasks module."""

    task: str
    text: str
    sha256: str
    path: Path


def whole_set_sha256(file_digests: Mapping[str, str]) -> str:
    """The whole-set digest of {name: file sha256}, by the lrb rule.

    The rule was checked against the lrb manifest: sha256 of the lines
    "<language>:<file sha256>" for the languages in sorted order, joined by "\\n"
    with no final newline. It pins the inventory; each file's own digest pins its bytes.
    """
    inventory = "\n".join(f"{lang}:{file_digests[lang]}" for lang in sorted(file_digests))
    return hashlib.sha256(inventory.encode("utf-8")).hexdigest()


class Dataset(Protocol):
    """A loaded benchmark of any kind; its files are read and checked against their pins on demand."""

    kind: str
    name: str
    root: Path
    manifest_sha256: str

    @property
    def languages(self) -> tuple[str, ...]:
        """Every unit of work the benchmark defines, in its own order."""

    def describe(self) -> str:
        """One line naming the benchmark and its revision or pins."""

    def resolve_languages(self, selected: list[str] | None) -> list[str]:
        """The units to run, in benchmark order (all when `selected` is None); a bad choice is a ConfigError."""

    def pinned_sha256(self, language: str) -> str | None:
        """The pinned sha256 of a unit's data file; None for a unit the benchmark does not define."""

    def item_ids(self, language: str) -> list[str]:
        """The item ids of a unit, in order."""

    def load_language(self, language: str) -> LanguageData:
        """A unit's items, refused (ConfigError) unless the file matches its pin."""

    def prompt(self, task: str) -> Prompt:
        """What builds the inputs of `task`; a task the benchmark cannot run is a ConfigError."""

    def prompt_for(self, run: "Run") -> Prompt:
        """What builds the inputs of a run's pairs; a run the benchmark cannot serve is a ConfigError."""

    def expected_answers(self, language: str) -> Mapping[str, Any] | None:
        """item id -> the answer a checkpoint must record as expected; None when the kind's answers
        are not kit's to know (LightEval builds them in the suite's own prompt functions)."""

    def whole_set_status(self) -> tuple[str, str]:
        """("checked" | "not checked" | "mismatch", detail): whether every file matches its pin."""


def inside_benchmark(root: Path, path: Path, what: str) -> Path:
    """`path`, when it lies in the benchmark folder `root` once links are followed; a ConfigError
    otherwise: a job is given that folder alone (bound read-only into its container, or copied to a
    remote site), so a file outside it, or a link to one, would be missing where the pairs run."""
    try:
        real, base = Path(path).resolve(), Path(root).resolve()
    except (OSError, RuntimeError) as exc:   # a loop of links
        raise ConfigError(f"{path}: the {what} cannot be followed ({exc})", fix="replace the link by the file") from None
    if real != base and base not in real.parents:
        raise ConfigError(f"{path}: the {what} lies outside the benchmark folder {root} (at {real}), and a job is "
                          "given that folder alone", fix="copy the file into the benchmark folder (not a link to it) "
                                                        "and name it relative to that folder")
    return Path(path)


def job_inputs_outside(benchmark: "Dataset", languages: list[str], runs: list["Run"]) -> None:
    """A ConfigError for the first file jobs of these languages and runs would read that lies outside the
    benchmark folder (inside_benchmark): its manifest, the languages' files, the runs' prompts. Asked by
    `kit run` only: this machine's commands read such a file where it is."""
    root = benchmark.root
    manifest = getattr(benchmark, "manifest_path", None)
    if manifest is not None:
        inside_benchmark(root, manifest, "manifest")
    language_path = getattr(benchmark, "language_path", None)
    for language in languages if language_path is not None else ():
        inside_benchmark(root, language_path(language), f"file of language {language!r}")
    for run in runs:
        prompt = benchmark.prompt_for(run)
        if getattr(prompt, "path", None) is not None:
            inside_benchmark(root, prompt.path, f"prompt file of run {run.name!r}")
