"""The configuration reference (docs/configuration.md), rendered from the pydantic models of each file.

Every key of roster.toml, sites.toml, images.toml and both kinds of benchmark.toml is a field of one of
the models below; its row shows the type (from the annotation), the default, and the field's description
with its constraints. tests/unit/test_config_reference.py keeps the document current and every field
described. Regenerate with:

    python -m kit.config.reference > docs/configuration.md
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kit.config.kinds.lrb.benchmark import BenchmarkFile
from kit.config.kinds.lrb.prompts import PromptFiles
from kit.config.kinds.lighteval.suite import SamplingSettings, SuiteFile, SuiteTask
from kit.config.images import ImagesFile, ImageSpec, ImageVariant
from kit.config.roster import Roster, Run
from kit.config.sites import Site

COMMAND = "python -m kit.config.reference > docs/configuration.md"


@dataclass(frozen=True)
class Table:
    """One TOML table of a config file and the model whose fields are its keys."""

    heading: str
    model: type[BaseModel]
    note: str = ""


@dataclass(frozen=True)
class ConfigFile:
    """One config file: its section title, what it is, and its tables in the order a reader meets them."""

    title: str
    summary: str
    tables: tuple[Table, ...]


def _kind(model: type[BaseModel]) -> str:
    """The benchmark kind a benchmark.toml model accepts, read from its `kind` Literal."""
    (value,) = typing.get_args(model.model_fields["kind"].annotation)
    return value


FILES: tuple[ConfigFile, ...] = (
    ConfigFile("roster.toml", "The runs of a sweep: one `[[run]]` per model (or model@variant).", (
        Table("Top-level keys", Roster),
        Table("`[[run]]`", Run),
    )),
    ConfigFile("sites.toml", "One table per cluster: where and how jobs run.", (
        Table("`[site.NAME]`", Site, "The table name gives `name`: write `[site.lyon]`, not `name = \"lyon\"`."),
    )),
    ConfigFile("images.toml", "containers/images.toml: how each backend image is built; paths are relative to "
               "the repository root.", (
        Table("Top-level keys", ImagesFile),
        Table("`[image.NAME]`", ImageSpec),
        Table("`[image.NAME.variants.VARIANT]`", ImageVariant, "A key left out is the image's."),
    )),
    ConfigFile(f'benchmark.toml, kind "{_kind(BenchmarkFile)}"', "A benchmark folder in the lrb layout; without a "
               "benchmark.toml its files are found by their lrb names.", (
        Table("Top-level keys", BenchmarkFile),
        Table("`[prompts]`", PromptFiles),
    )),
    ConfigFile(f'benchmark.toml, kind "{_kind(SuiteFile)}"', "A LightEval suite: task strings, a custom-tasks "
               "module and each task's JSONL data, all pinned by sha256.", (
        Table("Top-level keys", SuiteFile),
        Table("`[generation]`", SamplingSettings),
        Table("`[[task]]`", SuiteTask),
    )),
)

_SCALARS = {str: "str", int: "int", float: "float", bool: "bool"}


def type_text(annotation: Any) -> str:
    """A field's annotation as a reader says it: `int`, `list of str`, `one of "a", "b"`, `str or none`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is Literal:
        values = ", ".join(json.dumps(a) for a in args)
        return values if len(args) == 1 else f"one of {values}"
    if origin in (typing.Union, types.UnionType):
        kinds = [type_text(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or none" if type(None) in args else "")
    if origin in (list, tuple):
        item = args[0] if args else Any
        if isinstance(item, type) and issubclass(item, BaseModel):
            return "array of tables"
        return f"list of {type_text(item)}"
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        if value is Any:
            return "table"
        if isinstance(value, type) and issubclass(value, BaseModel):
            return "tables by name"
        return f"table of {type_text(value)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if annotation is Any:
        return "any"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _toml(value: Any) -> str:
    """A default value as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)


def default_text(field: FieldInfo) -> str:
    """`required`, `(empty)` for an empty container made by default_factory, else the default as TOML."""
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        made = field.get_default(call_default_factory=True)
        if isinstance(made, BaseModel):
            return "(its keys' defaults)"
        return "(empty)" if not made else f"`{_toml(made)}`"
    if field.default is None:
        return "none"
    return f"`{_toml(field.default)}`"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_LIMITS = (
    ("ge", lambda v: f"at least {_number(v)}"),
    ("gt", lambda v: f"more than {_number(v)}"),
    ("le", lambda v: f"at most {_number(v)}"),
    ("lt", lambda v: f"less than {_number(v)}"),
    ("min_length", lambda v: "not empty" if v == 1 else f"at least {v} long"),
    ("max_length", lambda v: f"at most {v} long"),
    ("pattern", lambda v: f"matching `{v}`"),
)


def constraints_text(field: FieldInfo) -> str:
    """The field's bounds, length and pattern in words ("at least 1, at most 4096"); "" when it has none."""
    words = []
    for item in field.metadata:   # annotated_types' Ge, Le, MinLen, ... and pydantic's pattern holder
        for key, say in _LIMITS:
            value = getattr(item, key, None)
            if value is not None:
                words.append(say(value))
    return ", ".join(words)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def row(name: str, field: FieldInfo) -> str:
    """The Markdown table row of one key."""
    description = (field.description or "").strip()
    limits = constraints_text(field)
    if limits:
        description = f"{description} ({limits})" if description else f"({limits})"
    return (f"| `{name}` | {_cell(type_text(field.annotation))} | {_cell(default_text(field))} | "
            f"{_cell(description)} |")


def render_table(table: Table) -> list[str]:
    """A table's heading, note and one row per field, in declaration order."""
    out = [f"### {table.heading}", ""]
    if table.note:
        out += [table.note, ""]
    out += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    out += [row(name, field) for name, field in table.model.model_fields.items()]
    return out + [""]


def render_reference() -> str:
    """The whole configuration reference as Markdown: a title, how it is generated, then one section
    per config file with a table of keys (type, default, description and constraints) per TOML table."""
    out = ["# Configuration reference", "",
           f"This file is generated by `{COMMAND}` from kit's pydantic models (kit/config/); do not edit it by "
           "hand.", ""]
    for config in FILES:
        out += [f"## {config.title}", "", config.summary, ""]
        for table in config.tables:
            out += render_table(table)
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render_reference(), end="")
