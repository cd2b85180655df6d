"""The validated-checkpoint cache (kit.results.cache): it never hides a changed file, ignores a corrupt
cache file, works on a read-only results folder, and keeps verdicts per expectation."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from conftest_checkpoints import make_checkpoint, no_racy_window, predictions_of, rewrite, seal_all

from kit.results import cache as cache_mod
from kit.results import keys, parallel
from kit.results.keys import PairState
from kit.results.cache import CheckpointCache
from kit.results.identity import Expected

Y, N = keys.YES, keys.NO
RUN = "org/model"


@pytest.fixture(autouse=True)
def fresh_files_stored(monkeypatch):
    no_racy_window(monkeypatch)


@pytest.fixture
def tree(tmp_path):
    results = tmp_path / "results"
    path = make_checkpoint(results, RUN, "fr", predictions_of([(Y, Y), (N, N), (Y, N)]))
    return results, path, tmp_path / "cache"


def counting(monkeypatch):
    """Count the real validations behind the cache."""
    calls = []
    real = parallel.validate_summary

    def spy(path, **kw):
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(parallel, "validate_summary", spy)
    return calls


def fresh(results, folder):
    c = CheckpointCache(results, folder)
    return c


def test_a_warm_run_does_not_revalidate_and_gives_the_same_verdict(tree, monkeypatch):
    results, path, folder = tree
    calls = counting(monkeypatch)
    first = fresh(results, folder)
    cold = first.validate(path)
    first.save()
    warm = fresh(results, folder).validate(path)
    assert len(calls) == 1
    assert cold.state == warm.state == PairState.COMPLETE
    assert keys.PREDICTIONS not in warm.data and warm.data[keys.METADATA][keys.RUN] == RUN
    assert warm.truncated == cold.truncated == 0
    lean = CheckpointCache(results, folder, sections=False).validate(path)
    assert lean.state == PairState.COMPLETE and lean.data is None
    assert len(calls) == 1


def test_same_size_new_content_and_mtime_is_revalidated(tree, monkeypatch):
    results, path, folder = tree
    c = fresh(results, folder)
    assert c.validate(path).complete
    c.save()
    before = path.stat()
    text = path.read_text()
    flipped = text.replace('"predicted": "yes"', '"predicted": "nop"', 1)   # same length, now invalid
    assert len(flipped) == len(text) and flipped != text
    path.write_text(flipped)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert fresh(results, folder).validate(path).state == PairState.INVALID


def test_same_mtime_new_size_and_inode_is_revalidated(tree):
    results, path, folder = tree
    c = fresh(results, folder)
    assert c.validate(path).complete
    c.save()
    before = path.stat()
    other = path.with_name("new.tmp")
    rewrite(path, lambda d: d[keys.PREDICTIONS][0].update({keys.PREDICTED: N}))   # metrics now wrong
    os.replace(path, other)
    other.rename(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    state = fresh(results, folder).validate(path)
    assert state.state == PairState.INVALID and "metrics do not recompute" in state.reasons[0]


def test_a_changed_file_is_revalidated_even_with_the_same_stat_but_new_ctime(tree, monkeypatch):
    results, path, folder = tree
    c = fresh(results, folder)
    c.validate(path)
    c.save()
    calls = counting(monkeypatch)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))   # same mtime and size; ctime moves
    fresh(results, folder).validate(path)
    assert len(calls) == 1


def unsealed(cache_file: Path) -> bytes:
    """A cache file's lines, without the HMAC line that follows them."""
    text, mark, _ = cache_file.read_bytes().rpartition(b"\n#hmac-sha256 ")
    assert mark, "a cache file ends in its HMAC line"
    return text + b"\n"


def entries_in(cache_file: Path) -> dict:
    """A cache file's entries as its lines hold them (a header line, then a name and an entry per line)."""
    header, *lines = unsealed(cache_file).splitlines()
    assert json.loads(header)["format"] == cache_mod.CACHE_FORMAT
    return {json.loads(name): json.loads(entry) for name, _, entry in (line.partition(b"\t") for line in lines)}


def sealed_as(cache: CheckpointCache, text: bytes) -> bytes:
    """`text` followed by the HMAC line the cache's key gives it: a file the cache must still judge by its content."""
    import hashlib
    import hmac

    return text + b"#hmac-sha256 " + hmac.new(cache._key, text, hashlib.sha256).hexdigest().encode() + b"\n"


