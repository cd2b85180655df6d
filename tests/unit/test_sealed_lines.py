"""The checkpoint cache's file format (kit.results.sealed_lines): an entry per line, sealed whole, read
and rewritten a line at a time, and nothing used or copied from a file that is not sealed as asked."""

from __future__ import annotations

import json

import pytest

from kit.results import sealed_lines
from kit.results.sealed_lines import read_entries, write_entries

KEY = bytes(range(32))
HEADER = {"format": 5, "code": "c0de", "results": "/data/results"}


@pytest.fixture
def path(tmp_path):
    return tmp_path / "entries.json"


def lines_of(path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_entries_written_are_read_back_each_through_keep(path):
    entries = {"fr/a.json": {"file": [1, 2], "verdicts": {"k": ["complete", [], []]}},
               "de/b \u00e9\t\n.json": {"summary": {"text": "tab\there, newline\nthere, \u2028"}}}
    write_entries(path, KEY, HEADER, entries)
    assert len(lines_of(path)) == 4   # header, two entries, HMAC
    assert read_entries(path, KEY, HEADER) == entries
    assert read_entries(path, KEY, HEADER, keep=lambda name, e: [name, *sorted(e)]) == {
        name: [name, *sorted(e)] for name, e in entries.items()}


def test_each_entry_is_kept_as_soon_as_it_is_parsed_before_the_next_line(path, monkeypatch):
    write_entries(path, KEY, HEADER, {f"l/{i}.json": {"i": i} for i in range(4)})
    events: list[str] = []
    real = sealed_lines.safejson.loads_own
    monkeypatch.setattr(sealed_lines.safejson, "loads_own", lambda raw: events.append("parse") or real(raw))
    read_entries(path, KEY, HEADER, keep=lambda name, e: events.append("keep") or e)
    # the header, then each entry's name and text parsed and kept before the next line is read
    assert events == ["parse"] + ["parse", "parse", "keep"] * 4


def test_a_rewrite_copies_unchanged_lines_as_they_are_replaces_changed_ones_and_merges_when_asked(path):
    write_entries(path, KEY, HEADER, {"a": {"v": [1]}, "b": {"v": [2]}, "c": {"v": [3]}})
    before = lines_of(path)
    write_entries(path, KEY, HEADER, {"b": {"v": [20]}, "d": {"v": [4]}},
                  merge=lambda old, new: {"v": old["v"] + new["v"]})
    after = lines_of(path)
    assert after[0] == before[0] and before[1] in after and before[3] in after   # a and c copied byte for byte
    assert read_entries(path, KEY, HEADER) == {"a": {"v": [1]}, "b": {"v": [2, 20]}, "c": {"v": [3]}, "d": {"v": [4]}}
    write_entries(path, KEY, HEADER, {"a": {"v": [9]}})   # no merge: replaced
    assert read_entries(path, KEY, HEADER)["a"] == {"v": [9]}


@pytest.mark.parametrize("spoil", ["edited", "cut short", "bytes after the HMAC", "another key", "another code",
                                   "another tree", "no header"])
def test_a_file_not_sealed_as_asked_is_read_as_empty_and_none_of_its_lines_is_copied(path, spoil):
    write_entries(path, KEY, HEADER, {"a": {"v": 1}, "b": {"v": 2}})
    key, header = KEY, dict(HEADER)
    text = path.read_bytes()
    if spoil == "edited":
        path.write_bytes(text.replace(b'{"v":1}', b'{"v":7}'))
    elif spoil == "cut short":
        path.write_bytes(text[:text.rindex(b"#hmac")])
    elif spoil == "bytes after the HMAC":
        path.write_bytes(text + b"\n")
    elif spoil == "another key":
        key = bytes(32)
    elif spoil == "another code":
        header["code"] = "other"
    elif spoil == "another tree":
        header["results"] = "/data/other"
    else:
        path.write_bytes(text[text.index(b"\n") + 1:])
    assert read_entries(path, key, header) == {}
    write_entries(path, key, header, {"c": {"v": 3}})
    assert read_entries(path, key, header) == {"c": {"v": 3}}


def test_an_entry_that_cannot_be_written_as_utf8_is_left_out_and_the_others_are_kept(path):
    write_entries(path, KEY, HEADER, {"a": {"text": "ok"}, "b": {"text": "\ud800"}, "c": {"text": "fine"}})
    assert read_entries(path, KEY, HEADER) == {"a": {"text": "ok"}, "c": {"text": "fine"}}


def test_a_file_of_the_old_single_document_format_is_read_as_empty(path):
    path.write_bytes(json.dumps({"format": 4, "code": "c0de", "entries": {"a": {}}}).encode() + b"\n#hmac-sha256 00\n")
    assert read_entries(path, KEY, HEADER) == {}
    assert read_entries(path.with_name("absent.json"), KEY, HEADER) == {}
