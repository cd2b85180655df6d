"""lrb's own result trees as lrb publishes them: the single-language archive (files at the top and in
dated batch folders, no metadata.language), and its scoring files (inference "scoring", decoding
"none", max_new_tokens 0, scorer variants named in model_id, prompt told by the decision rule)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest_checkpoints import LRB_ARCHIVE, dump, predictions_of
from kit.config.kinds.lrb.prompts import GENERATE, MASKED_LM, RERANKER, ZEROSHOT, lrb_prompt_kind
from kit.errors import ConfigError
from kit.results import keys, report
from kit.results.keys import PairState
from kit.results.identity import stale_reasons
from kit.results.metrics import compute_metrics
from kit.results.records import CheckpointRecord, check_comparable
from kit.results.status import scan_results
from kit.results.store import UNDETERMINED_LANGUAGE, file_language, iter_checkpoint_files

TOP_FILE = "LiquidAI__LFM2.5-350M.json"
BATCH_FILE = Path("qwen3-20260913") / "Qwen__Qwen3-4B.json"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """A copy of lrb's historical single-language archive (one file at the top, three in batch folders)."""
    return Path(shutil.copytree(LRB_ARCHIVE, tmp_path / "historical-single-language"))


def _runs_in(folder: Path) -> list[str]:
    """The run each lrb file of a folder (not below it) is named after, as lrb's read_runs finds them."""
    return sorted(json.loads(p.read_text(encoding="utf-8"))[keys.METADATA][keys.MODEL_ID] for p in folder.glob("*.json"))


def test_the_archive_counts_its_top_level_file_and_invents_no_language(archive: Path) -> None:
    statuses = scan_results(archive)
    batches = [d for d in archive.iterdir() if d.is_dir()]
    assert sorted(s.pair.run for s in statuses) == sorted(
        [*_runs_in(archive), *(run for batch in batches for run in _runs_in(batch))])
    assert "LiquidAI/LFM2.5-350M" in _runs_in(archive) and len(batches) >= 2
    assert {s.pair.language for s in statuses} == {UNDETERMINED_LANGUAGE}
    assert {s.state for s in statuses} == {PairState.COMPLETE}


def _f1_of(leaderboard: Path) -> dict[str, str]:
    with leaderboard.open(newline="", encoding="utf-8") as fh:
        return {row["run"]: row["f1"] for row in csv.DictReader(fh)}


def test_the_archive_report_has_lrb_s_published_scores_one_leaderboard_per_folder(archive: Path,
                                                                                   tmp_path: Path) -> None:
    done = report.write_report(archive, tmp_path / "out")
    # lrb's read_runs: the top level's files alone, then each batch folder's own leaderboard
    assert sorted(_f1_of(done.files["leaderboard"])) == _runs_in(archive)
    assert sorted(done.batches) == sorted(d.name for d in archive.iterdir() if d.is_dir())
    found = dict(_f1_of(done.files["leaderboard"]))
    for name, index in done.batches.items():
        board = _f1_of(index.parent / "leaderboard.csv")
        assert sorted(board) == _runs_in(archive / name)
        found.update(board)
    # the archive README's table: lrb's own scores of these runs
    assert {k: found[k] for k in ("Qwen/Qwen3-4B-Instruct-2507", "google/gemma-4-E4B-it", "Qwen/Qwen3-4B",
                                  "LiquidAI/LFM2.5-350M")} == {
        "Qwen/Qwen3-4B-Instruct-2507": "0.8606", "google/gemma-4-E4B-it": "0.8205", "Qwen/Qwen3-4B": "0.7586",
        "LiquidAI/LFM2.5-350M": "0.6838"}
    with done.files["by_language"].open(newline="", encoding="utf-8") as fh:
        assert [row["language"] for row in csv.DictReader(fh)] == [UNDETERMINED_LANGUAGE]
    summary = done.files["summary"].read_text(encoding="utf-8")
    assert all(f"batches/{name}/index.html" in summary for name in done.batches)


def test_one_run_at_the_top_and_in_a_batch_is_counted_in_each_leaderboard(archive: Path, tmp_path: Path) -> None:
    shutil.copy(archive / BATCH_FILE, archive / BATCH_FILE.name)
    done = report.write_report(archive, tmp_path / "out")
    assert "Qwen/Qwen3-4B" in _f1_of(done.files["leaderboard"])
    assert "Qwen/Qwen3-4B" in _f1_of(done.batches[BATCH_FILE.parent.name].parent / "leaderboard.csv")


