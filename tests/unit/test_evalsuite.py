"""LightEval suites without LightEval: the suite config and its pins, planning (run, task) pairs,
suite checkpoints (validation, metric recomputation, tampering), the suite report, and the
one-line errors of bad suites."""

from __future__ import annotations

import csv
import hashlib
import json
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_checkpoints import write_job_checkpoint

from kit.config.kinds.lighteval.suite import EvalSuite, suite_sha256
from kit.config.kinds import load_benchmark
from kit.config.roster import Run
from kit.demo.evalsuite import LIGHTEVAL_TASK, TASK, TASKS_PY, write_demo_suite
from kit.errors import ConfigError
from kit.plan import select_pairs
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint
from kit.results.identity import Expected
from kit.results.report import write_report
from kit.results.store import checkpoint_path
from kit.results.kinds.lighteval.metrics import suite_metrics

REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def suite_dir(tmp_path) -> Path:
    return write_demo_suite(tmp_path / "suite")


def run_kit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_demo_suite_loads_with_its_pins(suite_dir):
    suite = load_benchmark(suite_dir)
    assert isinstance(suite, EvalSuite) and suite.kind == "lighteval"
    assert suite.languages == (TASK,) and suite.task(TASK).lighteval == LIGHTEVAL_TASK
    lines = (suite_dir / "data" / TASK / "test.jsonl").read_text(encoding="utf-8").splitlines()
    assert suite.item_ids(TASK) == [json.loads(line)["id"] for line in lines] and len(lines) == 12
    assert suite.custom_tasks.sha256 == hashlib.sha256(TASKS_PY.encode()).hexdigest()
    assert suite.whole_set_status()[0] == "checked"
    assert suite.manifest_sha256 == suite_sha256(suite.spec)


