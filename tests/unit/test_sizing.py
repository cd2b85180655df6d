"""GPU sizing (kit/sizing.py) and the snapshot facts it reads (kit/weights/facts.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from kit.errors import ConfigError
from kit.sizing import GIB, MEMORY_MARGIN, MIB, ModelSize, SiteGpus, params_from_name, size_job, weight_bytes
from kit.weights.facts import read_model_facts


def model(gib: float | None, heads: int | None = 64, kv: int | None = 8, params: int | None = None) -> ModelSize:
    return ModelSize(None if gib is None else int(gib * GIB), params, heads, kv, "test")


def site(gpus: int = 8, gib: float | None = 80, filter_mib: int | None = None) -> SiteGpus:
    return SiteGpus("s", gpus, gib, filter_mib)


def test_an_engine_that_does_not_shard_gets_one_gpu_whatever_the_node_has():
    assert size_job("r", "transformers-5.17", False, model(8), site(8)).gpus == 1


def test_a_model_too_big_for_one_gpu_of_a_non_sharding_engine_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as exc:
        size_job("org/m-32B", "transformers-5.17", False, model(70), site(8, 80))
    assert "runs on one GPU" in str(exc.value) and "backend vllm" in exc.value.fix


def test_vllm_takes_the_fewest_gpus_that_hold_the_model_and_divide_both_head_counts():
    # 64 GiB x 1.25 = 80 GiB on 40 GiB GPUs: 2 are enough, and 2 divides 64 and 8
    assert size_job("r", "vllm", True, model(64), site(8, 40)).gpus == 2
    # 48 heads and 8 KV heads on 6-GPU nodes of 24 GiB: 80 GiB needs 4, and 4 divides both
    assert size_job("r", "vllm", True, model(64, 48, 8), site(6, 24)).gpus == 4
    # 5 divides neither, 6 divides 48 but is neither a divisor nor a multiple of 8 KV heads: never chosen
    with pytest.raises(ConfigError, match="fits 48 attention heads and 8 KV heads") as exc:
        size_job("r", "vllm", True, model(80, 48, 8), site(6, 20))
    assert "gpus_per_node = 6" in str(exc.value) and "the valid counts there: 1, 2, 4" in str(exc.value)


@pytest.mark.parametrize("heads,kv,gpus,fits", [
    (64, 4, 8, True),     # Qwen3-235B-A22B on 8 GPUs: 8 divides 64, and each of 4 KV heads is on 2 GPUs
    (64, 8, 8, True), (64, 8, 16, True), (64, 4, 6, False), (48, 8, 6, False), (40, 8, 4, True),
    (40, 8, 16, False),   # 16 does not divide 40 attention heads
    (32, 32, 3, False), (28, 4, 7, False),   # 7 divides 28 but neither divides nor is a multiple of 4
])
def test_tensor_parallel_follows_vllm_s_rule(heads, kv, gpus, fits):
    from kit.sizing import tensor_parallel_fits

    assert tensor_parallel_fits(heads, kv, gpus) is fits


def test_a_moe_with_few_kv_heads_shards_over_a_multiple_of_them():
    # 235B in bf16 x 1.25 = 547 GiB over 80 GiB GPUs: 7 needed, 8 fits (64 heads, 4 KV heads replicated)
    big = ModelSize(int(470 * GIB), 235 * 10**9, 64, 4, "test")
    assert size_job("Qwen/Qwen3-235B-A22B", "vllm", True, big, site(8, 80)).gpus == 8


def test_each_site_is_sized_from_its_own_gpus():
    big = model(40)
    assert size_job("r", "vllm", True, big, site(8, 24)).gpus == 4       # 50 GiB over 24 GiB GPUs -> 3 -> 4 divides
    assert size_job("r", "vllm", True, big, site(1, 80)).gpus == 1       # one 80 GiB GPU holds it
    with pytest.raises(ConfigError, match="spans one node of gpus_per_node = 1 GPU"):
        size_job("r", "vllm", True, big, site(1, 24))


def test_an_oar_memory_filter_grows_to_what_the_job_needs_per_gpu():
    size = size_job("r", "transformers-5.17", False, model(24), site(1, 80, filter_mib=23040))
    assert size.gpus == 1 and size.min_gpu_mib == int(24 * GIB * MEMORY_MARGIN / MIB)
    assert size_job("r", "transformers-5.17", False, model(4), site(1, 80, filter_mib=23040)).min_gpu_mib is None


def test_without_any_size_or_memory_figure_the_plan_says_it_did_not_check():
    unknown = size_job("r", "transformers-5.17", False, model(None), site(8, 80))
    assert (unknown.gpus, unknown.checked) == (1, False) and "memory not checked" in unknown.note
    no_memory = size_job("r", "vllm", True, model(None, params=70 * 10**9), site(8, None))
    assert no_memory.gpus == 8 and not no_memory.checked
    assert size_job("r", "vllm", True, model(None, params=7 * 10**9), site(8, None)).gpus == 1


def test_a_cpu_site_asks_for_no_gpu():
    assert size_job("r", "vllm", True, model(64), site(0)).gpus == 0


@pytest.mark.parametrize("name,params", [("Qwen/Qwen3-32B", 32e9), ("LiquidAI/LFM2.5-1.2B-Instruct", 1.2e9),
                                         ("google/gemma-3-27b-it", 27e9), ("org/model-a", None),
                                         ("fastino/gliner2-base-v1", None),
                                         # an MoE's id states its total, then its active parameters
                                         ("Qwen/Qwen3-30B-A3B", 30e9), ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235e9),
                                         ("mistralai/Mixtral-8x7B-Instruct-v0.1", 56e9), ("openai/gpt-oss-120b", 120e9),
                                         ("meta-llama/Llama-3.1-8B", 8e9), ("google/gemma-3n-E4B-it", None)])
def test_the_size_a_model_id_states(name, params):
    assert params_from_name(name) == (int(params) if params else None)


def test_weight_bytes_follow_the_run_dtype_unless_quantized():
    assert weight_bytes(10, 20, "bfloat16", False, "float32") == 40
    assert weight_bytes(10, 20, "bfloat16", False, "auto") == 20
    assert weight_bytes(None, 20, "bfloat16", False, "float32") == 40
    assert weight_bytes(None, 9, None, True, "float32") == 9


def test_facts_come_from_safetensors_headers_and_config(tmp_path):
    save_file({"a": np.zeros((4, 8), dtype=np.float16), "b": np.zeros((3,), dtype=np.float32)},
              str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"c": np.zeros((2, 5), dtype=np.float16)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(
        {"text_config": {"num_attention_heads": 32, "num_key_value_heads": 8}, "torch_dtype": "bfloat16"}))
    facts = read_model_facts(tmp_path)
    assert (facts.params, facts.stored_bytes) == (32 + 3 + 10, 32 * 2 + 3 * 4 + 10 * 2)
    assert (facts.attention_heads, facts.kv_heads, facts.stored_dtype) == (32, 8, "bfloat16")


def test_a_gguf_run_is_sized_by_its_file(tmp_path):
    (tmp_path / "m-Q4_K_M.gguf").write_bytes(b"GGUF" + b"\0" * 996)
    (tmp_path / "m-Q8_0.gguf").write_bytes(b"GGUF" + b"\0" * 1996)
    facts = read_model_facts(tmp_path, "m-Q8_0.gguf")
    assert (facts.stored_bytes, facts.quantized, facts.params) == (2000, True, None)


def test_a_truncated_safetensors_header_is_not_a_crash(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 8 + b"{")
    facts = read_model_facts(tmp_path)
    assert facts.params is None and "unreadable" in facts.source


def test_vllm_sizes_on_the_share_of_each_gpu_it_takes():
    qwen32 = ModelSize(int(61 * GIB), 32 * 10**9, 64, 8, "test")    # 61 GiB x 1.25 = 76 GiB
    assert size_job("Qwen/Qwen3-32B", "vllm", True, qwen32, site(8, 80)).gpus == 1             # all of 80 GiB
    assert size_job("Qwen/Qwen3-32B", "vllm", True, qwen32, site(8, 80), memory_fraction=0.9).gpus == 2
    half = size_job("Qwen/Qwen3-32B", "vllm", True, qwen32, site(8, 80), memory_fraction=0.5)
    assert half.gpus == 2 and "50% of each GPU (gpu_memory_utilization)" in half.note


def test_the_run_s_gpu_memory_utilization_reaches_the_sizing():
    from kit.config.roster import Run
    from kit.launch.jobsize import memory_fraction

    rev = "0" * 40
    assert memory_fraction(Run(model="org/m", revision=rev, backend="vllm")) == 0.9
    assert memory_fraction(Run(model="org/m", revision=rev, backend="vllm",
                               options={"gpu_memory_utilization": 0.5})) == 0.5
    assert memory_fraction(Run(model="org/m", revision=rev, backend="transformers-5.17")) == 1.0
    with pytest.raises(ValueError, match="not a share of the GPU"):
        Run(model="org/m", revision=rev, backend="vllm", options={"gpu_memory_utilization": 50})
