"""docs/configuration.md is generated from the config models, is current, and leaves no key out or undescribed."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from kit.config.kinds.lrb.benchmark import BenchmarkFile
from kit.config.kinds.lrb.prompts import PromptFiles
from kit.config.kinds.lighteval.suite import SamplingSettings, SuiteFile, SuiteTask
from kit.config.images import ImagesFile, ImageSpec, ImageVariant
from kit.config.reference import COMMAND, FILES, render_reference
from kit.config.roster import Roster, Run
from kit.config.sites import Site

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

# every model whose fields are keys of a config file (the top-level ones first)
TOP_LEVEL = (Roster, Site, ImagesFile, BenchmarkFile, SuiteFile)
MODELS = (Run, Roster, Site, ImagesFile, ImageSpec, ImageVariant, BenchmarkFile, PromptFiles, SuiteFile, SuiteTask,
          SamplingSettings)


def _sections(text: str) -> dict[tuple[str, str], list[str]]:
    """(## file title, ### table heading) -> the lines under that heading, parsed from the Markdown."""
    out: dict[tuple[str, str], list[str]] = {}
    title = heading = None
    for line in text.splitlines():
        if line.startswith("## "):
            title, heading = line[3:], None
        elif line.startswith("### "):
            heading = line[4:]
            assert (title, heading) not in out, f"section {title} / {heading} appears twice"
            out[(title, heading)] = []
        elif title is not None and heading is not None:
            out[(title, heading)].append(line)
    return out


def _rows(lines: list[str]) -> dict[str, list[str]]:
    """key -> its cells (type, default, description) for each table row of a section."""
    rows = {}
    for line in lines:
        m = re.match(r"^\| `([^`]+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = re.split(r"(?<!\\) \| ", m.group(2))
    return rows


def _nested_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    """The models a model's fields hold (tables, arrays of tables, tables by name), recursively."""
    found: set[type[BaseModel]] = set()

    def walk(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.add(annotation)
                for field in annotation.model_fields.values():
                    walk(field.annotation)
        for arg in typing.get_args(annotation):
            walk(arg)

    for field in model.model_fields.values():
        walk(field.annotation)
    return found


def test_docs_configuration_md_is_current():
    assert DOC.read_text(encoding="utf-8") == render_reference(), (
        f"docs/configuration.md is stale (a config model changed); regenerate it with: {COMMAND}")


def test_the_reference_names_its_regenerate_command():
    assert COMMAND == "python -m kit.config.reference > docs/configuration.md"
    assert COMMAND in render_reference().split("\n## ", 1)[0]


def test_every_config_model_has_a_table_including_the_nested_ones():
    documented = [t.model for f in FILES for t in f.tables]
    assert len(documented) == len(set(documented)), "a model is documented twice"
    wanted = set(MODELS)
    for model in TOP_LEVEL:
        wanted |= _nested_models(model)
    missing = sorted(m.__name__ for m in wanted - set(documented))
    assert missing == [], f"add a Table for {missing} to kit.config.reference.FILES"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_a_row_of_its_section(model):
    sections = _sections(render_reference())
    where = [(f.title, t.heading) for f in FILES for t in f.tables if t.model is model]
    assert len(where) == 1, f"{model.__name__} has no table in kit.config.reference.FILES"
    rows = _rows(sections[where[0]])
    assert list(rows) == list(model.model_fields), f"{where[0]}: rows are not {model.__name__}'s fields in order"
    for name, cells in rows.items():
        assert len(cells) == 3 and all(c.strip() for c in cells), f"{model.__name__}.{name}: row {cells}"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_has_a_description(model):
    bare = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert bare == [], f"{model.__name__}: add Field(..., description=...) to {bare}"


def test_rows_show_types_defaults_and_constraints():
    sections = _sections(render_reference())
    runs = _rows(sections[("roster.toml", "`[[run]]`")])
    field = Run.model_fields["batch_size"]
    low = next(m.ge for m in field.metadata if hasattr(m, "ge"))
    high = next(m.le for m in field.metadata if hasattr(m, "le"))
    kind, default, description = runs["batch_size"]
    assert (kind, default) == ("int", f"`{field.default}`")
    assert description.startswith(field.description) and description.endswith(f"(at least {low}, at most {high})")
    assert runs["model"][1] == "required"
    assert runs["task"][0] == 'one of "generate", "score"'
    assert runs["revision"][:2] == ["str or none", "none"]
    assert runs["languages"][0] == "list of str or none"
    assert runs["options"][1] == "(empty)"
    assert "(at least 0, less than 4294967296)" in runs["seed"][2]
    variant = _rows(sections[("images.toml", "`[image.NAME.variants.VARIANT]`")])
    assert variant["glibc"][2].endswith(r"(matching `^2\.\d{2}$`)")
    task = _rows(sections[('benchmark.toml, kind "lighteval"', "`[[task]]`")])
    assert r"custom\|kit_arith\|0" in task["lighteval"][2]   # a '|' in a cell must not split the row
