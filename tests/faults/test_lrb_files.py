"""The fault suite (issue 12, item 7): lrb's own files, read as lrb reads them. Result files with
lrb's unparsed answers, truncated and long reasoning outputs and variant run names; run names with
lrb's variant suffixes; a manifest whose whole-set digest is not its files'; a benchmark folder
without the prompt a run needs; lrb's prompt per kind of model; language selectors in any case;
and `kit export lrb`, whose files lrb's loader reads. The fixtures are built from lrb's documented
schema (tests/lrb_schema.py), each through the CLI as a user meets it."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import sys
from pathlib import Path

import lrb_schema as lrb
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from conftest_checkpoints import seal  # noqa: E402
from test_hostile_inputs import REV, kit, refused  # noqa: E402

from kit.demo.dataset import write_demo_benchmark  # noqa: E402

# ------------------------------------------------------------------ lrb result files


def _fixtures() -> dict[str, dict]:
    """One lrb result file per format fact kit's fixtures lacked (tests/lrb_schema.py says where each
    fact comes from)."""
    p = lrb.prediction
    return {
        # an answer with no verdict: predicted null (lrb has no "unparsed" label)
        "unparsed answer": lrb.result("org/model-a", "en", [
            p("i-001", "yes", "yes", "Yes."), p("i-002", "no", None, "It depends.", parse_mode=None),
            p("i-003", "no", "no", "No, it is about people.", parse_mode="leading")]),
        # the budget ran out: null however many verdict words the cut text holds (strict-8-tokens runs)
        "truncated output": lrb.result("org/model-b", "en", [
            p("i-001", "yes", None, "1.  **Analyze the Request:** yes or no", truncated=True),
            p("i-002", "no", None, "The task: \"Classify whether the", truncated=True)]),
        # a reasoning model: long deliberation then the answer (last verdict), and one cut off mid-thought
        "long reasoning output": lrb.result("org/model-c", "en", [
            p("i-001", "no", "no", lrb.REASONING, parse_mode="last"),
            p("i-002", "yes", None, lrb.CUT_OFF, truncated=True)]),
        # a variant run: run_id names it and the file; model_id stays the Hub repository
        "variant run name": lrb.result("org/model-a", "en", [
            p("i-001", "yes", "yes", "yes"), p("i-002", "no", "yes", "yes"), p("i-003", "no", "no", "No.")],
            run_id="org/model-a+DSpark", runtime="sglang", draft_model_id="org/model-a-DSpark",
            draft_model_revision="4" * 40, speculative={"speculative_algorithm": "DSPARK"}, batch_size=1),
    }


@pytest.fixture
def lrb_results(tmp_path) -> Path:
    """A results tree holding the fixtures, where lrb writes them."""
    root = tmp_path / "results"
    for data in _fixtures().values():
        lrb.write(root, data)
    return root


@pytest.mark.parametrize("fact", sorted(_fixtures()))
def test_kit_verify_accepts_an_lrb_result_file_with(fact, tmp_path):
    path = lrb.write(tmp_path / "results", _fixtures()[fact])
    assert lrb.problems(path, tmp_path / "results") == []   # the fixture is one lrb's loader reads
    r = kit("verify", str(path), cwd=tmp_path)
    assert r.returncode == 0 and "1 verified, 0 failed" in r.stdout, r.stdout + r.stderr


def test_kit_report_counts_every_lrb_file_with_its_unparsed_and_truncated_answers(lrb_results, tmp_path):
    r = kit("report", str(lrb_results), "-o", str(tmp_path / "report"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "report" / "leaderboard.csv", encoding="utf-8") as fh:
        rows = {row["run"]: row for row in csv.DictReader(fh)}
    assert sorted(rows) == ["org/model-a", "org/model-a+DSpark", "org/model-b", "org/model-c"]
    assert rows["org/model-b"]["truncated"] == "2" and float(rows["org/model-b"]["unparsed_rate"]) == 1.0
    assert rows["org/model-c"]["truncated"] == "1" and float(rows["org/model-c"]["unparsed_rate"]) == 0.5
    assert abs(float(rows["org/model-a"]["unparsed_rate"]) - 1 / 3) < 1e-3
    assert abs(float(rows["org/model-a+DSpark"]["accuracy"]) - 2 / 3) < 1e-3   # its own row, not the model's


def test_an_lrb_file_named_for_another_run_is_still_refused(tmp_path):
    data = _fixtures()["variant run name"]
    path = tmp_path / "results" / "en" / "org__model-a.json"   # the variant's run_id is not this file's
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    r = kit("verify", str(path), cwd=tmp_path)
    assert r.returncode == 1 and "metadata.run_id 'org/model-a+DSpark' does not match the file name" in r.stdout


def test_an_lrb_prediction_without_a_predicted_key_is_not_null(tmp_path):
    data = _fixtures()["unparsed answer"]
    del data["predictions"][1]["predicted"]
    path = lrb.write(tmp_path / "results", data)
    r = kit("verify", str(path), cwd=tmp_path)
    assert r.returncode == 1 and "predictions[1]: predicted is not yes/no/unparsed/null" in r.stdout


# ------------------------------------------------------------------ projects: names, manifests, prompts, languages


def _lrb_folder(dest: Path) -> Path:
    """The demo data in lrb's layout (no benchmark.toml): found by lrb's file names, as lrb's data/ is."""
    write_demo_benchmark(dest)
    (dest / "benchmark.toml").unlink()
    (dest / "prompt_generate.txt").rename(dest / "prompt.txt")
    return dest