def cache_lines(cache: CheckpointCache, entries: dict) -> bytes:
    """A cache file's text before its HMAC line: the cache's own header, then these entries."""
    return b"".join([json.dumps(cache._header).encode() + b"\n",
                     *(json.dumps(name).encode() + b"\t" + json.dumps(entry).encode() + b"\n"
                       for name, entry in entries.items())])


def saved_cache(results: Path, path: Path, folder: Path) -> tuple[CheckpointCache, Path]:
    """A cache that validated `path` and saved itself, and its verdicts file."""
    c = fresh(results, folder)
    c.validate(path)
    c.save()
    (cache_file,) = [p for p in folder.glob("*.json") if not p.name.endswith(".sections.json")]
    return c, cache_file


def test_a_cache_file_edited_by_hand_is_ignored_as_a_whole(tree, monkeypatch):
    results, path, folder = tree
    _, cache_file = saved_cache(results, path, folder)
    assert b'"complete"' in unsealed(cache_file)
    edited = unsealed(cache_file).replace(b'"complete"', b'"queued"')
    cache_file.write_bytes(edited + cache_file.read_bytes()[len(edited):])   # the old HMAC line kept
    calls = counting(monkeypatch)
    assert fresh(results, folder).validate(path).state == PairState.COMPLETE and len(calls) == 1


def test_a_corrupt_cache_file_is_ignored_and_rebuilt(tree, monkeypatch):
    results, path, folder = tree
    c, cache_file = saved_cache(results, path, folder)
    sections = cache_file.with_suffix(".sections.json")
    good = {p: p.read_bytes() for p in (cache_file, sections)}
    entry = entries_in(cache_file)["fr/org__model.json"]
    header = json.dumps(c._header).encode() + b"\n"
    for target, junk in ((cache_file, b"{not json\n"), (cache_file, b"[]\n"), (sections, b"\x00\xff\n"),
                         (cache_file, json.dumps({**c._header, "format": 4}).encode() + b"\n"),
                         (cache_file, header + b"not an entry line\n"),
                         (cache_file, header + b'"fr/org__model.json"\t{"file": \n'),
                         (cache_file, cache_lines(c, {"fr/org__model.json": {"file": "x", "verdicts": 3}})),
                         (cache_file, cache_lines(c, {"fr/org__model.json": {
                             "file": entry["file"], "verdicts": {k: ["complete", "no", None] for k in entry["verdicts"]}}})),
                         (sections, cache_lines(c, {"fr/org__model.json": {
                             "file": entry["file"], "summary": [], "truncated": "many"}}))):
        for p, text in good.items():
            p.write_bytes(text)
        target.write_bytes(sealed_as(c, junk))   # sealed with the right key: each must still be read as junk
        calls = counting(monkeypatch)
        again = fresh(results, folder)
        assert again.validate(path).complete
        assert len(calls) == 1
        again.save()
        assert entries_in(cache_file)["fr/org__model.json"]["verdicts"]


def test_a_read_only_results_folder_works(tree, monkeypatch):
    results, path, folder = tree
    calls = counting(monkeypatch)
    for p in (path, path.parent, results):
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        c = fresh(results, folder)
        assert c.validate(path).complete
        c.save()
        assert fresh(results, folder).validate(path).complete
    finally:
        for p in (results, path.parent, path):
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    assert len(calls) == 1
    assert not any(p.name.startswith(".") for p in results.rglob("*"))


def test_an_unwritable_cache_folder_is_not_an_error(tree):
    results, path, _ = tree
    blocker = results.parent / "blocked"
    blocker.write_text("a file where the cache folder would be")
    c = fresh(results, blocker / "checkpoints")
    assert c.validate(path).complete
    c.save()


def test_verdicts_are_kept_per_expectation(tree, monkeypatch):
    results, path, folder = tree
    ids = tuple(f"item-{i:03d}" for i in range(3))
    c = fresh(results, folder)
    assert c.validate(path, expect=Expected(item_ids=ids)).complete
    assert c.validate(path, expect=Expected(item_ids=ids[::-1])).state == PairState.INVALID
    assert c.validate(path, run="org/other").state == PairState.INVALID
    c.save()
    calls = counting(monkeypatch)
    warm = fresh(results, folder)
    assert warm.validate(path, expect=Expected(item_ids=ids)).complete
    assert warm.validate(path, expect=Expected(item_ids=ids[::-1])).state == PairState.INVALID
    assert warm.validate(path, run="org/other").state == PairState.INVALID
    assert warm.validate(path, expect=Expected(item_ids=ids, identity={keys.RUN: RUN})).complete
    assert len(calls) == 1   # only the new expectation


