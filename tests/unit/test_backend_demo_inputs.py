"""kit.demo.backends: benchmarks with each score prompt and rosters for one-pair runs of any backend."""

from __future__ import annotations

import tomllib

import pytest

from kit.config.kinds import load_benchmark
from kit.config.kinds.lrb.prompts import format_prompt
from kit.config.roster import Run, load_roster
from kit.demo.backends import SCORE_PROMPTS, roster_text, toml_value, write_backend_benchmark

HEX = "0123456789abcdef0123456789abcdef01234567"


# a score run of each prompt kind: (backend, options)
KIND_RUNS = {"reranker": ("transformers-5.17", {}), "zeroshot": ("gliner2", {}),
             "masked_lm": ("transformers-5.17", {"score_kind": "masked_lm"})}


@pytest.mark.parametrize("kind", ["reranker", *SCORE_PROMPTS])
def test_benchmark_carries_the_chosen_score_prompt(tmp_path, kind):
    dest = write_backend_benchmark(tmp_path / "bench", kind)
    assert write_backend_benchmark(tmp_path / "bench", kind) == dest  # idempotent
    bench = load_benchmark(dest)
    backend, options = KIND_RUNS[kind]
    run = Run(model="org/m", revision=HEX, backend=backend, task="score", options=options)
    text = format_prompt(bench.prompt_for(run), "Wheat fields.")
    assert "Wheat fields." in text
    assert ("HYPOTHESIS:" in text) == (kind == "zeroshot") and ("[MASK]" in text) == (kind == "masked_lm")
    assert "HYPOTHESIS:" not in bench.prompt("score").text   # the reranker prompt stays
    assert format_prompt(bench.prompt("generate"), "x")  # the generate prompt stays
    with pytest.raises(ValueError, match="unknown score prompt"):
        write_backend_benchmark(tmp_path / "other", "cosine")


def test_roster_text_round_trips_through_the_roster_loader(tmp_path):
    runs = [{"model": "kit-demo/tiny-llama@vllm", "revision": HEX, "backend": "vllm", "max_new_tokens": 8,
             "options": {"enforce_eager": True, "max_num_seqs": 8}},
            {"model": "kit-demo/tiny-reranker", "revision": HEX, "backend": "transformers-5.17", "task": "score",
             "options": {"prefix": 'a "quoted"\nline', "yes_token": ["yes", "oui"]}},
            {"model": "kit-demo/tiny-gliclass", "revision": HEX, "backend": "gliclass", "task": "score",
             "options": {"label": "relevant", "threshold": 0.25}}]
    path = tmp_path / "roster.toml"
    path.write_text(roster_text(runs, tmp_path / "bench"), encoding="utf-8")
    roster, _folder = load_roster(path)
    assert roster.benchmark == str(tmp_path / "bench")
    assert [r.model_dump(include={"model", "backend", "options"}) for r in roster.run] == \
        [{k: r[k] for k in ("model", "backend", "options")} for r in runs]
    assert tomllib.loads("v = " + toml_value(["é", 1, 2.5, False]))["v"] == ["é", 1, 2.5, False]
    with pytest.raises(TypeError):
        toml_value(object())
