"""A whole answer of the checkpoint cache (kit.results.tree_answers): the same jobs asked again of a tree
where no file changed are answered from one entry without reading the verdicts file, and anything that
changed what a verdict depends on (a file, its log, a missing file now there, what it is held to, the
answers file itself) sends the question back to the per-file cache, with the same verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest_checkpoints import make_checkpoint, no_racy_window, predictions_of, rewrite

from kit.results import cache as cache_mod
from kit.results import keys, parallel, tree_answers
from kit.results.cache import CheckpointCache
from kit.results.identity import Expected
from kit.results.keys import PairState

RUN = "org/model"
SOME = predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO), (keys.YES, keys.NO)])


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A results tree of two complete checkpoints (de, fr) and a cache folder; files stored however new."""
    no_racy_window(monkeypatch)
    results = tmp_path / "results"
    return results, [make_checkpoint(results, RUN, language, SOME) for language in ("de", "fr")], tmp_path / "cache"


@pytest.fixture
def validations(monkeypatch):
    """The files really validated behind the cache."""
    calls: list[Path] = []
    real = parallel.validate_summary

    def spy(path, **kw):
        calls.append(Path(path))
        return real(path, **kw)

    monkeypatch.setattr(parallel, "validate_summary", spy)
    return calls


def ask(results: Path, folder: Path, jobs: list) -> tuple[list, CheckpointCache]:
    """One command's question of the tree (status and verify read verdicts only), saved as a command does."""
    cache = CheckpointCache(results, folder, sections=False)
    states = cache.validate_all(jobs)
    cache.save()
    return states, cache


def plain(paths: list[Path]) -> list:
    return [(path, {"run": RUN, "language": path.parent.name, "expect": None}) for path in paths]


def verdicts(states: list) -> list:
    return [(s.state, s.reasons, s.notices, s.data) for s in states]


def answers_file(folder: Path) -> Path:
    (found,) = folder.glob("*.answers.json")
    return found


def test_the_same_question_of_an_unchanged_tree_is_answered_whole(tree, validations):
    results, paths, folder = tree
    cold, _ = ask(results, folder, plain(paths))
    assert len(validations) == 2
    warm, cache = ask(results, folder, plain(paths))
    assert len(validations) == 2
    assert verdicts(warm) == verdicts(cold) and [s.state for s in warm] == [PairState.COMPLETE] * 2
    assert cache._entries is None            # the verdicts file was never read
    assert cache.hits == 2                   # and status still says where its verdicts came from
    warm[0].reasons.append("a caller's own list")   # each state's lists are its own
    again, _ = ask(results, folder, plain(paths))
    assert again[0].reasons == []


def test_a_changed_file_is_validated_again_and_the_new_answer_kept(tree, validations):
    results, paths, folder = tree
    ask(results, folder, plain(paths))
    rewrite(paths[1], lambda d: d[keys.PREDICTIONS][0].update({keys.PREDICTED: keys.NO}))   # metrics now wrong
    states, cache = ask(results, folder, plain(paths))
    assert [s.state for s in states] == [PairState.COMPLETE, PairState.INVALID]
    assert validations == [paths[0], paths[1], paths[1]]
    assert "metrics do not recompute" in states[1].reasons[0]
    again, cache = ask(results, folder, plain(paths))
    assert verdicts(again) == verdicts(states) and cache._entries is None and len(validations) == 3


def test_a_changed_log_is_a_changed_world(tree, validations):
    results, paths, folder = tree
    ask(results, folder, plain(paths))
    log = paths[0].with_suffix(".mllog")
    log.unlink()
    states, cache = ask(results, folder, plain(paths))
    assert cache._entries is not None and len(validations) == 3
    assert states[0].state == PairState.INVALID and any("log" in r for r in states[0].reasons)


def test_a_missing_file_is_answered_until_it_is_written(tree, validations):
    results, paths, folder = tree
    later = results / "it" / "org__model.json"
    jobs = plain([*paths, later])
    first, _ = ask(results, folder, jobs)
    assert first[2].state == "missing"
    second, cache = ask(results, folder, jobs)
    assert verdicts(second) == verdicts(first) and cache._entries is None
    make_checkpoint(results, RUN, "it", predictions_of([(keys.YES, keys.YES)]))
    third, cache = ask(results, folder, jobs)
    assert third[2].state == PairState.COMPLETE and cache._entries is not None
    assert validations[-1] == later


