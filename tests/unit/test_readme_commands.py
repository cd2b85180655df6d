"""Every command in README.md's ```bash blocks runs as written from a clone, unless it is in SKIP with
the reason it cannot run here (a real cluster, GPU, Docker, the Hub, or a slow tier that runs it)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kit.demo.dataset import demo_files

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

CLUSTER = "submits to, or asks, a real cluster over ssh"
IMAGES_AT_A_SITE = ("asks a cluster over ssh: tests/integration/test_images_at_a_site.py runs this block with a site "
                    "lyon that is the local Slurm behind the local ssh frontend")
SKIP = {
    "make demo": "slow (about a minute); tests/e2e/test_demo.py runs `kit demo`",
    "make test": "the whole suite itself",
    "make base-image": "needs Docker and debootstrap (integration tier: tests/integration/test_images.py)",
    "make image-transformers-5.17-cpu": "needs Docker (integration tier)",
    "make sif-transformers-5.17 sqsh-transformers-5.17 verify-transformers-5.17": "needs Docker, Apptainer and Enroot (integration tier)",
    "kit weights stage --model LiquidAI/LFM2.5-2.6B": "downloads from the Hub (tests/integration/test_weights_hub.py uses a local hub)",
    "kit weights push --site nancy --model LiquidAI/LFM2.5-2.6B": CLUSTER,
    "kit run --site lyon --model LiquidAI/LFM2.5-2.6B --dry-run": IMAGES_AT_A_SITE,
    "kit images push --site lyon": IMAGES_AT_A_SITE,
    "kit images status --site lyon": IMAGES_AT_A_SITE,
    "kit run --site lyon --model LiquidAI/LFM2.5-2.6B": IMAGES_AT_A_SITE,
    "kit images prune --site lyon": IMAGES_AT_A_SITE,
    "kit weights verify [--site nancy]": "needs staged weights (tests/e2e/test_weights_e2e.py)",
    "kit run --site cluster --model LiquidAI/LFM2.5-2.6B --array 4": CLUSTER,
    "kit status --site cluster --model LiquidAI/LFM2.5-2.6B": CLUSTER,
    "kit cancel --site cluster --model LiquidAI/LFM2.5-2.6B --dry-run": CLUSTER + " (squeue, to find the live jobs)",
    "kit run --site nancy --model LiquidAI/LFM2.5-2.6B --array 85 --walltime 1:30": CLUSTER,
    "kit run --sites nancy,grenoble --model LiquidAI/LFM2.5-2.6B": CLUSTER,
    "kit status --all-sites --model LiquidAI/LFM2.5-2.6B": CLUSTER,
    "kit pull --site nancy --to results-nancy": CLUSTER,
    "kit demo": "slow (about a minute); tests/e2e/test_demo.py runs it, then this block's release and publish",
    "kit release kit-demo/results -o kit-demo/release --roster kit-demo/roster.toml": "needs `kit demo`'s results: tests/e2e/test_demo.py",
    "kit publish me/kit-demo-results kit-demo/release --dry-run": "needs `kit demo`'s results: tests/e2e/test_demo.py",
    "kit compare kit-demo/tiny-llama kit-demo/tiny-reranker --results kit-demo/results --roster kit-demo/roster.toml "
    "--html kit-demo/compare.html":
        "needs `kit demo`'s results: tests/e2e/test_demo.py",
    "kit keys init": "makes a key in the user's config folder: tests/e2e/test_demo.py runs the block with KIT_KEYS_DIR",
    "kit sign kit-demo/results": "needs `kit demo`'s results: tests/e2e/test_demo.py",
    "kit demo --drift": "slow (the demo, then a rerun per result and setup); tests/e2e/test_demo.py runs this block",
    "kit reproduce kit-demo/results/fr/kit-demo__tiny-llama.json --as bfloat16 -o kit-demo/reproduce-drift":
        "needs `kit demo`'s results: tests/e2e/test_demo.py",
    "kit keys export > kit-demo/my-key.pub.json": "needs `kit keys init`: tests/e2e/test_demo.py",
    "kit verify kit-demo/results --trusted-keys kit-demo/my-key.pub.json": "needs `kit demo`'s results: tests/e2e/test_demo.py",
}
MUST_RUN = (
    "kit run --site lyon --model LiquidAI/LFM2.5-2.6B --array 85 --dry-run",
    "kit run --site cluster --model LiquidAI/LFM2.5-2.6B --array 4 --dry-run",
)


def bash_blocks(text: str) -> list[list[str]]:
    """The command lines of each ```bash block (continuation lines joined, blank lines dropped)."""
    blocks = []
    for body in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        lines, current = [], ""
        for line in body.splitlines():
            current += line.rstrip()
            if current.endswith("\\"):
                current = current[:-1] + " "
                continue
            if current.strip():
                lines.append(current.strip())
            current = ""
        blocks.append(lines)
    return blocks


def command_key(line: str) -> str:
    """The command without its trailing comment, words single-spaced (how SKIP names it)."""
    return " ".join(shlex.split(line, comments=True)) if "[" not in line else line.split("  #")[0].strip()


def runnable() -> list[tuple[str, str]]:
    """(exports of its block so far, command) for every command not skipped."""
    out = []
    for block in bash_blocks(README.read_text(encoding="utf-8")):
        exports: list[str] = []
        for line in block:
            if line.startswith("export "):
                exports.append(line)
            elif command_key(line) not in SKIP:
                out.append(("\n".join(exports), line))
    return out


def test_every_readme_command_is_run_or_skipped_for_a_reason():
    keys = {command_key(line) for block in bash_blocks(README.read_text(encoding="utf-8")) for line in block
            if not line.startswith("export ")}
    assert set(SKIP) <= keys, f"SKIP names commands no longer in README.md: {sorted(set(SKIP) - keys)}"
    ran = {command_key(cmd) for _exports, cmd in runnable()}
    assert set(MUST_RUN) <= ran
    assert all(reason for reason in SKIP.values())


@pytest.mark.parametrize("exports,command", runnable(), ids=lambda v: command_key(v)[:60] if v else "-")
def test_readme_command_runs_from_a_clone(exports, command, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", KIT_NOW="2026-12-05T12:00",
               HOME=str(tmp_path), HF_HUB_OFFLINE="1")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{exports}\n{command}"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{command}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def test_examples_data_is_the_demo_benchmark():
    """examples/roster.toml's benchmark is kit's demo benchmark, byte for byte."""
    for rel, data in demo_files().items():
        assert (REPO / "examples" / "data" / rel).read_bytes() == data, rel
