"""A report's lrb tables are computed once for its CSV files and its HTML report, and again for any other
records (kit.results.kinds.lrb.report.lrb_tables)."""

from __future__ import annotations

from dataclasses import replace

from conftest_checkpoints import make_checkpoint, predictions_of

from kit.results import keys
from kit.results.kinds.lrb import report as lrb_report
from kit.results.report import collect_checkpoints

Y, N = keys.YES, keys.NO


def test_the_same_records_give_the_same_tables_and_others_their_own(tmp_path, monkeypatch):
    for run, pairs in (("org/a", [(Y, Y), (N, N), (Y, N)]), ("org/b", [(Y, N), (N, N), (Y, N)])):
        make_checkpoint(tmp_path / "results", run, "fr", predictions_of(pairs))
    valid = [r for r in collect_checkpoints(tmp_path / "results") if r.valid]
    calls = []
    real = lrb_report.mcnemar_against_top
    monkeypatch.setattr(lrb_report, "mcnemar_against_top", lambda records: calls.append(1) or real(records))
    first = lrb_report.lrb_tables(valid)
    assert lrb_report.lrb_tables(list(valid)) is first and len(calls) == 1      # the very records: once
    assert [row[keys.RUN] for row in first.leaderboard] == ["org/a", "org/b"]
    other = [replace(valid[0]), valid[1]]                                        # an equal record, another object
    assert lrb_report.lrb_tables(other) is not first and len(calls) == 2
    assert lrb_report.lrb_tables(valid[:1]).run_order == ["org/a"]
