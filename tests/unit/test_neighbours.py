"""Issue 35's second part: the items' outcomes a validation keeps (one digit per item, in item id
order, under a digest of the ids and labels), the delta-method variances against a hand-computed case
and against the paired bootstrap, the report's marks between neighbouring ranks (the same McNemar p
as `kit compare`, neighbours.csv, the HTML marks and their pages), languages not compared and why,
and `kit compare`'s sentences, `--benchmark` and `--html` (escaped, refused on a folder)."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest
from conftest_checkpoints import make_checkpoint, predictions_of
from inprocess import kit_in_process as kit

from kit.config.kinds import load_benchmark
from kit.demo.dataset import write_demo_benchmark
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint, validate_each_with_outcomes, without_predictions
from kit.results.keys import PairState
from kit.results.kinds.lrb.compare import compare_runs
from kit.results.kinds.lrb.neighbours import compare_outcomes, neighbour_comparisons
from kit.results.kinds.lrb.paired import (CELL_INDEX, item_outcomes, joint_counts, joint_of_outcomes, normal_differences,
                                          paired_language, seed)
from kit.results.metrics import confusion_cell
from kit.results.report import collect_checkpoints, write_report

np = pytest.importorskip("numpy")

YES, NO, UNP = "yes", "no", "unparsed"
HOSTILE = "<script>alert('x')</script>&\"'"


def test_each_items_digit_is_its_confusion_cell_in_item_id_order():
    pairs = list(itertools.product((YES, NO), (YES, NO, UNP, None)))
    preds = predictions_of(pairs)[::-1]                 # file order must not matter: ids sort
    digest, digits = item_outcomes(preds)
    expected = "".join(str(CELL_INDEX[confusion_cell(e, p)]) for e, p in pairs)
    assert digits == expected
    assert item_outcomes(predictions_of(pairs)) == (digest, digits)
    relabelled = predictions_of([(NO if i == 0 else e, p) for i, (e, p) in enumerate(pairs)])
    assert item_outcomes(relabelled)[0] != digest       # another label, another digest
    assert item_outcomes(predictions_of(pairs, prefix="other"))[0] != digest   # other ids, too
    assert item_outcomes([{"no": "id"}]) is None


def test_the_accuracy_variance_is_the_hand_computed_paired_one():
    # 100 items: 10 only A right, 4 only B right, 50 both right, 36 both wrong
    a = [0] * 10 + [3] * 4 + [0] * 50 + [2] * 0 + [1] * 36
    b = [3] * 10 + [0] * 4 + [0] * 50 + [1] * 36
    joint = [0] * 25
    for x, y in zip(a, b):
        joint[5 * x + y] += 1
    _, _, acc_diff, acc_var = normal_differences(joint)
    p10, p01 = 0.10, 0.04
    assert acc_diff == pytest.approx(p10 - p01)
    assert acc_var == pytest.approx((p10 + p01 - (p10 - p01) ** 2) / 100)


def test_the_delta_method_sd_is_close_to_the_paired_bootstraps():
    rng = np.random.default_rng(7)
    cells_a = rng.choice(5, size=300, p=[0.35, 0.1, 0.35, 0.15, 0.05])
    flip = rng.random(300) < 0.2
    cells_b = np.where(flip, rng.choice(5, size=300), cells_a)
    joint = [0] * 25
    for x, y in zip(cells_a, cells_b):
        joint[5 * int(x) + int(y)] += 1
    f1_diff, f1_var, acc_diff, acc_var = normal_differences(joint)
    boot = paired_language(joint, 4000, seed("a", "b", "xx"))
    assert f1_diff == pytest.approx(boot.f1_a - boot.f1_b)
    assert acc_diff == pytest.approx(boot.accuracy_a - boot.accuracy_b)
    assert np.sqrt(f1_var) == pytest.approx(float(np.std(boot.f1_draws)), rel=0.1)
    assert np.sqrt(acc_var) == pytest.approx(float(np.std(boot.accuracy_draws)), rel=0.1)


def _tree(root: Path, runs: dict[str, list[str]], labels: list[str], languages=("de", "en")) -> Path:
    for lang in languages:
        for run, verdicts in runs.items():
            make_checkpoint(root, run, lang, predictions_of(list(zip(labels, verdicts))))
    return root


LABELS = [YES, NO] * 50
BEST = list(LABELS)                                                      # every item right
CLOSE = [NO if i == 2 else lab for i, lab in enumerate(LABELS)]          # one item wrong
WORST = [NO if i % 4 == 0 else lab for i, lab in enumerate(LABELS)]     # 25 wrong


def test_a_neighbours_mcnemar_p_is_kit_compares(tmp_path):
    results = _tree(tmp_path / "results", {"org/best": BEST, "org/worst": WORST}, LABELS)
    records = {r.language: r for r in collect_checkpoints(results) if r.run == "org/best"}
    others = {r.language: r for r in collect_checkpoints(results) if r.run == "org/worst"}
    assert all(r.outcomes is not None for r in records.values())
    quick = compare_outcomes("org/best", records, "org/worst", others)
    full = compare_runs(results, "org/best", results, "org/worst")
    for q, f in zip(quick.languages, full.languages, strict=True):
        assert (q.language, q.items, q.only_a_right, q.only_b_right) == (f.language, f.items, 25, 0)
        assert q.p_value == pytest.approx(f.p_value) and q.p_holm == pytest.approx(f.p_holm)
        assert q.f1.diff == pytest.approx(f.f1.diff) and q.accuracy.diff == pytest.approx(0.25)
        assert q.f1.low < q.f1.diff < q.f1.high
    assert quick.macro_f1.low > 0 and quick.not_compared == {}


def test_the_report_writes_which_neighbours_the_items_tell_apart(tmp_path):
    results = _tree(tmp_path / "results", {"org/best": BEST, "org/close": CLOSE, "org/worst": WORST}, LABELS)
    out = tmp_path / "report"
    outcome = write_report(results, out, verdicts=[])
    rows = list(csv.DictReader((out / "neighbours.csv").open(encoding="utf-8")))
    assert [(r["rank"], r[keys.RUN], r["next_run"], r["languages"], r["distinguishable"]) for r in rows] == [
        ("1", "org/best", "org/close", "2", "no"),          # one item apart: not told apart
        ("2", "org/close", "org/worst", "2", "yes")]        # 24 items apart
    assert float(rows[1]["f1_low"]) > 0 and float(rows[0]["f1_low"]) < 0 < float(rows[0]["f1_high"])
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Neighbouring ranks" in summary and "1 of 2 neighbouring pairs are distinguishable" in summary
    index = outcome.files["html"].read_text(encoding="utf-8")
    assert index.count(">≈</a>") == 1 and index.count(">≠</a>") == 1
    head = [index.index(f"<th>{col}</th>") for col in ("rank", keys.F1, "vs next", keys.MODEL_REVISION)]
    assert head == sorted(head)   # what a reader came for comes first, the revision last
    pages = sorted((out / "pages").glob("compare-*.html"))
    assert len(pages) == 2
    page = next(p for p in pages if "org/worst" in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    assert "distinguishable" in text and "kit compare org/close org/worst" in text


def test_a_neighbour_with_other_items_is_not_compared_and_says_why(tmp_path):
    results = tmp_path / "results"
    make_checkpoint(results, "org/a", "de", predictions_of(list(zip(LABELS, BEST))))
    make_checkpoint(results, "org/b", "de", predictions_of(list(zip(LABELS, WORST)), prefix="other"))
    make_checkpoint(results, "org/a", "en", predictions_of(list(zip(LABELS, BEST))))
    valid = [r for r in collect_checkpoints(results) if r.valid]
    [neighbour] = neighbour_comparisons(valid, ["org/a", "org/b"])
    assert neighbour.comparison.languages == [] and not neighbour.distinguishable
    assert neighbour.comparison.not_compared == {
        "de": "the two checkpoints hold other items or labels (different benchmark data)",
        "en": "only A has a complete checkpoint"}


def test_outcomes_are_dropped_unless_asked_for(tmp_path):
    path = make_checkpoint(tmp_path / "results", "org/a", "de", predictions_of([(YES, YES), (NO, YES)]))
    state = validate_checkpoint(path)
    assert state.state == PairState.COMPLETE and without_predictions(state).outcomes is None
    [kept_by_pool] = validate_each_with_outcomes([(path, {})])
    assert kept_by_pool.outcomes == item_outcomes(state.data[keys.PREDICTIONS])
    kept = without_predictions(state, outcomes=True)
    assert kept.outcomes[1] == "01" and keys.PREDICTIONS not in kept.data
    assert joint_of_outcomes("01", "10") == [0, 1, 0, 0, 0, 1] + [0] * 19


def _answer(label: str) -> str:
    """A hostile answer whose verdict is the opposite of `label`, as lrb's parser reads it."""
    return f"{'No' if label == YES else 'Yes'} {HOSTILE}"


