"""Run mlperf-logging's compliance checker with kit's ruleset over one pair's :::MLLOG file."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from kit import safejson
from kit.errors import MissingExtraError
from kit.files import file_sha256

USAGE = "training"      # the checker only accepts training|hpc; the ruleset version only picks the line parser
RULESET = "6.1.0"


@functools.lru_cache(maxsize=None)
def ruleset_path(ruleset: str) -> Path:
    """One of kit's shipped compliance YAMLs (each benchmark kind names its own: ResultKind.ruleset)."""
    return Path(str(resources.files("kit") / "defaults" / ruleset))


MLLOG_PREFIX = ":::MLLOG "
# The checker's own line parsing (what reads a log of a ruleset kit has no line parser for, _check_file)
# is superlinear on deeply nested brackets (a 400 KB line takes a minute, a 64 KB one 2 s), so a log past
# these is a finding, not handed to it. kit's own logs are a few KB, their lines under 2 KB.
MAX_LOG_BYTES = 4 << 20
MAX_LINE_BYTES = 16 << 10
# and its time grows with a line's nesting: 256 lines of 16 KiB of brackets would still take a minute
MAX_LINE_BRACKETS = 512


def run_stop_checkpoint_sha256(log: Path, events: dict[str, dict[str, Any]] | None = None) -> str | None:
    """The checkpoint digest the job wrote in the log's last run_stop line; None when it wrote none
    (or the log cannot be read). `events`: the log's log_events, when already read."""
    meta = (log_events(log) if events is None else events).get("run_stop", {}).get("metadata")
    value = meta.get("checkpoint_sha256") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def logged_metrics(log: Path, events: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The metrics the job logged in its last eval_accuracy line: {metric name: value}; the line's
    value is its metadata's `metric` (accuracy when it names none). Empty when it logged none.
    `events`: the log's log_events, when already read."""
    entry = (log_events(log) if events is None else events).get("eval_accuracy")
    if not entry:
        return {}
    meta = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
    out = {k: v for k, v in meta.items() if k != "metric"}
    out[meta.get("metric", "accuracy")] = entry.get("value")
    return out


def log_events(log: Path) -> dict[str, dict[str, Any]]:
    """The last :::MLLOG line of each key in a log (read up to MAX_LOG_BYTES); empty when it cannot be read."""
    try:
        with open(log, "rb") as fh:
            lines = fh.read(MAX_LOG_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        if not line.startswith(MLLOG_PREFIX):
            continue
        try:
            entry = safejson.loads_utf8(line[len(MLLOG_PREFIX):].encode("utf-8"))
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            found[entry["key"]] = entry
    return found


def log_unreadable(log: Path) -> str | None:
    """Why a log that is there cannot be read (no permission, an I/O error), or None: said as that, never
    as a log that records nothing."""
    try:
        with open(log, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        return f"its log {log.name} cannot be read ({exc.strerror or exc})"
    return None


def edited_since_logged(checkpoint: Path) -> str | None:
    """Why a checkpoint is not the file its job logged (the sha256 in its log's run_stop line), or
    None when it is, or when it has no log (lrb's own files; `kit check` reports a missing log)."""
    log = Path(checkpoint).with_suffix(".mllog")
    if not log.is_file():
        return None
    unreadable = log_unreadable(log)
    if unreadable:
        return unreadable
    events = log_events(log)
    recorded, actual = run_stop_checkpoint_sha256(log, events), file_sha256(checkpoint)
    if recorded is None:
        return f"its log {log.name} records no checkpoint digest (run_stop.metadata.checkpoint_sha256)"
    if recorded != actual:
        return f"sha256 {actual[:16]} is not the {recorded[:16]} its job logged: the file was changed after the job wrote it"
    return metrics_unlike_logged(checkpoint, log, events=events)


def metrics_unlike_logged(checkpoint: Path, log: Path, *, metrics: Any = None,
                          events: dict[str, dict[str, Any]] | None = None) -> str | None:
    """Why a checkpoint's metrics are not those its job logged (eval_accuracy), or None when they are
    (or the log holds none): a checkpoint edited together with its logged digest still differs here.
    `metrics`: the checkpoint's metrics section as just read from it (else it is read again); `events`:
    the log's log_events, when already read."""
    logged = logged_metrics(log, events)
    if metrics is None:
        try:
            metrics = safejson.loads_utf8(Path(checkpoint).read_bytes()).get("metrics")
        except (OSError, ValueError, AttributeError):
            return None
    if not isinstance(metrics, dict):
        return None
    for name, value in sorted(logged.items()):
        if name in metrics and metrics[name] != value:
            return (f"metrics.{name} {metrics[name]!r} is not the {value!r} its job logged (eval_accuracy): "
                    "the file was changed after the job wrote it")
    return None


def check_mllog(log: Path, ruleset: str) -> list[str]:
    """Problems the compliance checker finds in one pair's log under `ruleset` (empty when it passes)."""
    mlp_compliance = _checker()
    if not Path(log).is_file():
        return [f"{log}: no :::MLLOG file beside the checkpoint"]
    oversize = _oversize(Path(log))
    if oversize:
        return [f"{log}: {oversize}; not handed to the compliance checker"]
    checker = mlp_compliance.make_checker(USAGE, RULESET, quiet=True, werror=False)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.CRITICAL)  # the checker logs through the root logger; keep our output to the findings
    try:
        ok = _check_file(checker, Path(log), str(ruleset_path(ruleset)))
    except Exception as exc:  # noqa: BLE001 - a malformed log can make the checker raise
        return [f"{log}: compliance checker failed: {type(exc).__name__}: {exc}"]
    finally:
        root.setLevel(level)
    if ok:
        return []
    messages = [*checker.overwritable.values(), *checker.not_overwritable]
    return [f"{log}: " + " ".join(str(m).split())[:300] for m in messages] or [f"{log}: FAILED"]


def _check_file(checker: Any, log: Path, config: str) -> bool:
    """checker.check_file(log, config), with the log's lines read here: the checker's own reader finds each
    line's MLLOG token with the regex `.*TOKEN`, which re.sub tries again at every later position of the
    line, so a line costs the square of its length (a job's provenance line is 2 KB: two thirds of a log's
    check). Each line is cut at its last token as that regex cuts it, then parsed by the ruleset's own line
    parser; the checker's checks and verdict are its own. Without that parser (another ruleset), its reader."""
    import importlib

    try:
        parser = importlib.import_module(_LINE_PARSERS[RULESET])
        token, to_logline = parser.TOKEN, parser.string_to_logline
    except (KeyError, ImportError, AttributeError):
        return checker.check_file(str(log), config)
    loglines, errors = [], 0
    with open(log, encoding="latin-1") as fh, _same_json(parser):   # the checker's own reading of a log
        for line in fh:
            at = line.rfind(token)
            if at < 0:
                continue
            try:
                loglines.append(to_logline(len(loglines) + errors, line[at:].strip()))
            except ValueError:
                errors += 1
    if errors:
        checker.put_message("Log lines had parsing errors.")
    checker.check_loglines(loglines, config)
    checker.log_messages()
    return not checker.has_messages()


# RULESET's line parser in mlperf-logging (the module mlp_parser.parse_file picks for it)
_LINE_PARSERS = {"6.1.0": "mlperf_logging.compliance_checker.mlp_parser.ruleset_610"}


@contextlib.contextmanager
def _same_json(parser: Any) -> Iterator[None]:
    """While kit reads a log's lines (_check_file), the line parser's json module is _SameJson: Python's
    parser took a fifth of a report's reading. Put back after, so the checker's own reading is untouched."""
    if getattr(parser, "json", None) is not json:   # another parser than the one known: as it is
        yield
        return
    parser.json = _SameJson()
    try:
        yield
    finally:
        parser.json = json


class _SameJson:
    """The json module as the checker's line parser sees it, except that its loads is
    kit.safejson.loads_as_json: the same document and errors as json.loads, parsed by orjson where
    the two agree."""

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    @staticmethod
    def loads(text: Any, **options: Any) -> Any:
        """json.loads(text, **options); text without options: safejson.loads_as_json(text)."""
        return safejson.loads_as_json(text) if isinstance(text, str) and not options else json.loads(text, **options)


def _checker() -> Any:
    """mlperf-logging's compliance checker module, reading each ruleset file once per process (_ParsedOnce)."""
    try:
        from mlperf_logging.compliance_checker import mlp_compliance
    except ImportError:
        raise MissingExtraError("kit check's MLPerf log rules", "mlperf_logging", "worker") from None
    loader = getattr(mlp_compliance, "yaml", None)
    if loader is not None and not isinstance(loader, _ParsedOnce):
        mlp_compliance.yaml = _ParsedOnce(loader)
    return mlp_compliance


class _ParsedOnce:
    """The yaml module as the checker's module sees it, except that a ruleset file it loads is parsed once per
    process and handed out as a fresh copy. The checker parses its ruleset again for every log it checks:
    seven tenths of a log's check, and a release has thousands of logs. A file is known by its path, size,
    times and inode, so a ruleset changed on disk is parsed again."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._parsed: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def load(self, stream: Any, Loader: Any = None) -> Any:  # noqa: N803 - yaml's own keyword
        """yaml.load(stream, Loader=Loader), from the copy parsed before when `stream` is a file seen before."""
        import os

        try:
            st = os.fstat(stream.fileno())
            key = (stream.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, Loader)
        except (AttributeError, OSError, ValueError):   # not a file: as yaml would
            return self._module.load(stream, Loader=Loader)
        if key not in self._parsed:
            self._parsed[key] = _compiled_rules(self._module.load(stream, Loader=Loader))
        return _fresh_copy(self._parsed[key])


def _fresh_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """copy.deepcopy of a parsed YAML document at under half its cost: every dict and list new (one
    copy of each, as deepcopy keeps a YAML alias's sharing), the values no check can change (text,
    numbers, compiled code) shared, anything else deep-copied."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    memo = {} if memo is None else memo
    done = memo.get(id(value))
    if done is not None:
        return done
    out: Any
    if kind is dict:
        out = memo[id(value)] = {}
        for key, inner in value.items():
            out[key] = _fresh_copy(inner, memo)
        return out
    if kind is list:
        out = memo[id(value)] = []
        out.extend(_fresh_copy(inner, memo) for inner in value)
        return out
    import copy

    out = memo[id(value)] = copy.deepcopy(value)
    return out


# the code a ruleset's records hold, by record and field, and how the checker runs it (eval or exec)
_CODE_FIELDS = {"KEY": {"CHECK": "eval", "FIRST_CHECK": "eval", "ATLEAST_ONE_CHECK": "eval", "PRE": "exec",
                        "POST": "exec"},
                "BEGIN": {"CODE": "exec"}, "END": {"PRE": "exec", "CHECK": "eval"}}


def _compiled_rules(rules: Any) -> Any:
    """A parsed ruleset with the code of its records compiled once (_Compiled): the checker hands each
    CHECK string to eval for every line of every log, and compiling it is 98% of an eval's cost (two
    thirds of a log's check). Anything not laid out as the checker reads it is left as it is."""
    if not isinstance(rules, list):
        return rules
    for record in rules:
        if not (isinstance(record, dict) and len(record) == 1):
            continue
        (kind, body), = record.items()
        fields = _CODE_FIELDS.get(kind)
        if fields is None or not isinstance(body, dict):
            continue
        for name, mode in fields.items():
            value = body.get(name)
            if isinstance(value, str):
                body[name] = _Compiled.of(value, mode)
            elif isinstance(value, list):
                body[name] = [_Compiled.of(v, mode) if isinstance(v, str) else v for v in value]
    return rules


class _Compiled(str):
    """A ruleset's code text that the checker strips and then runs: `strip()` gives the code compiled
    (what eval and exec of the stripped text would compile, the same file name "<string>"); as text
    (a finding quotes the failed test) it is the text."""

    _code: Any

    @classmethod
    def of(cls, text: str, mode: str) -> str:
        """The text, compiled in `mode`; the plain text when it does not compile (the checker then
        meets the error itself, as it would have)."""
        try:
            code = compile(text.strip(), "<string>", mode, dont_inherit=True)
        except (SyntaxError, ValueError):
            return text
        out = cls(text)
        out._code = code
        return out

    def strip(self, chars: str | None = None) -> Any:   # type: ignore[override]
        """The compiled code (the checker strips only to run it); with `chars`, str.strip."""
        return self._code if chars is None else str.strip(self, chars)

    def __deepcopy__(self, memo: Any) -> "_Compiled":
        return self   # immutable: shared by every copy of the parsed ruleset

    def __copy__(self) -> "_Compiled":
        return self


# what a parsed ruleset holds that no check can change (_fresh_copy shares them)
_IMMUTABLE = frozenset({str, _Compiled, int, float, bool, type(None), bytes})


def _oversize(log: Path) -> str | None:
    """Why the log is too large for the checker (whole file or one line), or None."""
    try:
        if log.stat().st_size > MAX_LOG_BYTES:
            return f"log too large (over {MAX_LOG_BYTES} bytes)"
        with open(log, "rb") as fh:
            for line in fh:
                if len(line) > MAX_LINE_BYTES:
                    return f"line too long (over {MAX_LINE_BYTES} bytes)"
                if line.count(b"[") + line.count(b"{") > MAX_LINE_BRACKETS:
                    return f"line with over {MAX_LINE_BRACKETS} brackets (kit's own lines have a few dozen)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None
