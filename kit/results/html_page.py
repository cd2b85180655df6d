"""The pieces of kit's static HTML report: escaped cells and tables, the page frame, and where each
page lies. Standard library only; no JavaScript. Every text that comes from a result file goes
through `esc` (result files are untrusted input), every link is relative, so the report works from
a file:// URL and when its folder is copied elsewhere.

Layout of the report folder (OUT):
    index.html              the kind's overview (leaderboard or scores), plots, files not counted
    *.png                   plots, beside the index
    pages/result-*.html     one page per counted checkpoint (run x language)
    pages/language-*.html   one page per language (a LightEval suite: per task)
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import quote

INDEX = "index.html"
PAGES = "pages"

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 80em; padding: 0 1em; color: #1a1a1a; }
nav { margin-bottom: 1em; } nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; display: block; overflow-x: auto; } caption { text-align: left; font-weight: bold; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #e8eef6; } tr:nth-child(even) td { background: #f7f7f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
pre { background: #f2f2f2; padding: 0.6em; white-space: pre-wrap; }
.pass { color: #11702b; font-weight: bold; } .fail { color: #b00020; font-weight: bold; }
.note { color: #555; } img { max-width: 100%; }
"""


def esc(value: Any) -> str:
    """A value as HTML text: None as an em dash, everything else str()'d and escaped (quotes too)."""
    if value is None:
        return "—"
    # html.escape(text, quote=True), inlined: a report escapes hundreds of thousands of cells
    return (str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))


def code(value: Any) -> str:
    """A value as escaped <code>."""
    return f"<code>{esc(value)}</code>"


def link(href: str, text: Any) -> str:
    """An <a> with an href kit made (relative, already URL-quoted) and escaped text."""
    return f'<a href="{html.escape(href, quote=True)}">{esc(text)}</a>'


def image(src: str, alt: str) -> str:
    """An <img> of a file beside the page, linked to the file itself (full size)."""
    src = html.escape(src, quote=True)
    return f'<a href="{src}"><img src="{src}" alt="{esc(alt)}"></a>'


@dataclass(frozen=True)
class Cell:
    """A table cell holding HTML that kit built (links, code); plain values are escaped instead."""

    markup: str
    numeric: bool = False


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    """An HTML table: escaped headers, each cell escaped unless it is a Cell; numbers right-aligned."""
    return "".join(table_pieces(columns, rows, caption))


def table_pieces(columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> Iterator[str]:
    """table()'s text in pieces, a row each, made as they are asked for: a page written piece by piece (a
    release's index lists tens of thousands of results) never holds its rows' text at once."""
    yield _table_head(columns, caption)
    empty = True
    for row in rows:
        empty = False
        yield "<tr>" + "".join(map(_cell, row)) + "</tr>\n"
    yield _table_end(empty)


def _table_head(columns: Sequence[str], caption: str | None) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>\n"


def _table_end(empty: bool) -> str:
    return "\n</tbody></table>\n" if empty else "</tbody></table>\n"


def _cell(value: Any) -> str:
    """One <td>: a Cell's markup as it is, anything else escaped; numbers (and number-like text) right-aligned."""
    if isinstance(value, Cell):
        return f'<td class="num">{value.markup}</td>' if value.numeric else f"<td>{value.markup}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool) or _is_number(value):
        return f'<td class="num">{esc(value)}</td>'
    return f"<td>{esc(value)}</td>"


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def _is_number(value: Any) -> bool:
    return isinstance(value, str) and _NUMBER.fullmatch(value) is not None


def key_values(items: Iterable[tuple[str, Any]], caption: str | None = None) -> str:
    """A two-column table of (key, value) pairs, values as escaped <code>: table()'s text for the rows
    (key, Cell(code(value))), made without a Cell each (a report's pages hold half a million of them)."""
    rows = [f"<tr>{_cell(k)}<td><code>{esc(v)}</code></td></tr>\n" for k, v in items]
    return _table_head(_KEY_VALUE, caption) + "".join(rows) + _table_end(not rows)


_KEY_VALUE = ("key", "value")


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested objects as (dotted key, leaf value) pairs in key order; lists and scalars are leaves."""
    if isinstance(data, Mapping) and data:
        out: list[tuple[str, Any]] = []
        for key in sorted(data, key=str):
            out += flatten(data[key], f"{prefix}.{key}" if prefix else str(key))
        return out
    return [(prefix, data)]


def page(title: str, body: str, nav: Sequence[tuple[str, str]] = (), generator: str | None = None) -> str:
    """A whole HTML page: escaped title, inline CSS, a navigation bar of (href, text) links, the body;
    with `generator`, a generator meta line naming what wrote it (a page written on its own, whose
    replacement kit.outputs.check_output_file allows only over its own)."""
    return "".join(page_pieces(title, [body], nav, generator))


def generator_meta(generator: str) -> str:
    """The meta line page() writes for `generator`."""
    return f'<meta name="generator" content="{esc(generator)}">\n'


def page_pieces(title: str, body: Iterable[str], nav: Sequence[tuple[str, str]] = (),
                generator: str | None = None) -> Iterator[str]:
    """page()'s text in pieces, around a body given in pieces (see table_pieces), each passed on as it comes."""
    bar = "<nav>" + " ".join(link(h, t) for h, t in nav) + "</nav>\n" if nav else ""
    yield ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
           + (generator_meta(generator) if generator else "") +
           f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
           f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{bar}"
           f"<h1>{esc(title)}</h1>\n")
    yield from body
    yield "</body>\n</html>\n"


