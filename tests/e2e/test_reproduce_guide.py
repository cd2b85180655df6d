"""REPRODUCE.md, followed literally: the host steps (the image steps run in the integration tier)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from guide import HOST_STEPS, IMAGE_STEPS, run_step, sandbox, steps  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_every_block_of_the_guide_is_run_by_a_test():
    names = list(steps())
    assert names, "no `# step:` blocks found in REPRODUCE.md"
    assert len(names) == len(set(names))
    assert set(names) == set(HOST_STEPS) | set(IMAGE_STEPS)


def test_guide_host_steps_in_order(tmp_path_factory, demo_env):
    root, base_env = demo_env
    box = sandbox(tmp_path_factory.mktemp("guide"))
    env = {**base_env, "KIT_NOW": "2026-12-05T10:00"}  # a Saturday: the dry run's policy verdict is stable
    env.pop("VIRTUAL_ENV", None)
    outputs = {}
    for name in HOST_STEPS:
        r = run_step(name, box, env)
        assert r.returncode == 0, f"step {name!r} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        outputs[name] = r.stdout + r.stderr
    assert "status: 6 complete" in outputs["demo"]
    assert "PASS: 6 checkpoints" in outputs["verify"]
    assert "REPRODUCED" in outputs["rerun-host"] and "REPRODUCED" in outputs["against"]
    assert "oarsub -n kit-lyon-" in outputs["cluster"]
    release = box / "kit-demo" / "release"
    assert (release / "report" / "leaderboard.csv").is_file()
    verdict = json.loads((box / "kit-demo/reproduce/reproduce-kit-demo__tiny-llama-en.json").read_text())
    assert verdict["verdict"] == "REPRODUCED"
    assert not os.path.exists(Path(__file__).resolve().parents[2] / "kit-demo-rerun")
