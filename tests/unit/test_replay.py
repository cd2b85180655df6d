"""A command's kept answer (kit.cli.replay): `kit status` and `kit verify` asked again of files none of
which changed print the answer kept, without planning or reading anything; any change to what the
answer depends on (a checkpoint, its log, a file now there, the benchmark, the roster, the question,
the environment, the kept file itself) runs the command, whose answer is then the new one."""

from __future__ import annotations

import json
import shutil
import tempfile
import os
from pathlib import Path

import pytest
from conftest_checkpoints import make_checkpoint, predictions_of
from inprocess import kit_in_process
from release_helpers import demo_sweep

from kit.cli import replay
from kit.results import cache as cache_mod
from kit.results import keys
from kit.results.tree import ResultsTree

SOME = predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO)])


@pytest.fixture
def settled(monkeypatch, tmp_path):
    """Files written by the test count as settled (they are milliseconds old); the cache is the test's own."""
    monkeypatch.setattr(cache_mod, "RACY_SECONDS", -1.0)
    monkeypatch.setattr(replay, "RACY_SECONDS", -1.0)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "checkpoints" / "answers"


@pytest.fixture
def trees(monkeypatch):
    """How many times a command opened a results tree (a replayed answer opens none)."""
    opened = []
    real = ResultsTree.__init__

    def counting(self, *args, **kwargs):
        opened.append(args[0] if args else kwargs.get("root"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(ResultsTree, "__init__", counting)
    return opened


@pytest.fixture
def sweep(tmp_path, settled):
    return demo_sweep(tmp_path / "sweep")


def asked_thrice(*args: str, cwd: Path, trees: list) -> list:
    """The command run three times: validated, then from the cache (kept), then replayed."""
    runs = []
    for expected_trees in (1, 2, 2):
        runs.append(kit_in_process(*args, cwd=cwd))
        assert len(trees) == expected_trees, (args, runs[-1].stderr)
    return runs


def test_a_planned_status_asked_again_is_replayed_word_for_word(sweep, trees, settled):
    cold, warm, again = asked_thrice("status", "results", cwd=sweep.root, trees=trees)
    assert cold.returncode == warm.returncode == again.returncode == 0
    assert "verdicts from kit's cache" not in cold.stdout     # the first run validated: nothing kept
    assert again.stdout == warm.stdout and "3 verdicts from kit's cache" in again.stdout
    assert len(list(settled.glob("*.lines"))) == 1
    as_json = kit_in_process("status", "results", "--json", cwd=sweep.root)   # another question
    assert len(trees) == 3 and json.loads(as_json.stdout)["data"]["from_cache"] == 3


def test_a_rewritten_checkpoint_is_read_again(sweep, trees):
    asked_thrice("status", "results", cwd=sweep.root, trees=trees)
    path = sweep.results / "fr" / "kit-demo__tiny-llama.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"predicted": "yes"', '"predicted": "no"', 1),
                    encoding="utf-8")
    after = kit_in_process("status", "results", cwd=sweep.root)
    assert len(trees) == 3 and "1 invalid" in after.stdout


@pytest.mark.parametrize("change", ["log", "pending_now_there", "benchmark", "roster", "environment", "kept_file"])
def test_anything_the_answer_depends_on_changed_runs_the_command(sweep, trees, settled, change):
    asked_thrice("status", "results", cwd=sweep.root, trees=trees)
    env = None
    if change == "log":
        next(sweep.results.glob("de/*.mllog")).unlink()
    elif change == "pending_now_there":   # a language folder gains a file no pair named before
        (sweep.results / "de" / "other.json").write_text("{}", encoding="utf-8")
    elif change == "benchmark":
        csv = next(p for p in sweep.bench.rglob("*.csv"))
        csv.write_bytes(csv.read_bytes() + b"\n")
    elif change == "roster":
        sweep.roster.write_text(sweep.roster.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    elif change == "environment":
        env = {"KIT_SOMETHING_NEW": "1"}
    else:
        kept = next(settled.glob("*.lines"))
        kept.write_text(kept.read_text(encoding="utf-8").replace("3 verdicts", "9 verdicts"), encoding="utf-8")
    after = kit_in_process("status", "results", cwd=sweep.root, env=env)
    assert len(trees) == 3, change
    assert "9 verdicts" not in after.stdout


def test_a_scan_sees_a_new_checkpoint(tmp_path, settled, trees):
    results = tmp_path / "results"
    make_checkpoint(results, "org/a", "fr", SOME)
    asked_thrice("status", "results", cwd=tmp_path, trees=trees)
    make_checkpoint(results, "org/b", "fr", SOME)   # a new file in a folder the scan listed
    after = kit_in_process("status", "results", cwd=tmp_path)
    assert len(trees) == 3 and "2 pairs: 2 complete" in after.stdout


def test_a_roster_written_beside_a_scan_makes_it_planned(sweep, trees):
    sweep.roster.rename(sweep.root / "kept.toml")
    asked_thrice("status", "results", cwd=sweep.root, trees=trees)
    (sweep.root / "kept.toml").rename(sweep.roster)   # roster.toml here again: a planned status
    kit_in_process("status", "results", cwd=sweep.root)
    assert len(trees) == 3


def test_verify_keeps_its_exit_code(tmp_path, settled, trees):
    results = tmp_path / "results"
    make_checkpoint(results, "org/a", "fr", SOME)
    bad = make_checkpoint(results, "org/b", "fr", SOME)
    data = json.loads(bad.read_text(encoding="utf-8"))
    data[keys.METRICS]["f1"] = 0.123   # metrics that do not recompute
    bad.write_text(json.dumps(data), encoding="utf-8")
    cold, warm, again = asked_thrice("verify", "results", cwd=tmp_path, trees=trees)
    assert cold.returncode == warm.returncode == again.returncode == 1
    assert again.stdout == warm.stdout and "1 verified, 1 failed" in again.stdout


def test_nothing_is_kept_without_a_cache(sweep, trees, settled, monkeypatch):
    monkeypatch.setenv("KIT_NO_CACHE", "1")
    for _ in range(3):
        kit_in_process("status", "results", cwd=sweep.root)
    assert len(trees) == 3 and not settled.exists()


def test_a_file_changed_while_the_command_ran_keeps_no_answer(sweep, trees, settled, monkeypatch):
    monkeypatch.setattr(replay, "RACY_SECONDS", 3600.0)   # every file counts as changed just now
    for _ in range(3):
        kit_in_process("status", "results", cwd=sweep.root)
    assert len(trees) == 3 and not list(settled.glob("*.lines"))


def test_status_at_a_site_is_never_kept(sweep, settled):
    # a scheduler's answer changes with no file changing
    (sweep.root / "sites.toml").write_text('[site.here]\nscheduler = "local"\n', encoding="utf-8")
    runs = [kit_in_process("status", "--site", "here", cwd=sweep.root) for _ in range(3)]
    assert [r.returncode for r in runs] == [0, 0, 0], runs[-1].stderr
    assert not list(settled.glob("*.lines"))


def test_answers_kept_are_bounded(tmp_path, settled, trees, monkeypatch):
    monkeypatch.setattr(replay, "MAX_KEPT", 2)
    results = tmp_path / "results"
    for language in ("fr", "de", "es"):
        make_checkpoint(results, "org/a", language, SOME)
    for language in ("fr", "de", "es"):   # three questions, each asked twice (the second keeps it)
        for _ in range(2):
            kit_in_process("status", "results", "--languages", language, cwd=tmp_path)
    assert len(list(settled.glob("*.lines"))) == 2


def test_a_benchmark_folder_reached_through_a_link_is_held_through_it(sweep, trees):
    # the language files are stat-ed (the verdict key's fingerprint), never opened: held by the folder walk
    languages = next(p.parent for p in sweep.bench.rglob("*.csv"))
    moved = sweep.root / "elsewhere"
    languages.rename(moved)
    languages.symlink_to(moved, target_is_directory=True)
    asked_thrice("status", "results", cwd=sweep.root, trees=trees)
    csv = next(moved.glob("*.csv"))
    text = csv.read_text(encoding="utf-8")
    csv.write_text(text.replace(",yes,", ",no,", 1) if ",yes," in text else text + "\n", encoding="utf-8")
    after = kit_in_process("status", "results", cwd=sweep.root)
    assert len(trees) == 3   # not replayed: the command read the tree again
    assert after.returncode == 0 and "differs from the manifest" in after.stdout and "invalid" in after.stdout


def test_another_kit_or_stream_asks_another_question(tmp_path, settled, monkeypatch):
    import sys

    import kit

    asked = replay.AnswerMemo("status", ["q"])._digest
    assert replay.AnswerMemo("status", ["q"])._digest == asked
    monkeypatch.setattr(kit, "__file__", str(tmp_path / "another" / "kit" / "__init__.py"))
    assert replay.AnswerMemo("status", ["q"])._digest != asked   # a checkout's kit beside the installed one
    monkeypatch.undo()
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))

    class Ascii:
        encoding, errors = "ascii", "strict"

        def isatty(self):
            return False

        def write(self, text):
            return len(text)

    monkeypatch.setattr(sys, "stdout", Ascii())
    assert replay.AnswerMemo("status", ["q"])._digest != asked   # rich draws ASCII boxes for an ASCII stream
    assert not replay._can_print(sys.stdout, "┏━━┓") and replay._can_print(sys.stdout, "+--+")
    assert not replay._can_print(None, "text")   # a closed stdout: the command says it its own way


