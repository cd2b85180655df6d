"""What stands at a checkpoint's name in a results tree is never skipped without a word: a folder, a pipe
or a broken link named <run>.json is an invalid checkpoint for every command; a folder that cannot be
listed stops the command naming it; a name with a newline or bytes that are not UTF-8 makes no line of
its own and no invalid JSON; collect's site trees are held to the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from inprocess import kit_in_process as kit  # noqa: E402
from test_evidence import EN, counted_everywhere_but, states  # noqa: E402
from test_hostile_inputs import refused  # noqa: E402
from test_stale_and_edited import sweep  # noqa: E402,F401


def kit_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """kit in a process of its own, its output as bytes (what a pipe or a JSON reader gets)."""
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, timeout=120)


def test_a_pipe_at_a_checkpoint_s_name_is_invalid_everywhere(sweep):
    path = sweep / EN
    path.unlink()
    os.mkfifo(path)
    counted_everywhere_but(sweep, "not a regular file")


def test_a_folder_at_a_checkpoint_s_name_is_invalid_in_every_tree_reader(sweep):
    """(`kit verify PATH` searches a folder it is given: the tree is verified instead.)"""
    path = sweep / EN
    path.unlink()
    path.mkdir()
    assert states(sweep) == {"de": "complete", "en": "invalid"}
    r = kit("verify", "results", cwd=sweep)
    assert r.returncode == 1 and f"FAIL  {EN}: not a regular file" in r.stdout, r.stdout
    for args, code in ((("check", "results"), 1), (("export", "lrb", "results", "-o", "exported"), 1),
                       (("report", "results", "-o", "report"), 1), (("release", "results", "-o", "release"), None)):
        r = kit(*args, cwd=sweep)
        assert (r.returncode == code if code else r.returncode != 0) and "not a regular file" in r.stdout + r.stderr, args
    assert not (sweep / "exported").exists() and not (sweep / "release").exists()


def test_a_broken_link_at_a_checkpoint_s_name_is_invalid_not_pending(sweep):
    path = sweep / EN
    path.unlink()
    path.symlink_to(sweep / "gone.json")
    r = kit("status", "results", "--languages", "de,en", "--json", cwd=sweep)
    pairs = {p["language"]: p for p in json.loads(r.stdout)["data"]["pairs"]}
    assert pairs["en"]["state"] == "invalid" and "a broken link" in pairs["en"]["reasons"][0]
    r = kit("report", "results", "-o", "report", cwd=sweep)
    assert r.returncode == 1 and "a broken link" in r.stderr
    r = kit("export", "lrb", "results", "-o", "exported", cwd=sweep)
    assert r.returncode == 1 and not (sweep / "exported").exists()


def test_a_results_folder_that_cannot_be_listed_stops_the_command_naming_it(sweep, monkeypatch):
    """(As root every folder can be listed: the refusal is made to happen.)"""
    real = os.scandir
    blocked = str(sweep / "results" / "en")

    def scandir(path="."):
        if os.path.abspath(os.fspath(path)) == blocked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    for args in (("verify", "results"), ("report", "results", "-o", "report"), ("export", "lrb", "results", "-o", "ex"),
                 ("check", "results")):
        refused(kit(*args, cwd=sweep), "results/en: results folder cannot be read (Permission denied)", "chmod u+rx")
    assert not (sweep / "report").exists() and not (sweep / "ex").exists()


def test_a_file_name_with_a_newline_makes_no_line_of_its_own(sweep):
    odd = sweep / "results" / "en" / "org__model\nOK    results-a.json"
    odd.write_bytes((sweep / EN).read_bytes())
    outputs = [kit("verify", "results", cwd=sweep).stdout, kit("check", "results", cwd=sweep).stdout,
               kit("report", "results", "-o", "report", cwd=sweep).stderr]
    for text in outputs:
        assert "\\nOK    results-a.json" in text, text
        assert not any(line.startswith("OK    results-a.json") for line in text.splitlines()), text


@pytest.mark.slow   # kit in subprocesses: 2.2 s
def test_a_file_name_that_is_not_utf8_gives_valid_json_and_files(sweep):
    odd = os.fsencode(sweep / "results" / "en") + b"/org__model-a\xff.json"
    with open(odd, "wb") as fh:
        fh.write((sweep / EN).read_bytes())
    for args in (("verify", "results", "--json"), ("report", "results", "-o", "report", "--json"),
                 ("check", "results", "--json")):
        r = kit_process(*args, cwd=sweep)
        assert b"Traceback" not in r.stderr, r.stderr
        envelope = json.loads(r.stdout.decode("utf-8"))   # valid UTF-8, valid JSON
        assert "\\udcff" in json.dumps(envelope), args
    (sweep / "report" / "summary.md").read_bytes().decode("utf-8")
    assert "\\udcff" in (sweep / "report" / "summary.md").read_text(encoding="utf-8")


def test_collect_lists_a_metadata_that_is_not_an_object_and_a_systems_entry_that_is_not_a_file(sweep):
    path = sweep / EN
    data = json.loads(path.read_text())
    data["metadata"] = [1, 2]
    path.write_text(json.dumps(data))
    (sweep / "results" / "systems").mkdir()
    os.mkfifo(sweep / "results" / "systems" / "node.json")
    r = kit("collect", "--from", "a=results", "--languages", "de,en", "-o", "collected", cwd=sweep)
    assert r.returncode == 1 and "section 'metadata' is not a JSON object" in r.stderr, r.stderr
    assert "systems/node.json is not a regular file" in r.stderr and not (sweep / "collected").exists()
    r = kit("collect", "--from", "a=results", "--languages", "de,en", "-o", "collected", "--json", cwd=sweep)
    assert r.returncode == 1 and len(json.loads(r.stdout)["data"]["problems"]) == 3   # and en: missing
    refused(kit("collect", "--from", "a=nowhere", "-o", "collected", cwd=sweep), "nowhere is not a folder",
            "does not exist")


def test_status_of_a_results_folder_that_does_not_exist_says_so(sweep):
    r = kit("status", "nowhere", cwd=sweep)
    assert r.returncode == 0 and "nowhere does not exist: no pair has a checkpoint yet" in r.stdout
    assert "pending" in r.stdout


@pytest.mark.parametrize("what", ["checkpoint", "folder"])
def test_what_publishes_or_certifies_a_tree_refuses_a_link_in_it_as_one(sweep, tmp_path_factory, what):
    """A linked checkpoint or language folder: check fails, export, release and collect refuse it, each
    naming the link; the readers (status, verify, report) read through it."""
    outside = tmp_path_factory.mktemp("outside")
    path = sweep / EN
    if what == "checkpoint":
        moved = outside / path.name
        path.rename(moved)
        path.symlink_to(moved)
        link = EN
    else:
        folder = sweep / "results" / "en"
        folder.rename(outside / "en")
        folder.symlink_to(outside / "en")
        link = "results/en"
    assert states(sweep) == {"de": "complete", "en": "complete"}
    r = kit("check", "results", "--languages", "de,en", cwd=sweep)
    assert r.returncode == 1 and f"[log_matches_checkpoint] {EN}: -: {link} is a link, not the file its job wrote" in r.stdout
    r = kit("export", "lrb", "results", "-o", "exported", cwd=sweep)
    assert r.returncode == 1 and f"{link} is a link" in r.stdout and not (sweep / "exported").exists(), r.stdout
    r = kit("release", "results", "-o", "release", cwd=sweep)
    assert r.returncode == 2 and f"symlink: {link} is a link" in r.stderr and not (sweep / "release").exists()
    r = kit("collect", "--from", "a=results", "--languages", "de,en", "-o", "collected", cwd=sweep)
    assert r.returncode == 1 and f"symlink: a: {link} is a link" in r.stderr and not (sweep / "collected").exists()


@pytest.mark.parametrize("hidden", ["\n", "\x1b]8;;http://evil\x07", "\u202e", "\u200b", "\u2066", "\ufeff", "\udcff",
                                    "\x85"])
def test_nothing_in_a_name_reaches_a_line_of_output_unescaped(hidden):
    """errors.visible, which every line naming a file or item goes through: controls, terminal escapes,
    bidirectional controls, invisible characters and lone surrogates come out as escapes; letters stay."""
    from kit.errors import visible

    shown = visible(f"run{hidden}gpj.exe é 中文")
    assert hidden not in shown and shown.isprintable() and shown.endswith("gpj.exe é 中文") and shown.startswith("run\\")


def test_kit_compare_prints_an_item_id_s_terminal_escape_as_text(tmp_path):
    """Two lrb runs whose first item's id holds an OSC 8 hyperlink escape: compare's table and flips show it
    as text, never as the escape a terminal would act on."""
    sys.path.insert(0, str(Path(__file__).parents[1]))
    import lrb_schema as lrb

    ids = ["\x1b]8;;http://evil\x07click\x1b]8;;\x07", "b", "c", "d"]
    for model, answers in (("org/a", "yyyy"), ("org/b", "nnnn")):
        preds = [lrb.prediction(i, "yes", {"y": "yes", "n": "no"}[a], {"y": "yes", "n": "no"}[a])
                 for i, a in zip(ids, answers)]
        lrb.write(tmp_path / "results", lrb.result(model, "en", preds))
    r = kit("compare", "org/a", "org/b", "--results", "results", "--flips", "100", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "click" in r.stdout and "\x1b" not in r.stdout and "\\x1b]8;;http://evil\\x07click" in r.stdout
