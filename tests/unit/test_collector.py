"""kit.results.collector: the cyclic collector is off while a tree builds what it keeps, and on again after."""

from __future__ import annotations

import gc

import pytest

from kit.results import tree as tree_mod
from kit.results.collector import collector_paused


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.enable() if was else gc.disable()


def test_the_collector_is_off_in_the_block_and_on_after_it_even_after_an_error():
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed phase")
    assert gc.isenabled()


def test_a_collector_off_before_stays_off():
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_a_tree_reads_its_cache_and_states_with_the_collector_off(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    seen = []

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return []

    monkeypatch.setattr(tree_mod, "pair_states", spy)
    monkeypatch.setattr(tree_mod, "scan_results", spy)
    with tree_mod.ResultsTree(tmp_path / "results") as tree:
        tree.pair_states([])
        tree.scan()
        assert tree.validate_all([]) == []
    assert seen == [False, False] and gc.isenabled()
