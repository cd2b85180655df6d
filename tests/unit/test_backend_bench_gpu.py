"""bench/gpu/transformers_cuda.py, the prepared GPU check, on its CPU fallback path (no CUDA here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu" / "transformers_cuda.py"
# The GPU machine has torch and transformers but not pydantic: the bench must not need it.
NO_PYDANTIC = "import sys, runpy; sys.modules['pydantic'] = None; sys.argv = sys.argv[1:]; " \
              "runpy.run_path(sys.argv[0], run_name='__main__')"


def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", NO_PYDANTIC, str(SCRIPT), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_cpu_fallback_records_throughput_and_says_why_memory_is_null(tmp_path):
    out = tmp_path / "bench.json"
    r = _bench(tmp_path, "--prompts", "6", "--batch-size", "3", "--max-new-tokens", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(out.read_text())
    assert json.loads(r.stdout.strip().splitlines()[-1]) == result
    assert (result["device"], result["dtype"], result["prompts"], result["batch_size"]) == ("cpu", "float32", 6, 3)
    assert 0 < result["generated_tokens"] <= 6 * 4 and result["output_tokens_per_second"] > 0
    assert result["peak_gpu_memory_bytes"] is None and result["gpu_name"] is None
    assert result["unknown"] == {"peak_gpu_memory_bytes": "no CUDA device visible: ran on CPU"}
    assert result["versions"]["torch"] and result["versions"]["transformers"]


def test_require_cuda_refuses_to_fall_back(tmp_path):
    r = _bench(tmp_path, "--require-cuda", "--prompts", "1")
    assert r.returncode == 3 and "no CUDA device visible" in r.stderr


def test_run_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(REPO / "bench" / "gpu" / "run.sh")], check=True)


def test_real_architecture_dry_run_goes_through_kit_shard_and_reports_the_speed_block(tmp_path):
    """bench/gpu/real_arch.py at its tiny scale on CPU: a Qwen3-shaped model through kit shard on a
    language of 300 rows; the figures come from the checkpoint, and --require-cuda refuses a CPU run."""
    out = tmp_path / "dry.json"
    argv = [sys.executable, str(REPO / "bench" / "gpu" / "real_arch.py"), "--scale", "tiny", "--max-new-tokens", "2",
            "--work", str(tmp_path / "work"), "--out", str(out)]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    facts = json.loads(out.read_text())
    assert facts["rows"] == 300 and facts["params"] == 9_798_016          # a Qwen3 decoder of TINY's shape
    assert facts["speed"]["generated_tokens"] <= 300 * 2 and facts["items_per_second"] > 0
    assert "peak_gpu_memory_bytes" not in facts["speed"]                  # CPU: no GPU figure is made up
    assert facts["seed_per_language_gpu_seconds"]["LFM2.5-2.6B@sglang"] == {"median": 492, "max": 606}
    assert "300 rows" in r.stdout and "peak GPU memory none (not on a GPU)" in r.stdout
    again = subprocess.run(argv + ["--require-cuda"], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 1 and "did not run on a CUDA device" in again.stderr