def slug(kind: str, name: str) -> str:
    """A page file name for a name from a result file: safe characters only, made unique by a digest
    of the whole name (two names that read alike after sanitizing still get two pages)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{kind}-{safe}-{digest}.html" if safe else f"{kind}-{digest}.html"


@dataclass(frozen=True)
class PageLinks:
    """Where each page and file of the report is, as a relative href from the index (root "") or
    from a page in pages/ (root "../")."""

    results: Mapping[str, str] = field(default_factory=dict)     # record name (lang/file.json) -> page file
    languages: Mapping[str, str] = field(default_factory=dict)   # language -> page file
    root: str = ""

    def result(self, name: str) -> str | None:
        """The href of a result's page (None when it has none)."""
        page_file = self.results.get(name)
        return None if page_file is None else f"{self.root}{PAGES}/{quote(page_file)}"

    def language(self, language: str) -> str | None:
        """The href of a language's page (None when it has none)."""
        page_file = self.languages.get(language)
        return None if page_file is None else f"{self.root}{PAGES}/{quote(page_file)}"

    def page(self, page_file: str) -> str:
        """The href of a page in pages/ by its file name."""
        return f"{self.root}{PAGES}/{quote(page_file)}"

    def file(self, name: str) -> str:
        """The href of a file beside the index (a plot, a CSV)."""
        return self.root + quote(name)

    def index(self) -> str:
        """The href of the index."""
        return self.root + INDEX

    def from_page(self) -> "PageLinks":
        """The same links as seen from a page in pages/."""
        return replace(self, root="../")


def titled_link(href: str, text: Any, title: str) -> str:
    """An <a> as `link`, with a tooltip (escaped)."""
    return f'<a href="{html.escape(href, quote=True)}" title="{esc(title)}">{esc(text)}</a>'


def maybe_link(href: str | None, text: Any) -> Cell:
    """A cell linking to href, or the escaped text alone when there is no page."""
    return Cell(esc(text) if href is None else link(href, text))


V = TypeVar("V")


class OnDemand(Mapping[str, V]):
    """A mapping of `names` to sections of HTML (or pages) built by `build(name)` each time one is asked
    for, so that a report of thousands of results holds none of them (each page is written once)."""

    def __init__(self, names: Iterable[str], build: Callable[[str], V]) -> None:
        self._names = dict.fromkeys(names)
        self._build = build

    def __getitem__(self, name: str) -> V:
        if name not in self._names:
            raise KeyError(name)
        return self._build(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True)
class HtmlParts:
    """What a benchmark kind contributes to the HTML report (ResultKind.html_parts): the index's
    body, each language page's body, each result page's metrics section (by record name), and the
    plot files to write beside the index (name -> PNG bytes), and pages of the kind's own (a
    comparison of two runs) by file name."""

    title: str
    index: str
    languages: Mapping[str, str]   # a dict, or OnDemand: each language page built when it is written
    results: Mapping[str, str]   # a dict, or OnDemand: a release has thousands of result pages
    images: dict[str, bytes] = field(default_factory=dict)
    # more pages/ files: name -> (title, body); a dict, or OnDemand (a sweep's pages between neighbouring runs)
    pages: Mapping[str, tuple[str, str]] = field(default_factory=dict)