def test_demo_suite_is_written_byte_identically(tmp_path):
    a, b = write_demo_suite(tmp_path / "a"), write_demo_suite(tmp_path / "b")
    for rel in ("benchmark.toml", "tasks.py", f"data/{TASK}/test.jsonl"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes()


def test_tasks_module_is_valid_python(suite_dir):
    py_compile.compile(str(suite_dir / "tasks.py"), doraise=True)


def test_suite_digest_moves_with_any_pinned_file(suite_dir):
    before = load_benchmark(suite_dir).manifest_sha256
    data = suite_dir / "data" / TASK / "test.jsonl"
    data.write_text(data.read_text(encoding="utf-8") + '{"id": "extra", "question": "1+1?", "answer": "2"}\n',
                    encoding="utf-8")
    toml = suite_dir / "benchmark.toml"
    old = load_benchmark(suite_dir).task(TASK).sha256
    toml.write_text(toml.read_text(encoding="utf-8").replace(old, hashlib.sha256(data.read_bytes()).hexdigest()),
                    encoding="utf-8")
    suite = load_benchmark(suite_dir)
    assert suite.manifest_sha256 != before and suite.item_ids(TASK)[-1] == "extra"


def test_changed_data_is_refused_naming_file_and_digest(suite_dir):
    data = suite_dir / "data" / TASK / "test.jsonl"
    data.write_text(data.read_text(encoding="utf-8").replace("What is 2 + 3?", "What is 2 + 4?"), encoding="utf-8")
    suite = load_benchmark(suite_dir)
    with pytest.raises(ConfigError) as err:
        suite.load_language(TASK)
    assert str(data) in err.value.one_line() and "differs from task 'kit_arith'" in err.value.one_line()
    assert suite.whole_set_status()[0] == "mismatch"


def test_changed_custom_tasks_are_refused_at_load(suite_dir):
    (suite_dir / "tasks.py").write_text(TASKS_PY.replace("Answer:", "Result:"), encoding="utf-8")
    with pytest.raises(ConfigError, match="custom_tasks_sha256"):
        load_benchmark(suite_dir)


def test_duplicate_or_missing_ids_are_refused(suite_dir):
    data = suite_dir / "data" / TASK / "test.jsonl"
    toml = suite_dir / "benchmark.toml"
    old = load_benchmark(suite_dir).task(TASK).sha256
    lines = data.read_text(encoding="utf-8").splitlines()
    for bad, message in ((lines + [lines[0]], "repeats id 'arith-000'"),
                         (lines + ['{"question": "1+1?", "answer": "2"}'], "has no 'id' field")):
        data.write_text("\n".join(bad) + "\n", encoding="utf-8")
        new = hashlib.sha256(data.read_bytes()).hexdigest()
        toml.write_text(toml.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        old = new
        with pytest.raises(ConfigError, match=message):
            load_benchmark(suite_dir).load_language(TASK)


def test_data_that_is_not_utf8_is_one_line_exit_2(suite_dir):
    data = suite_dir / "data" / TASK / "test.jsonl"
    toml = suite_dir / "benchmark.toml"
    old = load_benchmark(suite_dir).task(TASK).sha256
    data.write_bytes(data.read_bytes() + b'{"id": "x", "question": "\xff", "answer": "1"}\n')
    toml.write_text(toml.read_text(encoding="utf-8").replace(old, hashlib.sha256(data.read_bytes()).hexdigest()),
                    encoding="utf-8")
    r = run_kit("plan", "--benchmark", str(suite_dir), cwd=suite_dir.parent)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "not UTF-8 text" in r.stderr, r.stderr
    assert str(data) in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_pairs_are_run_by_task(suite_dir):
    suite = load_benchmark(suite_dir)
    runs = [Run(model="org/a", revision=REV, backend="vllm"), Run(model="org/b", revision=REV, backend="vllm")]
    pairs = select_pairs(runs, suite, None)
    assert [(p.run, p.language) for p in pairs] == [("org/a", TASK), ("org/b", TASK)]
    with pytest.raises(ConfigError, match="not in the suite"):
        select_pairs(runs, suite, ["math_500"])


BAD_SUITES = {
    "bad task string": ('lighteval = "custom|kit_arith|0"', 'lighteval = "kit_arith"', ["task[0].lighteval", "suite|task|few_shot"]),
    "unknown key": ("[generation]", "[generation]\nbeam_size = 4", ["generation.beam_size", "remove it"]),
    "bad digest": ('\nsha256 = "', '\nsha256 = "abc', ["task[0].sha256", "sha256sum"]),
    "reserved name": ('name = "kit_arith"', 'name = "logs"', ["task[0].name", "plain folder name"]),
    "escaping data": ('data = "data/kit_arith/test.jsonl"', 'data = "../elsewhere.jsonl"', ["task[0].data", "inside the suite"]),
}


@pytest.mark.parametrize("case", BAD_SUITES, ids=list(BAD_SUITES))
def test_bad_suite_is_one_line_exit_2(suite_dir, case):
    old, new, expected = BAD_SUITES[case]
    toml = suite_dir / "benchmark.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    r = run_kit("plan", "--benchmark", str(suite_dir), cwd=suite_dir.parent)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and str(toml) in line and all(e in line for e in expected), line


def test_plan_describes_the_suite(suite_dir):
    r = run_kit("plan", "--benchmark", str(suite_dir), "--json", cwd=suite_dir.parent)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["languages"] == [TASK] and data["prompts_per_language"] == {TASK: 12}
    assert data["whole_set"]["status"] == "checked"


# --- checkpoints -------------------------------------------------------------------


def suite_checkpoint(results: Path, run: str, suite: EvalSuite, outputs: list[str]) -> Path:
    """A LightEval suite checkpoint as the worker writes it (with its provenance and log), with
    exact-match item metrics."""
    rows = [json.loads(line) for line in suite.data_path(TASK).read_text(encoding="utf-8").splitlines()]
    preds = [{keys.ITEM_ID: row["id"], keys.EXPECTED: row["answer"], keys.RAW_OUTPUT: out, keys.TRUNCATED: False,
              keys.ITEM_METRICS: {"em": float(out.strip() == row["answer"]), "len": float(len(out))}}
             for row, out in zip(rows, outputs, strict=True)]
    meta = {keys.RUN: run, keys.MODEL_ID: run, keys.LANGUAGE: TASK, keys.TASK: "generate", keys.BENCHMARK_KIND: "lighteval",
            keys.DECODING: "greedy", keys.MAX_NEW_TOKENS: 16, keys.MANIFEST_SHA256: suite.manifest_sha256,
            keys.BENCHMARK_SHA256: suite.task(TASK).sha256, keys.PROMPT_SHA256: suite.custom_tasks.sha256,
            "lighteval_task": LIGHTEVAL_TASK, keys.DURATION_SECONDS: 1.0}
    return write_job_checkpoint(checkpoint_path(results, run, TASK),
                                {keys.METADATA: meta, keys.METRICS: suite_metrics(preds), keys.PREDICTIONS: preds})


def answers(right: int) -> list[str]:
    sums = [str(a + b) for a, b in ((2, 3), (4, 5), (10, 7), (6, 6), (9, 1), (3, 8), (12, 30), (7, 7), (15, 4),
                                    (21, 21), (8, 0), (5, 13))]
    return [s if n < right else "no idea" for n, s in enumerate(sums)]


def test_suite_checkpoint_is_complete_and_metrics_are_means(tmp_path, suite_dir):
    suite = load_benchmark(suite_dir)
    path = suite_checkpoint(tmp_path / "results", "org/a", suite, answers(3))
    st = validate_checkpoint(path, run="org/a", language=TASK, expect=Expected(item_ids=suite.item_ids(TASK)))
    assert st.complete, st.reasons
    assert st.data[keys.METRICS]["em"] == 3 / 12 and st.data[keys.METRICS][keys.N_ITEMS] == 12


def tamper(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("change, reason", [
    (lambda d: d[keys.PREDICTIONS][11][keys.ITEM_METRICS].update(em=1.0), "metrics do not recompute from predictions: em"),
    (lambda d: d[keys.METRICS].update(em=0.5), "metrics do not recompute from predictions: em"),
    (lambda d: d[keys.PREDICTIONS][1].pop(keys.ITEM_METRICS), "predictions[1]: item_metrics is missing"),
    (lambda d: d[keys.PREDICTIONS][2][keys.ITEM_METRICS].pop("len"), "predictions[2]: item_metrics names other metrics"),
    (lambda d: d[keys.PREDICTIONS].pop(), "1 missing, 0 not in the benchmark, e.g. 'arith-011'"),
    (lambda d: d[keys.METADATA].update(benchmark_kind="helm"), "benchmark_kind is 'helm'"),
])
def test_tampered_suite_checkpoint_is_invalid(tmp_path, suite_dir, change, reason):
    suite = load_benchmark(suite_dir)
    path = suite_checkpoint(tmp_path / "results", "org/a", suite, answers(5))
    tamper(path, change)
    st = validate_checkpoint(path, language=TASK, expect=Expected(item_ids=suite.item_ids(TASK)))
    assert not st.complete and any(reason in r for r in st.reasons), st.reasons


def test_lrb_rules_do_not_apply_to_suite_predictions(tmp_path, suite_dir):
    """Suite items carry answers such as '42', not yes/no: the lrb label rule must not fire."""
    suite = load_benchmark(suite_dir)
    st = validate_checkpoint(suite_checkpoint(tmp_path / "r", "org/a", suite, answers(12)))
    assert st.complete and st.data[keys.METRICS]["em"] == 1.0


# --- report --------------------------------------------------------------------------


def test_suite_report_writes_scores_and_summary(tmp_path, suite_dir):
    suite = load_benchmark(suite_dir)
    results = tmp_path / "results"
    suite_checkpoint(results, "org/a", suite, answers(6))
    suite_checkpoint(results, "org/b", suite, answers(9))
    paths = write_report(results, tmp_path / "report")
    rows = list(csv.DictReader(paths.files["scores"].open(encoding="utf-8")))
    em = {r["run"]: r["value"] for r in rows if r["metric"] == "em"}
    assert em == {"org/a": "0.5", "org/b": "0.75"} and {r["task"] for r in rows} == {TASK}
    summary = paths.files["summary"].read_text(encoding="utf-8")
    assert f"## {TASK} (`{LIGHTEVAL_TASK}`)" in summary and "| org/b | 12 | 0.75 |" in summary


def test_report_refuses_to_mix_suite_and_lrb(tmp_path, suite_dir):
    from kit.results.metrics import compute_metrics

    suite = load_benchmark(suite_dir)
    results = tmp_path / "results"
    suite_checkpoint(results, "org/a", suite, answers(6))
    preds = [{keys.ITEM_ID: "x1", keys.EXPECTED: "yes", keys.PREDICTED: "yes", keys.RAW_OUTPUT: "yes"}]
    write_job_checkpoint(checkpoint_path(results, "org/c", "en"), {
        keys.METADATA: {keys.RUN: "org/c", keys.LANGUAGE: "en"}, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds})
    with pytest.raises(ConfigError, match="cannot report lighteval checkpoints .* with lrb ones"):
        write_report(results, tmp_path / "report")
    assert not (tmp_path / "report").exists()


# --- reproduce: comparing suite results ---------------------------------------------


def test_compare_suite_results_by_item_metrics(tmp_path, suite_dir):
    from kit.repro.compare import DIFFERENT, REPRODUCED, WITHIN_TOLERANCE, Tolerance, compare

    suite = load_benchmark(suite_dir)
    recorded = json.loads(suite_checkpoint(tmp_path / "a", "org/a", suite, answers(4)).read_text(encoding="utf-8"))
    same = compare(recorded, json.loads(json.dumps(recorded)), Tolerance())
    assert same.verdict == REPRODUCED and same.bounded == "largest task metric"

    reworded = json.loads(json.dumps(recorded))
    reworded[keys.PREDICTIONS][8][keys.RAW_OUTPUT] = "still wrong"  # same item metrics, other text
    cmp = compare(recorded, reworded, Tolerance())
    assert cmp.verdict == WITHIN_TOLERANCE and [d["item_id"] for d in cmp.differing] == ["arith-008"]

    better = json.loads(suite_checkpoint(tmp_path / "b", "org/a", suite, answers(5)).read_text(encoding="utf-8"))
    cmp = compare(recorded, better, Tolerance())
    assert cmp.verdict == DIFFERENT and cmp.metric_deltas["em"] == round(1 / 12, 12)
    assert cmp.bounded_delta == max(cmp.metric_deltas.values(), key=abs) and cmp.agreement == 11 / 12
    assert compare(recorded, better, Tolerance(agreement=0.9, f1=0.5)).verdict == WITHIN_TOLERANCE