def test_a_fresh_file_is_not_stored(tree, monkeypatch):
    results, path, folder = tree
    monkeypatch.setattr(cache_mod, "RACY_SECONDS", 3600.0)
    c = fresh(results, folder)
    c.validate(path)
    assert not c.changed


def test_kit_no_cache_turns_it_off(tree, monkeypatch):
    results, path, folder = tree
    monkeypatch.setenv("KIT_CACHE_DIR", str(folder))
    monkeypatch.setenv("KIT_NO_CACHE", "1")
    c = CheckpointCache.open(results)
    c.validate(path)
    c.save()
    assert not folder.exists()
    monkeypatch.delenv("KIT_NO_CACHE")
    assert CheckpointCache.open(results).file.parent == folder / "checkpoints"


def test_a_missing_file_is_missing(tree):
    results, path, folder = tree
    assert fresh(results, folder).validate(path.with_name("absent.json")).state == "missing"


def test_status_verify_and_report_use_the_cache_and_see_a_changed_file(tree, monkeypatch):
    from click.testing import CliRunner

    from kit.cli.main import cli

    results, path, folder = tree
    make_checkpoint(results, RUN, "de", predictions_of([(Y, Y), (N, Y)]))
    monkeypatch.setenv("KIT_CACHE_DIR", str(folder))
    monkeypatch.chdir(results.parent)
    runner = CliRunner()

    def status():
        out = runner.invoke(cli, ["status", str(results), "--json"])
        return {p["language"]: p["state"] for p in json.loads(out.output)["data"]["pairs"]}

    assert status() == {"de": "complete", "fr": "complete"}
    assert list((folder / "checkpoints").glob("*.json"))
    calls = counting(monkeypatch)
    assert status() == {"de": "complete", "fr": "complete"}
    assert runner.invoke(cli, ["verify", str(results)]).exit_code == 0
    assert calls == []
    rewrite(path, lambda d: d[keys.METRICS].update({keys.ACCURACY: 0.5}))
    assert status() == {"de": "complete", "fr": "invalid"}
    assert len(calls) == 1
    out = runner.invoke(cli, ["verify", str(results)])
    assert out.exit_code == 1 and "FAIL" in out.output and len(calls) == 1   # the verdict was cached
    report = runner.invoke(cli, ["report", str(results), "-o", str(results.parent / "out")])
    assert "fr/org__model.json" in report.output + (report.stderr_bytes or b"").decode()


def test_two_processes_saving_keep_each_others_verdicts(tree, monkeypatch):
    results, path, folder = tree
    other = make_checkpoint(results, RUN, "de", predictions_of([(Y, Y)]))
    a, b = fresh(results, folder), fresh(results, folder)     # both opened before either saved
    a.validate(path)
    b.validate(other)
    b.validate(path, run="org/other")
    a.save()
    b.save()
    calls = counting(monkeypatch)
    merged = fresh(results, folder)
    merged.validate(path)
    merged.validate(other)
    merged.validate(path, run="org/other")
    assert calls == []


def test_a_pool_of_workers_gives_the_same_states_in_order(tmp_path, monkeypatch):
    from kit.results.checkpoint import validate_each_with_outcomes

    results = tmp_path / "results"
    paths = [make_checkpoint(results, f"org/m{i}", lang, predictions_of([(Y, Y), (N, Y)]))
             for i in range(3) for lang in ("de", "fr")]
    rewrite(paths[2], lambda d: d[keys.METRICS].update({keys.F1: 0.25}))
    # languages interleaved (de, fr, de, ...): the pool takes them grouped by language, the answer keeps this order
    jobs = [(p, {"run": None, "language": p.parent.name}) for p in paths] + [(results / "fr" / "absent.json", {})]
    monkeypatch.setattr(parallel, "MIN_FILES", 2)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    pooled = parallel.validate_many(jobs)
    assert pooled == validate_each_with_outcomes(jobs)
    assert pooled[0].outcomes is not None and pooled[0].outcomes[1] == "01"   # (yes, yes) tp, (no, yes) fp
    assert [s.state for s in pooled] == ["complete"] * 2 + ["invalid"] + ["complete"] * 3 + ["missing"]
    # a report's reader also gets each complete file's MLLOG compliance findings, checked in the same worker
    from kit.results.check import compliance_findings

    checked = parallel.validate_many(jobs, compliance=compliance_findings)
    assert [replace(s, compliance=None) for s in checked] == pooled
    assert [s.compliance is not None for s in checked] == [s.state == "complete" for s in checked]
    c = fresh(results, tmp_path / "cache")
    assert [s.state for s in c.validate_all(jobs)] == [s.state for s in pooled]
    c.save()
    calls = counting(monkeypatch)
    assert fresh(results, tmp_path / "cache").validate_all(jobs) == checked   # outcomes and findings cached too
    assert [p for p in calls] == [results / "fr" / "absent.json"]
    # findings of another mlperf-logging are not taken from the cache (the page checks the log again)
    monkeypatch.setattr(cache_mod, "_CHECKER", ["0.0.0-other"])
    again = fresh(results, tmp_path / "cache").validate_all(jobs)
    assert [s.compliance for s in again] == [None] * len(jobs)
    assert [replace(s, compliance=None) for s in again] == [replace(s, compliance=None) for s in checked]


