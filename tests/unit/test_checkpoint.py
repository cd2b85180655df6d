"""read_checkpoint / validate_checkpoint / verify_files: what counts as complete, and why not."""

from __future__ import annotations

import json
import math

import pytest
from conftest_checkpoints import LRB_FILES, make_checkpoint, predictions_of, rewrite

from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import (LEGACY_LANGUAGE_NOTICE, MISSING, CheckpointState, read_checkpoint,
                                    validate_checkpoint, verify_files)
from kit.results.evidence import LEGACY_NOTICE
from kit.results.identity import Expected
from kit.results.metrics import compute_metrics

Y, N, U = keys.YES, keys.NO, keys.UNPARSED
RUN = "LiquidAI/LFM2.5-350M"
PAIRS = [(Y, Y), (Y, N), (N, N), (N, Y), (Y, U), (N, N)]


@pytest.fixture
def good(tmp_path):
    """A correct synthetic checkpoint at tmp/fr/LiquidAI__LFM2.5-350M.json."""
    return make_checkpoint(tmp_path, RUN, "fr", predictions_of(PAIRS))


def ids_of(path):
    return [p[keys.ITEM_ID] for p in json.loads(path.read_text(encoding="utf-8"))[keys.PREDICTIONS]]


def assert_invalid(state: CheckpointState, *fragments: str) -> None:
    assert state.state == PairState.INVALID, state
    text = " | ".join(state.reasons)
    for fragment in fragments:
        assert fragment in text, (fragment, state.reasons)
    assert all("\n" not in r for r in state.reasons)


# --- the archived lrb results -------------------------------------------------


@pytest.mark.parametrize("path", LRB_FILES, ids=lambda p: p.name)
def test_archived_lrb_files_are_complete_with_the_legacy_notice(path):
    state = validate_checkpoint(path)
    assert state.state == PairState.COMPLETE, state.reasons
    assert state.reasons == []
    assert state.notices == [LEGACY_LANGUAGE_NOTICE, LEGACY_NOTICE]


@pytest.mark.parametrize("path", LRB_FILES, ids=lambda p: p.name)
def test_archived_lrb_files_match_their_run_and_own_item_ids(path):
    model_id = json.loads(path.read_text(encoding="utf-8"))[keys.METADATA][keys.MODEL_ID]
    state = validate_checkpoint(path, run=model_id, language="fr", expect=Expected(item_ids=ids_of(path)))
    assert state.complete, state.reasons
    assert validate_checkpoint(path, run="someone/else").state == PairState.INVALID


def test_legacy_file_with_a_flipped_prediction_is_invalid(tmp_path):
    source = LRB_FILES[0]
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    rewrite(copy, lambda d: d[keys.PREDICTIONS][0].update({keys.PREDICTED: N}))
    assert_invalid(validate_checkpoint(copy), "metrics do not recompute", keys.ACCURACY, keys.F1)


# --- a correct synthetic checkpoint ------------------------------------------


def test_a_correct_checkpoint_is_complete_without_notices(good):
    state = validate_checkpoint(good, run=RUN, language="fr", expect=Expected(item_ids=ids_of(good)))
    assert state == CheckpointState(PairState.COMPLETE, [], [], state.data)
    assert state.data[keys.METADATA][keys.RUN] == RUN


def test_run_falls_back_to_model_id(good):
    rewrite(good, lambda d: d[keys.METADATA].pop(keys.RUN))
    assert validate_checkpoint(good, run=RUN).complete


def test_variant_run_is_matched_against_its_file_name(tmp_path):
    path = make_checkpoint(tmp_path, "org/model@sglang", "ja", predictions_of(PAIRS))
    assert path.name == "org__model@sglang.json"
    assert validate_checkpoint(path, run="org/model@sglang", language="ja").complete
    assert_invalid(validate_checkpoint(path, run="org/model"), "is not the expected run 'org/model'")


# --- parse failures ----------------------------------------------------------


def test_missing_file(tmp_path):
    state = validate_checkpoint(tmp_path / "fr" / "a__b.json")
    assert state == CheckpointState(MISSING)
    assert state.data is None and not state.complete