def test_one_run_twice_in_one_collection_is_refused_naming_both(archive: Path, tmp_path: Path) -> None:
    (archive / UNDETERMINED_LANGUAGE).mkdir()
    shutil.copy(archive / TOP_FILE, archive / UNDETERMINED_LANGUAGE / TOP_FILE)
    with pytest.raises(ConfigError) as err:
        report.write_report(archive, tmp_path / "out")
    line = str(err.value)
    assert "'LiquidAI/LFM2.5-350M' twice" in line and str(archive / TOP_FILE) in line
    assert not (tmp_path / "out").exists()


def test_a_tree_of_batches_only_gets_an_index_of_their_reports(archive: Path, tmp_path: Path) -> None:
    (archive / TOP_FILE).unlink()
    done = report.write_report(archive, tmp_path / "out")
    assert "leaderboard" not in done.files and done.batches
    index = done.files["html"].read_text(encoding="utf-8")
    assert all(f'href="batches/{name}/index.html"' in index for name in done.batches)
    assert all(index_file.is_file() for index_file in done.batches.values())


def test_lrb_s_archive_folder_is_left_out_and_said(archive: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(archive, results / "archive" / archive.name)
    shutil.copy(archive / TOP_FILE, results / TOP_FILE)
    assert [p.name for p in iter_checkpoint_files(results)] == [TOP_FILE]
    archived = len(list((results / "archive").rglob("*.json")))
    done = report.write_report(results, tmp_path / "out")
    assert done.pairs == 1 and done.not_counted.startswith(f"{archived} file(s) under {results.as_posix()}/archive/")
    assert [s.pair.run for s in scan_results(results)] == ["LiquidAI/LFM2.5-350M"]
    (results / TOP_FILE).unlink()
    with pytest.raises(ConfigError, match=f"{archived} file\\(s\\) under .*archive/ not counted"):
        report.write_report(results, tmp_path / "out2")


def test_a_file_s_language(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert file_language(results, results / "fr" / "m.json", {}) == "fr"
    assert file_language(results, results / "pt-BR" / "m.json", {}) == "pt-BR"
    assert file_language(results, results / "qwen3-20260913" / "m.json", {}) == UNDETERMINED_LANGUAGE
    assert file_language(results, results / "m.json", {}) == UNDETERMINED_LANGUAGE
    # a recorded language always wins (kit's own files; a LightEval suite's task folders)
    assert file_language(results, results / "arc_easy" / "m.json", {keys.LANGUAGE: "arc_easy"}) == "arc_easy"
    assert file_language(results, results / "m.json", None) == UNDETERMINED_LANGUAGE


def test_top_level_files_are_listed_hidden_and_report_folders_are_not(archive: Path) -> None:
    (archive / ".partial.json").write_text("{}", encoding="utf-8")
    (archive / "report").mkdir()
    (archive / "report" / "x.json").write_text("{}", encoding="utf-8")
    names = [p.relative_to(archive).as_posix() for p in iter_checkpoint_files(archive)]
    assert TOP_FILE in names and BATCH_FILE.as_posix() in names
    assert len(names) == len(list(archive.glob("*.json"))) + len(list(archive.glob("*/*.json"))) - 2   # less .partial.json and report/x.json


SCORE_IDENTITY = {keys.MODEL_ID: "org/reranker", keys.RUN: "org/reranker", keys.DECODING: "score",
                  keys.MAX_NEW_TOKENS: 4096, keys.PROMPT_SHA256: "r" * 64}


def test_an_lrb_scoring_file_is_current_for_a_score_run() -> None:
    lrb = {keys.MODEL_ID: "org/reranker", keys.LRB_INFERENCE: "scoring", keys.DECODING: "none",
           keys.MAX_NEW_TOKENS: 0, keys.PROMPT_SHA256: "r" * 64}
    assert stale_reasons(lrb, SCORE_IDENTITY, legacy=True) == []
    # a generation file with lrb's scoring marks removed is still held to the run's decoding and budget
    generated = {**lrb, keys.LRB_INFERENCE: "generation"}
    assert [r.split(" is ")[0] for r in stale_reasons(generated, SCORE_IDENTITY, legacy=True)] == [
        "metadata.decoding", "metadata.max_new_tokens"]
    # kit's own checkpoints get no such reading
    kit_file = {**lrb, keys.RUN: "org/reranker"}
    assert [r.split(" is ")[0] for r in stale_reasons(kit_file, SCORE_IDENTITY, legacy=False)] == [
        "metadata.decoding", "metadata.max_new_tokens"]


def test_lrb_s_logprob_scorer_is_current_for_the_run_of_its_name() -> None:
    identity = {**SCORE_IDENTITY, keys.MODEL_ID: "org/llm", keys.RUN: "org/llm@logprob"}
    lrb = {keys.MODEL_ID: "org/llm@logprob", keys.RUN_ID: "", keys.LRB_INFERENCE: "scoring",
           keys.DECODING: "none", keys.MAX_NEW_TOKENS: 0, keys.PROMPT_SHA256: "r" * 64}
    assert stale_reasons(lrb, identity, legacy=True) == []
    other = {**lrb, keys.MODEL_ID: "org/other@logprob"}
    assert stale_reasons(other, identity, legacy=True) == [
        "metadata.model_id is 'org/other@logprob'; the run now has 'org/llm'"]


@pytest.mark.parametrize(("rule", "kind"), [
    ("argmax over the first-token yes/no log-probabilities", GENERATE),
    ("zero-shot label probability at 0.5", ZEROSHOT),
    ("zero-shot pipeline entailment probability at 0.5", ZEROSHOT),
    ("sigmoid of the native relevance logit at 0.5", RERANKER),
    ("sigmoid(native yes-minus-no logit minus 4.5) at 0.5", None),
    ("argmax over the native yes/no scores", None),   # lrb's rerankers' rule, and a masked LM's may be it
    ("P(yes) at the [MASK] token", MASKED_LM),
    ("", None),
    (None, None),
])
def test_an_lrb_scoring_file_s_prompt_kind_follows_its_decision_rule(rule, kind) -> None:
    assert lrb_prompt_kind(rule) == kind


def _lrb_file(root: Path, model: str, prompt: str, *, rule: str | None = None, language: str = "en") -> Path:
    predictions = predictions_of([("yes", "yes"), ("no", "no"), ("yes", "no")])
    meta = {keys.MODEL_ID: model, keys.RUN_ID: "", keys.LANGUAGE: language, keys.PROMPT_SHA256: prompt,
            keys.BENCHMARK_SHA256: "b" * 64, keys.DECODING: "greedy", keys.MAX_NEW_TOKENS: 4096}
    if rule is not None:
        meta.update({keys.LRB_INFERENCE: "scoring", keys.LRB_DECISION_RULE: rule, keys.DECODING: "none",
                     keys.MAX_NEW_TOKENS: 0})
    path = root / language / f"{model.replace('/', '__')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump({keys.METADATA: meta, keys.METRICS: compute_metrics(predictions),
                          keys.PREDICTIONS: predictions}), encoding="utf-8")
    return path


