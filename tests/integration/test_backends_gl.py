"""The gliner2 and gliclass backends for real, each in its own venv (scripts/backends/gl-venv.sh:
gliner2 on transformers<5, gliclass on transformers 5.17), on tiny local models built there:
deterministic scores, refusals, and a `kit shard` pair whose stored scores recompute under other
thresholds and whose checkpoint `kit verify` accepts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from engines import engine_venv, shard_and_verify

from kit.demo.backends import roster_text, write_backend_benchmark
from kit.results.metrics import compute_metrics

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# engine -> builder, pinned revision of its tiny model, venv, packages its checkpoints must name
ENGINES = {
    "gliner2": ("build_tiny_gliner2", "7c810c6184e4a7c936f111ab8818a0dba9a5bebb", ".venv-gliner2",
                {"gliner2": "2.1.0", "transformers": "4.57.6"}),
    "gliclass": ("build_tiny_gliclass", "56b271336b3750d368c2b3de0354e810483bb266", ".venv-gliclass",
                 {"gliclass": "0.1.21", "transformers": "5.17.0"}),
}
TEXTS = [
    "TARGET SENTENCE: The village is surrounded by vineyards.\n\nHYPOTHESIS: It is about land use.",
    "TARGET SENTENCE: The mayor was elected in 1998.\n\nHYPOTHESIS: It is about land use.",
    "TARGET SENTENCE: A dense pine forest covers the hills.\n\nHYPOTHESIS: It is about land use.",
]


def _py(python: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module", params=list(ENGINES))
def engine(request, tmp_path_factory) -> dict:
    """The engine's venv and its tiny model, built twice in two processes (the revision must agree)."""
    name = request.param
    builder, pinned, venv, packages = ENGINES[name]
    python = engine_venv("gl-venv.sh", venv, name)
    cache = tmp_path_factory.mktemp(f"hub-{name}")
    code = f"import json, sys; from kit.demo.gl import {builder}; print(json.dumps({builder}(sys.argv[1])))"
    built = []
    for where in (cache, tmp_path_factory.mktemp(f"hub-{name}-again")):
        r = _py(python, "-c", code, str(where))
        assert r.returncode == 0, r.stderr[-3000:]
        built.append(tuple(json.loads(r.stdout.strip().splitlines()[-1])))
    assert built[0] == built[1] and built[0][1] == pinned, built
    return {"name": name, "python": python, "cache": cache, "model": built[0], "packages": packages}


def _probe(engine: dict, *texts: str, **options) -> subprocess.CompletedProcess:
    repo_id, revision = engine["model"]
    return _py(engine["python"], "-m", "kit.worker.backends.probe", "--backend", engine["name"], "--task", "score",
               "--model", repo_id, "--revision", revision, "--cache-dir", str(engine["cache"]), "--batch-size", "2",
               "--options", json.dumps(options), *[a for t in texts for a in ("--input", t)])


def test_scores_are_deterministic_and_normalised(engine):
    runs = []
    for _ in range(2):
        r = _probe(engine, *TEXTS)
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0]["outputs"] == runs[1]["outputs"]
    scores = runs[0]["outputs"]
    assert len(scores) == len(TEXTS) and len({s["yes"] for s in scores}) == len(TEXTS)
    for s in scores:
        assert 0 < s["yes"] < 1 and s["yes"] + s["no"] == pytest.approx(1.0, abs=1e-12) and s["native"] == s["yes"]
    for package, version in engine["packages"].items():
        assert runs[0]["versions"][package] == version


def test_overlong_input_is_refused_not_truncated(engine):
    r = _probe(engine, TEXTS[0], "TARGET SENTENCE: " + "forest " * 700 + "\nHYPOTHESIS: It is about land use.")
    assert r.returncode == 2 and "input 1 of this batch" in r.stderr and "kit never truncates" in r.stderr


def test_bad_settings_are_config_errors(engine):
    if engine["name"] == "gliner2":
        r = _probe(engine, TEXTS[0], labels=["only one"])
        assert r.returncode == 2 and "must be two different labels" in r.stderr
    else:
        r = _probe(engine, "TARGET SENTENCE: no hypothesis here")
        assert r.returncode == 2 and "options.hypothesis" in r.stderr
        fixed = _probe(engine, "TARGET SENTENCE: Wheat.", label="It is about land use.")
        split = _probe(engine, "TARGET SENTENCE: Wheat.\nHYPOTHESIS: It is about land use.")
        assert fixed.returncode == split.returncode == 0
        assert json.loads(fixed.stdout.splitlines()[-1])["outputs"] == json.loads(split.stdout.splitlines()[-1])["outputs"]


def test_kit_shard_pair_is_verified_and_thresholds_recompute(engine, tmp_path):
    bench = write_backend_benchmark(tmp_path / "bench", "zeroshot")
    repo_id, revision = engine["model"]
    run = {"model": repo_id, "revision": revision, "backend": engine["name"], "task": "score", "batch_size": 8,
           "max_new_tokens": 1, "options": {"threshold": 0.5}}
    (tmp_path / "roster.toml").write_text(roster_text([run], bench), encoding="utf-8")
    data = shard_and_verify(engine["python"], tmp_path, "de", engine["cache"], ENV)
    prov = data["provenance"]
    assert prov["image"]["backend"] == engine["name"]
    assert all(prov["packages"][p] == v for p, v in engine["packages"].items())
    preds = data["predictions"]
    assert all(p["parse_mode"] == "score" and p["score_yes"] + p["score_no"] == pytest.approx(1.0) for p in preds)
    assert [p["predicted"] for p in preds] == ["yes" if p["score_yes"] >= 0.5 else "no" for p in preds]
    assert compute_metrics(preds) == data["metrics"]
    median = sorted(p["score_yes"] for p in preds)[len(preds) // 2]
    again = [{**p, "predicted": "yes" if p["score_yes"] >= median else "no"} for p in preds]
    assert {p["predicted"] for p in again} == {"yes", "no"}  # another threshold, recomputed without a rerun
    assert compute_metrics(again)["n_items"] == len(preds)
