"""Work spread on forked workers (kit.results.parallel.fork_map) gives what one process gives: a report's
pages and intervals, byte for byte; and a page written in one step (kit.files.write_bytes_new) never
writes through a file already there (issue 33)."""

from __future__ import annotations

import os
import random

import pytest
from conftest_checkpoints import make_checkpoint, predictions_of

from kit.files import write_bytes_new
from kit.results import intervals, keys, parallel
from kit.results.report import write_report

Y, N, U = keys.YES, keys.NO, keys.UNPARSED


def _pid(_: object) -> int:
    return os.getpid()


def test_fork_map_keeps_the_order_and_uses_workers(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    assert parallel.fork_map(lambda x: x * x, list(range(50)), min_items=4) == [x * x for x in range(50)]
    pids = set(parallel.fork_map(_pid, list(range(40)), min_items=4))
    assert os.getpid() not in pids and pids
    # too few items, or one core: in this process
    assert set(parallel.fork_map(_pid, list(range(3)), min_items=4)) == {os.getpid()}
    monkeypatch.setattr(parallel, "MAX_WORKERS", 1)
    assert set(parallel.fork_map(_pid, list(range(40)), min_items=4)) == {os.getpid()}


@pytest.mark.parametrize("cores", [1, 2])
def test_then_runs_here_on_each_result_in_order(monkeypatch, cores):
    monkeypatch.setattr(parallel, "usable_cores", lambda: cores)
    seen = []

    def then(pid: int) -> tuple[int, int]:
        seen.append(pid)
        return pid, os.getpid()

    done = parallel.fork_map(_pid, list(range(40)), min_items=4, then=then)
    assert [pid for pid, _ in done] == seen and len(done) == 40
    assert {here for _, here in done} == {os.getpid()}
    assert (os.getpid() in seen) == (cores == 1)


@pytest.mark.parametrize("pooled", [False, True])
def test_a_report_reader_holds_each_string_once(tmp_path, monkeypatch, pooled):
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(parallel, "MIN_FILES", 4 if pooled else 1000)
    paths = [make_checkpoint(tmp_path / "results", f"org/model@r{i}", "en", predictions_of([(Y, N), (N, N)]))
             for i in range(8)]
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    from kit.results.cache import CheckpointCache

    # the cache a report reads through: each state shared as it arrives from the workers
    states = CheckpointCache.open(tmp_path / "results").validate_all([(p, {}) for p in paths])
    assert [st.state for st in states] == [keys.PairState.COMPLETE] * 8
    model_ids = [st.data[keys.METADATA][keys.MODEL_ID] for st in states]
    assert model_ids == ["org/model"] * 8 and len({id(m) for m in model_ids}) == 1


def _pid_of(item: tuple[str, int]) -> tuple[str, int]:
    return item[0], os.getpid()


def test_a_group_is_never_split_between_workers_unless_longer_than_a_chunk(monkeypatch):
    """validate_many's chunks end at a change of language: each language's file is read by one worker."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    items = [(f"lang{n // 7:02d}", n) for n in range(420)]   # 60 groups of 7; chunks of 420 // 32 = 13
    done = parallel.fork_map(_pid_of, items, min_items=4, group=lambda item: item[0])
    assert [g for g, _ in done] == [g for g, _ in items]
    workers: dict[str, set[int]] = {}
    for g, pid in done:
        workers.setdefault(g, set()).add(pid)
    assert all(len(pids) == 1 for pids in workers.values()) and os.getpid() not in set().union(*workers.values())
    bounds = parallel.chunk_bounds(items, 13, lambda item: item[0])
    assert [at for bound in bounds for at in range(*bound)] == list(range(420))
    assert {end - start for start, end in bounds} == {7}   # 7 + 7 > 13: one group a chunk
    long = [("a", n) for n in range(30)] + [("b", 30)]
    assert parallel.chunk_bounds(long, 13, lambda item: item[0]) == [(0, 13), (13, 26), (26, 30), (30, 31)]
    assert parallel.chunk_bounds(list(range(30)), 13) == [(0, 13), (13, 26), (26, 30)]


def test_an_error_in_a_worker_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)

    def fails(x: int) -> int:
        if x == 17:
            raise ValueError("item 17")
        return x

    with pytest.raises(ValueError, match="item 17"):
        parallel.fork_map(fails, list(range(40)), min_items=4)


def _tree(root):
    rng = random.Random(7)
    for run in range(5):
        for language in ("de", "fr", "it", "nl"):
            pairs = [(rng.choice((Y, N)), rng.choice((Y, N, N, U))) for _ in range(40)]
            make_checkpoint(root, f"org/model-{run}", language, predictions_of(pairs))


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_pooled_report_is_the_one_process_report(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    results = tmp_path / "results"
    _tree(results)
    monkeypatch.setattr(parallel, "MAX_WORKERS", 1)
    write_report(results, tmp_path / "one")
    monkeypatch.setattr(parallel, "MAX_WORKERS", 8)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(parallel, "MIN_FILES", 4)               # pages on the pool
    monkeypatch.setattr(intervals, "POOL_AT_RESULTS", 1)       # intervals too
    import multiprocessing.context

    pools = []
    real_pool = multiprocessing.context.ForkContext.Pool
    monkeypatch.setattr(multiprocessing.context.ForkContext, "Pool",
                        lambda self, *a, **k: pools.append(a) or real_pool(self, *a, **k))
    pooled = tmp_path / "pooled"
    write_report(results, pooled)
    assert len(pools) == 2   # intervals and pages each on a pool (write_report alone validates in this process)
    one, many = _files(tmp_path / "one"), _files(pooled)
    assert sorted(one) == sorted(many) and len([n for n in one if n.startswith("pages/result-")]) == 20
    assert {n for n in one if one[n] != many[n]} == set()


def test_a_new_page_is_written_and_an_existing_file_is_replaced_not_written_through(tmp_path):
    page = tmp_path / "pages" / "a.html"
    write_bytes_new(page, b"first")                     # its folder is made
    assert page.read_bytes() == b"first"
    other = tmp_path / "elsewhere.html"
    os.link(page, other)                                # a hard link, as a carried-over output has
    write_bytes_new(page, b"second")
    assert page.read_bytes() == b"second" and other.read_bytes() == b"first"


@pytest.mark.timeout(120)
def test_kits_own_errors_cross_from_a_worker_whole(monkeypatch):
    """A KitError raised in a worker reaches the caller with its type, message and fix (MissingExtraError's
    __init__ takes other arguments: unpickled the default way it failed, and the pool waited forever)."""
    import pickle

    from kit.errors import ConfigError, MissingExtraError

    for error in (ConfigError("a.csv: bad row", fix="restore it"), MissingExtraError("the heatmap", "matplotlib", "report")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and back.one_line() == error.one_line() and back.fix == error.fix
        assert back.exit_code == error.exit_code and str(back) == str(error)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)

    def needs_an_extra(x: int) -> int:
        if x == 5:
            raise MissingExtraError("the heatmap", "matplotlib", "report")
        return x

    with pytest.raises(MissingExtraError, match="matplotlib"):
        parallel.fork_map(needs_an_extra, list(range(40)), min_items=4)
