"""The front of a report whose results tree holds only lrb batch folders (RESULTS/qwen3-20260913/,
RESULTS/strict-8-tokens/, ...): each batch has its own report under OUT/batches/<batch>/, as lrb keeps a
leaderboard per folder, and OUT gets a summary and an index page that lead to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kit.files import write_text_atomic
from kit.results.html_page import Cell, link, page, table
from kit.results.records import CheckpointRecord
from kit.results.tables import md_code, md_text

# the folder of OUT that holds one report per lrb batch folder
BATCHES_DIR = "batches"
SUMMARY = "summary.md"
INDEX = "index.html"


def write_batches_index(folder: Path, batches: Mapping[str, Path], own: Sequence[CheckpointRecord]) -> dict[str, Path]:
    """Write folder/summary.md and folder/index.html naming each batch's report (`batches`: batch -> its
    HTML index, inside `folder`) and the tree's own files that could not be counted; the files by role."""
    folder = Path(folder)
    rows = [(name, (index.parent / "leaderboard.csv").relative_to(folder).as_posix(),
             index.relative_to(folder).as_posix()) for name, index in sorted(batches.items())]
    lines = ["# Report", "", "This results folder has no results of its own: each of lrb's batch folders "
             "has its own leaderboard, as lrb keeps one per folder.", "",
             "| batch | leaderboard | HTML report |", "|---|---|---|"]
    lines += [f"| {md_text(name)} | {md_code(csv)} | {md_code(html)} |" for name, csv, html in rows]
    uncounted = [r for r in own if not r.valid]
    if uncounted:
        lines += ["", "## Not counted", ""]
        lines += [f"- {md_code(r.name)}: {md_text('; '.join(r.reasons) or r.state)}" for r in uncounted]
    write_text_atomic(folder / SUMMARY, "\n".join(lines) + "\n", durable=False)
    body = table(("batch", "report"), [(name, Cell(link(html, "leaderboard and pages"))) for name, _, html in rows])
    write_text_atomic(folder / INDEX, page("Report: lrb batch folders", body), durable=False)
    return {"summary": folder / SUMMARY, "html": folder / INDEX}


def link_batches(folder: Path, batches: Mapping[str, Path]) -> None:
    """Add to the tree's own report in `folder` (its summary.md and index.html) a section naming each
    batch folder's report."""
    folder = Path(folder)
    rows = sorted((name, index.relative_to(folder).as_posix()) for name, index in batches.items())
    summary = folder / SUMMARY
    if summary.is_file():
        extra = ["", "## lrb batch folders", "", "Each has its own report, as lrb keeps a leaderboard per folder:", ""]
        extra += [f"- {md_text(name)}: {md_code(html)}" for name, html in rows]
        write_text_atomic(summary, summary.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(extra) + "\n",
                          durable=False)
    index = folder / INDEX
    if index.is_file():
        section = ("<h2>lrb batch folders</h2>\n<p>Each has its own report, as lrb keeps a leaderboard per folder.</p>\n"
                   + table(("batch", "report"), [(name, Cell(link(html, "leaderboard and pages"))) for name, html in rows]))
        text = index.read_text(encoding="utf-8")
        at = text.rfind("</body>")
        write_text_atomic(index, text[:at] + section + text[at:], durable=False)
