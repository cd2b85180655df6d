"""Read a TOML file into a pydantic model; every failure becomes one ConfigError line
naming the file, the key (and its line when it can be found) and the fix."""

from __future__ import annotations

import datetime

import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kit.errors import ConfigError
from kit.files import read_regular_file

if TYPE_CHECKING:   # pydantic is imported where a model is validated: read_toml alone (status, verify) needs none
    from pydantic import BaseModel, ValidationError
    from pydantic_core import PydanticCustomError

M = TypeVar("M", bound="BaseModel")

_HINTS = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "literal_error": "use one of the listed values",
    "string_pattern_mismatch": "write it in the form that pattern describes (docs/configuration.md shows each key's)",
}


_FIX = "kit_fix"   # the context key of an invalid() error that holds its fix

# pydantic's bound errors -> (its context key, the fix with that bound)
_BOUNDS = {
    "greater_than_equal": ("ge", "use a value of at least {}"), "greater_than": ("gt", "use a value above {}"),
    "less_than_equal": ("le", "use a value of at most {}"), "less_than": ("lt", "use a value below {}"),
    "too_short": ("min_length", "give at least {} item(s)"), "too_long": ("max_length", "give at most {} item(s)"),
}


def _bound_fix(err: Any) -> str | None:
    """The fix of a value outside a field's bounds, naming the bound (None for other errors)."""
    key, text = _BOUNDS.get(err["type"], (None, None))
    ctx = err.get("ctx") or {}
    return text.format(ctx[key]) if key in ctx else None


def invalid(message: str, *, fix: str) -> PydanticCustomError:
    """The error a validator raises for a bad value: the problem and, as a field, its fix
    (config_error_from turns it into one ConfigError line)."""
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("kit_invalid", message, {_FIX: fix})


def invalid_line(exc: ValueError) -> str:
    """One line for a validator's error raised outside validation (e.g. a --walltime option)."""
    message, fix = invalid_parts(exc)
    return f"{message}; fix: {fix}" if fix else message


def invalid_parts(exc: ValueError) -> tuple[str, str | None]:
    """A validator's error as its message and its fix (None when it gave none)."""
    from pydantic_core import PydanticCustomError

    if isinstance(exc, PydanticCustomError):
        return exc.message(), (exc.context or {}).get(_FIX)
    return str(exc), None


# a config file is a few KB; this bounds what a wrong path (a log, an image) costs to read
CONFIG_LIMIT_BYTES = 16 << 20


# what a first user writes when the file is missing (docs/configuration.md has every key)
_TO_WRITE = {
    "sites": 'write it with a [site.NAME] table (e.g. [site.lyon] scheduler = "oar" frontend = "lyon.g5k" '
             'root = "/home/LOGIN/kit"; examples/sites.toml, docs/configuration.md), or pass --sites-file PATH',
    "roster": 'write it with benchmark = "DIR" and a [[run]] per model (model, revision, backend; '
              'docs/configuration.md), or pass --roster PATH; `kit demo` writes one in ./kit-demo',
}


def path_from(base: Path, value: str | Path) -> Path:
    """A path a config file or an option names on this machine: `~` is the home folder, and a relative
    path is relative to `base` (the folder of the file that names it)."""
    return Path(base) / Path(value).expanduser()


def _toml_fix(text: bytes, message: str) -> str:
    """The fix of a TOML syntax error: a duration written unquoted (walltime = 48:00:00, which TOML reads as
    a time of day, up to 23:59:59) is to be quoted; anything else, corrected at its line."""
    m = re.search(r"at line (\d+)", message)
    lines = text.decode("utf-8-sig", errors="replace").splitlines()
    line = lines[int(m.group(1)) - 1] if m and 0 < int(m.group(1)) <= len(lines) else ""
    bare = re.match(r"\s*([A-Za-z0-9_.-]+)\s*=\s*(\d+:\d\d(?::\d\d)?)\s*(?:#.*)?$", line)
    if bare:
        return f'quote it: {bare.group(1)} = "{bare.group(2)}" (unquoted, TOML reads it as a time of day)'
    return "correct the syntax at that line"


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """Parse a TOML file; a missing file or a syntax error is a ConfigError."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: {what} file not found", fix=_TO_WRITE.get(what, "create it or pass the right path"))
    try:
        text = read_regular_file(path, f"the {what} file", CONFIG_LIMIT_BYTES, fix="pass the TOML file itself")
        # utf-8-sig: a byte order mark some Windows editors write is not part of the text
        return tomllib.loads(text.decode("utf-8-sig"))
    except OSError as exc:   # a dangling link or a loop of links, or no permission
        raise ConfigError(f"{path}: {what} file cannot be read ({exc.strerror})",
                          fix="pass the TOML file itself, readable, not a broken link") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}", fix=_toml_fix(text, str(exc))) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text", fix="save the file as UTF-8") from None
    except (ValueError, RecursionError) as exc:   # an integer of thousands of digits; arrays nested thousands deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise ConfigError(f"{path}: a value kit cannot read: {why}",
                          fix="use numbers of at most 19 digits and tables nested a few levels") from None


def validate(model: type[M], data: dict[str, Any], path: Path, text: str | None = None) -> M:
    """Validate `data` against `model`; the first error becomes a one-line ConfigError."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error_from(exc, Path(path), text, model) from None


