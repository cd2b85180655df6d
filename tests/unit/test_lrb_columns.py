"""lrb's newer leaderboard columns (kit.results.kinds.lrb.columns) on hand-built records: Wilson intervals
against a hand computation, speed pooled over a run's languages, lrb's loader defaults only for lrb's
own files, McNemar against the language's top run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.results import keys
from kit.results.keys import PairState
from kit.results.kinds.lrb.columns import mcnemar_against_top, run_columns, wilson_text, checkpoint_columns
from kit.results.kinds.lrb.paired import item_outcomes
from kit.results.records import CheckpointRecord


def _record(language: str, run: str = "org/m", *, items: int = 100, duration: float = 10.0, speed: dict | None = None,
            kit: bool = False, f1: float = 0.5, outcomes=None, metadata: dict | None = None) -> CheckpointRecord:
    data = {keys.METADATA: {keys.MODEL_ID: run, keys.DURATION_SECONDS: duration, **(metadata or {})},
            keys.METRICS: {keys.N_ITEMS: items, keys.F1: f1,
                           keys.CONFUSION: {keys.TRUE_POSITIVE: 40, keys.FALSE_POSITIVE: 10, keys.TRUE_NEGATIVE: 30,
                                            keys.FALSE_NEGATIVE: 20, keys.UNPARSED: 0}}}
    if speed is not None:
        data[keys.SPEED] = speed
    if kit:
        data[keys.PROVENANCE] = {}
    path = Path("results") / language / f"{run.replace('/', '__')}.json"
    return CheckpointRecord(path, language, PairState.COMPLETE, data=data, outcomes=outcomes)


def test_wilson_intervals_as_hand_computed() -> None:
    # 131 of 154: lrb's qwen3-20260913 Qwen3-8B accuracy_ci95
    assert wilson_text(131, 154) == "[0.7859, 0.8984]"
    assert wilson_text(0, 10) == "[0.0000, 0.2775]" and wilson_text(10, 10) == "[0.7225, 1.0000]"
    assert wilson_text(0, 0) == ""


def test_one_language_s_run_carries_its_checkpoint_s_figures() -> None:
    record = _record("en", speed={"sentences_per_second": 12.3456, "latency_p95_seconds": 0.123456,
                                  "generated_tokens": 900, "output_tokens_per_second": 90.04})
    columns = run_columns([record])
    assert columns["sentences_per_second"] == "12.346" and columns["latency_p95_seconds"] == "0.1235"
    assert columns["generated_tokens"] == "900" and columns["output_tokens_per_second"] == "90.0"
    assert columns["accuracy_ci95"] == wilson_text(70, 100) and columns["runtime"] == "transformers"


def test_without_a_speed_section_sentences_per_second_is_items_over_the_wall_time() -> None:
    assert checkpoint_columns(_record("en", items=154, duration=7.824), {})["sentences_per_second"] == "19.683"
    assert checkpoint_columns(_record("en", duration=0.0), {})["sentences_per_second"] == ""


def test_several_languages_pool_items_and_tokens_over_seconds() -> None:
    a = _record("en", speed={"sentences_per_second": 10.0, "generated_tokens": 500}, kit=True)   # 10 s
    b = _record("fr", speed={"sentences_per_second": 25.0, "generated_tokens": 100}, kit=True)   # 4 s
    columns = run_columns([a, b])
    assert columns["sentences_per_second"] == repr(round(200 / 14, 3))
    assert columns["generated_tokens"] == "600" and columns["output_tokens_per_second"] == repr(round(600 / 14, 1))
    assert columns["latency_p50_seconds"] == "" and columns["accuracy_ci95"] == ""
    # a kit checkpoint's engine is its backend column: no lrb default for it
    assert columns["runtime"] == "" and columns["generation_mode"] == ""
    c = _record("de", speed={"sentences_per_second": 10.0}, kit=True)   # no token count: none pooled
    assert run_columns([a, c])["generated_tokens"] == ""


def test_recorded_engine_wins_over_lrb_s_defaults() -> None:
    record = _record("en", metadata={"runtime": "sglang", "generation_mode": "continuous"})
    assert run_columns([record])["runtime"] == "sglang"
    assert run_columns([record])["generation_mode"] == "continuous"


def test_mcnemar_against_the_top_run_of_each_language() -> None:
    def outcomes(predicted: list[str]):
        return item_outcomes([{keys.ITEM_ID: f"i{i}", keys.EXPECTED: "yes", keys.PREDICTED: p}
                              for i, p in enumerate(predicted)])

    top = _record("en", "org/top", f1=0.9, outcomes=outcomes(["yes"] * 10))
    low = _record("en", "org/low", f1=0.2, outcomes=outcomes(["no"] * 8 + ["yes"] * 2))
    other = _record("en", "org/other", f1=0.1, outcomes=item_outcomes(
        [{keys.ITEM_ID: f"j{i}", keys.EXPECTED: "yes", keys.PREDICTED: "yes"} for i in range(10)]))
    found = mcnemar_against_top([top, low, other])
    assert found[top.name] == ("org/top", "1.0")
    run, p = found[low.name]
    assert run == "org/top" and float(p) == pytest.approx(2 / 2 ** 8)   # 8 discordant, all one way
    assert found[other.name] == ("org/top", "")   # other items: no test
