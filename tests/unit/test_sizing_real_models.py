"""GPU sizing on the models people run today, read as kit reads a staged snapshot: each model's
published config.json and safetensors headers with its tensors' real names, dtypes and shapes
(tests/unit/model_shapes.py). Dense bf16, FP8, a 128-expert MoE and an MXFP4 MoE with sliding-window
layers, on an 8 x 80 GiB node at vLLM's default share of each GPU (0.9)."""

from __future__ import annotations

import pytest
from model_shapes import gpt_oss_120b, qwen3_32b, qwen3_235b_a22b, r1_distill_qwen_32b

from kit.config.roster import Run
from kit.errors import ConfigError
from kit.launch.jobsize import memory_fraction, model_size
from kit.sizing import GIB, SiteGpus, size_job

REV = "0" * 40
H100X8 = SiteGpus("h100", 8, 80, None)


def vllm_run(model: str, **options) -> Run:
    return Run(model=model, revision=REV, backend="vllm", options=options)


def sized(run: Run, snapshot, site: SiteGpus = H100X8):
    size = model_size(run, snapshot)
    return size, size_job(run.name, run.backend, True, size, site, memory_fraction(run))


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    return {"qwen3-32b": qwen3_32b(root / "qwen3-32b"), "qwen3-32b-fp8": qwen3_32b(root / "qwen3-32b-fp8", fp8=True),
            "qwen3-235b": qwen3_235b_a22b(root / "qwen3-235b"), "gpt-oss-120b": gpt_oss_120b(root / "gpt-oss-120b"),
            "r1-32b": r1_distill_qwen_32b(root / "r1-32b")}


def test_a_dense_32b_in_bf16_with_its_40k_context_takes_two_gpus(snapshots):
    size, job = sized(vllm_run("Qwen/Qwen3-32B"), snapshots["qwen3-32b"])
    assert size.params == 32_762_123_264 and round(size.load_bytes / GIB, 1) == 61.0
    assert size.context == 40960 and round(size.kv.bytes_per_gpu(40960, 1) / GIB, 1) == 10.0
    # 61 + 10 + 3 = 74 GiB > 72 GiB on one GPU; 30.5 + 5 + 3 on each of two
    assert job.gpus == 2 and job.checked
    assert "10.0 GiB of KV cache for 40,960 tokens (max_position_embeddings" in job.note, job.note


def test_a_shorter_max_model_len_leaves_the_dense_32b_on_one_gpu(snapshots):
    _, job = sized(vllm_run("Qwen/Qwen3-32B", max_model_len=8192), snapshots["qwen3-32b"])
    assert job.gpus == 1 and "8,192 tokens (options.max_model_len)" in job.note


def test_the_fp8_release_is_sized_by_the_bytes_it_stores(snapshots):
    size, job = sized(vllm_run("Qwen/Qwen3-32B-FP8"), snapshots["qwen3-32b-fp8"])
    assert round(size.load_bytes / GIB, 1) == 32.0     # e4m3 weights, float32 block scales, bf16 embeddings
    assert job.gpus == 1


def test_gpu_memory_utilization_half_moves_the_dense_32b_to_its_share(snapshots):
    _, job = sized(vllm_run("Qwen/Qwen3-32B", gpu_memory_utilization=0.5), snapshots["qwen3-32b"])
    assert job.gpus == 2 and "on 50% of each 80 GiB GPU" in job.note   # 38.5 GiB per GPU within 40


def test_the_235b_moe_shards_over_eight_gpus_its_four_kv_heads_replicated(snapshots):
    size, job = sized(vllm_run("Qwen/Qwen3-235B-A22B"), snapshots["qwen3-235b"])
    assert size.params == 235_093_634_560                     # the total, not the 22B active
    assert job.gpus == 8
    # each GPU holds one KV head of four: the KV cache is a quarter of the model's, not an eighth
    assert size.kv.bytes_per_gpu(40960, 8) == size.kv.bytes_per_gpu(40960, 1) // 4


def test_gpt_oss_120b_in_mxfp4_fits_one_80_gib_gpu(snapshots):
    size, job = sized(vllm_run("openai/gpt-oss-120b"), snapshots["gpt-oss-120b"])
    assert round(size.load_bytes / 1e9, 1) == 65.2            # about 65 GB, as published
    # half its layers attend to 128 tokens: their cache does not grow with the 131,072-token context
    assert size.kv.window_layers == 18 and size.kv.window == 128
    assert round(size.kv.bytes_per_gpu(131072, 1) / GIB, 2) == 4.5
    assert job.gpus == 1, job.note


def test_open_r1_s_32b_distill_with_its_lighteval_settings_takes_two_gpus(snapshots):
    """Open-R1 evaluates with max_model_length 32768 and gpu_memory_utilization 0.8."""
    _, job = sized(vllm_run("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", max_model_len=32768,
                            gpu_memory_utilization=0.8), snapshots["r1-32b"])
    assert job.gpus == 2, job.note      # 61 + 8 + 3 GiB > 64 GiB; 40 heads and 8 KV heads split over 2


def test_a_context_too_long_for_the_node_is_refused_naming_max_model_len(snapshots):
    with pytest.raises(ConfigError) as exc:
        sized(vllm_run("openai/gpt-oss-120b", max_model_len=131072), snapshots["gpt-oss-120b"],
              SiteGpus("small", 1, 40, None))
    assert "gpus_per_node = 1" in str(exc.value) and "max_model_len" in exc.value.fix


def test_without_a_kv_shape_vllm_keeps_the_margin_rule(snapshots, tmp_path):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(snapshots["qwen3-32b-fp8"], bare)
    (bare / "config.json").write_text('{"num_attention_heads": 64, "num_key_value_heads": 8, '
                                      '"quantization_config": {"quant_method": "fp8"}}')
    size, job = sized(vllm_run("Qwen/Qwen3-32B-FP8"), bare)
    assert size.kv is None and "x 1.25" in job.note and "KV cache's shape is unknown" in job.note


def test_more_than_one_gpu_without_a_head_count_is_refused_naming_it():
    from kit.sizing import KvCache, ModelSize

    headless = ModelSize(int(100 * GIB), None, None, None, "test", KvCache(64, 8, 128), 8192, "options.max_model_len")
    with pytest.raises(ConfigError, match="attention head count is unknown") as exc:
        size_job("org/m", "vllm", True, headless, H100X8, 0.9)
    assert "options.attention_heads" in exc.value.fix
    assert size_job("org/m", "vllm", True, ModelSize(int(10 * GIB), None, None, None, "test", KvCache(64, 8, 128),
                                                     8192, "options.max_model_len"), H100X8, 0.9).gpus == 1