def test_lrb_scorers_of_every_kind_report_together(tmp_path: Path) -> None:
    root = tmp_path / "results"
    _lrb_file(root, "org/llm", "g" * 64)
    _lrb_file(root, "org/llm@logprob", "g" * 64, rule="argmax over the first-token yes/no log-probabilities")
    _lrb_file(root, "org/reranker", "r" * 64, rule="sigmoid of the native relevance logit at 0.5")
    _lrb_file(root, "org/gliclass", "z" * 64, rule="zero-shot label probability at 0.5")
    _lrb_file(root, "org/nli", "z" * 64, rule="zero-shot pipeline entailment probability at 0.5")
    check_comparable(report.collect_checkpoints(root))
    # the logprob scorer is asked with the generative prompt: another one is refused
    _lrb_file(root, "org/llm@logprob", "x" * 64, rule="argmax over the first-token yes/no log-probabilities")
    with pytest.raises(ConfigError, match=r"prompt_sha256 differs for 'generate' prompts"):
        check_comparable(report.collect_checkpoints(root))


def test_lrb_scorers_whose_rule_does_not_tell_their_prompt_kind_are_reported_with_any_prompt(tmp_path: Path) -> None:
    """A reranker and a masked LM both deciding by "argmax over the native yes/no scores" (lrb's ARGMAX),
    each asked with its own prompt file: lrb reports them side by side, and so does kit."""
    root = tmp_path / "results"
    argmax = "argmax over the native yes/no scores"
    _lrb_file(root, "Qwen/Qwen3-Reranker-0.6B", "r" * 64, rule=argmax)
    _lrb_file(root, "LiquidAI/LFM2.5-Encoder-350M", "m" * 64, rule=argmax)
    _lrb_file(root, "org/gte", "r" * 64, rule="sigmoid of the native relevance logit at 0.5")
    check_comparable(report.collect_checkpoints(root))
    # a rule that tells the kind is still held to one prompt
    _lrb_file(root, "org/other-gte", "x" * 64, rule="sigmoid of the native relevance logit at 0.5")
    with pytest.raises(ConfigError, match=r"prompt_sha256 differs for 'score' prompts"):
        check_comparable(report.collect_checkpoints(root))


