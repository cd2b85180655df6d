"""docs/backends.md's reference part is generated from the engines' docstrings and must be current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kit.worker.backends.reference import BEGIN, END, main, parse_engine_doc, render_reference, splice

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "backends.md"

GOOD = '''tiny engine: does
things well.

Images: tiny

Free text.

Settings:
- `task` (default generate): generate only
- `options.depth` (default 3): how deep, with a long explanation
  that continues here

Roster example:
    [[run]]
    model = "a/b"
'''


def test_docs_backends_md_is_current():
    current = DOC.read_text(encoding="utf-8")
    assert splice(current, render_reference()) == current, (
        "docs/backends.md is stale; run: python -m kit.worker.backends.reference --write docs/backends.md")


def test_check_command_flags_a_stale_copy(tmp_path, capsys):
    stale = tmp_path / "backends.md"
    stale.write_text(f"# title\n\n{BEGIN}\nold table\n{END}\nafter\n", encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main(["--write", str(stale)]) == 0
    text = stale.read_text(encoding="utf-8")
    assert text.startswith("# title\n") and text.endswith(f"{END}\nafter\n") and "old table" not in text
    assert main(["--check", str(stale)]) == 0


def test_parse_reads_summary_settings_continuations_and_example():
    doc = parse_engine_doc("tiny", GOOD)
    assert doc.summary == "tiny engine: does things well." and doc.images == "tiny"
    assert doc.settings == (("task", "generate", "generate only"),
                            ("options.depth", "3", "how deep, with a long explanation that continues here"))
    assert doc.example == '[[run]]\nmodel = "a/b"'


@pytest.mark.parametrize("broken, message", [
    (GOOD.replace("Settings:\n", ""), "needs an Images: line"),
    (GOOD.replace("Images: tiny\n", ""), "needs an Images: line"),
    (GOOD.replace("- `task` (default generate): generate only", "- task: generate only"), "settings line"),
])
def test_parse_refuses_a_docstring_out_of_format(broken, message):
    with pytest.raises(ValueError, match=message):
        parse_engine_doc("tiny", broken)


def test_splice_needs_the_markers():
    with pytest.raises(ValueError, match="markers"):
        splice("no markers here", "x")


def test_module_runs_as_a_script():
    out = subprocess.run([sys.executable, "-m", "kit.worker.backends.reference", "--check", str(DOC)],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
