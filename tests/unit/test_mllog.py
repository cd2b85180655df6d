"""kit.worker.mllog: the pair's log is written to a file the worker created, never through a link."""

from __future__ import annotations

import pytest

pytest.importorskip("mlperf_logging")

from kit.worker.mllog import PairLog  # noqa: E402


def test_a_link_at_the_temporary_name_is_replaced_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    log = tmp_path / "results" / "en" / "org__m.mllog"
    log.parent.mkdir(parents=True)
    (log.parent / f".{log.name}.tmp").symlink_to(victim)
    with PairLog(log) as pl:
        pl.event("kit_pair", {"run": "org/m"})
    assert victim.read_text() == "keep me\n"
    assert log.is_file() and not log.is_symlink() and "kit_pair" in log.read_text()
    assert not (log.parent / f".{log.name}.tmp").exists()


def test_a_stale_temporary_file_is_replaced_not_appended_to(tmp_path):
    log = tmp_path / "org__m.mllog"
    (tmp_path / f".{log.name}.tmp").write_text("stale line\n")
    with PairLog(log) as pl:
        pl.event("kit_pair", {"run": "org/m"})
    assert "stale line" not in log.read_text() and "kit_pair" in log.read_text()



def test_a_file_of_the_user_s_at_the_log_s_name_is_kept_aside_and_an_earlier_log_replaced(tmp_path):
    """A job's log never destroys a file that is no log (the user's notes under that name): it goes to
    .superseded/; an earlier run's :::MLLOG log of the pair is kit's and is replaced."""
    log = tmp_path / "results" / "de" / "org__m.mllog"
    log.parent.mkdir(parents=True)
    log.write_text("my lab notes\n")
    with PairLog(log) as pl:
        pl.event("kit_pair", {"run": "org/m"})
    kept = list((log.parent / ".superseded").iterdir())
    assert [p.read_text() for p in kept] == ["my lab notes\n"] and kept[0].name.endswith(".not-a-log.mllog")
    with PairLog(log) as pl:
        pl.event("kit_pair", {"run": "org/m", "again": True})
    assert len(list((log.parent / ".superseded").iterdir())) == 1 and "again" in log.read_text()
