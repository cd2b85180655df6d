"""`python -m bench --quick` runs and prints every row of the table with numbers (no timing asserted:
speed goals live in the bench output), and bench/readme.py rewrites only README's marked section."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.readme import END, START, replace_section  # noqa: E402

ROWS = ("`kit status` (table), cold", "`kit status --json`, cold", "`kit status` (table), peak RSS",
        "`kit status` (table), warm", "`kit verify`, cold", "`kit verify`, peak RSS", "`kit verify`, warm", "`kit report`, cold",
        "`kit report`, peak RSS", "`kit report`, warm", "`kit report`, one checkpoint changed", "`kit check` (every rule",
        "`kit check`, peak RSS", "`kit release`, peak RSS", "`kit export lrb`, peak RSS", "`kit plan`", "worker, 1 pairs of the tiny Llama",
        "`kit status --help`", "`kit --help`")
PACKING = ("one job per pair", "kit index shards, walltime 4 h", "kit cost-packed, --walltime auto (cap 4 h)")


@pytest.mark.slow   # the worker row loads torch and runs the tiny model
@pytest.mark.timeout(400)
def test_quick_bench_prints_every_row_with_a_numeric_ratio(tmp_path):
    env = {**os.environ, "KIT_BENCH_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--languages", "3", "--runs", "2"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=380)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| measurement | kit | anchor or limit | ratio | goal | met | noise |")
    body = lines[1:]
    for name in ROWS:
        row = next((line for line in body if line.startswith(f"| {name}")), None)
        assert row is not None, f"no row {name!r} in:\n{done.stdout}"
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert re.fullmatch(r"\d+(\.\d+)? (s|MB)", cells[1]), row
        assert re.fullmatch(r"\d+\.\d\d", cells[3]), row
    assert "answers identical" in next(line for line in body if "tiny Llama" in line)   # same prompts, same text
    for name in PACKING:
        row = next((line for line in body if line.startswith(f"| {name}")), None)
        assert row is not None and re.search(r"\| \d+ \| \d+\.\d \| \d\.\d{3} \| \d+\.\d\d h \| \d+ \|$", row), row
    # the control plane is judged against kit's own parser (the project venv has the fast extra)
    status_row = next(line for line in body if line.startswith("| `kit status` (table), cold"))
    assert "read + orjson.loads of 6 files" in status_row and "<= 1.5x" in status_row, status_row
    # --quick skips the environment sync (it installs the image's lock), so the host's start is a note
    assert re.search(r"^- job start to first prompt, host \(this venv\): \d+\.\d\d s$", done.stdout, re.M), done.stdout
    assert "- job start, per-job environment sync: skipped by --quick" in done.stdout
    assert (tmp_path / "last-quick.md").read_text() in done.stdout
    assert not (tmp_path / "trash").exists()   # the earlier outputs set aside are deleted after the last row


def test_an_earlier_output_is_set_aside_whole_and_deleted_at_the_end(tmp_path, monkeypatch):
    """A cold run's earlier output is moved away in one rename (deleting thousands of pages just before a
    report writes its own slows each new file on ext4 without a journal), and emptied after the last row."""
    from bench import suite

    monkeypatch.setattr(suite, "TRASH", tmp_path / "trash")
    out = tmp_path / "report-out"
    (out / "pages").mkdir(parents=True)
    (out / "pages" / "result-a.html").write_text("old")
    suite.set_aside(out)
    suite.set_aside(out)   # gone already: nothing to do
    assert not out.exists()
    kept = list((tmp_path / "trash").iterdir())
    assert len(kept) == 1 and (kept[0] / "pages" / "result-a.html").read_text() == "old"
    out.mkdir()
    suite.set_aside(out)   # a second one beside the first
    assert len(list((tmp_path / "trash").iterdir())) == 2
    suite.empty_trash()
    assert not (tmp_path / "trash").exists()


@pytest.mark.slow   # a profiled report of its own: 2.5 s
@pytest.mark.timeout(300)
def test_the_report_split_finds_every_part_and_every_stage_of_memory(tmp_path):
    from bench.report_parts import PARTS, STAGES
    from bench.tree import build_tree

    tree = build_tree(tmp_path, 2, 3, items=20, progress=lambda message: None)
    done = subprocess.run([sys.executable, "-m", "bench.report_parts", str(tree.results), str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr   # a part or stage that never ran is an error, not a 0 s row
    lines = done.stdout.splitlines()
    for label, _ in PARTS:
        assert any(re.fullmatch(re.escape(label) + r": \d+\.\d s \(\d+%\)", line) for line in lines), (label, lines)
    memory = [line for line in lines if line.startswith("memory: ")]
    assert [m.split(": ")[1] for m in memory] == ["start-up and imports", *(stage for stage, _ in STAGES)]
    assert all(re.search(r": \+-?\d+ MB \(resident \d+ MB, peak \d+ MB\)$", m) for m in memory), memory


def test_readme_section_is_replaced_between_the_markers_only():
    readme = f"# kit\n\n## Performance\n\n{START}\nold table\n{END}\n\n## Tests\n"
    out = replace_section(readme, "| new |\n")
    assert out == f"# kit\n\n## Performance\n\n{START}\n| new |\n{END}\n\n## Tests\n"
    with pytest.raises(ValueError):
        replace_section("# kit\n", "| new |\n")


def test_readme_holds_the_markers():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert START in text and END in text


def test_a_verdict_closer_to_its_limit_than_the_runs_noise_is_marked():
    from bench.suite import Row, plus, within

    class Rows:   # Suite.add's arithmetic, without a tree
        rows: list = []
    from bench.suite import Suite

    Suite.add(Rows, "far", 1.0, "s", 1.0, "anchor", "<= 1.5x", within(1.5), 0.05)      # margin 33% > noise 5%
    Suite.add(Rows, "near", 1.48, "s", 1.0, "anchor", "<= 1.5x", within(1.5), 0.05)    # margin 1.3% < 5%
    Suite.add(Rows, "warm", 0.5, "s", 0.3, "start-up", "<= + 0.3 s", plus(0.3), None)
    far, near, warm = Rows.rows
    assert far.met and far.sure and far.cells()[5] == "yes" and far.cells()[6] == "5%"
    assert near.met and not near.sure and near.cells()[5] == "yes (within noise)"
    assert warm.met and warm.sure and warm.margin == pytest.approx(0.1 / 0.6) and warm.cells()[6] == ""
    assert isinstance(far, Row) and far.margin == pytest.approx(0.5 / 1.5)
