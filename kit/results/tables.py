"""Formatting shared by the reports of every benchmark kind: CSV and Markdown tables, number
cells (rates to 4 decimals, durations to 2, as lrb's leaderboards; Python's shortest float text, so
the same inputs give the same bytes) and the digest lines of a summary."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kit.results import keys
from kit.results.records import CheckpointRecord, decoding, groups

RATE_DIGITS = 4
SECONDS_DIGITS = 2


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, str]]) -> str:
    """Rows as CSV text: a header, '\\n' line ends, quoting only where needed."""
    import csv

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


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
    """A Markdown table: header, separator, one line per row (pipes in cells escaped)."""

    def cells(values: Iterable[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    return [cells(columns), "|" + "---|" * len(columns)] + [cells(row[c] for c in columns) for row in rows]


def digest_lines(valid: Sequence[CheckpointRecord]) -> list[str]:
    """Markdown bullet lines: the manifest, prompt, decoding and data digests the records share."""
    manifests = sorted({r.metadata[keys.MANIFEST_SHA256] for r in valid if r.metadata.get(keys.MANIFEST_SHA256)})
    legacy = sum(1 for r in valid if not r.metadata.get(keys.MANIFEST_SHA256))
    lines = [f"- {keys.MANIFEST_SHA256}: " + (", ".join(f"`{m}`" for m in manifests) or "not recorded")
             + (f" (not recorded by {legacy} legacy lrb file(s))" if manifests and legacy else "")]
    for task, group in groups(valid, lambda r: r.task):
        lines.append(f"- {keys.PROMPT_SHA256} ({task}): `{group[0].metadata.get(keys.PROMPT_SHA256)}`")
        if task == keys.TASK_GENERATE:
            how, max_new = decoding(group[0])
            lines.append(f"- decoding ({task}): {how}, {keys.MAX_NEW_TOKENS}={max_new}")
    for language, group in groups(valid, lambda r: r.language):
        lines.append(f"- {keys.BENCHMARK_SHA256} ({language}): `{group[0].metadata.get(keys.BENCHMARK_SHA256)}`")
    return lines