def test_a_changed_benchmark_file_is_never_hidden_by_cached_verdicts(tmp_path, monkeypatch):
    import sys

    from click.testing import CliRunner

    from kit.cli.main import cli

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.tree import build_tree

    tree = build_tree(tmp_path, 2, 2, items=20, progress=lambda msg: None)
    seal_all(tree.results)   # the logs the jobs would have written beside their checkpoints
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tree.root)
    runner = CliRunner()
    for command in (["status", "results", "--json"], ["verify", "results", "--json"]):
        assert runner.invoke(cli, command).exit_code == 0
        calls = counting(monkeypatch)
        assert runner.invoke(cli, command).exit_code == 0
        assert calls == []                                        # warm: nothing read again
        monkeypatch.undo()
        monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.chdir(tree.root)
        monkeypatch.setattr(cache_mod, "RACY_SECONDS", -1.0)
    csv = next(tree.benchmark.rglob("*.csv"))
    text = csv.read_text()
    csv.write_text(text.replace("field", "fiELD", 1))             # same size, other bytes
    language = csv.parent.name
    for command, code in ((["status", "results", "--json"], 0), (["verify", "results", "--json"], 1)):
        out = runner.invoke(cli, command)
        # the changed language's files cannot be held to their data, as uncached; the others keep theirs
        assert out.exit_code == code, out.output
        text = json.dumps(json.loads(out.output)["data"])
        assert text.count("cannot be checked against its benchmark") == 2 and "sha256" in text, out.output
        assert f"results/{language}/" in text


def test_shared_strings_keeps_the_value_and_holds_each_string_once():
    from kit.results.shared_values import shared_json

    a = json.loads('{"metadata": {"run": "org/m", "seed": 0}, "tags": ["org/m", 1.5, null, true]}')
    b = json.loads('{"metadata": {"run": "org/m", "seed": 0}, "tags": ["org/m", 1.5, null, true]}')
    assert a["metadata"]["run"] is not b["metadata"]["run"]
    table: dict[str, str] = {}
    a2, b2 = shared_json(a, table), shared_json(b, table)
    assert a2 == a and b2 == b
    assert a2["metadata"]["run"] is b2["metadata"]["run"] is b2["tags"][0]
    assert [k for k in a2["metadata"]][0] is [k for k in b2["metadata"]][0]
    assert shared_json(None, table) is None and shared_json(7, table) == 7


