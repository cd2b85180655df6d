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
                     and not NON_LANGUAGE_DIRS & set(q.relative_to(tmp_path).parts[:-1]))
    walked = json_files(tmp_path, NON_LANGUAGE_DIRS)
    assert walked == globbed
    assert [q.relative_to(tmp_path).as_posix() for q in walked] == [
        ".hidden/q.json", "a/b.json", "a-c/x.json", "de/a.json", "deep/er/y.json", "folder.json", "odd.json",
        "odd.json/in.json", "top.json"]
