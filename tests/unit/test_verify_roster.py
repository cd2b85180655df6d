"""`kit verify` takes the benchmark that roster.toml here names and nothing else from the roster: its
runs are not validated (a roster being edited does not stop a verify), nor are its models built:
a warm verify of thousands of cached files is mostly start-up, and they cost a tenth of a second."""

from __future__ import annotations

import json

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest_checkpoints import seal_all

from kit.cli.main import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO))
    from bench.tree import build_tree

    built = build_tree(tmp_path, 2, 2, items=12, progress=lambda msg: None)
    seal_all(built.results)   # the logs the jobs would have written beside their checkpoints
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(built.root)
    return built


def test_the_rosters_benchmark_is_used_even_when_its_runs_are_being_edited(tree):
    runner = CliRunner()
    roster = Path("roster.toml")
    roster.write_text(roster.read_text() + '\n[[run]]\nmodel = "not an id!"\nbackend = "nope"\n')
    assert runner.invoke(cli, ["verify", "results"]).exit_code == 0
    csv = next(tree.benchmark.rglob("*.csv"))
    csv.write_text(csv.read_text().replace("field", "fiELD", 1))      # the files are held to that benchmark
    out = runner.invoke(cli, ["verify", "results", "--json"])
    failed = [f for f in json.loads(out.output)["data"] if f["state"] == "invalid"]
    assert out.exit_code == 1 and failed, out.output
    assert all(f"/{csv.parent.name}/" in f["path"] and "differs from the manifest" in f["reasons"][0] for f in failed)


def test_a_benchmark_key_that_is_not_a_folder_path_is_a_one_line_error(tree):
    text = Path("roster.toml").read_text().replace('benchmark = "benchmark"', "benchmark = 5", 1)
    Path("roster.toml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "kit", "verify", "results"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        'kit: error: roster.toml: benchmark: not a folder path (got 5); fix: write benchmark = "DIR", relative to the roster file']


def test_verify_with_a_roster_does_not_load_the_rosters_models(tree):
    probe = ("import sys\nfrom kit.cli.main import main\nsys.argv = ['kit', 'verify', 'results']\n"
             "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
             "print('EXIT', code, 'kit.config.roster' in sys.modules, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.stderr.strip().splitlines()[-1] == "EXIT 0 False", r.stderr[-2000:]