def test_equal_nested_objects_are_held_once_and_only_when_equal_in_every_type():
    from kit.results.shared_values import shared_json

    def doc(number, zero, packages):
        return json.loads(json.dumps({"provenance": {"packages": packages, "hardware": {"gpus": number, "load": zero},
                                                     "image": {"digest": "sha256:ab", "tags": ["a"]}},
                                      "metadata": {"run": "org/m"}}))

    table: dict = {}
    a = shared_json(doc(1, 0.0, {"torch": "2.6"}), table)
    b = shared_json(doc(1, 0.0, {"torch": "2.6"}), table)
    assert a == b == doc(1, 0.0, {"torch": "2.6"})
    assert a["provenance"]["packages"] is b["provenance"]["packages"]
    assert a["provenance"]["hardware"] is b["provenance"]["hardware"]
    # a document and its sections are its own; an object holding a list is not shared
    assert a is not b and a["provenance"] is not b["provenance"] and a["metadata"] is not b["metadata"]
    assert a["provenance"]["image"] is not b["provenance"]["image"]
    # a cache entry holds its document one level down: the same objects are shared, its sections are not
    e, f = (shared_json({"file": [1], "summary": doc(1, 0.0, {"torch": "2.6"})}, table, document_depth=1)
            for _ in range(2))
    assert e["summary"]["provenance"]["packages"] is f["summary"]["provenance"]["packages"] is a["provenance"]["packages"]
    assert e["summary"]["metadata"] is not f["summary"]["metadata"]
    # equal in Python, not in JSON: 1, 1.0 and True; 0.0 and -0.0
    for number, zero in ((1.0, 0.0), (True, 0.0), (1, -0.0)):
        c = shared_json(doc(number, zero, {"torch": "2.6"}), table)
        hardware = c["provenance"]["hardware"]
        assert hardware is not a["provenance"]["hardware"]
        assert type(hardware["gpus"]) is type(number) and str(hardware["load"]) == str(zero)


def test_cache_files_are_written_a_line_each_and_read_back_whole(tmp_path):
    cache = CheckpointCache(tmp_path / "results", tmp_path / "cache")   # makes the folder and its key
    for count in (0, 1, 500, 1201):
        cache.file.unlink(missing_ok=True)
        entries = {f"l{i % 7}/run-{i}.json": {"file": [i, 2, 3, 4, 5], "verdicts": {"k\u00e9\t\n": ["complete", [], []]}}
                   for i in range(count)}
        cache._write(cache.file, entries)
        assert entries_in(cache.file) == entries
        assert cache._load(cache.file) == entries
        assert len(cache.file.read_bytes().splitlines()) == count + 2   # the header, an entry per line, the HMAC


def test_a_results_tree_saves_its_cache_when_its_block_ends_even_on_an_error(tree, monkeypatch):
    from kit.plan import Pair
    from kit.results.tree import ResultsTree

    results, path, folder = tree
    monkeypatch.setenv("KIT_CACHE_DIR", str(folder))
    monkeypatch.delenv("KIT_NO_CACHE", raising=False)
    calls = counting(monkeypatch)
    with pytest.raises(RuntimeError), ResultsTree(results) as first:
        [cold] = first.pair_states([Pair(RUN, "fr")])
        raise RuntimeError("the command failed after reading")
    with ResultsTree(results) as second:
        [warm] = second.pair_states([Pair(RUN, "fr")])
        assert len(calls) == 1 and cold.state == warm.state == PairState.COMPLETE and warm.path == path
        [scanned] = second.scan()     # held to no run: a verdict of its own
    assert scanned.pair == Pair(RUN, "fr") and scanned.state == PairState.COMPLETE


def test_entries_read_back_share_their_verdicts_and_file_identity_and_still_answer_each_file(tree, monkeypatch):
    results, path, folder = tree
    other = make_checkpoint(results, "org/other", "fr", predictions_of([(Y, Y), (N, N), (Y, N)]))
    c = fresh(results, folder)
    for p in (path, other):
        c.validate(p)
    c.save()
    again = fresh(results, folder)   # reads both files: verdicts, then sections
    names = [again._name(str(p)) for p in (path, other)]
    (first,), (second,) = (list(again.entries[n]["verdicts"].values()) for n in names)
    assert first is second and first[0] == "complete"   # one [state, [], []] for every such verdict
    for name in names:
        assert again.data[name]["file"] is again.entries[name]["file"]
    calls = counting(monkeypatch)
    states = [again.validate(p) for p in (path, other)]
    assert calls == [] and [s.state for s in states] == ["complete", "complete"]
    states[0].reasons.append("a caller's own list")   # what a caller does with a state touches no entry
    assert again.validate(other).reasons == [] and first == ["complete", [], []]


def test_a_tree_whose_folder_name_is_not_utf8_is_cached_like_any_other(tmp_path, monkeypatch):
    results = Path(os.fsdecode(os.fsencode(tmp_path) + b"/res\xffults"))   # a name Linux allows, UTF-8 does not
    path = make_checkpoint(results, RUN, "fr", predictions_of([(Y, Y), (N, N), (Y, N)]))
    c = fresh(results, tmp_path / "cache")
    assert c.validate(path).complete
    c.save()
    calls = counting(monkeypatch)
    assert fresh(results, tmp_path / "cache").validate(path).complete and calls == []