def load_model(model: type[M], path: Path, what: str) -> M:
    """Read and validate one TOML file."""
    path = Path(path)
    data = read_toml(path, what)
    return validate(model, data, path, path.read_text(encoding="utf-8"))


def config_error_from(exc: ValidationError, path: Path, text: str | None,
                      model: type[BaseModel] | None = None) -> ConfigError:
    """Turn the first pydantic error into one ConfigError line (file:line: key: problem; fix). With
    the `model` validated, an unknown key's fix names the nearest key the table has."""
    err = exc.errors()[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    key = format_loc(loc)
    line = locate(text, loc) if text else None
    where = f"{path}:{line}" if line else f"{path}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    fix = (err.get("ctx") or {}).get(_FIX) or _HINTS.get(err["type"]) or _bound_fix(err)
    if err["type"] == "extra_forbidden" and model is not None and loc and isinstance(loc[-1], str):
        fix = _nearest_key_fix(loc[-1], _model_at(model, loc[:-1])) or fix
    got = err.get("input")
    if fix is None and (err["type"].endswith("_type") or err["type"].endswith("_parsing")):
        fix = _type_fix(err["type"], got, loc)
    if fix is None:   # every refusal says what to do
        fix = f"correct {key or 'the value'} (docs/configuration.md describes every key)"
    if isinstance(got, (datetime.date, datetime.time)):   # TOML's own value, shown as the user wrote it
        got = got.isoformat()
    shown = "" if err["type"] == "missing" or isinstance(got, dict) else f" (got {got!r})"
    if len(shown) > 90:
        shown = shown[:87] + "...)"
    return ConfigError(f"{where}: {key}: {msg}{shown}" if key else f"{where}: {msg}{shown}", fix=fix)


def _type_fix(kind: str, got: Any, loc: list[Any]) -> str:
    """The fix of a value of the wrong type, from what was written: TOML reads an unquoted 02:00:00 as a
    time of day, and a list written as one string is one string."""
    name = next((p for p in reversed(loc) if isinstance(p, str)), "the key")
    if isinstance(got, (datetime.date, datetime.time)):
        return f'quote it: TOML reads {got.isoformat()} unquoted as a date or time of day ({name} = "{got.isoformat()}")'
    if kind in ("tuple_type", "list_type") and isinstance(got, str):
        items = [part.strip() for part in got.split(",") if part.strip()] or [got]
        return f"write a list: {name} = [{', '.join(repr(i).replace(chr(39), chr(34)) for i in items)}]"
    if kind in ("tuple_type", "list_type"):
        return f'write a list: {name} = [...]'
    return "give a value of the expected type"


def _model_at(model: type[BaseModel], loc: list[Any]) -> type[BaseModel] | None:
    """The model of the table at `loc` under `model` (through lists, dicts and optionals), or None."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if not isinstance(current, type) or not issubclass(current, BaseModel):
            return None
        if isinstance(part, str) and part in current.model_fields:
            current = _inner_model(current.model_fields[part].annotation)
        # an int (a list index) or another str (a dict key, e.g. a site's name) keeps the item model
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    """The first pydantic model in a field's type (list[Site] -> Site, dict[str, Site] -> Site)."""
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _nearest_key_fix(unknown: str, model: type[BaseModel] | None) -> str | None:
    """'remove it, or did you mean KEY?' with the table's key nearest `unknown` (one that begins
    with it, else the closest spelling), or None."""
    import difflib

    if model is None:
        return None
    keys = sorted({field.alias or name for name, field in model.model_fields.items()})
    near = ([k for k in keys if k.startswith(unknown) or unknown.startswith(k)]
            or difflib.get_close_matches(unknown, keys, n=1, cutoff=0.6))
    return f"remove it, or did you mean {near[0]}?" if near else None


def format_loc(loc: list[Any]) -> str:
    """('run', 2, 'revision') -> 'run[2].revision'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def locate(text: str, loc: list[Any]) -> int | None:
    """Best-effort 1-based line of a key path in TOML text: the n-th [[table]], then tables and keys."""
    lines = text.splitlines()
    start = 0
    matched = False
    i = 0
    while i < len(loc):
        part = loc[i]
        nxt = loc[i + 1] if i + 1 < len(loc) else None
        if isinstance(part, str) and isinstance(nxt, int):
            header = re.compile(rf"^\s*\[\[\s*{re.escape(part)}\s*\]\]")
            hits = [n for n in range(start, len(lines)) if header.match(lines[n])]
            if nxt >= len(hits):
                return None
            start, matched = hits[nxt], True
            i += 2
            continue
        if isinstance(part, str):
            table = re.compile(rf"^\s*\[\s*(?:[\w.\"-]+\.)?\"?{re.escape(part)}\"?\s*\]")
            keyline = re.compile(rf"^\s*\"?{re.escape(part)}\"?\s*=")
            for n in range(start, len(lines)):
                if n > start and matched and lines[n].lstrip().startswith("["):
                    break  # the key is not in the current table
                if keyline.match(lines[n]) or table.match(lines[n]):
                    start, matched = n, True
                    break
        i += 1
    return start + 1 if matched else None
