"""A report's memory and time: its lrb tables are computed once for its CSV files and its HTML report,
and again for any other records (kit.results.kinds.lrb.report.lrb_tables); its reader saves the cache
and lets go of the entries its records hold (kit.results.cache.CheckpointCache.forget)."""

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
    assert calls == []             # the tests between runs wait to be read (a plot is drawn meanwhile)
    assert first.top == first.top and len(calls) == 1
    assert lrb_report.lrb_tables(list(valid)) is first and first.top and len(calls) == 1   # the very records: once
    assert [row[keys.RUN] for row in first.leaderboard] == ["org/a", "org/b"]
    other = [replace(valid[0]), valid[1]]                                        # an equal record, another object
    assert lrb_report.lrb_tables(other) is not first and lrb_report.lrb_tables(other).top and len(calls) == 2
    assert lrb_report.lrb_tables(valid[:1]).run_order == ["org/a"]


def test_a_reports_reader_saves_the_cache_and_lets_go_of_the_entries_its_records_hold(tmp_path, monkeypatch):
    from kit.results import cache as cache_mod
    from kit.results.tree import ResultsTree

    monkeypatch.setattr(cache_mod, "RACY_SECONDS", -1.0)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KIT_NO_CACHE", raising=False)
    path = make_checkpoint(tmp_path / "results", "org/a", "fr", predictions_of([(Y, Y), (N, N)]))
    with ResultsTree(tmp_path / "results", sections=True) as tree:
        first = tree.validate_all([(path, {})])
        assert tree._cache.entries == {} and tree._cache.data == {}          # saved, then let go
        assert tree.validate_all([(path, {})]) == first and tree.from_cache == 0   # asked again: validated again
    with ResultsTree(tmp_path / "results", sections=True) as tree:           # the next report: from the file
        assert tree.validate_all([(path, {})]) == first and tree.from_cache == 1
    with ResultsTree(tmp_path / "results") as tree:                          # status keeps its entries
        tree.validate_all([(path, {})])
        assert tree._cache.entries


def test_the_digest_lines_hold_a_file_s_values_as_text_never_as_markdown(tmp_path):
    """A digest with a backtick, a decoding or language with a tag, a link or a newline: each stays inside its
    code span or escaped text on its one line of summary.md."""
    from kit.results.tables import digest_lines

    records = collect_checkpoints(_one_tree(tmp_path), None)
    hostile = "x`<img src=x onerror=alert(1)>`\n---"
    metadata = {**records[0].metadata, keys.PROMPT_SHA256: hostile, keys.BENCHMARK_SHA256: hostile,
                "decoding": "greedy\n\n[c](javascript:x)"}
    record = replace(records[0], data={**records[0].data, keys.METADATA: metadata}, language="xx\n# heading <b>")
    lines = digest_lines([record])
    assert all("\n" not in line for line in lines), lines
    assert not any("<img" in line.replace("\\<img", "") and "``" not in line for line in lines), lines
    assert not any(line.startswith(("#", "---")) for line in "\n".join(lines).splitlines())
    assert "\\[c\\]" in "\n".join(lines) and "xx\\\\n\\# heading \\<b\\>" in "\n".join(lines), lines


def _one_tree(tmp_path):
    results = tmp_path / "results"
    make_checkpoint(results, "org/m", "en", predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO)]))
    return results


def test_a_tab_or_newline_in_an_item_id_cannot_make_two_item_lists_digest_alike():
    """(item A dropped, and B's id forged to carry A's line) is not (A, B): their digests differ."""
    from kit.results.kinds.lrb.paired import outcomes_of_columns

    ids, expected, predicted = ["a1", "b2"], [keys.YES, keys.NO], [keys.YES, keys.NO]
    forged = outcomes_of_columns([f"a1\t{keys.YES}\nb2"], [keys.NO], [keys.NO])
    assert forged[0] != outcomes_of_columns(ids, expected, predicted)[0]
    assert outcomes_of_columns(ids, expected, predicted) == outcomes_of_columns(list(ids), list(expected), predicted)