@pytest.mark.parametrize("sections", [True, False])
def test_a_verdict_stored_in_this_process_is_given_back_as_a_saved_one_would_be(tree, monkeypatch, sections):
    results, path, folder = tree
    calls = counting(monkeypatch)
    c = CheckpointCache(results, folder, sections=sections)
    c.validate(path)
    before_save = c.validate(path)   # this process's own verdict, not yet written
    c.save()
    after_save = c.validate(path)
    from_file = CheckpointCache(results, folder, sections=sections).validate(path)
    assert len(calls) == 1 and c.hits == 2
    assert before_save == after_save == from_file
    assert (from_file.data is not None) == sections
    before_save.reasons.append("edited by a caller")   # each call gets lists of its own
    assert c.validate(path).reasons == []


def test_every_verdict_of_one_file_is_saved_with_those_read_for_the_same_file(tree, monkeypatch):
    results, path, folder = tree
    other = Expected(item_ids=("x",), answers=None)
    first = fresh(results, folder)
    first.validate(path)                     # no expectation
    first.save()
    second = fresh(results, folder)
    second.validate(path, run=RUN, language="fr")
    second.validate(path, expect=other)      # invalid against other items
    second.validate(path, run=RUN, language="fr")   # asked again: one verdict per key
    second.save()
    entry = entries_in(sorted(p for p in folder.glob("*.json") if not p.name.endswith(".sections.json"))[0])[
        "fr/org__model.json"]
    assert len(entry["verdicts"]) == 3
    assert sorted(v[0] for v in entry["verdicts"].values()) == sorted(
        [PairState.COMPLETE, PairState.COMPLETE, PairState.INVALID])
    calls = counting(monkeypatch)
    third = fresh(results, folder)
    assert third.validate(path).complete and third.validate(path, run=RUN, language="fr").complete
    assert third.validate(path, expect=other).state == PairState.INVALID
    assert calls == []


def test_the_runs_of_one_language_share_one_item_digest_in_memory(tmp_path):
    results = tmp_path / "results"
    items = [(Y, Y), (N, N), (Y, N)]
    paths = [make_checkpoint(results, f"org/model-{n}", "fr", predictions_of(items)) for n in range(3)]
    states = fresh(results, tmp_path / "cache").validate_all([(p, {}) for p in paths])
    digests = [st.outcomes[0] for st in states]
    assert len(set(digests)) == 1 and all(d is digests[0] for d in digests)
    assert states[0].outcomes[1] == states[1].outcomes[1]


def test_a_cache_key_cut_short_is_made_whole_and_one_anyone_can_read_is_no_key(tmp_path):
    """A key left empty (a full disk, a kill while it was written) no longer turns kit's cache off for
    good: the next command makes it whole, in one step; a key others could read stays no key."""
    from kit.results.cache_place import KEY_FILE, cache_key

    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / KEY_FILE).write_bytes(b"")
    (folder / KEY_FILE).chmod(0o600)
    key = cache_key(folder)
    assert key is not None and len(key) == 32 and (folder / KEY_FILE).read_bytes() == key
    assert cache_key(folder) == key                                        # kept, not made again
    assert [p.name for p in folder.iterdir()] == [KEY_FILE]                # no temporary file left
    (folder / KEY_FILE).chmod(0o644)
    assert cache_key(folder) is None and (folder / KEY_FILE).read_bytes() == key
    fresh = tmp_path / "fresh"
    assert len(cache_key(fresh)) == 32 and oct((fresh / KEY_FILE).stat().st_mode & 0o777) == "0o600"


def test_a_cache_file_written_after_a_killed_writer_removes_its_temporary_file(tmp_path):
    """A save killed mid-way (SIGKILL, the OOM killer) left a partial temporary cache file of tens of MB;
    the next save of a file in that folder removes it, never a running writer's."""
    import subprocess

    from kit.files import _host, temporary_path
    from kit.results.sealed_lines import write_entries

    proc = subprocess.Popen(["true"])
    proc.wait()
    target = tmp_path / "abc.sections.json"
    dead = tmp_path / f".abc.sections.json.{_host()}-{proc.pid}.lines.tmp"
    dead.write_bytes(b"x" * 1000)
    running = temporary_path(tmp_path / "other.json", "lines")   # this process: running
    running.write_bytes(b"y")
    write_entries(target, b"k" * 32, {"kind": "test"}, {"a": 1})
    assert target.is_file() and not dead.exists() and running.exists()
