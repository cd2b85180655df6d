"""Formatting shared by the reports of every benchmark kind: CSV and Markdown tables, number
cells (rates to 4 decimals, durations to 2, as lrb's leaderboards; Python's shortest float text, so
the same inputs give the same bytes) and the digest lines of a summary."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, BinaryIO, TextIO

from kit.errors import visible
from kit.results import keys
from kit.results.records import CheckpointRecord, decoding, groups

RATE_DIGITS = 4
SECONDS_DIGITS = 2


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as CSV text: a header, '\\n' line ends, quoting only where needed, every cell through
    csv_cell (no cell a spreadsheet would run as a formula)."""
    buf = io.StringIO()
    _write_csv(buf, columns, rows)
    return buf.getvalue()


def write_csv(fh: BinaryIO, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """The bytes of csv_text(columns, rows) (UTF-8) written to a binary file as each row is made: a
    sweep's aggregates.csv (20,000 rows) is never held as text."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=False)
    try:
        _write_csv(text, columns, rows)
        text.flush()
    finally:
        text.detach()   # the caller's file stays open


def _write_csv(out: TextIO, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    import csv

    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)


# what makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell as data, never a formula: text from a checkpoint (a run name, an answer) that starts
    with =, +, -, @, a tab or a carriage return gets a leading apostrophe; numbers are kept."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


# an underscore between two letters or digits emphasises nothing (CommonMark), so model_revision stays readable
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>|#!~$&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _visible(value: Any) -> str:
    """str(value) with control characters (newlines included) shown as escapes: one line of text."""
    return visible(str(value))


class Markdown(str):
    """Text that is Markdown already (made by md_code or md_text): a table puts it in as it is."""


def md_code(value: Any) -> Markdown:
    """`value` (a run, language or file name from a checkpoint) as an inline Markdown code span that
    nothing in it can end or break out of: fenced with more backticks than any run of them inside,
    on one line."""
    body = _visible(value)
    fence = "`" * (max(map(len, re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return Markdown(f"{fence}{pad}{body}{pad}{fence}")


def md_text(value: Any) -> Markdown:
    """`value` as plain Markdown text on one line: every character Markdown or HTML gives a meaning
    (emphasis, links, code, tags, tables, headings) backslash-escaped."""
    if isinstance(value, Markdown):
        return value
    return Markdown(_MARKDOWN_SPECIAL.sub(r"\\\1", _visible(value)))


def text(value: Any) -> str:
    """A cell: the value as text, empty for None."""
    return "" if value is None else str(value)


def rate(value: Any) -> str:
    """A rate cell: rounded to RATE_DIGITS decimals, shortest float text."""
    return _number(value, RATE_DIGITS)


def seconds(value: Any) -> str:
    """A duration cell: rounded to SECONDS_DIGITS decimals."""
    return _number(value, SECONDS_DIGITS)


def _number(value: Any, digits: int) -> str:
    if value is None:
        return ""
    return repr(round(float(value), digits) + 0.0)  # + 0.0 turns -0.0 into 0.0


def markdown_table(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> list[str]:
    """A Markdown table: header, separator, one line per row (each cell as md_text: plain text)."""

    def cells(values: Iterable[str]) -> str:
        return "| " + " | ".join(map(md_text, values)) + " |"

    return [cells(columns), "|" + "---|" * len(columns)] + [cells(row[c] for c in columns) for row in rows]


def digest_lines(valid: Sequence[CheckpointRecord]) -> list[str]:
    """Markdown bullet lines: the manifest, prompt, decoding and data digests the records share."""
    manifests = sorted({r.metadata[keys.MANIFEST_SHA256] for r in valid if r.metadata.get(keys.MANIFEST_SHA256)})
    legacy = sum(1 for r in valid if not r.metadata.get(keys.MANIFEST_SHA256))
    # every value from a checkpoint through md_code or md_text: a digest, a language or a decoding may
    # hold a backtick, a tag or a newline
    lines = [f"- {keys.MANIFEST_SHA256}: " + (", ".join(md_code(m) for m in manifests) or "not recorded")
             + (f" (not recorded by {legacy} legacy lrb file(s))" if manifests and legacy else "")]
    # one prompt per prompt kind (lrb asks rerankers, zero-shot classifiers and masked LMs with prompts of
    # their own); a scoring file whose decision rule does not tell its kind may have any, each listed
    for kind, group in groups(valid, lambda r: r.prompt_kind or ""):
        digests = sorted({str(r.metadata.get(keys.PROMPT_SHA256)) for r in group})
        what = f"{md_text(kind)} prompt" if kind else f"{md_text(group[0].task)}, prompt kind not recorded"
        lines.append(f"- {keys.PROMPT_SHA256} ({what}): {', '.join(md_code(d) for d in digests)}")
    for task, group in groups(valid, lambda r: r.task):
        if task == keys.TASK_GENERATE:
            how, max_new = decoding(group[0])
            lines.append(f"- decoding ({md_text(task)}): {md_text(how)}, {keys.MAX_NEW_TOKENS}={md_text(max_new)}")
    for language, group in groups(valid, lambda r: r.language):
        lines.append(f"- {keys.BENCHMARK_SHA256} ({md_text(language)}): "
                     f"{md_code(group[0].metadata.get(keys.BENCHMARK_SHA256))}")
    return lines