def test_what_a_file_is_held_to_is_part_of_the_question(tree, validations):
    results, paths, folder = tree
    ids = tuple(f"item-{i:03d}" for i in range(3))
    held = [(p, {"run": RUN, "language": p.parent.name, "expect": Expected(item_ids=ids)}) for p in paths]
    other = [(p, {"run": RUN, "language": p.parent.name, "expect": Expected(item_ids=ids[:2])}) for p in paths]
    good, _ = ask(results, folder, held)
    bad, _ = ask(results, folder, other)
    assert {s.state for s in good} == {PairState.COMPLETE} and {s.state for s in bad} == {PairState.INVALID}
    # both questions are kept: each is answered whole again
    for jobs, want in ((held, good), (other, bad)):
        states, cache = ask(results, folder, jobs)
        assert verdicts(states) == verdicts(want) and cache._entries is None


def test_a_file_changed_within_the_racy_window_is_never_answered_whole(tree, monkeypatch):
    results, paths, folder = tree
    monkeypatch.setattr(cache_mod, "RACY_SECONDS", 3600.0)
    ask(results, folder, plain(paths))
    assert not list(folder.rglob("*.answers.json"))


def test_a_folder_in_place_of_a_checkpoint_is_never_answered_whole(tree):
    results, paths, folder = tree
    odd = results / "it" / "org__model.json"
    odd.mkdir(parents=True)
    states, _ = ask(results, folder, plain([*paths, odd]))
    assert states[2].state == PairState.INVALID
    assert not list(folder.rglob("*.answers.json"))


def test_an_edited_answers_file_is_ignored(tree, validations):
    results, paths, folder = tree
    ask(results, folder, plain(paths))
    rewrite(paths[1], lambda d: d[keys.PREDICTIONS][0].update({keys.PREDICTED: keys.NO}))
    truth, _ = ask(results, folder, plain(paths))
    file = answers_file(folder)
    text = file.read_bytes()
    # another hand makes the invalid file's verdict say complete
    forged = text.replace(b'"invalid"', b'"complete"', 1)
    assert forged != text
    file.write_bytes(forged)
    states, cache = ask(results, folder, plain(paths))
    assert verdicts(states) == verdicts(truth) and cache._entries is not None


def test_the_newest_questions_are_kept(tree, monkeypatch):
    results, paths, folder = tree
    monkeypatch.setattr(tree_answers, "MAX_QUESTIONS", 3)
    for n in range(5):
        ask(results, folder, [(paths[0], {"run": RUN, "language": "de",
                                          "expect": Expected(item_ids=tuple(f"item-{i:03d}" for i in range(n)))})])
    entries = [json.loads(line.split(b"\t")[1]) for line in answers_file(folder).read_bytes().splitlines()[1:-1]]
    assert len(entries) == 3
    # the last three asked, each answered whole again
    for n in (2, 3, 4):
        _, cache = ask(results, folder, [(paths[0], {"run": RUN, "language": "de",
                                                     "expect": Expected(item_ids=tuple(f"item-{i:03d}" for i in range(n)))})])
        assert cache._entries is None


def test_a_report_reads_sections_and_keeps_no_whole_answer(tree):
    results, paths, folder = tree
    cache = CheckpointCache(results, folder)
    cache.validate_all(plain(paths))
    cache.save()
    assert not list(folder.rglob("*.answers.json"))


def test_no_cache_folder_keeps_nothing(tree, validations):
    results, paths, _ = tree
    cache = CheckpointCache(results, None, sections=False)
    cache.validate_all(plain(paths))
    cache.save()
    assert cache.validate_all(plain(paths))[0].state == PairState.COMPLETE and len(validations) == 4


def test_the_world_digest_tells_a_missing_file_from_an_empty_identity():
    first, second = tree_answers.Question(), tree_answers.Question()
    first.add("a.json", "k", None)
    second.add("a.json", "k", [])
    assert first.digests != second.digests
    third = tree_answers.Question()
    third.add("a.json", "k", [1 << 70])   # past 64 bits: no world digest, never answered whole
    assert third.digests is None
