"""A benchmark folder: the dataset manifest, one CSV per language, and the prompt templates.

The layout is the land-use relevance benchmark (lrb) one: `translations/manifest.json`
beside one folder per language (`<lang>/v3-final-<lang>.csv`), and the prompt files. A
`benchmark.toml` may name the manifest and the prompt files; without one they are found by their
lrb names. As lrb does, a manifest whose whole-set digest is not its files' is refused. Which
prompt a task or a run gets, and how the prompt files are read, is kit.config.kinds.lrb.prompts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kit import safejson
from kit.config.dataset import LanguageData, Prompt, whole_set_sha256
from kit.config.loading import config_error_from, invalid, load_model
from kit.config.kinds.lrb.prompts import PromptChoice, PromptFiles, found_prompts, named_prompts, unread_prompt_files
from kit.config.names import language_key
from kit.errors import ConfigError

if TYPE_CHECKING:
    from kit.config.roster import Run

LABELS = ("yes", "no")
CSV_COLUMNS = (
    "sentence", "label", "polygon_name", "h3_cell", "latitude", "longitude",
    "source", "region", "source_url", "source_item_id", "language",
)
# The columns kit reads; the others are carried along by the format but unused.
REQUIRED_COLUMNS = ("sentence", "label", "source_item_id", "language")
KIT_DATASET_PREFIX = "kit/"
# kit's own generative prompt: the demo benchmark ships it; no benchmark gets it unasked
DEFAULT_GENERATE_PROMPT = Path(__file__).resolve().parents[3] / "defaults" / "prompt_generate.txt"
AUTO_MANIFESTS = ("manifest.json", "translations/manifest.json")

_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_LANG = re.compile(r"^[a-z]{2,3}([-_][A-Za-z0-9]+)*\Z")


# --- the manifest -------------------------------------------------------------------


class ManifestFile(BaseModel):
    """One language file as the manifest records it; `path` is relative to the manifest folder."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str
    rows: int = Field(ge=0)
    sha256: str

    @field_validator("path")
    @classmethod
    def _inside(cls, v: str) -> str:
        parts = PurePosixPath(v).parts
        if not v or "\\" in v or PurePosixPath(v).is_absolute() or ".." in parts:
            raise invalid("must be a relative path inside the manifest folder", fix="write it like 'fr/v3-final-fr.csv'")
        return v

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        return _check_hex64(v)


