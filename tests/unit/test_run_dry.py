"""`kit run --dry-run` from a fresh clone: the shipped examples render, images not built yet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_lyon_dry_run_without_built_images(tmp_path, lrb_bench):
    r = subprocess.run(
        [sys.executable, "-m", "kit", "run", "--site", "lyon", "--model", "LiquidAI/LFM2.5-2.6B", "--dry-run",
         "--sites-file", str(REPO / "examples/sites.toml"), "--roster", str(REPO / "examples/roster.toml"),
         "--benchmark", str(lrb_bench), "--languages", "en,fr,ja", "--array", "3"],
        capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "KIT_NOW": "2026-12-05T10:00"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "oarsub -n kit-lyon-LFM2.5-2.6B-" in out   # the job name says what it runs
    assert "-t exotic -q default" in out and "gpu_compute_capability_major>=7 AND gpu_mem>=23040" in out
    assert "-l host=1/gpu=1,walltime=" in out and "--array 3" in out and "OAR.%jobid%.stdout" in out
    assert "apptainer exec --nv --containall --cleanenv" in out
    assert "NOT-BUILT" in out and "no built image for backend 'vllm'" in r.stderr
    assert not list(tmp_path.iterdir())  # a dry run writes nothing
