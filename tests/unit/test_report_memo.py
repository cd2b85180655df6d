"""kit report asked again: an intact report whose inputs did not change is left as it is; any change to
what it reads (a checkpoint, its log or envelope, a verdict, an option, the report itself) writes it anew."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest_checkpoints import make_checkpoint, predictions_of

from kit.cli.main import cli
from kit.errors import ConfigError
from kit.outputs import INVENTORY
from kit.results import report_memo
from kit.results.report import write_report
from kit.results.store import envelope_path, mllog_path

RUNS = ("org/model-a", "org/model-b")
PAIRS = [("yes", "yes"), ("yes", "no"), ("no", "no"), ("no", "yes"), ("yes", "yes"), ("no", "no")]


@pytest.fixture(autouse=True)
def settled(monkeypatch):
    """Files written by a test are seconds old: taken as settled, as a tree written long ago would be."""
    monkeypatch.setattr(report_memo, "RACY_SECONDS", -1.0)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    for run in RUNS:
        for language in ("en", "fr"):
            make_checkpoint(root, run, language, predictions_of(PAIRS))
    return root


def _report(results: Path, out: Path, **kw):
    return write_report(results, out, verdicts=[], **kw)


def _stamps(out: Path) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_second_report_with_nothing_changed_leaves_every_file_as_it_was(results, tmp_path):
    out = tmp_path / "report"
    first = _report(results, out)
    before = _stamps(out)
    again = _report(results, out)
    assert not first.unchanged and again.unchanged
    assert _stamps(out) == before
    assert again.files == first.files and again.pairs == first.pairs == 4
    assert json.loads((out / INVENTORY).read_text())["memo"]["inputs"]


@pytest.mark.parametrize("change", ["checkpoint", "log", "envelope", "verdict", "include_stale", "runs"])
def test_a_change_to_what_the_report_reads_writes_it_anew(results, tmp_path, change):
    out = tmp_path / "report"
    verdicts = tmp_path / "reproduce"
    verdicts.mkdir()
    kw: dict = {"verdicts": [verdicts]}
    write_report(results, out, **kw)
    target = results / "en" / "org__model-a.json"
    if change == "checkpoint":   # the same bytes written again: a new file as far as anyone can tell
        target.write_bytes(target.read_bytes())
    elif change == "log":
        mllog_path(target).write_bytes(mllog_path(target).read_bytes() + b"\n")
    elif change == "envelope":
        envelope_path(target).write_text("{}\n")
    elif change == "verdict":
        (verdicts / "reproduce-org__model-a-en.json").write_text("{}\n")
    elif change == "include_stale":
        kw["include_stale"] = True
    else:
        kw["runs"] = [RUNS[0]]
    before = _stamps(out)
    again = write_report(results, out, **kw)
    assert not again.unchanged
    assert (out / "index.html").stat().st_mtime_ns != before["index.html"]


def test_a_page_removed_from_the_report_is_written_back(results, tmp_path):
    out = tmp_path / "report"
    _report(results, out)
    page = next((out / "pages").glob("result-*.html"))
    body = page.read_bytes()
    page.unlink()
    again = _report(results, out)
    assert not again.unchanged and page.read_bytes() == body


def test_a_page_edited_in_the_report_is_still_refused_naming_it(results, tmp_path):
    out = tmp_path / "report"
    _report(results, out)
    page = next((out / "pages").glob("result-*.html"))
    page.write_text("<p>edited</p>")
    with pytest.raises(ConfigError, match="changed since kit wrote it"):
        _report(results, out)
    assert page.read_text() == "<p>edited</p>"


def test_a_memo_that_names_files_outside_the_report_is_not_trusted(results, tmp_path):
    out = tmp_path / "report"
    _report(results, out)
    inventory = json.loads((out / INVENTORY).read_text())
    inventory["memo"]["roles"]["html"] = "../results/en/org__model-a.json"
    (out / INVENTORY).write_text(json.dumps(inventory))
    again = _report(results, out)
    assert not again.unchanged and again.files["html"] == out / "index.html"


def test_an_inventory_naming_a_file_outside_the_report_is_no_evidence_it_is_unchanged(results, tmp_path):
    out = tmp_path / "report"
    _report(results, out)
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    inventory = json.loads((out / INVENTORY).read_text())
    inventory["files"]["../outside.txt"] = hashlib.sha256(b"x").hexdigest()
    (out / INVENTORY).write_text(json.dumps(inventory))
    # an inventory naming a file outside its folder is none: the folder is no longer kit's to replace
    with pytest.raises(ConfigError, match="holds files kit did not write"):
        _report(results, out)
    assert outside.read_text() == "x"


def test_a_file_changed_within_the_racy_window_keeps_no_memo(results, tmp_path, monkeypatch):
    monkeypatch.setattr(report_memo, "RACY_SECONDS", 3600.0)
    out = tmp_path / "report"
    _report(results, out)
    assert "memo" not in json.loads((out / INVENTORY).read_text())
    assert not _report(results, out).unchanged


def test_a_changed_kit_source_writes_the_report_anew(results, tmp_path, monkeypatch):
    out = tmp_path / "report"
    _report(results, out)
    real = report_memo._code_identity()
    monkeypatch.setattr(report_memo, "_code_identity", lambda: [*real, "kit/results/html_report.py:1:2"])
    assert not _report(results, out).unchanged


def test_the_cli_says_unchanged_in_text_and_json(results, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "report"
    runner = CliRunner()
    first = runner.invoke(cli, ["report", str(results), "-o", str(out), "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["data"]["unchanged"] is False
    again = runner.invoke(cli, ["report", str(results), "-o", str(out)])
    assert again.exit_code == 0 and "unchanged: nothing the report reads changed" in again.output
    stamp = (out / "index.html").stat().st_mtime_ns
    time.sleep(0.01)
    os.utime(results / "fr" / "org__model-b.json")
    third = runner.invoke(cli, ["report", str(results), "-o", str(out), "--json"])
    assert json.loads(third.output)["data"]["unchanged"] is False
    assert (out / "index.html").stat().st_mtime_ns != stamp