class Manifest(BaseModel):
    """The dataset manifest (`manifest.json`); keys beyond the named ones are kept, unchecked."""

    model_config = ConfigDict(extra="allow", frozen=True)

    dataset: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    split: str = Field(min_length=1)
    languages: tuple[str, ...] = Field(min_length=1)
    row_count: int = Field(ge=1)
    source_item_ids: tuple[str, ...]
    files: dict[str, ManifestFile]
    whole_set_sha256: str

    @field_validator("languages")
    @classmethod
    def _codes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for lang in v:
            if not _LANG.match(lang):
                raise invalid(f"bad language code {lang!r}", fix="use ISO codes such as 'en', 'fr', 'ceb'")
        dupes = sorted({lang for lang in v if v.count(lang) > 1})
        if dupes:
            raise invalid(f"languages lists {', '.join(dupes)} twice", fix="list each language once")
        # pt-BR and pt-br are one language to a person, to --languages and to a case-blind disk's folders
        spelled: dict[str, str] = {}
        for lang in v:
            other = spelled.setdefault(language_key(lang), lang)
            if other != lang:
                raise invalid(f"languages lists {other!r} and {lang!r}, one code spelled two ways",
                              fix="keep one spelling of each language")
        return v

    @field_validator("whole_set_sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        return _check_hex64(v)

    @model_validator(mode="after")
    def _consistent(self) -> "Manifest":
        for lang in self.languages:
            if lang not in self.files:
                raise invalid(f"files has no entry for language {lang!r}", fix=f"add files.{lang} with path, rows and sha256, or drop {lang!r} from languages")
        for lang in self.files:
            if lang not in self.languages:
                raise invalid(f"files.{lang} names a language missing from languages", fix=f"add {lang!r} to languages or remove files.{lang}")
        if len(self.source_item_ids) != self.row_count:
            raise invalid(f"row_count is {self.row_count} but source_item_ids has {len(self.source_item_ids)} ids", fix="list one source item id per row")
        first: dict[str, int] = {}
        for i, sid in enumerate(self.source_item_ids):
            if sid in first:
                raise invalid(f"source_item_ids[{i}] {sid!r} repeats source_item_ids[{first[sid]}]", fix="give every source item its own id")
            first[sid] = i
        for lang in self.languages:
            if self.files[lang].rows != self.row_count:
                raise invalid(f"files.{lang}.rows is {self.files[lang].rows} but row_count is {self.row_count}", fix="every language file holds all row_count items")
        return self


def _check_hex64(v: str) -> str:
    if not _HEX64.match(v):
        raise invalid("not a sha256 digest", fix="write the 64 lowercase hex digits of the file's sha256")
    return v


# --- items and files ----------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One benchmark sentence in one language with its expected answer ("yes" or "no")."""

    item_id: str
    source_item_id: str
    sentence: str
    label: str


def item_id(source_item_id: str, language: str) -> str:
    """The item id of a source item in one language: first 16 hex of sha256(source id, NUL, language)."""
    return hashlib.sha256(f"{source_item_id}\0{language}".encode("utf-8")).hexdigest()[:16]


# --- the benchmark ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Benchmark:
    """A loaded benchmark: its checked manifest and prompt templates (by prompt kind); language files
    are read on demand."""

    name: str
    root: Path
    manifest: Manifest
    manifest_path: Path
    manifest_sha256: str
    prompts: dict[str, Prompt]
    config_path: Path | None = None
    # language -> its item ids, computed once (every reader of a language's file asks for them)
    _ids: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    kind = "lrb"

    @property
    def languages(self) -> tuple[str, ...]:
        """The manifest's languages, in manifest order."""
        return self.manifest.languages

    def describe(self) -> str:
        """One line naming the dataset and its revision."""
        return f"{self.manifest.dataset} @ {self.manifest.revision or '?'}"

    def pinned_sha256(self, language: str) -> str | None:
        """The manifest's sha256 of a language file; None for a language it does not list."""
        entry = self.manifest.files.get(language)
        return entry.sha256 if entry else None

    @property
    def is_kit_dataset(self) -> bool:
        """True for datasets kit itself publishes (their whole-set digest must match at load)."""
        return self.manifest.dataset.startswith(KIT_DATASET_PREFIX)

    def language_path(self, language: str) -> Path:
        """Where the manifest says the CSV of `language` lives."""
        self._known(language)
        return self.manifest_path.parent / self.manifest.files[language].path

    def available_languages(self) -> list[str]:
        """Manifest languages whose CSV file exists, in manifest order."""
        return [lang for lang in self.manifest.languages if self.language_path(lang).is_file()]

    def resolve_languages(self, selected: list[str] | None) -> list[str]:
        """The languages to run, in manifest order: all of them when `selected` is None.

        Every language returned has its file present; anything else is a ConfigError.
        """
        present = self.available_languages()
        fix = f"pass --languages with those present: {','.join(present)}" if present else (
            f"put the language files listed in {self.manifest_path} beside it"
        )
        if selected is None:
            missing = [lang for lang in self.manifest.languages if lang not in present]
            if missing:
                raise ConfigError(
                    f"{self.manifest_path}: {len(missing)} of {len(self.manifest.languages)} language files are missing "
                    f"({_preview(missing, 5)})",
                    fix=fix,
                )
            return list(self.manifest.languages)
        if not selected:
            raise ConfigError(f"{self.manifest_path}: no language selected", fix=fix)
        for lang in selected:
            self._known(lang)
            if lang not in present:
                raise ConfigError(f"{self.language_path(lang)}: file for language {lang!r} not found", fix=fix)
        return [lang for lang in self.manifest.languages if lang in selected]

    def item_ids(self, language: str) -> list[str]:
        """The item ids of `language` in manifest order, computed from the manifest alone."""
        return list(self._item_ids(language))

    def _item_ids(self, language: str) -> tuple[str, ...]:
        known = self._ids.get(language)
        if known is None:
            self._known(language)
            known = self._ids[language] = tuple(item_id(sid, language) for sid in self.manifest.source_item_ids)
        return known

    def load_language(self, language: str) -> LanguageData:
        """Read one language CSV, refusing it unless its digest, row count, id order,
        language column and labels agree with the manifest."""
        path = self.language_path(language)
        entry = self.manifest.files[language]
        if not path.is_file():
            what = "is a folder, not the file" if path.is_dir() else "not found: the file"
            raise ConfigError(f"{path}: {what} for language {language!r} (its manifest lists it)",
                              fix=f"copy it from dataset revision {self.manifest.revision}")
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry.sha256:
            raise ConfigError(
                f"{path}: sha256 {digest} differs from the manifest's files.{language}.sha256 {entry.sha256}",
                fix=f"restore the file from dataset revision {self.manifest.revision}, or update the manifest if the change is intended",
            )
        column, rows = _read_rows(path, data)
        if len(rows) != entry.rows:
            raise ConfigError(
                f"{path}: {len(rows)} rows but the manifest's files.{language}.rows is {entry.rows}",
                fix=f"restore the file from dataset revision {self.manifest.revision}",
            )
        sid_at, language_at, label_at, sentence_at = (column[name] for name in ("source_item_id", "language", "label",
                                                                                "sentence"))
        expected = self.manifest.source_item_ids
        for n, ((line, row), want) in enumerate(zip(rows, expected), start=1):
            if row[sid_at] != want:
                raise ConfigError(
                    f"{path}: row {n} (line {line}) has source_item_id {row[sid_at]!r} "
                    f"where the manifest's source_item_ids[{n - 1}] is {want!r}",
                    fix="keep the rows in the manifest's source_item_ids order",
                )
        # every row's source id is the manifest's, in its order (checked above): its item id is the manifest's
        ids = self._item_ids(language) if len(rows) == len(expected) else None
        items = []
        for n, (line, row) in enumerate(rows, start=1):
            if row[language_at] != language:
                raise ConfigError(
                    f"{path}: row {n} (line {line}) has language {row[language_at]!r}, expected {language!r}",
                    fix=f"check that files.{language}.path points at the {language!r} file",
                )
            if row[label_at] not in LABELS:
                raise ConfigError(f"{path}: row {n} (line {line}) has label {row[label_at]!r}", fix="write yes or no")
            sentence = row[sentence_at]
            if not _VISIBLE.search(sentence) or "\0" in sentence:   # a model would be asked about nothing
                what = "an empty sentence" if not _VISIBLE.search(sentence) else "a NUL character in its sentence"
                raise ConfigError(f"{path}: row {n} (line {line}) has {what}",
                                  fix="write the sentence, or restore the file")
            sid = row[sid_at]
            items.append(Item(ids[n - 1] if ids is not None else item_id(sid, language), sid, row[sentence_at],
                              row[label_at]))
        return LanguageData(language=language, items=tuple(items), file_sha256=digest, path=path)

    def whole_set_status(self) -> tuple[str, str]:
        """("checked" | "not checked" | "mismatch", detail): whether the whole language set is verified.

        "checked" needs the manifest's whole-set digest to match its file list and every
        file to be present with its recorded digest; with files absent it is "not checked".
        """
        m = self.manifest
        inventory = whole_set_sha256({lang: m.files[lang].sha256 for lang in m.languages})
        if inventory != m.whole_set_sha256:
            return "mismatch", (
                f"{self.manifest_path}: whole_set_sha256 is {m.whole_set_sha256} but the files' digests give {inventory}"
            )
        present = self.available_languages()
        if len(present) < len(m.languages):
            return "not checked", f"{len(present)} of {len(m.languages)} files present"
        for lang in m.languages:
            path = self.language_path(lang)
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != m.files[lang].sha256:
                return "mismatch", f"{path}: sha256 {digest} differs from the manifest's {m.files[lang].sha256}"
        return "checked", f"all {len(m.languages)} files match; whole_set_sha256 {inventory}"

    def expected_answers(self, language: str) -> dict[str, str]:
        """item id -> its yes/no label in the language file (refused as load_language refuses it)."""
        answers = self._answers_in_bulk(language)
        if answers is not None:
            return answers
        return {item.item_id: item.label for item in self.load_language(language).items}

    def _answers_in_bulk(self, language: str) -> dict[str, str] | None:
        """expected_answers when the file passes every check of load_language, each made on whole columns
        at once (a status of a sweep reads every language in each worker); None for anything else, which
        load_language then names."""
        try:
            path = self.language_path(language)
            entry = self.manifest.files[language]
            if not path.is_file():
                return None
            data = path.read_bytes()
            text = data.decode("utf-8-sig")
        except (OSError, ConfigError, UnicodeDecodeError):
            return None
        if hashlib.sha256(data).hexdigest() != entry.sha256 or "\0" in text:
            return None
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
        except csv.Error:
            return None
        header = rows[0] if rows else []
        if any(header.count(name) != 1 for name in REQUIRED_COLUMNS):
            return None
        body = [row for row in rows[1:] if row]   # blank lines are skipped
        width = len(header)
        if len(body) != entry.rows or any(len(row) != width for row in body):
            return None
        sid_at, language_at, label_at, sentence_at = (header.index(name) for name in (
            "source_item_id", "language", "label", "sentence"))
        labels = list(map(itemgetter(label_at), body))
        if (list(map(itemgetter(sid_at), body)) != list(self.manifest.source_item_ids)
                or not set(map(itemgetter(language_at), body)) <= {language} or not set(labels) <= set(LABELS)
                or not all(map(_VISIBLE.search, map(itemgetter(sentence_at), body)))):
            return None
        return dict(zip(self._item_ids(language), labels))

    def unread_prompt_files(self) -> list[str]:
        """Prompt files in the benchmark folder that no lookup reads (kit.config.kinds.lrb.prompts.unread_prompt_files);
        none when benchmark.toml names the prompts."""
        return [] if self.config_path is not None else unread_prompt_files(self.root)

    @cached_property
    def prompt_choice(self) -> PromptChoice:
        """Which of the benchmark's prompt templates a task or a run is asked with (kit.config.kinds.lrb.prompts)."""
        return PromptChoice(self.name, self.root, self.prompts, self.config_path)

    def prompt(self, task: str) -> Prompt:
        """The prompt template of `task` (PromptChoice.for_task); a task without one is a ConfigError."""
        return self.prompt_choice.for_task(task)

    def prompt_for(self, run: "Run") -> Prompt:
        """The prompt template a run's pairs are built from (PromptChoice.for_run); a missing one is a ConfigError."""
        return self.prompt_choice.for_run(run)

    def _known(self, language: str) -> None:
        if language not in self.manifest.files:
            raise ConfigError(
                f"{self.manifest_path}: language {language!r} is not in the manifest",
                fix=f"use one of {_preview(list(self.manifest.languages), 12)}",
            )


def _preview(values: list[str], n: int) -> str:
    shown = ", ".join(values[:n])
    return shown if len(values) <= n else f"{shown}, ... ({len(values)} in all)"


# a character a reader sees: not a space of any kind, nor a zero-width or other format character
_VISIBLE = re.compile(r"[^\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def _read_rows(path: Path, data: bytes) -> tuple[dict[str, int], list[tuple[int, list[str]]]]:
    """Parse a language CSV into its header (column name -> index; a repeated name: its last column) and
    (line number, fields) rows, blank lines skipped; malformed files are a ConfigError."""
    try:
        # utf-8-sig: the byte order mark a spreadsheet's "CSV UTF-8" export writes is not part of the header
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})", fix="save the file as UTF-8") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        header = next(reader, [])
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            padded = [name for name in header if name.strip() in missing and name != name.strip()]
            raise ConfigError(
                f"{path}: header lacks column {', '.join(missing)}"
                + (f" (it names {', '.join(map(repr, padded))}, with spaces around)" if padded else ""),
                fix=f"the header row must name {','.join(CSV_COLUMNS)}, each without spaces around it")
        for name in REQUIRED_COLUMNS:   # which copy of a repeated column is the data: none can say
            at = [i + 1 for i, given in enumerate(header) if given == name]
            if len(at) > 1:
                raise ConfigError(f"{path}: the header names {name!r} twice (columns {at[0]} and {at[1]})",
                                  fix="rename or remove one of them")
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise ConfigError(
                    f"{path}: line {reader.line_num} does not have the header's {len(header)} fields",
                    fix="quote fields that contain commas, quotes or newlines",
                )
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        too_long = "field larger than field limit" in str(exc)
        raise ConfigError(f"{path}: line {reader.line_num}: malformed CSV: {exc}",
                          fix="shorten that field (a benchmark item is one sentence)" if too_long else
                          "close its quotes and keep one row per line, or restore the file") from None
    return {name: i for i, name in enumerate(header)}, rows


