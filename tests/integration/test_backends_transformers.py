"""`kit shard` pairs through the transformers engine for generation and every score kind (this venv):
checkpoints `kit verify` accepts, naming transformers and torch, with the score kind recorded and
scores stored so that thresholds recompute."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.demo.backends import roster_text, write_backend_benchmark
from kit.demo.model import build_tiny_classifier, build_tiny_llama
from kit.demo.scorers import build_tiny_masked_lm, build_tiny_nli
from kit.results.metrics import compute_metrics

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
ANSWERS = {"yes_token": " yes", "no_token": " no"}


def _shard(tmp_path: Path, name: str, prompt: str, runs: list[dict], cache: Path) -> list[Path]:
    bench = write_backend_benchmark(tmp_path / f"bench-{name}", prompt)
    roster = tmp_path / f"roster-{name}.toml"
    roster.write_text(roster_text(runs, bench), encoding="utf-8")
    results = tmp_path / "results"
    r = subprocess.run([sys.executable, "-m", "kit", "shard", "--roster", str(roster), "--results", str(results),
                        "--languages", "en", "--cache-dir", str(cache)], cwd=tmp_path, env=ENV,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return [results / "en" / (run["model"].replace("/", "__") + ".json") for run in runs]


def test_every_score_kind_and_generation_make_verified_pairs(tmp_path):
    cache = tmp_path / "hub"
    llama, clf = build_tiny_llama(cache), build_tiny_classifier(cache)
    nli, mlm = build_tiny_nli(cache), build_tiny_masked_lm(cache)

    def run(model, variant, **settings):
        return {"model": f"{model[0]}@{variant}", "revision": model[1], "backend": "transformers-5.17",
                "dtype": "float32", "batch_size": 8, "max_new_tokens": 4, **settings}

    ckpts = _shard(tmp_path, "rerank", "reranker", [
        run(llama, "generate"),
        run(clf, "classifier", task="score"),
        run(llama, "reranker", task="score", options={"score_kind": "reranker", "prefix": "<|user|>\n",
                                                      "suffix": "\n<|assistant|>\n", **ANSWERS}),
        run(llama, "causal", task="score", options={"score_kind": "causal", "threshold": 0.51, **ANSWERS}),
    ], cache)
    ckpts += _shard(tmp_path, "nli", "zeroshot", [run(nli, "nli", task="score", options={"score_kind": "nli"})], cache)
    ckpts += _shard(tmp_path, "mlm", "masked_lm",
                    [run(mlm, "masked_lm", task="score", options={"score_kind": "masked_lm"})], cache)
    verify = subprocess.run([sys.executable, "-m", "kit", "verify", *map(str, ckpts)], cwd=tmp_path,
                            capture_output=True, text=True)
    assert verify.returncode == 0 and f"{len(ckpts)} verified, 0 failed" in verify.stdout, verify.stdout
    for path in ckpts:
        data = json.loads(path.read_text())
        packages = data["provenance"]["packages"]
        assert packages["torch"] and packages["transformers"] and data["provenance"]["image"]["backend"] == \
            "transformers-5.17"
        if data["metadata"]["task"] == "generate":
            assert data["speed"]["generated_tokens"] > 0
            continue
        kind = data["metadata"]["options"].get("score_kind", "classifier")
        threshold = data["metadata"]["options"].get("threshold", 0.5)
        preds = data["predictions"]
        assert len({p["native_score"] for p in preds}) > 1, kind
        assert [p["predicted"] for p in preds] == ["yes" if p["score_yes"] >= threshold else "no" for p in preds]
        assert compute_metrics(preds) == data["metrics"], kind