def _benchmark_tree(tmp_path: Path) -> tuple[Path, Path]:
    """The demo benchmark, with a hostile sentence, and two runs' checkpoints on its German items."""
    bench_dir = write_demo_benchmark(tmp_path / "bench")
    items = load_benchmark(bench_dir).load_language("de").items
    results = tmp_path / "results"
    right = [{keys.ITEM_ID: it.item_id, keys.EXPECTED: it.label, keys.PREDICTED: it.label,
              keys.RAW_OUTPUT: it.label, keys.TRUNCATED: False, keys.PARSE_MODE: keys.PARSE_EXACT} for it in items]
    wrong = [dict(p, **{keys.PREDICTED: NO if p[keys.EXPECTED] == YES else YES, keys.RAW_OUTPUT: _answer(p[keys.EXPECTED])})
             if i < 3 else p for i, p in enumerate(right)]
    pinned = load_benchmark(bench_dir).pinned_sha256("de")   # measured on this benchmark's German data
    make_checkpoint(results, "org/a", "de", right, benchmark_sha256=pinned)
    make_checkpoint(results, "org/b", "de", wrong, benchmark_sha256=pinned)
    return bench_dir, results


def test_compare_names_each_flipped_items_sentence_and_escapes_the_page(tmp_path):
    bench_dir, results = _benchmark_tree(tmp_path)
    sentences = {it.item_id: it.sentence for it in load_benchmark(bench_dir).load_language("de").items}
    html_file = tmp_path / "compare.html"
    r = kit("compare", "org/a", "org/b", "--results", str(results), "--benchmark", str(bench_dir),
            "--html", str(html_file), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert len(data["flips"]) == 3 and data["html"] == str(html_file)
    for flip in data["flips"]:
        assert flip["sentence"] == sentences[flip["item_id"]] and HOSTILE in flip["answer_b"]
    page = html_file.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert all(sentences[f["item_id"]].split()[0] in page for f in data["flips"])
    text = kit("compare", "org/a", "org/b", "--results", str(results), "--benchmark", str(bench_dir), cwd=tmp_path)
    assert sentences[data["flips"][0]["item_id"]] in text.stdout
    bare = kit("compare", "org/a", "org/b", "--results", str(results), cwd=tmp_path)
    assert "give --benchmark DIR" in bare.stdout


@pytest.mark.parametrize("flag,value,words", [
    ("--html", ".", ["--html", "is a directory"]),
    ("--benchmark", "nowhere", ["nowhere", "does not exist"]),
])
def test_compare_refuses_a_bad_html_or_benchmark_path_in_one_line(tmp_path, flag, value, words):
    _, results = _benchmark_tree(tmp_path)
    r = kit("compare", "org/a", "org/b", "--results", str(results), flag, value, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr
    assert not (tmp_path / "compare.html").exists()


def test_compare_holds_each_file_to_the_benchmark_and_counts_no_language_two_files_claim(tmp_path):
    """With the benchmark at hand, a checkpoint that dropped the items it got wrong (metrics made to match)
    is not compared; a language for which a run has two files is not compared either, naming both."""
    import shutil

    bench_dir, results = _benchmark_tree(tmp_path)
    b = results / "de" / "org__b.json"
    data = json.loads(b.read_text(encoding="utf-8"))
    kept = [p for p in data[keys.PREDICTIONS] if p[keys.PREDICTED] == p[keys.EXPECTED]]
    make_checkpoint(results, "org/b", "de", kept, benchmark_sha256=data[keys.METADATA][keys.BENCHMARK_SHA256])
    r = kit("compare", "org/a", "org/b", "--results", str(results), "--benchmark", str(bench_dir), cwd=tmp_path)
    assert r.returncode == 2 and "de: B's checkpoint is not counted: invalid: predictions: item_ids differ" in r.stderr, r.stderr
    _benchmark_tree(tmp_path)
    shutil.copy(results / "de" / "org__b.json", results / "org__b.json")
    shutil.copy(results / "de" / "org__b.mllog", results / "org__b.mllog")
    r = kit("compare", "org/a", "org/b", "--results", str(results), "--benchmark", str(bench_dir), cwd=tmp_path)
    assert r.returncode == 2 and "two files count for it" in r.stderr and "org__b.json and" in r.stderr, r.stderr


def test_joint_counts_of_digit_strings_match_counting_item_by_item():
    import random

    rng = random.Random(7)
    for length in (0, 1, 2, 300, 1000):
        for _ in range(5):
            a = "".join(rng.choice("01234") for _ in range(length))
            b = "".join(rng.choice("01234") for _ in range(length))
            assert joint_of_outcomes(a, b) == joint_counts(map(int, a), map(int, b))
    # every joint cell at once, the highest (4, 4) at the last byte, where a carry would show
    every = [(x, y) for x in range(5) for y in range(5)]
    a, b = "".join(str(x) for x, _ in every), "".join(str(y) for _, y in every)
    assert joint_of_outcomes(a, b) == [1] * 25
    assert joint_of_outcomes("44" * 200, "44" * 200)[24] == 400


def test_outcomes_of_runs_sharing_their_items_are_each_their_own():
    """The typed read's outcomes keep each language's item order and digest once: a second run of the
    same items (a hit) still gets its own cells, and other items or labels their own digest."""
    import random

    from kit.results.kinds.lrb.paired import outcomes_of_columns, outcomes_of_text_columns

    rng = random.Random(3)
    ids = tuple(f"{rng.getrandbits(40):010x}" for _ in range(50))
    expected = [rng.choice((YES, NO)) for _ in ids]
    for _ in range(3):
        predicted = [rng.choice((YES, NO, "unparsed", None)) for _ in ids]
        assert outcomes_of_text_columns(ids, expected, predicted) == outcomes_of_columns(ids, expected, predicted)
    flipped = [NO if e == YES else YES for e in expected]
    assert outcomes_of_text_columns(ids, flipped, expected) == outcomes_of_columns(ids, flipped, expected)
    assert outcomes_of_text_columns(ids, flipped, expected)[0] != outcomes_of_text_columns(ids, expected, expected)[0]
    shared = ("b", "a", "a")   # a shared id: ordered by its labels too
    assert outcomes_of_text_columns(shared, [YES, NO, YES], [NO, NO, YES]) == \
        outcomes_of_columns(shared, [YES, NO, YES], [NO, NO, YES])
