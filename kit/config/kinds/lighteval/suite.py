"""A LightEval suite: the second benchmark kind (Open-R1's evaluation), described by a
`benchmark.toml` with `kind = "lighteval"`.

The suite names LightEval task strings, the custom-tasks module that defines them (LightEval's
own format: a Python file with `TASKS_TABLE`) and, per task, the local JSONL file of its
evaluation split. Everything it reads is pinned by sha256 in benchmark.toml, so a changed
file is refused before a job starts. The unit of work is (run, task): a task name plays the
part an lrb language plays, so planning, sharding, status and checkpoints keep their shape.

    kind = "lighteval"
    name = "kit-arith"
    custom_tasks = "tasks.py"
    custom_tasks_sha256 = "<64 hex>"

    [generation]             # Open-R1 samples: temperature 0.6, top_p 0.95
    temperature = 0.0
    top_p = 1.0

    [[task]]
    name = "kit_arith"                    # checkpoint folder: results/kit_arith/<run>.json
    lighteval = "custom|kit_arith|0"      # the task string LightEval runs
    data = "data/kit_arith/test.jsonl"    # the evaluation split, one JSON object per line
    sha256 = "<64 hex>"
    id_field = "id"                       # the item id of each line
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kit import safejson
from kit.config.dataset import LanguageData, Prompt, whole_set_sha256
from kit.config.loading import invalid, load_model
from kit.errors import ConfigError

if TYPE_CHECKING:
    from kit.config.roster import Run

KIND = "lighteval"
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


class SamplingSettings(BaseModel):
    """[generation]: LightEval's sampling settings for every task of the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0, description="0 is greedy; Open-R1 uses 0.6")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling; Open-R1 uses 0.95")


