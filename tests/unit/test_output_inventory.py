"""An output's inventory (.kit-output.json) is written a line at a time, with the very text of the one
JSON document it stands for: readers and earlier kits parse it as one document."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from kit.outputs import INVENTORY, inventory_pieces, read_inventory, write_output


def _stage(root: Path, names: list[str]) -> Path:
    for number, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"file {number}\n".encode())
    return root


def _expected(root: Path, names: list[str], rest: dict) -> str:
    files = {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in names}
    return json.dumps({"files": files, **rest}, indent=1, sort_keys=True) + "\n"


NAMES = ["index.html", "pages/result-a.html", "pages/ré sumé \"q\".html", "z/deep/er/file.csv", "a-first.csv"]


@pytest.mark.parametrize("rest", [
    {"kit_output": "report"},
    {"kit_output": "report", "memo": {"inputs": "0" * 64, "roles": {"html": "index.html", "é": [1, 2.5, None]},
                                      "batches": {}}},
    {"kit_output": "export", "memo": {"nested": {"list": [{"b": 1, "a": [True, False]}], "empty": []}}},
])
def test_the_pieces_are_the_text_of_the_one_document(tmp_path, rest):
    names = sorted(NAMES)
    stage = _stage(tmp_path, names)
    assert "".join(inventory_pieces(stage, names, rest)) == _expected(stage, names, rest)


def test_an_output_without_files_has_an_empty_files_object(tmp_path):
    text = "".join(inventory_pieces(tmp_path, [], {"kit_output": "report"}))
    assert text == json.dumps({"files": {}, "kit_output": "report"}, indent=1, sort_keys=True) + "\n"


def test_each_file_is_hashed_as_its_line_is_made(tmp_path):
    names = sorted(NAMES)
    stage = _stage(tmp_path, names)
    pieces = inventory_pieces(stage, names, {"kit_output": "report"})
    next(pieces), next(pieces)   # the opening and the "files" key: no file read yet
    os.remove(stage / names[-1])   # the last file, gone before its line: only its own line fails
    for _ in names[:-1]:
        next(pieces)
    with pytest.raises(FileNotFoundError):
        next(pieces)


def test_write_output_seals_every_file_it_wrote_and_reads_back(tmp_path):
    dest = tmp_path / "out"
    with write_output(dest, "report") as out:
        _stage(out.stage, NAMES)
        out.memo["inputs"] = "f" * 64
    kind, files = read_inventory(dest)
    assert kind == "report"
    assert files == {name: hashlib.sha256((dest / name).read_bytes()).hexdigest() for name in NAMES}
    assert (dest / INVENTORY).read_text() == _expected(dest, sorted(NAMES), {"kit_output": "report",
                                                                             "memo": {"inputs": "f" * 64}})


def test_the_output_replaced_is_offered_for_linking_unless_its_files_were_carried_over(tmp_path):
    """OutputFolder.earlier: the destination being replaced (checked as kit's), its file at a stage path's
    place by same_as; None for a new destination, and for an update output (its files are in the stage)."""
    dest = tmp_path / "out"
    with write_output(dest, "report") as out:
        assert out.earlier is None and out.same_as(out.stage / "a.txt") is None
        (out.stage / "a.txt").write_text("one")
    with write_output(dest, "report", force=True) as out:
        assert out.earlier == dest
        assert out.same_as(out.stage / "pages" / "b.html") == dest / "pages" / "b.html"
        (out.stage / "a.txt").write_text("one")
    with write_output(dest, "report", force=True, update=True) as out:
        assert out.earlier is None and (out.stage / "a.txt").read_text() == "one"


def test_force_is_offered_only_for_a_folder_it_would_replace(tmp_path):
    """A folder of the user's files is refused as such (--force would not replace it either); an earlier
    output of the same kind is the one that asks for --force."""
    from kit.errors import ConfigError
    from kit.outputs import check_output

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    for force in (False, True):
        with pytest.raises(ConfigError) as refused:
            check_output(mine, "release", force=force)
        assert "holds files kit did not write" in str(refused.value) and "--force" not in refused.value.fix
    earlier = tmp_path / "earlier"
    with write_output(earlier, "release") as out:
        _stage(out.stage, NAMES)
    with pytest.raises(ConfigError, match="already exists; fix: choose a new folder, or pass --force"):
        check_output(earlier, "release")
    check_output(earlier, "release", force=True)


def test_a_folder_the_user_made_inside_an_output_is_never_removed_with_it(tmp_path):
    from kit.errors import ConfigError
    from kit.outputs import check_output

    earlier = tmp_path / "earlier"
    with write_output(earlier, "release") as out:
        _stage(out.stage, NAMES)
    (earlier / "my-notes").mkdir()   # empty: no file of it tells it from kit's
    with pytest.raises(ConfigError, match="my-notes \\(a folder kit did not write\\)"):
        check_output(earlier, "release", force=True)
    (earlier / "my-notes").rmdir()
    check_output(earlier, "release", force=True)


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/passwd", "a/../../x", "a//b", "a\\\\b"])
def test_an_inventory_naming_a_file_outside_its_folder_is_no_inventory(tmp_path, entry):
    """Edited to name a file outside (or one no writer names so), an inventory makes its folder no kit
    output: nothing it names is hashed, carried into the next output or replaced."""
    from kit.errors import ConfigError
    from kit.outputs import check_output

    earlier = tmp_path / "earlier"
    with write_output(earlier, "export") as out:
        _stage(out.stage, NAMES)
    data = json.loads((earlier / INVENTORY).read_text(encoding="utf-8"))
    data["files"][entry] = "0" * 64
    (earlier / INVENTORY).write_text(json.dumps(data), encoding="utf-8")
    assert read_inventory(earlier) is None
    with pytest.raises(ConfigError, match="holds files kit did not write"):
        check_output(earlier, "export", force=True)