@pytest.mark.slow
def test_a_real_kit_replays_and_a_closed_stdout_runs_the_command(tmp_path):
    """The command as a user runs it (its own process, the real racy window): the third ask is replayed;
    with stdout closed no kept answer is printed into nothing: one line says so, exit 2 (kit.cli.main)."""
    import subprocess
    import sys
    import time

    sweep = demo_sweep(tmp_path / "sweep")
    env = {**os.environ, "KIT_CACHE_DIR": str(tmp_path / "cache")}
    time.sleep(replay.RACY_SECONDS + 0.5)   # every file older than the racy window
    runs = [subprocess.run([sys.executable, "-X", "importtime", "-m", "kit", "status", "results"], cwd=sweep.root,
                           env=env, capture_output=True, text=True, timeout=120) for _ in range(3)]
    assert [r.returncode for r in runs] == [0, 0, 0], runs[-1].stderr
    assert runs[2].stdout == runs[1].stdout and "kit.results.tree" in runs[1].stderr
    assert "kit.results.tree" not in runs[2].stderr   # replayed: the results layer never loaded
    closed = subprocess.run(f"{sys.executable} -m kit status results >&-", shell=True, cwd=sweep.root, env=env,
                            capture_output=True, text=True, timeout=120)
    assert closed.returncode == 2 and "Traceback" not in closed.stderr, closed.stderr
    assert closed.stderr.startswith("kit: error: standard output is closed")