class SuiteTask(BaseModel):
    """One [[task]]: a LightEval task string and its local evaluation data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="kit's name of the task: the checkpoint folder")
    lighteval: str = Field(min_length=1, description="LightEval task string, e.g. custom|kit_arith|0")
    data: str = Field(min_length=1, description="JSONL of the evaluation split, relative to benchmark.toml")
    sha256: str = Field(description="sha256 of the data file (64 lowercase hex); a changed file is refused")
    id_field: str = Field("id", min_length=1, description="the key of each JSONL line that holds its item id (a "
                          "string or integer, unique)")

    @field_validator("name")
    @classmethod
    def _plain(cls, v: str) -> str:
        if not _TASK_NAME.match(v) or v in ("systems", "report", "logs"):
            raise invalid("must be a plain folder name (letters, digits, _ . -) other than systems, report, logs", fix="use the LightEval task's short name, e.g. 'math_500'")
        return v

    @field_validator("lighteval")
    @classmethod
    def _task_string(cls, v: str) -> str:
        parts = v.split("|")
        if len(parts) not in (3, 4) or not all(parts[:3]) or not parts[2].isdigit():
            raise invalid("is not a LightEval task string", fix="write suite|task|few_shot, e.g. 'custom|kit_arith|0'")
        return v

    @field_validator("data")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts or not v.endswith(".jsonl"):
            raise invalid("must be a .jsonl path inside the suite folder", fix="write it like 'data/kit_arith/test.jsonl'")
        return v

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not _HEX64.match(v):
            raise invalid("not a sha256 digest", fix="write the 64 lowercase hex digits (sha256sum FILE)")
        return v


class SuiteFile(BaseModel):
    """benchmark.toml of a LightEval suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["lighteval"] = Field(description="the benchmark kind: a LightEval suite")
    name: str = Field(min_length=1, description="the suite's name, recorded in each checkpoint's metadata")
    custom_tasks: str = Field(min_length=1, description="LightEval custom-tasks module, relative to benchmark.toml")
    custom_tasks_sha256: str = Field(description="sha256 of the custom-tasks module (64 lowercase hex); a changed "
                                     "module is refused")
    generation: SamplingSettings = Field(default_factory=SamplingSettings, description="[generation]: the "
                                         "sampling settings of every task")
    task: tuple[SuiteTask, ...] = Field(min_length=1, description="[[task]] entries, one per LightEval task")

    @field_validator("custom_tasks_sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        return SuiteTask._hex(v)

    @model_validator(mode="after")
    def _unique(self) -> "SuiteFile":
        names = [t.name for t in self.task]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise invalid(f"task name {dupes[0]!r} is used twice", fix="give every [[task]] its own name")
        return self


@dataclass(frozen=True)
class SuiteItem:
    """One evaluation line of a task: its id and the line as read (for status and reports)."""

    item_id: str
    sentence: str


@dataclass(frozen=True, eq=False)
class EvalSuite:
    """A loaded LightEval suite; its task data files are read (and checked) on demand."""

    name: str
    root: Path
    config_path: Path
    spec: SuiteFile
    manifest_sha256: str
    custom_tasks: Prompt

    kind = KIND

    @property
    def languages(self) -> tuple[str, ...]:
        """The task names, in benchmark.toml order (they play the part of lrb languages)."""
        return tuple(t.name for t in self.spec.task)

    @property
    def prompts(self) -> dict[str, Prompt]:
        """The custom-tasks module stands for the prompt: its prompt functions build every query."""
        return {"generate": self.custom_tasks}

    def prompt(self, task: str) -> Prompt:
        """The custom-tasks module (LightEval suites only generate)."""
        if task != "generate":
            raise ConfigError(f"{self.config_path}: LightEval suite {self.name!r} has no {task!r} task",
                              fix="set task = \"generate\" (the default) on the suite's runs")
        return self.custom_tasks

    def expected_answers(self, name: str) -> None:
        """None: a task's gold answers are built by the suite's own prompt functions, inside LightEval."""
        return None

    def prompt_for(self, run: "Run") -> Prompt:
        """The custom-tasks module (every run of a suite generates through it)."""
        return self.prompt(run.task)

    def describe(self) -> str:
        """One line naming the suite and its pinned custom tasks."""
        return f"LightEval suite {self.name} (custom tasks sha256 {self.custom_tasks.sha256[:16]})"

    def pinned_sha256(self, name: str) -> str | None:
        """The pinned sha256 of a task's data; None for a task the suite does not list."""
        return next((t.sha256 for t in self.spec.task if t.name == name), None)

    def task(self, name: str) -> SuiteTask:
        """The [[task]] called `name`."""
        for t in self.spec.task:
            if t.name == name:
                return t
        raise ConfigError(f"{self.config_path}: task {name!r} is not in the suite",
                          fix=f"use one of {', '.join(self.languages)}")

    def data_path(self, name: str) -> Path:
        """The JSONL file of task `name`."""
        return self.root / self.task(name).data

    def resolve_languages(self, selected: list[str] | None) -> list[str]:
        """The tasks to run, in suite order: all of them when `selected` is None."""
        if selected is None:
            return list(self.languages)
        if not selected:
            raise ConfigError(f"{self.config_path}: no task selected", fix=f"pass --languages with tasks of {', '.join(self.languages)}")
        for name in selected:
            self.task(name)
        return [n for n in self.languages if n in selected]

    def load_language(self, name: str) -> LanguageData:
        """Read one task's JSONL, refusing it unless its sha256 is the pinned one and every line
        is a JSON object with a unique, non-empty id."""
        spec = self.task(name)
        path = self.root / spec.data
        if not path.is_file():
            raise ConfigError(f"{path}: data of task {name!r} not found", fix=f"restore it or correct [[task]] data in {self.config_path}")
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec.sha256:
            raise ConfigError(f"{path}: sha256 {digest} differs from task {name!r}'s sha256 {spec.sha256} in {self.config_path}",
                              fix="restore the file, or set the new digest if the change is intended")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})", fix="save the file as UTF-8") from None
        items, seen = [], set()
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = safejson.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path}: line {n} is not JSON ({exc})", fix="write one JSON object per line") from None
            ident = row.get(spec.id_field) if isinstance(row, dict) else None
            if not isinstance(ident, (str, int)) or isinstance(ident, bool) or str(ident) == "":
                raise ConfigError(f"{path}: line {n} has no {spec.id_field!r} field",
                                  fix=f"give every line an id, or set id_field in task {name!r}")
            if str(ident) in seen:
                raise ConfigError(f"{path}: line {n} repeats id {ident!r}", fix="give every line its own id")
            seen.add(str(ident))
            items.append(SuiteItem(str(ident), json.dumps(row, ensure_ascii=False, sort_keys=True)))
        if not items:
            raise ConfigError(f"{path}: task {name!r} has no lines", fix="add the evaluation items")
        return LanguageData(language=name, items=tuple(items), file_sha256=digest, path=path)

    def item_ids(self, name: str) -> list[str]:
        """The item ids of task `name`, in file order."""
        return [i.item_id for i in self.load_language(name).items]

    def whole_set_status(self) -> tuple[str, str]:
        """("checked" | "mismatch", detail): every data file and the custom tasks against their pins."""
        for t in self.spec.task:
            path = self.root / t.data
            got = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
            if got != t.sha256:
                return "mismatch", f"{path}: sha256 {got} differs from the pinned {t.sha256}"
        return "checked", f"custom tasks and all {len(self.spec.task)} task files match; suite sha256 {self.manifest_sha256}"


def suite_sha256(spec: SuiteFile) -> str:
    """The suite digest: the lrb inventory rule over the custom tasks module and every task file."""
    inventory = {"custom_tasks": spec.custom_tasks_sha256, **{f"task/{t.name}": t.sha256 for t in spec.task}}
    return whole_set_sha256(inventory)


def load_suite(root: Path, config: Path) -> EvalSuite:
    """Load the LightEval suite of benchmark.toml `config`, checking the custom-tasks pin."""
    spec = load_model(SuiteFile, config, "LightEval suite")
    path = root / spec.custom_tasks
    if not path.is_file():
        raise ConfigError(f"{config}: custom_tasks: {path} not found", fix="point custom_tasks at the suite's tasks module")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.custom_tasks_sha256:
        raise ConfigError(f"{path}: sha256 {digest} differs from custom_tasks_sha256 {spec.custom_tasks_sha256} in {config}",
                          fix="restore the module, or set the new digest if the change is intended")
    tasks = Prompt(task="generate", text=data.decode("utf-8"), sha256=digest, path=path)
    return EvalSuite(name=spec.name, root=root, config_path=config, spec=spec, manifest_sha256=suite_sha256(spec),
                     custom_tasks=tasks)