# --- loading ------------------------------------------------------------------------


class BenchmarkFile(BaseModel):
    """benchmark.toml: the name of a benchmark, its manifest and its prompt files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["lrb"] = Field("lrb", description='"lrb" (this file) or "lighteval" (kit.config.kinds.lighteval.suite)')
    name: str = Field(min_length=1, description="the benchmark's name in kit's messages")
    manifest: str = Field(min_length=1, description="manifest.json, relative to benchmark.toml")
    prompts: PromptFiles = Field(default_factory=PromptFiles, description="[prompts]: the prompt files, relative "
                                 "to benchmark.toml; with a benchmark.toml, only the files named here are used")


def load_lrb(root: Path, config: Path | None) -> Benchmark:
    """Load an lrb benchmark folder: from its benchmark.toml `config`, or, without one, by the lrb
    file names (kit.config.kinds.load_benchmark picks the kind)."""
    return _from_config(root, config) if config is not None else _auto_detect(root)


def _from_config(root: Path, config: Path) -> Benchmark:
    spec = load_model(BenchmarkFile, config, "benchmark")
    manifest_path = root / spec.manifest
    if not manifest_path.is_file():
        raise ConfigError(
            f"{config}: manifest: {manifest_path} not found",
            fix="point manifest at the dataset's manifest.json, relative to benchmark.toml",
        )
    return _build(spec.name, root, manifest_path, named_prompts(root, spec.prompts, config), config)


def _auto_detect(root: Path) -> Benchmark:
    candidates = [root / rel for rel in AUTO_MANIFESTS]
    manifest_path = next((p for p in candidates if p.is_file()), None)
    if manifest_path is None:
        raise ConfigError(
            f"{root}: no benchmark.toml, {' or '.join(AUTO_MANIFESTS)} in this folder",
            fix="pass the benchmark folder (the one holding translations/), or add a benchmark.toml naming the manifest",
        )
    return _build(None, root, manifest_path, found_prompts(root), None)


def _build(
    name: str | None, root: Path, manifest_path: Path, prompts: dict[str, Prompt], config: Path | None
) -> Benchmark:
    """Read the manifest and assemble the Benchmark; `name` None means the manifest's dataset name."""
    manifest, digest = _read_manifest(manifest_path)
    # lrb refuses such a manifest at load, kit's datasets and foreign ones alike. Only the inventory
    # part of the check: it needs no file read; a changed file is refused by load_language.
    expected = whole_set_sha256({lang: manifest.files[lang].sha256 for lang in manifest.languages})
    if expected != manifest.whole_set_sha256:
        fix = ("regenerate the dataset (kit demo rewrites its own) or restore the manifest"
               if manifest.dataset.startswith(KIT_DATASET_PREFIX) else
               f"restore manifest.json from dataset revision {manifest.revision}: its files.*.sha256 or "
               "whole_set_sha256 was changed")
        raise ConfigError(
            f"{manifest_path}: whole_set_sha256 is {manifest.whole_set_sha256} but the files' digests give {expected}",
            fix=fix,
        )
    return Benchmark(
        name=name or manifest.dataset, root=root, manifest=manifest, manifest_path=manifest_path,
        manifest_sha256=digest, prompts=prompts, config_path=config,
    )


def _read_manifest(path: Path) -> tuple[Manifest, str]:
    """Parse and validate manifest.json; returns it with the sha256 of its bytes."""
    data = path.read_bytes()
    try:
        payload: Any = safejson.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}", fix="restore the manifest from the dataset") from None
    if not isinstance(payload, dict):
        raise ConfigError(f"{path}: the manifest is not a JSON object", fix="restore the manifest from the dataset")
    try:
        manifest = Manifest.model_validate(payload)
    except ValidationError as exc:
        raise config_error_from(exc, path, None) from None
    return manifest, hashlib.sha256(data).hexdigest()
