"""An edited verdict in kit's own checkpoint is caught even when the metrics were recomputed to match:
each short answer is re-read by lrb's rules and each score verdict is its yes-score against the run's
threshold. lrb's own files (no provenance) follow the rules of their own version and are not re-read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import validate_checkpoint
from kit.results.evidence import KIT_ONLY_METADATA
from kit.results.metrics import compute_metrics
from release_helpers import LLM, RERANKER, demo_sweep


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return demo_sweep(tmp_path_factory.mktemp("sweep"), runs=(LLM, RERANKER))


@pytest.fixture(scope="module")
def checkpoint(sweep) -> Path:
    """The generate run's checkpoint (English)."""
    return sweep.results / "en" / "kit-demo__tiny-llama.json"


@pytest.fixture(scope="module")
def scored(sweep) -> Path:
    """The score run's checkpoint (English)."""
    return sweep.results / "en" / "kit-demo__tiny-reranker.json"


def _edited(checkpoint: Path, tmp_path: Path, change, *, log: bool = True) -> Path:
    """The checkpoint changed by `change`, its metrics recomputed, beside the job's log (kept by the forger;
    none with log=False)."""
    data = json.loads(checkpoint.read_text(encoding="utf-8"))
    change(data)
    data[keys.METRICS] = compute_metrics(data[keys.PREDICTIONS])   # a forger recomputes them
    path = tmp_path / checkpoint.parent.name / checkpoint.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    if log:
        shutil.copy2(checkpoint.with_suffix(".mllog"), path.with_suffix(".mllog"))
    return path


def _flip(label: str) -> str:
    return keys.NO if label == keys.YES else keys.YES


def test_the_job_s_own_checkpoint_is_complete(checkpoint: Path, scored: Path) -> None:
    assert validate_checkpoint(checkpoint).state == PairState.COMPLETE
    assert validate_checkpoint(scored).state == PairState.COMPLETE


def test_a_flipped_answer_verdict_is_caught(checkpoint: Path, tmp_path: Path) -> None:
    def flip(data):
        for item in data[keys.PREDICTIONS][3:5]:
            item[keys.PREDICTED] = _flip(item[keys.PREDICTED])
    state = validate_checkpoint(_edited(checkpoint, tmp_path, flip))
    assert state.state == PairState.INVALID
    assert state.reasons == [f"predictions[3].predicted is not the {_first(checkpoint, 3)!r} its "
                             "recorded output gives (and 1 more) (the verdict was edited after the job wrote it)"]


def _first(checkpoint: Path, at: int) -> str:
    return json.loads(checkpoint.read_text(encoding="utf-8"))[keys.PREDICTIONS][at][keys.PREDICTED]


@pytest.mark.parametrize(("yes", "threshold", "predicted", "state"), [
    (0.9, None, keys.YES, PairState.COMPLETE), (0.9, None, keys.NO, PairState.INVALID),
    (0.9, 0.95, keys.NO, PairState.COMPLETE), (0.5, None, keys.YES, PairState.COMPLETE),
])
def test_a_score_verdict_is_its_yes_score_against_the_threshold(scored: Path, tmp_path: Path, yes, threshold,
                                                                  predicted, state) -> None:
    def score(data):
        item = data[keys.PREDICTIONS][0]
        item.update({keys.PARSE_MODE: keys.PARSE_SCORE, keys.SCORE_YES: yes, keys.SCORE_NO: 1 - yes,
                     keys.RAW_OUTPUT: "1.5", keys.PREDICTED: predicted})
        if threshold is not None:
            data[keys.METADATA][keys.OPTIONS] = {"threshold": threshold}
    assert validate_checkpoint(_edited(scored, tmp_path, score)).state == state


@pytest.mark.parametrize("threshold", [None, "0.5", True, [0.5]])
def test_a_threshold_that_is_no_number_cannot_turn_the_score_verdict_check_off(scored: Path, tmp_path: Path,
                                                                             threshold) -> None:
    """Every verdict set to the expected answer and the threshold made unreadable: each reader (the full
    path and the typed one a status of a sweep takes) finds the file invalid, naming the threshold."""
    from kit.results.checkpoint import validate_summary

    def perfect(data):
        for item in data[keys.PREDICTIONS]:
            item[keys.PREDICTED] = item[keys.EXPECTED]
        data[keys.METADATA][keys.OPTIONS] = {"threshold": threshold}
    path = _edited(scored, tmp_path, perfect)
    for state in (validate_checkpoint(path), validate_summary(path)):
        assert state.state == PairState.INVALID
        assert state.reasons == [f"metadata.options.threshold is {threshold!r}, not the number a score run's verdicts "
                                 "are read against, so they cannot be read again (the file was changed after the "
                                 "job wrote it)"]


def test_a_long_answer_is_not_re_read_and_lrb_s_own_files_are_not_either(checkpoint: Path, tmp_path: Path) -> None:
    def long_answer(data):
        item = data[keys.PREDICTIONS][0]
        item[keys.RAW_OUTPUT] = "<think>" + "x " * 200 + "</think> " + item[keys.PREDICTED]
        item[keys.PREDICTED] = _flip(item[keys.PREDICTED])
        item[keys.PARSE_MODE] = keys.PARSE_LAST
    assert validate_checkpoint(_edited(checkpoint, tmp_path / "long", long_answer)).state == PairState.COMPLETE

    def lrb_file(data):   # lrb's own: its metadata keys only, no provenance, no log
        del data[keys.PROVENANCE]
        data[keys.METADATA] = {k: v for k, v in data[keys.METADATA].items() if k not in KIT_ONLY_METADATA}
        data[keys.PREDICTIONS][0][keys.PREDICTED] = _flip(data[keys.PREDICTIONS][0][keys.PREDICTED])
    assert validate_checkpoint(_edited(checkpoint, tmp_path / "lrb", lrb_file, log=False)).state == PairState.COMPLETE


def test_in_a_reasoning_model_s_file_a_flipped_short_answer_is_still_caught(checkpoint: Path, tmp_path: Path) -> None:
    def reasoning(data):
        long_item, short_item = data[keys.PREDICTIONS][0], data[keys.PREDICTIONS][1]
        long_item[keys.RAW_OUTPUT] = "<think>" + "x " * 200 + "</think> " + long_item[keys.PREDICTED]
        short_item[keys.PREDICTED] = _flip(short_item[keys.PREDICTED])
    state = validate_checkpoint(_edited(checkpoint, tmp_path, reasoning))
    assert state.state == PairState.INVALID and state.reasons[0].startswith("predictions[1].predicted is not the")
