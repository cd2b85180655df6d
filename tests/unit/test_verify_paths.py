"""kit verify's reading of the paths given (kit.results.verify.verify_paths): every file back in the order
found, each through the cache of its own tree, the files under a tree's archive/ folder saying so and no
other, whether the trees are given as folders or their files one by one."""

from __future__ import annotations

from pathlib import Path

from conftest_checkpoints import make_checkpoint, no_racy_window, predictions_of

from kit.results import keys
from kit.results.keys import PairState
from kit.results.verify import ARCHIVED_NOTICE, verify_paths

RUN = "org/model"


def trees(tmp_path: Path) -> tuple[Path, Path]:
    """Two results trees: one with a language folder and an archive/ holding a batch and a language folder
    of its own, one with two languages."""
    some = predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO)])
    first, second = tmp_path / "first", tmp_path / "second"
    make_checkpoint(first, RUN, "fr", some)
    make_checkpoint(first / "archive" / "batch-1", RUN, "de", some)
    make_checkpoint(first / "archive", RUN, "it", some)
    for language in ("de", "fr"):
        make_checkpoint(second, RUN, language, some)
    return first, second


def test_files_under_archive_say_so_whichever_way_the_trees_are_given(tmp_path, monkeypatch):
    no_racy_window(monkeypatch)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    first, second = trees(tmp_path)
    by_folder = verify_paths([first, second])
    assert [st.state for _, st in by_folder] == [PairState.COMPLETE] * 5
    assert sorted(p.relative_to(first).as_posix() for p, _ in by_folder if first in p.parents) == [
        "archive/batch-1/de/org__model.json", "archive/it/org__model.json", "fr/org__model.json"]
    flags = {p.relative_to(first).as_posix(): ARCHIVED_NOTICE in st.notices for p, st in by_folder if first in p.parents}
    assert flags == {"archive/batch-1/de/org__model.json": True, "archive/it/org__model.json": True,
                     "fr/org__model.json": False}
    assert not any(ARCHIVED_NOTICE in st.notices for p, st in by_folder if second in p.parents)
    # the second tree's files one by one (each belongs to the tree two levels up), after the first tree
    files = sorted(second.rglob("*.json"))
    mixed = verify_paths([first, *files])
    assert [p for p, _ in mixed] == [p for p, _ in by_folder if first in p.parents] + files
    assert [(st.state, st.notices) for _, st in mixed] == [(st.state, st.notices) for _, st in by_folder]
    # asked again, each tree answers from its cache with the same verdicts
    assert [(st.state, st.notices) for _, st in verify_paths([first, *files])] == \
        [(st.state, st.notices) for _, st in mixed]
