"""lrb's own results tree, as its repository publishes it (tests/fixtures/lrb/results: the top-level
runs behind its leaderboard.csv, its dated batch folders and strict-8-tokens, each with its own
leaderboard.csv, and the archive), read as lrb reads it: report reproduces every leaderboard lrb
wrote, export gives lrb's bytes back in lrb's places, status and export say what the archive holds."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest_checkpoints import LRB_ARCHIVE
from inprocess import kit_in_process
from kit.results import report
from kit.results.kinds.lrb.export import export_lrb
from kit.results.store import iter_checkpoint_files

LRB_RESULTS = LRB_ARCHIVE.parents[1]   # tests/fixtures/lrb/results
LEADERBOARDS = sorted(p.relative_to(LRB_RESULTS) for p in LRB_RESULTS.glob("**/leaderboard.csv")
                      if "archive" not in p.relative_to(LRB_RESULTS).parts)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of lrb's results tree."""
    return Path(shutil.copytree(LRB_RESULTS, tmp_path / "results"))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_the_fixture_tree_is_lrb_s_layout() -> None:
    assert Path("leaderboard.csv") in LEADERBOARDS and len(LEADERBOARDS) >= 3
    assert (LRB_RESULTS / "archive").is_dir() and (LRB_RESULTS / "strict-8-tokens").is_dir()


@pytest.mark.parametrize("board", LEADERBOARDS, ids=str)
def test_report_reproduces_each_leaderboard_lrb_wrote(tree: Path, tmp_path: Path, board: Path) -> None:
    done = report.write_report(tree, tmp_path / "out")
    folder = board.parent.as_posix()
    ours = done.files["leaderboard"] if folder == "." else done.batches[folder].parent / "leaderboard.csv"
    # the fixture lacks a few of lrb's files (too large to copy, or not stored: NOTICE.md): their rows go
    present = {json.loads(p.read_text(encoding="utf-8"))["metadata"]["model_id"] for p in (tree / board.parent).glob("*.json")}
    theirs, mine = [r for r in _rows(tree / board) if r["model_id"] in present], _rows(ours)
    assert len(theirs) >= 2 and [r["model_id"] for r in mine] == [r["model_id"] for r in theirs]
    shared = [c for c in theirs[0] if c in mine[0] and c not in ("model_id", "model_revision")]
    assert {"f1", "accuracy"} <= set(shared)
    for lrb_row, kit_row in zip(theirs, mine):
        assert {c: kit_row[c] for c in shared} == {c: lrb_row[c] for c in shared}, lrb_row["model_id"]


def test_export_gives_every_result_back_byte_for_byte_in_its_place(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = export_lrb(tree, out)
    sources = iter_checkpoint_files(tree)
    assert done.refused == {} and len(done.written) == len(sources) > 10
    for source in sources:
        assert (out / source.relative_to(tree)).read_bytes() == source.read_bytes(), source
    archived = len(list((tree / "archive").rglob("*.json")))
    assert done.not_counted.startswith(f"{archived} file(s) under ") and not (out / "archive").exists()


def test_status_counts_every_active_file_and_names_the_archive(tree: Path, tmp_path: Path) -> None:
    r = kit_in_process("status", str(tree), "--pairs", cwd=tmp_path, env={"KIT_NO_CACHE": "1"})
    assert r.returncode == 0, r.stderr
    active = len(iter_checkpoint_files(tree))
    assert f"{active} pairs: {active} complete" in r.stdout
    assert "under " in r.stdout and "archive/ not counted" in r.stdout
    assert "strict-8-tokens" in r.stdout   # the file column: lrb's two copies of one run read apart


def test_lrb_s_newer_columns_match_its_batch_leaderboard(tree: Path, tmp_path: Path) -> None:
    """qwen3-20260913/leaderboard.csv is one of lrb's newer tables: speed, engine, Wilson intervals and
    McNemar against the top run; kit's leaderboard and aggregates give the same values."""
    done = report.write_report(tree, tmp_path / "out")
    folder = done.batches["qwen3-20260913"].parent
    theirs = {r["model_id"]: r for r in _rows(tree / "qwen3-20260913" / "leaderboard.csv")}
    board = {r["model_id"]: r for r in _rows(folder / "leaderboard.csv")}
    aggregates = {r["model_id"]: r for r in _rows(folder / "aggregates.csv")}
    newer = ("sentences_per_second", "runtime", "generation_mode", "accuracy_ci95", "precision_ci95", "recall_ci95")
    assert board and set(board) < set(theirs)
    for model, row in board.items():
        assert {c: row[c] for c in newer} == {c: theirs[model][c] for c in newer}, model
        assert aggregates[model]["mcnemar_top_run"] == theirs[model]["mcnemar_top_run"] == "Qwen/Qwen3-8B"
        assert float(aggregates[model]["mcnemar_p_vs_top"]) == pytest.approx(
            float(theirs[model]["mcnemar_p_vs_top"]), rel=1e-12), model


def test_status_without_a_roster_picks_runs_and_languages_among_the_files_found(tree: Path, tmp_path: Path) -> None:
    """--model and --languages are not dropped when no roster plans the pairs: they pick among the files
    found, and one that no file has is bad input naming what was found."""
    every = json.loads(kit_in_process("status", str(tree), "--json", cwd=tmp_path, env={"KIT_NO_CACHE": "1"}).stdout)
    pairs = every["data"]["pairs"]
    run, language = pairs[0]["run"], pairs[0]["language"]
    r = kit_in_process("status", str(tree), "--json", "--model", run, "--languages", language.upper(), cwd=tmp_path,
                       env={"KIT_NO_CACHE": "1"})
    assert r.returncode == 0, r.stderr
    picked = json.loads(r.stdout)["data"]["pairs"]
    assert picked == [p for p in pairs if p["run"] == run and p["language"] == language] and len(picked) < len(pairs)
    r = kit_in_process("status", str(tree), "--model", "org/not-run", cwd=tmp_path, env={"KIT_NO_CACHE": "1"})
    assert r.returncode == 2 and "of run 'org/not-run'" in r.stderr and run in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_report_takes_a_run_by_its_file_name_as_compare_does(tree: Path, tmp_path: Path) -> None:
    """`kit report --model org__model` picks the run `--model org/model` picks (kit compare takes both)."""
    run = json.loads(next(tree.glob("*.json")).read_text(encoding="utf-8"))["metadata"]["model_id"]
    boards = []
    for name, out in ((run, "by-name"), (run.replace("/", "__"), "by-file")):
        r = kit_in_process("report", str(tree), "--model", name, "-o", str(tmp_path / out), cwd=tmp_path,
                           env={"KIT_NO_CACHE": "1"})
        assert r.returncode == 0, r.stderr
        boards.append((tmp_path / out / "leaderboard.csv").read_text(encoding="utf-8"))
    assert boards[0] == boards[1] and run in boards[0]