def test_a_path_through_a_linked_folder_and_up_holds_the_files_read(tmp_path, settled, trees):
    # `lnk/../results` is the results beside the link's target, not the current folder's
    elsewhere = tmp_path / "elsewhere"
    make_checkpoint(elsewhere / "results", "org/a", "fr", SOME)
    (elsewhere / "sub").mkdir()
    here = tmp_path / "here"
    make_checkpoint(here / "results", "org/a", "fr", SOME)   # the same names where the text would point
    (here / "lnk").symlink_to(elsewhere / "sub", target_is_directory=True)
    asked_thrice("status", "lnk/../results", cwd=here, trees=trees)
    (elsewhere / "results" / "fr" / "org__a.json").write_text("{}", encoding="utf-8")
    after = kit_in_process("status", "lnk/../results", cwd=here)
    assert len(trees) == 3 and "1 invalid" in after.stdout


def test_a_tree_on_a_memory_filesystem_is_held_as_any_other(tmp_path, settled, trees):
    # /dev/shm is a tmpfs under /dev: what is read there is an input like any other
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path
    try:
        sweep = demo_sweep(root / "sweep")
        asked_thrice("status", "results", cwd=sweep.root, trees=trees)
        text = sweep.roster.read_text(encoding="utf-8")
        with open(sweep.roster, "r+", encoding="utf-8") as fh:   # in place: the same inode
            fh.write(text.replace('revision = "a', 'revision = "b', 1))   # another revision: every pair stale
        after = kit_in_process("status", "results", cwd=sweep.root)
        assert len(trees) == 3 and "3 stale" in after.stdout, after.stdout + after.stderr
    finally:
        if root != tmp_path:
            shutil.rmtree(root, ignore_errors=True)
