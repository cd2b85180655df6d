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
