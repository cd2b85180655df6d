"""kit report: leaderboard, per-pair and per-language tables, summary, heatmap, refusals."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from conftest_checkpoints import write_job_checkpoint

from kit.errors import ConfigError, MissingExtraError
from kit.outputs import INVENTORY
from kit.results import keys, report
from kit.results.evidence import KIT_ONLY_METADATA, LEGACY_NOTICE
from kit.results.kinds.lrb import report as lrb_report
from kit.results.keys import PairState
from kit.results.metrics import compute_metrics
from kit.results.records import ReportFiles, check_comparable
from kit.results.store import checkpoint_path, write_checkpoint
from kit.results.tables import csv_text, rate, seconds, write_csv

RUN_A = "org/model-a"
RUN_B = "org/model-b@fast"
LANGS = ("en", "fr", "ja")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# (tp, fp, tn, fn, unparsed-with-expected-yes) per pair; 10 items each: 5 yes, 5 no.
CELLS = {
    (RUN_A, "en"): (4, 0, 5, 1, 0),
    (RUN_A, "fr"): (5, 0, 5, 0, 0),
    (RUN_A, "ja"): (3, 2, 3, 2, 0),
    (RUN_B, "en"): (0, 0, 5, 4, 1),
    (RUN_B, "fr"): (2, 0, 5, 3, 0),
    (RUN_B, "ja"): (5, 5, 0, 0, 0),
}
DIGEST = {"manifest": "a" * 64, "prompt": "b" * 64}


def _predictions(tp: int, fp: int, tn: int, fn: int, unparsed: int) -> list[dict]:
    pairs = [("yes", "yes")] * tp + [("yes", "no")] * fn + [("yes", "unparsed")] * unparsed
    pairs += [("no", "yes")] * fp + [("no", "no")] * tn
    return [
        {
            "item_id": f"i{n:03d}",
            "expected": expected,
            "predicted": predicted,
            "raw_output": predicted,
            "truncated": predicted == "unparsed",
            "parse_mode": "truncated" if predicted == "unparsed" else "exact",
        }
        for n, (expected, predicted) in enumerate(pairs)
    ]


def make_checkpoint(results: Path, run_name: str, lang: str, /, cells=None, **metadata) -> Path:
    """Write a valid checkpoint for (run, language); `metadata` overrides the defaults (None drops a key).
    A kit job's (with its provenance and log) unless every key only kit writes is dropped: then lrb's own."""
    predictions = _predictions(*(cells or CELLS[(run_name, lang)]))
    meta = {
        "model_id": run_name.split("@")[0],
        "run": run_name,
        "model_revision": "0" * 40,
        "language": lang,
        "backend": "transformers-5.17",
        "task": "generate",
        "decoding": "greedy",
        "max_new_tokens": 64,
        "manifest_sha256": DIGEST["manifest"],
        "benchmark_sha256": lang.ljust(64, "c"),
        "prompt_sha256": DIGEST["prompt"],
        "duration_seconds": 1.25,
    }
    meta.update(metadata)
    meta = {k: v for k, v in meta.items() if v is not None or k == "model_revision"}
    if meta.get("task") == "score":   # a score run's verdicts are its yes-scores against the 0.5 threshold
        predictions = [{**p, "parse_mode": "score", "score_yes": 0.9 if p["predicted"] == "yes" else 0.1,
                        "score_no": 0.1 if p["predicted"] == "yes" else 0.9} for p in predictions]
    data = {"metadata": meta, "metrics": compute_metrics(predictions), "predictions": predictions, "speed": {}}
    path = checkpoint_path(results, run_name, lang)
    if any(key in meta for key in KIT_ONLY_METADATA):
        return write_job_checkpoint(path, data)
    write_checkpoint(path, data)
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    for run, language in CELLS:
        make_checkpoint(root, run, language)
    return root


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _outputs(paths: ReportFiles) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in paths.files.values()}


def test_report_two_runs_three_languages(results: Path, tmp_path: Path) -> None:
    paths = report.write_report(results, tmp_path / "out")
    assert (paths.pairs, len(paths.invalid)) == (6, 0)

    board = _rows(paths.files["leaderboard"])
    assert list(board[0]) == list(lrb_report.LEADERBOARD_COLUMNS)
    assert [row["run"] for row in board] == [RUN_A, RUN_B]
    a, b = board
    # Hand-computed macro means over en, fr, ja.
    assert float(a["f1"]) == round((8 / 9 + 1.0 + 0.6) / 3, 4) == 0.8296
    assert float(a["accuracy"]) == round((0.9 + 1.0 + 0.6) / 3, 4)
    assert float(a["precision"]) == round((1.0 + 1.0 + 0.6) / 3, 4)
    assert float(a["recall"]) == round((0.8 + 1.0 + 0.6) / 3, 4)
    assert float(a["balanced_accuracy"]) == round((0.9 + 1.0 + 0.6) / 3, 4)
    assert float(b["f1"]) == round((0.0 + 4 / 7 + 2 / 3) / 3, 4) == 0.4127
    assert float(b["unparsed_rate"]) == round((0.1 + 0.0 + 0.0) / 3, 4)
    assert float(b["recall"]) == round((0.0 + 0.4 + 1.0) / 3, 4)
    assert a["matthews_corrcoef"] == repr(round((0.8164965809277261 + 1.0 + 0.2) / 3, 4))
    assert (a["languages"], a["n_items"], a["truncated"], a["duration_seconds"]) == ("3", "30", "0", "3.75")
    assert (b["truncated"], b["model_id"], b["task"], b["backend"]) == ("1", "org/model-b", "generate", "transformers-5.17")
    assert a["model_revision"] == "0" * 40

    aggregates = _rows(paths.files["aggregates"])
    assert len(aggregates) == 6
    assert [(r["run"], r["language"]) for r in aggregates] == sorted(CELLS)
    fr_a = aggregates[1]
    assert (fr_a["f1"], fr_a["true_positive"], fr_a["file"]) == ("1.0", "5", "fr/org__model-a.json")

    by_language = _rows(paths.files["by_language"])
    assert [r["language"] for r in by_language] == list(LANGS)
    assert by_language[2] == {
        "language": "ja", "runs": "2", "f1_mean": repr(round((0.6 + 2 / 3) / 2, 4)),
        "f1_min": "0.6", "f1_max": "0.6667", "best_run": RUN_B,
    }

    summary = paths.files["summary"].read_text(encoding="utf-8")
    assert RUN_A in summary and RUN_B in summary
    assert "2 runs, 3 languages, 6 pairs counted; 0 files not counted" in summary
    assert DIGEST["prompt"] in summary and DIGEST["manifest"] in summary


def test_heatmap_is_a_png_of_the_expected_size(results: Path, tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    paths = report.write_report(results, tmp_path / "out")
    data = paths.files["heatmap"].read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert b"Software" not in data and b"matplotlib" not in data.lower()
    pixels = image.imread(paths.files["heatmap"])
    width, height = lrb_report.heatmap_figsize([RUN_A, RUN_B], LANGS)
    assert pixels.shape[:2] == (round(height * lrb_report.HEATMAP_DPI), round(width * lrb_report.HEATMAP_DPI))


def test_report_is_byte_identical_when_run_twice(results: Path, tmp_path: Path) -> None:
    first = _outputs(report.write_report(results, tmp_path / "one"))
    again = _outputs(report.write_report(results, tmp_path / "one"))
    other = _outputs(report.write_report(results, tmp_path / "two"))
    assert first == again == other  # the PNG included
    assert not [p.name for p in (tmp_path / "one").iterdir() if p.name.startswith(".") and p.name != INVENTORY]  # no temp files left
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]   # nor staging folders beside


def test_invalid_file_is_listed_and_not_counted(results: Path, tmp_path: Path) -> None:
    broken = make_checkpoint(results, "org/model-c", "fr", cells=(5, 0, 5, 0, 0))
    broken.write_bytes(broken.read_bytes()[:200])  # truncated JSON
    paths = report.write_report(results, tmp_path / "out")
    assert (paths.pairs, len(paths.invalid)) == (6, 1)
    assert [row["run"] for row in _rows(paths.files["leaderboard"])] == [RUN_A, RUN_B]
    assert len(_rows(paths.files["aggregates"])) == 6
    summary = paths.files["summary"].read_text(encoding="utf-8")
    assert "## Files not counted (1: invalid or stale)" in summary
    assert "`fr/org__model-c.json` (invalid): not valid JSON" in summary


def test_checkpoint_with_tampered_metrics_is_invalid(results: Path) -> None:
    path = make_checkpoint(results, "org/model-c", "en", cells=(5, 0, 5, 0, 0))
    text = path.read_text(encoding="utf-8").replace('"f1": 1.0', '"f1": 0.99')
    path.write_text(text, encoding="utf-8")
    records = {r.name: r for r in report.collect_checkpoints(results)}
    assert len(records) == 7
    bad = records["en/org__model-c.json"]
    assert not bad.valid and "f1" in bad.reasons[0]


def test_different_prompt_within_a_task_is_refused_naming_both(results: Path, tmp_path: Path) -> None:
    make_checkpoint(results, RUN_B, "fr", prompt_sha256="d" * 64)
    with pytest.raises(ConfigError) as err:
        report.write_report(results, tmp_path / "out")
    line = str(err.value)
    assert RUN_A in line and RUN_B in line and "prompt_sha256" in line and "dddddddddddd" in line
    assert "report them separately (e.g. --model" in line and "\n" not in line
    assert not (tmp_path / "out").exists()


def test_different_prompt_in_another_task_is_accepted(results: Path, tmp_path: Path) -> None:
    for language in LANGS:
        make_checkpoint(results, "org/scorer", language, cells=(5, 0, 5, 0, 0),
                        task="score", prompt_sha256="e" * 64, max_new_tokens=1, decoding=None)
    paths = report.write_report(results, tmp_path / "out")
    board = _rows(paths.files["leaderboard"])
    assert [row["run"] for row in board] == ["org/scorer", RUN_A, RUN_B]
    assert board[0]["task"] == "score"
    assert "prompt_sha256 (score prompt): `" + "e" * 64 in paths.files["summary"].read_text(encoding="utf-8")


def test_a_manifest_changed_by_another_language_s_file_is_reported_with_the_older_ones(results: Path) -> None:
    """One language's file fixed: the manifest's digest changes, the unchanged languages' checkpoints keep the
    older one and stay current (status and run hold a pair to its own language's file), and the report
    takes both; the data each was measured on is still held per language."""
    make_checkpoint(results, RUN_B, "ja", manifest_sha256="f" * 64)
    check_comparable(report.collect_checkpoints(results))
    first = sorted([RUN_A, RUN_B])[0]
    make_checkpoint(results, first, sorted(LANGS)[0], max_new_tokens=4096)
    with pytest.raises(ConfigError) as caught:   # one run measured two ways: the fix is not "report it apart from itself"
        check_comparable(report.collect_checkpoints(results))
    assert caught.value.message.startswith(f"cannot report {first!r}") and caught.value.message.count(first) == 2
    assert "--model" not in caught.value.fix and "stale" in caught.value.fix


def test_different_max_new_tokens_among_generate_runs_is_refused(results: Path) -> None:
    make_checkpoint(results, RUN_B, "en", max_new_tokens=4096)
    with pytest.raises(ConfigError, match=r"decoding/max_new_tokens differs among generate runs \(greedy/64 vs greedy/4096\)"):
        check_comparable(report.collect_checkpoints(results))


def test_different_benchmark_file_within_a_language_is_refused(results: Path) -> None:
    make_checkpoint(results, RUN_B, "en", benchmark_sha256="9" * 64)
    with pytest.raises(ConfigError, match=r"benchmark_sha256 differs for language 'en'"):
        check_comparable(report.collect_checkpoints(results))


def test_legacy_file_without_manifest_is_held_to_the_benchmark_digest(results: Path) -> None:
    legacy = dict(run=None, language=None, task=None, manifest_sha256=None, backend=None)   # lrb's keys only
    make_checkpoint(results, "org/legacy", "fr", cells=(5, 0, 5, 0, 0), **legacy)
    records = report.collect_checkpoints(results)
    check_comparable(records)  # same benchmark digest for fr: accepted
    record = next(r for r in records if r.run == "org/legacy")
    assert record.valid and record.task == "generate" and LEGACY_NOTICE in record.notices

    make_checkpoint(results, "org/legacy", "fr", cells=(5, 0, 5, 0, 0), benchmark_sha256="1" * 64, **legacy)
    with pytest.raises(ConfigError, match="benchmark_sha256 differs for language 'fr'"):
        check_comparable(report.collect_checkpoints(results))


def test_runs_selects_and_separates(results: Path, tmp_path: Path) -> None:
    make_checkpoint(results, RUN_B, "fr", prompt_sha256="d" * 64)
    paths = report.write_report(results, tmp_path / "out", runs=[RUN_A])
    assert [row["run"] for row in _rows(paths.files["leaderboard"])] == [RUN_A]
    assert len(_rows(paths.files["aggregates"])) == 3
    with pytest.raises(ConfigError, match="no complete checkpoint for run 'org/nope'; fix: pick among: org/model-a"):
        report.write_report(results, tmp_path / "out", runs=["org/nope"])


def test_missing_or_empty_results_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        report.write_report(tmp_path / "absent", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no complete checkpoint"):
        report.write_report(tmp_path / "empty", tmp_path / "out")


def test_missing_matplotlib_names_the_extra_and_writes_nothing(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r"kit report's heatmap needs .*'matplotlib'.*kit-sweep\[report\]"):
        report.write_report(results, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_kind_s_report_leaves_no_file_and_no_temporary_when_its_heatmap_cannot_be_drawn(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = report.collect_checkpoints(results)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(MissingExtraError):
        lrb_report.write_lrb_report(records, out)   # aggregates.csv is streamed while the heatmap is drawn
    assert list(out.iterdir()) == []


def test_csv_written_to_a_file_is_the_csv_text(tmp_path: Path) -> None:
    columns = ["run", "f1", "note"]
    rows = [{"run": "org/é", "f1": 0.5, "note": "=SUM(A1)"}, {"run": "a,b", "f1": -1, "note": 'say "x"\nnext'},
            {"run": "-2", "f1": None, "note": ""}]
    with open(tmp_path / "t.csv", "wb") as fh:
        write_csv(fh, columns, iter(rows))
        fh.write(b"after")   # the file is left open for its owner
    assert (tmp_path / "t.csv").read_bytes() == csv_text(columns, rows).encode("utf-8") + b"after"
    assert list(csv.DictReader(open(tmp_path / "t.csv", newline="", encoding="utf-8")))[0]["note"] == "'=SUM(A1)"


def test_numbers_are_stable_text() -> None:
    assert rate(-0.0) == "0.0"
    assert rate(2 / 3) == "0.6667"
    assert rate(0.85) == "0.85"
    assert seconds(507.4949) == "507.49"


def test_an_lrb_scoring_file_counts_as_a_score_run(tmp_path):
    from kit.results.records import CheckpointRecord

    def record(**metadata):
        return CheckpointRecord(tmp_path / "en" / "x.json", "en", PairState.COMPLETE, data={keys.METADATA: metadata})

    assert record(inference="scoring").task == keys.TASK_SCORE
    assert record(inference="generation").task == keys.TASK_GENERATE
    assert record(task="score").task == keys.TASK_SCORE


def test_a_heatmap_too_large_for_numbers_gets_narrower_cells() -> None:
    runs, few, many = [f"org/model-{i:03d}" for i in range(50)], ["de", "en", "fr"], [f"l{i:02d}" for i in range(85)]
    small_w, small_h = lrb_report.heatmap_figsize(runs[:2], few)
    big_w, big_h = lrb_report.heatmap_figsize(runs, many)
    assert len(runs) * len(many) > lrb_report.HEATMAP_ANNOTATE_MAX_CELLS
    # per language and per run, the unannotated grid spends about half the room of the annotated one
    assert (big_w - 2.0) / len(many) < 0.6 * (small_w - 2.0) / len(few)
    assert big_w * lrb_report.HEATMAP_DPI <= 3000 and big_h * lrb_report.HEATMAP_DPI <= 1500
    # a sweep's 235 runs: rows lower still, the canvas (RGBA, 4 bytes a pixel) under 48 MB
    sweep = [f"org/model-{i:03d}" for i in range(235)]
    sweep_w, sweep_h = lrb_report.heatmap_figsize(sweep, many)
    assert (sweep_h - 1.5) / len(sweep) < 0.7 * (big_h - 1.5) / len(runs)
    assert sweep_w * sweep_h * lrb_report.HEATMAP_DPI ** 2 * 4 < 48e6


@pytest.mark.parametrize("metadata,speed,seconds", [
    ({"duration_seconds": 12.5}, None, 12.5),
    ({"duration_seconds": 7}, None, 7.0),
    ({}, {"duration_seconds": 3.25}, 3.25),
    ({"duration_seconds": None}, {"duration_seconds": 3.25}, 3.25),
    ({"duration_seconds": "fast"}, None, 0.0),
    ({"duration_seconds": "12.3"}, None, 0.0),
    ({"duration_seconds": {"x": 1}}, None, 0.0),
    ({"duration_seconds": [1.0]}, None, 0.0),
    ({"duration_seconds": True}, None, 0.0),
    ({"duration_seconds": float("nan")}, None, 0.0),
    ({"duration_seconds": float("inf")}, None, 0.0),
    ({"duration_seconds": -5}, None, 0.0),
    ({"duration_seconds": 10**400}, None, 0.0),
    ({}, {"duration_seconds": "x"}, 0.0),
    ({}, "fast", 0.0),
    ({}, None, 0.0),
])
def test_duration_seconds_is_a_finite_non_negative_number_or_zero(tmp_path, metadata, speed, seconds):
    from kit.results.records import CheckpointRecord

    data = {keys.METADATA: metadata, **({keys.SPEED: speed} if speed is not None else {})}
    got = CheckpointRecord(tmp_path / "en" / "x.json", "en", PairState.COMPLETE, data=data).duration_seconds
    assert type(got) is float and got == seconds


@pytest.mark.parametrize("duration", ["fast", {"x": 1}, float("nan"), float("inf")])
def test_a_duration_that_is_not_a_number_reports_zero_seconds(results, tmp_path, duration):
    # the speed section's duration: a checkpoint whose metadata has none (validation reads only metadata's)
    path = make_checkpoint(results, RUN_A, "en", duration_seconds=None)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["speed"] = {"duration_seconds": duration}
    path.write_text(json.dumps(data), encoding="utf-8")   # NaN and Infinity as Python's json writes them
    paths = report.write_report(results, tmp_path / "out")
    board = {row["run"]: row for row in _rows(paths.files["leaderboard"])}
    assert (board[RUN_A]["languages"], board[RUN_A]["duration_seconds"]) == ("3", "2.5")   # en counts 0 seconds


@pytest.mark.parametrize("cut", [False, True])
def test_runs_of_one_language_scored_on_different_items_are_said_not_comparable(tmp_path: Path, cut: bool) -> None:
    """Without a benchmark nothing holds a file to the language's items: a file cut short (or made from
    another version of the data) is ranked beside full ones, and the summary says so, naming the language."""
    from conftest_checkpoints import make_checkpoint, predictions_of

    pairs = [(keys.YES, keys.YES), (keys.NO, keys.NO), (keys.YES, keys.NO), (keys.NO, keys.YES)] * 5
    for run in ("org/a", "org/b"):
        make_checkpoint(tmp_path / "results", run, "fr", predictions_of(pairs))
        make_checkpoint(tmp_path / "results", run, "de", predictions_of(pairs[:12] if cut and run == "org/b" else pairs))
    report.write_report(tmp_path / "results", tmp_path / "out")
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    said = "Runs of `de` were scored on different items (their item ids or counts differ)"
    assert (said in summary) == cut and "`fr`" not in summary.split("## Leaderboard")[1].split("|")[0]