def _project(tmp_path: Path, runs: str, bench: Path | None = None) -> Path:
    bench = bench or _lrb_folder(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(f'benchmark = "{bench.name}"\n\n{runs}')
    return tmp_path


def _run(model: str, **keys: object) -> str:
    lines = [f'model = "{model}"', f'revision = "{REV}"', f'backend = "{keys.pop("backend", "transformers-5.17")}"']
    lines += [f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}" for k, v in keys.items()]
    return "[[run]]\n" + "\n".join(lines) + "\n\n"


def _inline(table: dict) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in table.items()) + " }"


def _plan(project: Path, *args: str) -> dict:
    r = kit("plan", "--json", *args, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["data"]


@pytest.mark.parametrize("model", ["org/model-a+DSpark", "org/model-a+DSpark-throughput-b16", "org/model-a@sglang"])
def test_a_run_named_with_an_lrb_variant_suffix_is_planned(tmp_path, model):
    project = _project(tmp_path, _run(model))
    data = _plan(project, "--languages", "en")
    assert data["runs"] == [model] and data["assigned"] == [[model, "en"]]
    from kit.config.roster import Run

    assert Run(model=model, revision=REV, backend="vllm").model_id == "org/model-a"


def test_a_variant_suffix_that_is_not_a_name_is_refused(tmp_path):
    project = _project(tmp_path, _run("org/model-a+Bad Variant"))
    refused(kit("plan", cwd=project), "roster.toml", "bad variant", "'Bad Variant'")


def test_a_manifest_whose_whole_set_digest_is_not_its_files_is_refused(tmp_path):
    bench = _lrb_folder(tmp_path / "data")
    manifest = bench / "translations" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["dataset"] = "someone/else"   # not kit's own dataset: lrb refuses any
    data["whole_set_sha256"] = "0" * 64
    manifest.write_text(json.dumps(data), encoding="utf-8")
    project = _project(tmp_path, _run("org/m"), bench)
    refused(kit("plan", cwd=project), "manifest.json", "whole_set_sha256 is " + "0" * 64, "restore manifest.json")


def test_a_benchmark_folder_without_the_generate_prompt_is_refused_not_given_kit_s(tmp_path):
    bench = _lrb_folder(tmp_path / "data")
    (bench / "prompt.txt").unlink()
    project = _project(tmp_path, _run("org/m"), bench)
    refused(kit("plan", cwd=project), "no prompt for run 'org/m' (generative)", "add prompt.txt")


def test_a_run_without_its_kind_s_prompt_is_refused_not_given_the_reranker_s(tmp_path):
    bench = _lrb_folder(tmp_path / "data")
    (bench / "prompt_zeroshot.txt").unlink()   # lrb's layout without its zero-shot prompt file
    project = _project(tmp_path, _run("org/gl", backend="gliner2", task="score"), bench)
    refused(kit("plan", cwd=project), "(zero-shot classifier)", "add prompt_zeroshot.txt")


def test_each_kind_of_run_gets_lrb_s_prompt_and_a_run_may_name_its_own(tmp_path):
    bench = _lrb_folder(tmp_path / "data")
    texts = {"prompt_zeroshot.txt": "TARGET SENTENCE: {}\nHYPOTHESIS: land use.\n",
             "prompt_masked_lm.txt": "{} ANSWER: [MASK]\n", "mine.txt": "My own prompt: {}\n"}
    for name, text in texts.items():
        (bench / name).write_text(text, encoding="utf-8")
    expected = {
        "org/gen": "prompt.txt",
        "org/causal": "prompt.txt",        # lrb's log-probability read of a generative model
        "org/clf": "prompt_reranker.txt",
        "org/gliner": "prompt_zeroshot.txt",
        "org/gliclass": "prompt_zeroshot.txt",
        "org/nli": "prompt_zeroshot.txt",
        "org/mlm": "prompt_masked_lm.txt",
        "org/own": "mine.txt",
    }
    runs = (_run("org/gen") + _run("org/causal", task="score", options={"score_kind": "causal"})
            + _run("org/clf", task="score") + _run("org/gliner", backend="gliner2", task="score")
            + _run("org/gliclass", backend="gliclass", task="score")
            + _run("org/nli", task="score", options={"score_kind": "nli"})
            + _run("org/mlm", task="score", options={"score_kind": "masked_lm"})
            + _run("org/own", prompt="mine.txt"))
    data = _plan(_project(tmp_path, runs, bench), "--languages", "en")
    digest = {run: hashlib.sha256((bench / name).read_bytes()).hexdigest() for run, name in expected.items()}
    assert data["prompt_sha256"] == digest


@pytest.mark.parametrize("prompt,words", [
    ("missing.txt", ("missing.txt", "prompt file for task 'generate' not found", "run 'org/own': prompt")),
    ("../outside.txt", ("roster.toml", "not a file inside the benchmark folder")),
])
def test_a_run_s_own_prompt_must_be_a_file_in_the_benchmark(tmp_path, prompt, words):
    project = _project(tmp_path, _run("org/own", prompt=prompt))
    refused(kit("plan", cwd=project), *words)


def test_languages_are_selected_in_any_case_as_lrb_reads_them(tmp_path):
    project = _project(tmp_path, _run("org/m"))
    data = _plan(project, "--languages", "EN, Fr")
    assert data["languages"] == ["en", "fr"] and sorted(data["assigned"]) == [["org/m", "en"], ["org/m", "fr"]]


# ------------------------------------------------------------------ kit export lrb


def _kit_checkpoint(results: Path, run: str, task: str, predictions: list[dict], **meta: object) -> Path:
    """A checkpoint as kit writes it (kit's metadata keys, `unparsed` label, score fields), with its log."""
    from kit.results.metrics import compute_metrics
    from kit.results.store import checkpoint_path, write_checkpoint

    path = checkpoint_path(results, run, "en")
    model_id, backend, digests = run.split("@")[0], "transformers-5.17", ("a" * 64, "b" * 64, "c" * 64)
    write_checkpoint(path, {
        "metadata": {"model_id": model_id, "run": run, "language": "en", "task": task, "backend": backend,
                     "options": {}, "model_revision": REV, "batch_size": 16, "dtype": "auto",
                     "decoding": "greedy" if task == "generate" else "score", "max_new_tokens": 64, "seed": 0,
                     "benchmark_sha256": digests[0], "manifest_sha256": digests[1], "prompt_sha256": digests[2],
                     "package_version": "0.1.0", "source_commit": None, "started_at": "2026-11-29T20:00:00Z",
                     "duration_seconds": 1.5, **meta},
        "metrics": compute_metrics(predictions), "predictions": predictions,
        "speed": {"load_seconds": 1.0, "duration_seconds": 1.5},
        "provenance": {"kit_version": "0.1.0", "model": {"id": model_id, "revision": REV},
                       "image": {"backend": backend},
                       "data": dict(zip(("file_sha256", "manifest_sha256", "prompt_sha256"), digests))}})
    return seal(path)


def _generated(item: str, expected: str, predicted: str, mode: str, truncated: bool = False) -> dict:
    return {"item_id": item, "expected": expected, "predicted": predicted, "raw_output": f"{predicted}?",
            "truncated": truncated, "parse_mode": mode}


def _scored(item: str, expected: str, yes: float) -> dict:
    return {"item_id": item, "expected": expected, "predicted": "yes" if yes >= 0.5 else "no",
            "raw_output": repr(yes * 4 - 2), "truncated": False, "parse_mode": "score", "score_yes": yes,
            "score_no": 1 - yes, "native_score": yes * 4 - 2}


@pytest.fixture
def kit_results(tmp_path) -> Path:
    results = tmp_path / "results"
    gen = [_generated("i-001", "yes", "yes", "exact"), _generated("i-002", "no", "unparsed", "none"),
           _generated("i-003", "yes", "unparsed", "truncated", truncated=True), _generated("i-004", "no", "no", "last")]
    _kit_checkpoint(results, "org/model-a", "generate", gen)
    _kit_checkpoint(results, "org/model-a@sglang", "generate", gen[:2])
    _kit_checkpoint(results, "org/rank", "score", [_scored("i-001", "yes", 0.75), _scored("i-002", "no", 0.25)])
    return results


def test_kit_export_lrb_writes_files_lrb_s_loader_reads(kit_results, tmp_path):
    out = tmp_path / "lrb-results"
    r = kit("export", "lrb", str(kit_results), "-o", str(out), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    written = sorted(Path(p).relative_to(out).as_posix() for p in json.loads(r.stdout)["data"]["written"])
    assert written == ["en/org__model-a.json", "en/org__model-a@sglang.json", "en/org__rank.json"]
    for name in written:
        assert lrb.problems(out / name, out) == [], name
    gen = json.loads((out / "en/org__model-a.json").read_text(encoding="utf-8"))
    assert [p["predicted"] for p in gen["predictions"]] == ["yes", None, None, "no"]
    assert [p["parse_mode"] for p in gen["predictions"]] == ["exact", None, None, "last"]
    assert gen["metrics"]["confusion"]["unparsed"] == 2 and gen["metadata"]["source_commit"] == ""
    variant = json.loads((out / "en/org__model-a@sglang.json").read_text(encoding="utf-8"))["metadata"]
    assert variant["run_id"] == "org/model-a@sglang" and variant["model_id"] == "org/model-a"
    score = json.loads((out / "en/org__rank.json").read_text(encoding="utf-8"))
    assert score["metadata"]["inference"] == "scoring" and score["metadata"]["decoding"] == "none"
    assert score["predictions"][0]["raw_output"] == "no=0.250000 yes=0.750000 native=1.000000"
    r = kit("verify", str(out), cwd=tmp_path)   # and kit reads them back as lrb files
    assert r.returncode == 0 and "3 verified, 0 failed" in r.stdout, r.stdout


def test_kit_export_lrb_writes_nothing_when_a_checkpoint_is_invalid(kit_results, tmp_path):
    bad = kit_results / "en" / "org__rank.json"
    data = json.loads(bad.read_text(encoding="utf-8"))
    data["metrics"]["accuracy"] = 0.5
    bad.write_text(json.dumps(data), encoding="utf-8")
    r = kit("export", "lrb", str(kit_results), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 1 and f"FAIL  {bad}: metrics do not recompute" in r.stdout and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_kit_export_lrb_refuses_an_output_inside_the_results(kit_results, tmp_path):
    refused(kit("export", "lrb", str(kit_results), "-o", str(kit_results / "lrb"), cwd=tmp_path),
            "overlaps the input")


def test_the_checkpoint_format_no_longer_claims_lrb_s_tools_read_kit_files():
    text = (Path(__file__).parents[2] / "docs" / "checkpoint-format.md").read_text(encoding="utf-8")
    assert "so lrb tools still read it" not in text and "kit export lrb" in text


def test_the_lrb_folder_s_prompt_files_are_kept_apart(tmp_path, lrb_dir):
    """On lrb's real data folder: each shipped prompt goes to its kind; it ships no prompt.txt, so a
    generate run is refused rather than given kit's prompt."""
    bench = tmp_path / "data"
    shutil.copytree(lrb_dir / "data", bench)
    runs = _run("org/gl", backend="gliclass", task="score") + _run("org/mlm", task="score",
                                                                   options={"score_kind": "masked_lm"})
    data = _plan(_project(tmp_path, runs, bench), "--languages", "en")
    assert data["prompt_sha256"] == {"org/gl": "49764c11da72cf1c8a72e1b7ba4824516004cc2e4f9413c2f03f9bfd31dae209",
                                     "org/mlm": "7f30288398e5bd24884c413e2a12b15c147cdf8bf8cb563d5e9c0bb32c2ae9a4"}
    _project(tmp_path, _run("org/gen"), bench)
    refused(kit("plan", "--languages", "en", cwd=tmp_path), "no prompt for run 'org/gen' (generative)",
            "add prompt.txt")
