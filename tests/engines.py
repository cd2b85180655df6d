"""The engines' own virtual environments (scripts/backends/*.sh), set up on demand by tests, and a
`local` site that runs kit jobs with one of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def engine_venv(script: str, venv: str, *args: str) -> Path:
    """Set a backend venv up through its script (idempotent); its python. Skips only off root on Debian."""
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file():
        pytest.skip(f"scripts/backends/{script} installs build tools and engines: needs root on Debian (as in CI)")
    r = subprocess.run(["bash", str(REPO / "scripts" / "backends" / script), *args], cwd=REPO, capture_output=True,
                       text=True, timeout=3000)
    assert r.returncode == 0, f"{script} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return REPO / venv / "bin" / "python"


def local_site(python: Path, weights: Path, forward_env: tuple[str, ...] = ()) -> str:
    """sites.toml text of a `local` site whose host runtime is an engine venv's python."""
    forward = ", ".join(f'"{name}"' for name in forward_env)
    return ('[site.local]\nscheduler = "local"\nruntime = "host"\nroot = "."\nresults = "results"\n'
            f'weights = "{weights}"\npython = "{python}"\ngpus_per_node = 0\nwalltime = "30m"\n'
            f"forward_env = [{forward}]\n")


def shard_and_verify(python: Path, workdir: Path, language: str, cache: Path, env: dict[str, str]) -> dict:
    """`kit shard` of workdir/roster.toml for one language, run by an engine venv's python (results in
    workdir/results), then `kit verify` of the one checkpoint it wrote, here; asserts that both
    succeed and returns the checkpoint."""
    results = workdir / "results"
    r = subprocess.run([str(python), "-m", "kit", "shard", "--roster", str(workdir / "roster.toml"), "--results",
                        str(results), "--languages", language, "--cache-dir", str(cache)],
                       cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    (ckpt,) = results.glob(f"{language}/*.json")
    verify = subprocess.run([sys.executable, "-m", "kit", "verify", str(ckpt)], cwd=workdir, capture_output=True,
                            text=True)
    assert verify.returncode == 0 and "1 verified, 0 failed" in verify.stdout, verify.stdout + verify.stderr
    return json.loads(ckpt.read_text(encoding="utf-8"))


def kit_run_local_pair(workdir: Path, model: str, language: str, env: dict[str, str]) -> dict:
    """`kit run --site local --model MODEL --languages LANG` in `workdir` (roster.toml and sites.toml
    there); asserts that it succeeds and that `kit status` counts the one pair complete, then
    returns the checkpoint it wrote."""
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "local", "--model", model, "--languages", language],
                       cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = subprocess.run([sys.executable, "-m", "kit", "status", "results", "--languages", language, "--json"],
                            cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)["data"]["counts"]
    assert counts["complete"] == 1 and not counts.get("pending") and not counts.get("invalid"), counts
    (ckpt,) = (workdir / "results" / language).glob("*.json")
    return json.loads(ckpt.read_text(encoding="utf-8"))