def test_truncated_json_is_invalid(good):
    text = good.read_text(encoding="utf-8")
    good.write_text(text[: len(text) // 2], encoding="utf-8")
    state = validate_checkpoint(good)
    assert_invalid(state)
    assert state.reasons[0].startswith("not valid JSON (") and "line" in state.reasons[0]
    assert state.data is None


def test_not_utf8_is_invalid(good):
    good.write_bytes(b'{"metadata": "\xff"}')
    assert_invalid(validate_checkpoint(good), "not valid UTF-8")


@pytest.mark.parametrize("text", ["[]", '"yes"', "null"])
def test_top_level_must_be_an_object(good, text):
    good.write_text(text, encoding="utf-8")
    assert_invalid(read_checkpoint(good), "not an object")


@pytest.mark.parametrize("section", [keys.METADATA, keys.METRICS, keys.PREDICTIONS])
def test_each_lrb_section_is_required(good, section):
    rewrite(good, lambda d: d.pop(section))
    state = read_checkpoint(good)
    assert_invalid(state, f"section {section!r} is missing")
    assert state.data is not None


def test_section_of_the_wrong_type(good):
    rewrite(good, lambda d: d.update({keys.PREDICTIONS: {}}))
    assert_invalid(validate_checkpoint(good), f"section {keys.PREDICTIONS!r} is not a JSON array")


def test_a_directory_is_not_a_checkpoint(tmp_path):
    (tmp_path / "x.json").mkdir()
    assert_invalid(read_checkpoint(tmp_path / "x.json"), "not a regular file")


def test_read_checkpoint_does_not_check_content(good):
    rewrite(good, lambda d: d[keys.METRICS].update({keys.F1: 0.25}))
    assert read_checkpoint(good).state == PairState.COMPLETE
    assert validate_checkpoint(good).state == PairState.INVALID


# --- metrics and predictions ---------------------------------------------------


def test_one_altered_metric(good):
    rewrite(good, lambda d: d[keys.METRICS].update({keys.F1: math.nextafter(d[keys.METRICS][keys.F1], 1.0)}))
    state = validate_checkpoint(good)
    assert state.reasons == [f"metrics do not recompute from predictions: {keys.F1}"]


def test_one_altered_confusion_count(good):
    rewrite(good, lambda d: d[keys.METRICS][keys.CONFUSION].update({keys.UNPARSED: 0}))
    assert_invalid(validate_checkpoint(good), f"{keys.CONFUSION}.{keys.UNPARSED}")


def test_one_flipped_prediction(good):
    # the answer flipped with its verdict, so that only the metrics tell (a verdict alone is re-read)
    rewrite(good, lambda d: d[keys.PREDICTIONS][0].update({keys.PREDICTED: N, keys.RAW_OUTPUT: N}))
    state = validate_checkpoint(good)
    assert_invalid(state, "metrics do not recompute", f"{keys.CONFUSION}.{keys.TRUE_POSITIVE}", keys.RECALL)
    assert len(state.reasons) == 1


def test_a_bad_label_is_a_reason_not_an_exception(good):
    def spoil(d):
        d[keys.PREDICTIONS][2][keys.EXPECTED] = "maybe"
        d[keys.PREDICTIONS][4][keys.EXPECTED] = "Yes"
        d[keys.PREDICTIONS][3][keys.PREDICTED] = "perhaps"

    rewrite(good, spoil)
    state = validate_checkpoint(good)
    assert_invalid(state, "predictions[2]: expected is not yes/no (and 1 more item)", "predictions[3]: predicted")


def test_a_prediction_that_is_not_an_object(good):
    rewrite(good, lambda d: d[keys.PREDICTIONS].append("yes"))
    assert_invalid(validate_checkpoint(good), f"predictions[{len(PAIRS)}]: is not a JSON object")


def test_empty_predictions_are_invalid(tmp_path):
    path = make_checkpoint(tmp_path, RUN, "fr", [])
    assert_invalid(validate_checkpoint(path), "predictions is empty")


# --- item ids ------------------------------------------------------------------


def test_duplicate_item_id(good):
    rewrite(good, lambda d: d[keys.PREDICTIONS][1].update({keys.ITEM_ID: "item-000"}))
    state = validate_checkpoint(good)
    assert state.reasons == ["predictions: item_id 'item-000' is duplicated"]


def test_item_ids_missing_one_of_the_benchmarks(good):
    benchmark = ids_of(good) + ["item-999"]
    assert_invalid(validate_checkpoint(good, expect=Expected(item_ids=benchmark)), "1 missing, 0 not in the benchmark", "'item-999'")


def test_item_ids_not_in_the_benchmark(good):
    benchmark = ids_of(good)[1:]
    assert_invalid(validate_checkpoint(good, expect=Expected(item_ids=benchmark)), "0 missing, 1 not in the benchmark", "'item-000'")


def test_item_ids_in_another_order(good):
    benchmark = ids_of(good)
    benchmark[2], benchmark[3] = benchmark[3], benchmark[2]
    assert_invalid(validate_checkpoint(good, expect=Expected(item_ids=benchmark)), "different order (first at position 2)")


def test_item_ids_same_set_but_a_duplicate(good):
    rewrite(good, lambda d: d[keys.PREDICTIONS].append(dict(d[keys.PREDICTIONS][0])))
    rewrite(good, lambda d: d.update({keys.METRICS: compute_metrics(d[keys.PREDICTIONS])}))
    state = validate_checkpoint(good, expect=Expected(item_ids=ids_of(good)[:-1]))
    assert_invalid(state, "'item-000' is duplicated", f"{len(PAIRS) + 1} items, the benchmark has {len(PAIRS)}")


# --- run and language vs path ----------------------------------------------------


def test_wrong_language_folder(good):
    moved = good.parent.parent / "de" / good.name
    moved.parent.mkdir()
    good.rename(moved)
    assert_invalid(validate_checkpoint(moved), "metadata.language 'fr' does not match the folder 'de'")


@pytest.mark.parametrize("folder", ["b1", "qwen3-20260913", "new-models", None])
def test_a_file_recording_its_language_counts_for_it_in_a_batch_folder_or_at_the_top(good, folder):
    """Only a folder named like a language must agree with the recorded one (lrb names batches freely)."""
    results = good.parent.parent
    moved = results / folder / good.name if folder else results / good.name
    moved.parent.mkdir(exist_ok=True)
    good.rename(moved)
    good.with_suffix(".mllog").rename(moved.with_suffix(".mllog"))   # its log beside it, as a copy of the pair has
    state = validate_checkpoint(moved)
    assert state.state == PairState.COMPLETE, state.reasons


def test_language_other_than_expected(good):
    assert_invalid(validate_checkpoint(good, language="ja"), "is not the expected language 'ja'")


@pytest.mark.parametrize("value", [None, "", 3])
def test_language_present_but_not_a_code(good, value):
    rewrite(good, lambda d: d[keys.METADATA].update({keys.LANGUAGE: value}))
    state = validate_checkpoint(good)
    assert_invalid(state, "metadata.language")
    assert state.notices == []


def test_legacy_notice_even_when_a_language_is_expected(good):
    rewrite(good, lambda d: d[keys.METADATA].pop(keys.LANGUAGE))
    state = validate_checkpoint(good, language="ja")
    assert state.complete and state.notices == [LEGACY_LANGUAGE_NOTICE]


def test_run_does_not_match_the_file_name(good):
    renamed = good.with_name("LiquidAI__LFM2.5-2.6B.json")
    good.rename(renamed)
    assert_invalid(
        validate_checkpoint(renamed),
        "metadata.run 'LiquidAI/LFM2.5-350M' does not match the file name 'LiquidAI__LFM2.5-2.6B.json'",
        "expected 'LiquidAI__LFM2.5-350M.json'",
    )


def test_run_other_than_expected(good):
    assert_invalid(validate_checkpoint(good, run="LiquidAI/LFM2.5-2.6B"), "is not the expected run")


def test_no_run_and_no_model_id(good):
    rewrite(good, lambda d: [d[keys.METADATA].pop(k) for k in (keys.RUN, keys.MODEL_ID)])
    assert_invalid(validate_checkpoint(good), "metadata.run (or lrb's metadata.run_id or metadata.model_id) is missing")


def test_every_reason_is_reported_at_once(good):
    rewrite(good, lambda d: d[keys.PREDICTIONS][1].update({keys.ITEM_ID: "item-000", keys.PREDICTED: Y}))
    state = validate_checkpoint(good, run="x/y", language="de")
    assert len(state.reasons) == 5, state.reasons
    assert_invalid(state, "expected run 'x/y'", "expected language 'de'", "duplicated", "do not recompute",
                   "predictions[1].predicted is not the 'no' its recorded output gives")


# --- verify_files --------------------------------------------------------------


def test_verify_files_keeps_order_and_judges_each_file(tmp_path, good):
    bad = make_checkpoint(tmp_path, "org/other", "fr", predictions_of(PAIRS))
    rewrite(bad, lambda d: d[keys.METRICS].update({keys.ACCURACY: 1.0}))
    absent = tmp_path / "fr" / "org__absent.json"
    results = verify_files([str(bad), good, absent, LRB_FILES[0]])
    assert [p for p, _ in results] == [bad, good, absent, LRB_FILES[0]]
    assert [s.state for _, s in results] == [PairState.INVALID, PairState.COMPLETE, MISSING, PairState.COMPLETE]
    assert results[0][1].reasons == [f"metrics do not recompute from predictions: {keys.ACCURACY}"]


@pytest.mark.parametrize("raw", [None, "gone", 7])
def test_a_generate_answer_without_its_text_cannot_dodge_the_verdict_re_read(good, raw):
    """Every answer of a generate run is text its verdict is read again from: an answer whose raw_output
    was nulled or removed (and its verdict and metrics then edited to a perfect score) is invalid, by the
    full reader and by the fast one."""
    from kit.results.checkpoint import validate_summary

    def perfect(d):
        for item in d[keys.PREDICTIONS]:
            if raw == "gone":
                item.pop(keys.RAW_OUTPUT)
            else:
                item[keys.RAW_OUTPUT] = raw
            item[keys.PREDICTED] = item[keys.EXPECTED]
        d[keys.METRICS] = compute_metrics(d[keys.PREDICTIONS])

    rewrite(good, perfect)
    shown = "None" if raw in (None, "gone") else "7"
    assert_invalid(validate_checkpoint(good), f"predictions[0].raw_output is {shown}, not the text")
    assert_invalid(validate_summary(good), f"predictions[0].raw_output is {shown}, not the text")


@pytest.mark.parametrize(("edit", "said"), [
    (lambda p: p.update(job="local"), "provenance.job is a JSON string, not an object"),
    (lambda p: p.update(job=[]), "provenance.job is a JSON array, not an object"),
    (lambda p: p.setdefault("image", {}).update(digest=123), "provenance.image.digest is number 123, not a string"),
    (lambda p: p.setdefault("image", {}).update(digest=["a"]), "provenance.image.digest is array ['a'], not a string"),
    (lambda p: p.setdefault("model", {}).update(weight_files_sha256=["x"]), "weight_files_sha256 is not an object"),
])
def test_a_provenance_part_of_a_type_no_job_writes_is_invalid(good, edit, said):
    """What check, compare and reproduce look up in the provenance block has the type a job writes, or the
    file is invalid (by both readers), never a crash further on."""
    from kit.results.checkpoint import validate_summary

    rewrite(good, lambda d: edit(d.setdefault(keys.PROVENANCE, {})))
    assert_invalid(validate_checkpoint(good), said)
    assert_invalid(validate_summary(good), said)


@pytest.mark.parametrize("name", ["LiquidAI/LFM2.5-350M\x1b[31m", "LiquidAI/\u202eM053-5.2MFL"])
def test_a_name_with_a_control_or_bidirectional_character_is_invalid(good, name):
    """A model or run name that would read as another (a terminal escape, a right-to-left override) is
    refused when the file is read, by both readers, before any table, page or CSV shows it."""
    from kit.results.checkpoint import validate_summary

    rewrite(good, lambda d: d[keys.METADATA].update({keys.MODEL_ID: name}))
    for state in (validate_checkpoint(good), validate_summary(good)):
        assert_invalid(state, "metadata.model_id", "holds a control, bidirectional or invisible character")
        assert all("\x1b" not in r and "\u202e" not in r for r in state.reasons)


@pytest.mark.parametrize("revision", ["../../etc", "main", "A" * 40, "0123456789abcdef0123456789abcdef0123456"])
def test_a_kit_job_whose_recorded_revision_is_no_commit_is_invalid(good, revision):
    """A kit job records the 40-hex commit it loaded (or null): a file recording anything else is invalid by
    both readers, not left for reproduce to refuse; lrb's own files (no provenance) are not held to it."""
    from kit.results.checkpoint import validate_summary

    def edit(d):
        d[keys.METADATA][keys.MODEL_REVISION] = revision
        d.setdefault(keys.PROVENANCE, {}).setdefault("model", {})["revision"] = revision

    rewrite(good, edit)
    for state in (validate_checkpoint(good), validate_summary(good)):
        assert_invalid(state, "metadata.model_revision", "not a 40-hex commit")
    rewrite(good, lambda d: d.pop(keys.PROVENANCE))
    assert "model_revision" not in " ".join(validate_checkpoint(good).reasons)


def test_a_kit_job_run_unpinned_records_no_revision_and_stays_valid(good):
    from kit.results.checkpoint import validate_summary

    def edit(d):
        d[keys.METADATA][keys.MODEL_REVISION] = None
        d.setdefault(keys.PROVENANCE, {}).setdefault("model", {})["revision"] = None

    rewrite(good, edit)
    for state in (validate_checkpoint(good), validate_summary(good)):
        assert not [r for r in state.reasons if "model_revision" in r], state.reasons
