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