def test_a_kit_score_record_keeps_its_backend_s_prompt_kind(tmp_path: Path) -> None:
    meta = {keys.TASK: keys.TASK_SCORE, keys.BACKEND: "gliclass", keys.LRB_DECISION_RULE: "sigmoid"}
    record = CheckpointRecord(tmp_path / "en" / "x.json", "en", PairState.COMPLETE, data={keys.METADATA: meta})
    assert record.prompt_kind == ZEROSHOT


def test_verify_against_a_benchmark_fails_a_language_it_does_not_define(lrb_bench: Path, archive: Path,
                                                                         tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kit.cli.main import cli

    root = tmp_path / "results"
    _lrb_file(root, "org/llm", "g" * 64, language="xx")
    r = CliRunner().invoke(cli, ["verify", str(root / "xx"), str(archive / TOP_FILE), "--benchmark", str(lrb_bench)],
                           env={"KIT_NO_CACHE": "1"})
    assert r.exit_code == 1
    assert "language 'xx' is not one of the benchmark's 85 (af, am, ar, az, be, ...)" in r.output
    # lrb's archive file names no language: held to the language file of its digest, which this benchmark lacks
    assert f"FAIL  {archive / TOP_FILE}: metadata.benchmark_sha256 ac185e51835eb626... is the digest of none" in r.output


@pytest.mark.parametrize(("key", "value", "reason"), [
    (keys.PROMPT_SHA256, ["a" * 64], "metadata.prompt_sha256 is a JSON array, not a string"),
    (keys.DECODING, {"mode": "greedy"}, "metadata.decoding is a JSON object, not a string"),
    (keys.DTYPE, ["bfloat16"], "metadata.dtype is a JSON array, not a string"),
    (keys.MAX_NEW_TOKENS, "4096", "metadata.max_new_tokens is string '4096', not a whole number"),
    (keys.SEED, True, "metadata.seed is boolean True, not a whole number"),
    (keys.DURATION_SECONDS, "fast", "metadata.duration_seconds is 'fast', not a number of seconds"),
    (keys.DURATION_SECONDS, float("nan"), "metadata.duration_seconds is nan, not a number of seconds"),
    (keys.DURATION_SECONDS, -1.5, "metadata.duration_seconds is -1.5, not a number of seconds"),
])
def test_metadata_of_a_type_no_writer_produces_is_invalid(tmp_path: Path, key, value, reason) -> None:
    from kit.results.checkpoint import validate_checkpoint

    path = _lrb_file(tmp_path, "org/llm", "g" * 64)
    assert validate_checkpoint(path).state == PairState.COMPLETE
    data = json.loads(path.read_text(encoding="utf-8"))
    data[keys.METADATA][key] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    state = validate_checkpoint(path)
    assert (state.state, state.reasons) == (PairState.INVALID, [reason])


@pytest.mark.parametrize("value", ["true", 1, [], None])
def test_a_truncated_flag_that_is_not_a_boolean_is_invalid(tmp_path: Path, value) -> None:
    from kit.results.checkpoint import validate_checkpoint

    path = _lrb_file(tmp_path, "org/llm", "g" * 64)
    data = json.loads(path.read_text(encoding="utf-8"))
    data[keys.PREDICTIONS][1][keys.TRUNCATED] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    state = validate_checkpoint(path)
    if value is None:   # null: lrb's "not recorded", as an absent key
        assert state.state == PairState.COMPLETE
    else:
        assert (state.state, state.reasons) == (PairState.INVALID, ["predictions[1]: truncated is not true/false"])


def test_verify_prints_a_name_with_a_newline_on_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kit.cli.main import cli

    path = _lrb_file(tmp_path / "results", "org/llm", "g" * 64)
    odd = path.with_name("x\nOK    forged.json")
    path.rename(odd)
    r = CliRunner().invoke(cli, ["verify", str(odd)], env={"KIT_NO_CACHE": "1"})
    assert r.exit_code == 1
    assert r.output.count("\n") == 3 and "\nOK    forged.json" not in r.output   # FAIL line, totals, what is not proven
    assert str(odd).replace("\n", "\\n") in r.output   # the newline shown as its escape


def test_a_file_name_in_another_unicode_normalisation_is_said_so(tmp_path: Path) -> None:
    import unicodedata

    from kit.results.checkpoint import validate_checkpoint

    path = _lrb_file(tmp_path / "results", "org/café", "g" * 64)
    odd = path.with_name(unicodedata.normalize("NFD", path.name))
    path.rename(odd)
    state = validate_checkpoint(odd)
    assert state.state == PairState.INVALID and "another Unicode normalisation" in state.reasons[0]


@pytest.mark.parametrize("folder", ["new-models-20260914", "top-20260913", "fix-8-tokens", "new-models", "low-temp",
                                    "max-tokens", "llm-judge", "ca-valencia"])
def test_a_dated_or_worded_batch_folder_is_never_taken_for_a_language(archive: Path, folder: str) -> None:
    """lrb names batches freely (more-models-20260913, strict-8-tokens, new-models): a file without
    metadata.language in such a folder counts for und, in the folder's own collection; language folders,
    named as lrb names them or in a language tag's written case, stay languages. A tag with a variant of
    letters reads as words (a file recording it still counts for it: the folder rule is for files that
    record none)."""
    from kit.results.store import collection_of

    moved = archive / folder / TOP_FILE
    moved.parent.mkdir()
    shutil.copy(archive / TOP_FILE, moved)
    assert file_language(archive, moved, {}) == UNDETERMINED_LANGUAGE
    assert collection_of(archive, moved, UNDETERMINED_LANGUAGE) == folder
    for code in ("fr", "ceb", "pt-BR", "zh-Hans", "sr-Latn-RS", "es-419", "de-1996"):
        assert file_language(archive, archive / code / TOP_FILE, {}) == code


def test_compare_reads_lrb_s_files_as_every_command_counts_them(archive: Path, tmp_path: Path) -> None:
    """Two runs at the top of a tree compare on und; a run in a batch folder is compared within it."""
    from kit.results.kinds.lrb.compare import compare_runs

    tree = tmp_path / "results"
    tree.mkdir()
    shutil.copy(archive / TOP_FILE, tree / TOP_FILE)
    other = next(p for p in (archive / "recent-models-20260913").glob("*.json"))
    shutil.copy(other, tree / other.name)
    run_b = json.loads(other.read_text(encoding="utf-8"))[keys.METADATA][keys.MODEL_ID]
    result = compare_runs(tree, "LiquidAI/LFM2.5-350M", tree, run_b)
    assert [lang.language for lang in result.languages] == [UNDETERMINED_LANGUAGE]
    batch = archive / "recent-models-20260913"
    runs = _runs_in(batch)
    result = compare_runs(archive, runs[0], archive, runs[1])
    assert [lang.language for lang in result.languages] == [f"{UNDETERMINED_LANGUAGE} (recent-models-20260913)"]
    # both runs also copied into a batch folder: the tree's own files are compared, the batch's are named,
    # never pooled into the macro with them
    (tree / "new-models").mkdir()
    for name in (TOP_FILE, other.name):
        shutil.copy(tree / name, tree / "new-models" / name)
    result = compare_runs(tree, "LiquidAI/LFM2.5-350M", tree, run_b)
    assert [lang.language for lang in result.languages] == [UNDETERMINED_LANGUAGE]
    assert "compare that folder on its own" in result.not_compared[f"{UNDETERMINED_LANGUAGE} (new-models)"]


def test_compare_names_the_fault_of_a_run_s_invalid_file_in_a_batch_not_the_batch(archive: Path) -> None:
    """Both runs lie in one batch and B's file there does not hold: the batch is the one compared, and
    the refusal says what is wrong with B's file, not that the batch was set aside."""
    from kit.results.kinds.lrb.compare import compare_runs

    batch = archive / "recent-models-20260913"
    runs = _runs_in(batch)
    broken = next(p for p in batch.glob("*.json") if json.loads(p.read_text(encoding="utf-8"))[keys.METADATA][
        keys.MODEL_ID] == runs[1])
    data = json.loads(broken.read_text(encoding="utf-8"))
    data[keys.METRICS][keys.F1] = 0.1
    broken.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        compare_runs(archive, runs[0], archive, runs[1])
    said = str(err.value)
    assert f"{UNDETERMINED_LANGUAGE} (recent-models-20260913): B's checkpoint is not counted" in said and "f1" in said
    assert "while the tree's own files are compared" not in said


def test_a_metric_lrb_does_not_compute_is_left_out_as_lrb_s_loader_leaves_it(archive: Path, tmp_path: Path) -> None:
    """An lrb file whose metrics hold one more key (a newer lrb's) is complete and exported byte for byte;
    a missing or changed metric still is not."""
    from kit.results.checkpoint import validate_checkpoint
    from kit.results.kinds.lrb.export import export_lrb

    path = archive / TOP_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    data[keys.METRICS]["n_truncated"] = 0
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    assert validate_checkpoint(path).state == PairState.COMPLETE
    exported = export_lrb(archive, tmp_path / "out")
    assert not exported.refused and (tmp_path / "out" / TOP_FILE).read_bytes() == path.read_bytes()
    del data[keys.METRICS][keys.F1]
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    state = validate_checkpoint(path)
    assert state.state == PairState.INVALID and keys.F1 in state.reasons[0]


def _as_lrb_writes(data: dict, path: Path) -> Path:
    """`data` written as lrb's writer writes a result file (sorted keys, indent 2, UTF-8, final newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _top_file(archive: Path, language: str | None = "fr", **metadata) -> dict:
    data = json.loads((archive / TOP_FILE).read_text(encoding="utf-8"))
    if language is not None:
        data[keys.METADATA][keys.LANGUAGE] = language
    data[keys.METADATA].update(metadata)
    return data


def test_a_batch_given_as_lrb_s_output_folder_is_read_with_its_language_folders(archive: Path, tmp_path: Path) -> None:
    """lrb's multilingual writer given results/<batch> writes <batch>/<language>/<run>.json: every command
    that reads a tree reads it there, as its own batch; anything deeper is named, never dropped in silence."""
    from kit.cli.main import cli
    from click.testing import CliRunner

    from kit.results.store import collection_of, left_out_note, unread_files

    tree = tmp_path / "results"
    top = _as_lrb_writes(_top_file(archive), tree / "fr" / TOP_FILE)
    batch = _as_lrb_writes(_top_file(archive, max_new_tokens=8), tree / "strict-8-tokens" / "fr" / TOP_FILE)
    deeper = _as_lrb_writes(_top_file(archive), tree / "old" / "x" / "fr" / TOP_FILE)
    assert iter_checkpoint_files(tree) == sorted([top, batch])
    assert collection_of(tree, batch, "fr") == "strict-8-tokens" and collection_of(tree, top, "fr") == ""
    assert unread_files(tree) == [deeper]
    note = left_out_note(tree)
    assert note is not None and "1 .json file(s)" in note and "old/x/fr" in note
    assert "move them out" in note   # 'old' reads as a language (lrb's own rule): pointing at it would not help
    statuses = scan_results(tree)
    assert [(s.pair.language, s.state) for s in statuses] == [("fr", PairState.COMPLETE)] * 2
    done = report.write_report(tree, tmp_path / "out")
    assert list(done.batches) == ["strict-8-tokens"] and done.not_counted == note
    r = CliRunner().invoke(cli, ["export", "lrb", str(tree), "-o", str(tmp_path / "lrb")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "lrb" / "strict-8-tokens" / "fr" / TOP_FILE).read_bytes() == batch.read_bytes()
    assert "old/x/fr" in r.output


def test_collect_refuses_a_site_tree_with_files_it_would_not_read(archive: Path, tmp_path: Path) -> None:
    from kit.results.collect import plan_collect

    site = tmp_path / "site"
    _as_lrb_writes(_top_file(archive), site / "old" / "x" / "fr" / TOP_FILE)
    plan = plan_collect([("a", site)], [], lambda pair: None)
    assert any(p.startswith("not read: a: 1 .json file(s)") for p in plan.problems), plan.problems
    # a batch folder's file is a collection of its own, never taken as the tree's own copy of its pair
    batched = tmp_path / "batched"
    _as_lrb_writes(_top_file(archive), batched / "new-models" / "fr" / TOP_FILE)
    plan = plan_collect([("b", batched)], [], lambda pair: None)
    assert any(p.startswith("in a batch folder: b:") and "new-models out of the site" in p for p in plan.problems), \
        plan.problems
    assert not plan.chosen


def test_an_extra_cell_in_the_confusion_counts_is_left_out_as_lrb_s_loader_leaves_it(archive: Path,
                                                                                       tmp_path: Path) -> None:
    from kit.results.checkpoint import validate_checkpoint

    data = _top_file(archive, language=None)
    data[keys.METRICS]["confusion"]["truncated"] = 0
    state = validate_checkpoint(_as_lrb_writes(data, tmp_path / "r" / TOP_FILE))
    assert state.state == PairState.COMPLETE, state.reasons
    data[keys.METRICS]["confusion"]["true_positive"] += 1   # a cell lrb computes is still held to its predictions
    state = validate_checkpoint(_as_lrb_writes(data, tmp_path / "r" / TOP_FILE))
    assert state.state == PairState.INVALID and "confusion.true_positive" in state.reasons[0]


def test_a_model_id_holding_two_underscores_is_named_by_its_metadata(archive: Path, tmp_path: Path) -> None:
    """my-org/lfm__sft-v2 is file my-org__lfm__sft-v2.json: the file name alone cannot say which "__" is the
    "/", so status, report and compare name the run as its metadata does."""
    from kit.results.kinds.lrb.compare import compare_runs

    tree = tmp_path / "results"
    model = "my-org/lfm__sft-v2"
    _as_lrb_writes(_top_file(archive, model_id=model), tree / "fr" / "my-org__lfm__sft-v2.json")
    _as_lrb_writes(_top_file(archive), tree / "fr" / TOP_FILE)
    assert sorted(s.pair.run for s in scan_results(tree)) == sorted(["LiquidAI/LFM2.5-350M", model])
    for asked in (model, "my-org__lfm__sft-v2"):
        assert compare_runs(tree, asked, tree, "LiquidAI/LFM2.5-350M").run_a == model
    assert model in _f1_of(report.write_report(tree, tmp_path / "out").files["leaderboard"])
    for asked in (model, "my-org__lfm__sft-v2"):   # --model in either spelling
        picked = report.write_report(tree, tmp_path / f"out-{asked.replace('/', '_')}", runs=[asked])
        assert list(_f1_of(picked.files["leaderboard"])) == [model]
    from kit.results.status import select_found
    assert [s.pair.run for s in select_found(scan_results(tree), ["my-org__lfm__sft-v2"], None, tree)] == [model]


def test_export_says_what_it_leaves_out_of_an_lrb_file_it_converts(archive: Path, tmp_path: Path) -> None:
    """A newer lrb's metadata key or prediction key, or a parse mode kit does not know: the file is converted
    (lrb's loader as kit knows it reads only its own keys) and the export names what it left out."""
    from kit.results.kinds.lrb.export import export_lrb

    tree = tmp_path / "results"
    data = _top_file(archive, attn_implementation="sdpa")
    data[keys.PREDICTIONS][0]["finish_reason"] = "stop"
    data[keys.PREDICTIONS][1][keys.PARSE_MODE] = "json"
    source = _as_lrb_writes(data, tree / "fr" / TOP_FILE)
    plain = _as_lrb_writes(_top_file(archive), tree / "de" / TOP_FILE)
    plain_data = json.loads(plain.read_text(encoding="utf-8"))
    plain_data[keys.METADATA][keys.LANGUAGE] = "de"
    _as_lrb_writes(plain_data, plain)
    done = export_lrb(tree, tmp_path / "out")
    assert not done.refused and list(done.converted) == [source]
    assert done.converted[source] == ["metadata key(s) attn_implementation", "prediction key(s) finish_reason",
                                      "parse_mode 'json' (written as null)"]
    assert (tmp_path / "out" / "de" / TOP_FILE).read_bytes() == plain.read_bytes()


def test_check_names_a_batch_folder_s_checkpoint_as_such(tmp_path: Path) -> None:
    from kit.results.check import CheckInput, pairs_complete
    from kit.results.checkpoint import CheckpointState
    from kit.plan import Pair

    results = tmp_path / "results"
    own, batch = results / "fr" / "org__m.json", results / "new-models" / "fr" / "org__m.json"
    inp = CheckInput(results=results, benchmark=None, expected=[Pair("org/m", "fr")], image_ids=frozenset(),
                     checkpoints={own: CheckpointState(PairState.COMPLETE), batch: CheckpointState(PairState.COMPLETE)})
    [finding] = pairs_complete(inp)
    assert finding.path == str(batch) and "lrb's batch folder 'new-models'" in finding.message


def test_a_batch_folder_named_like_kit_s_own_folders_is_named_never_dropped_in_silence(archive: Path,
                                                                                    tmp_path: Path) -> None:
    """lrb names its batch folders freely: lrb files in RESULTS/report/, logs/ or systems/ (kit's own folders,
    not read as checkpoints) are said by every command that reads the tree, verified by verify with a notice,
    and stop a release; kit's own files there (a system description, a report with kit's inventory,
    lighteval's logs) are not; a folder of that name pointed at is read as asked."""
    from click.testing import CliRunner

    from kit.cli.main import cli
    from kit.outputs import INVENTORY
    from kit.results.store import left_out_note, unread_files

    tree = tmp_path / "results"
    tree.mkdir()
    shutil.copy(archive / TOP_FILE, tree / TOP_FILE)
    batch = archive / BATCH_FILE
    for folder in ("report", "logs", "systems/old"):
        (tree / folder).mkdir(parents=True)
        shutil.copy(batch, tree / folder / batch.name)
    (tree / "systems" / "lyon-1234-node.json").write_text("{}", encoding="utf-8")          # kit's description
    (tree / "logs" / "lighteval" / "t").mkdir(parents=True)
    (tree / "logs" / "lighteval" / "t" / "results.json").write_text("{}", encoding="utf-8")  # lighteval's own
    theirs = [tree / "logs" / batch.name, tree / "report" / batch.name, tree / "systems" / "old" / batch.name]
    assert unread_files(tree) == theirs
    note = left_out_note(tree)
    assert note is not None and "3 .json file(s)" in note and "logs/, report/, systems/" in note
    runner = CliRunner()
    status = runner.invoke(cli, ["status", str(tree)])
    assert status.exit_code == 0 and "logs/, report/, systems/, a folder kit keeps" in status.output
    verify = runner.invoke(cli, ["verify", str(tree)])
    assert verify.exit_code == 0 and "4 verified" in verify.output
    assert verify.output.count("in a folder kit keeps for its own files") == 3
    release = runner.invoke(cli, ["release", str(tree), "-o", str(tmp_path / "rel")])
    assert isinstance(release.exception, ConfigError)
    assert "logs/Qwen__Qwen3-4B.json: lies in logs/, a folder kit keeps for its own files" in str(release.exception)
    assert not (tmp_path / "rel").exists()
    (tree / "report" / INVENTORY).write_text("{}", encoding="utf-8")   # a report kit wrote there: its own
    assert unread_files(tree) == [theirs[0], theirs[2]]
    alone = runner.invoke(cli, ["status", str(tree / "logs")])
    assert alone.exit_code == 0 and "1 pairs: 1 complete" in alone.output


def test_status_counts_a_file_for_the_language_it_records_wherever_it_lies(tmp_path: Path) -> None:
    """`kit status` keeps no sections of a file it validates: a file at the top or in a batch folder that
    records its language counts for that language there too (as report and compare count it), and a pair
    two such files count for is said, since report and compare refuse it."""
    import os
    import subprocess
    import sys

    root = tmp_path / "results"
    (root / "low-temp").mkdir(parents=True)
    for run, place in (("org/top", root), ("org/low-temp", root / "low-temp")):
        path = _lrb_file(root, run, "g" * 64, language="ja")
        path.rename(place / path.name)
    _lrb_file(root, "org/top", "g" * 64, language="ja")   # the same run in its language folder too
    env = {**os.environ, "KIT_NO_CACHE": "1"}
    r = subprocess.run([sys.executable, "-m", "kit", "status", str(root), "--json"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    data = json.loads(r.stdout)["data"]
    assert sorted((p["run"], p["language"]) for p in data["pairs"]) == [
        ("org/low-temp", "ja"), ("org/top", "ja"), ("org/top", "ja")]
    assert data["counted_twice"] == [{"run": "org/top", "language": "ja",
                                      "files": sorted([str(root / "ja" / "org__top.json"), str(root / "org__top.json")])}]
    text = subprocess.run([sys.executable, "-m", "kit", "status", str(root)], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert "1 pair(s) counted by more than one file (org/top ja:" in text.stdout


def test_the_summary_names_each_prompt_kind_s_digest(tmp_path: Path) -> None:
    """lrb asks a reranker and a zero-shot classifier with prompts of their own: the summary gives each
    kind's digest (not one for every score run), and every digest of scorers whose kind is not recorded."""
    root = tmp_path / "results"
    _lrb_file(root, "org/llm", "g" * 64)
    _lrb_file(root, "org/reranker", "r" * 64, rule="sigmoid of the native relevance logit at 0.5")
    _lrb_file(root, "org/gliclass", "z" * 64, rule="zero-shot label probability at 0.5")
    _lrb_file(root, "org/a", "a" * 64, rule="argmax over the native yes/no scores")
    _lrb_file(root, "org/b", "c" * 64, rule="argmax over the native yes/no scores")
    summary = report.write_report(root, tmp_path / "out").files["summary"].read_text(encoding="utf-8")
    assert f"- prompt_sha256 (generate prompt): `{'g' * 64}`" in summary
    assert f"- prompt_sha256 (score prompt): `{'r' * 64}`" in summary
    assert f"- prompt_sha256 (zeroshot prompt): `{'z' * 64}`" in summary
    assert f"- prompt_sha256 (score, prompt kind not recorded): `{'a' * 64}`, `{'c' * 64}`" in summary
