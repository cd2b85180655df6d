"""`kit verify FOLDER` lists its files with os.walk (a release tree holds thousands): the same files, in
the same order, as the recursive glob it replaced, with kit's own folders (report, logs...) left out."""

from __future__ import annotations

from kit.results.store import json_files
from kit.results.store import NON_LANGUAGE_DIRS


def test_the_walk_lists_what_the_glob_listed_in_its_order(tmp_path):
    for rel in ["de/a.json", "de/.h.json", "a-c/x.json", "a/b.json", "report/r.json", "fr/logs/l.json", "fr/z.txt",
                "deep/er/y.json", "odd.json/in.json", ".hidden/q.json", "top.json"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    (tmp_path / "folder.json").mkdir()
    globbed = sorted(q for q in tmp_path.rglob("*.json") if not q.name.startswith(".")
                     and not NON_LANGUAGE_DIRS & set(q.relative_to(tmp_path).parts[:-1])
                     and not any(part.startswith(".") for part in q.relative_to(tmp_path).parts[:-1]))
    walked = json_files(tmp_path, NON_LANGUAGE_DIRS)
    assert walked == globbed
    # a hidden folder is kit's own (.superseded/ copies kept aside), read by no command
    assert [q.relative_to(tmp_path).as_posix() for q in walked] == [
        "a/b.json", "a-c/x.json", "de/a.json", "deep/er/y.json", "folder.json", "odd.json",
        "odd.json/in.json", "top.json"]


def test_a_linked_folder_is_read_through_once_and_a_loop_ends(tmp_path):
    """As status reads through a linked language folder, so does verify; a link back up is no endless walk."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.json").write_text("{}")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "en").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "loop").symlink_to(tree)
    assert [q.relative_to(tree).as_posix() for q in json_files(tree, NON_LANGUAGE_DIRS)] == ["en/a.json"]
