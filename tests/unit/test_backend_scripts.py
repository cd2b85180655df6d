"""Every shell script of the project's set-up (scripts/**) and the GPU bench wrapper: valid bash, clean
under shellcheck, documented."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "scripts").rglob("*.sh")) + [REPO / "bench" / "gpu" / "run.sh"]
LIBRARIES = {REPO / "scripts" / "dev" / "lib.sh"}   # sourced, not run


def test_the_expected_scripts_exist():
    assert {"gl-venv.sh", "llamacpp-venv.sh", "vllm-venv.sh", "run.sh", "venv.sh", "test.sh", "slurm.sh",
            "oar.sh"} <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_and_explains_itself(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    head = script.read_text(encoding="utf-8").splitlines()
    if script in LIBRARIES:
        assert head[0] == "# shellcheck shell=bash" and head[1].startswith("# ")
    else:
        assert head[0] == "#!/usr/bin/env bash" and head[1].startswith("# ") and "set -euo pipefail" in head


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_passes_shellcheck(script):
    r = subprocess.run(["shellcheck", "-S", "warning", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_unknown_gl_engine_is_refused():
    r = subprocess.run(["bash", str(REPO / "scripts" / "backends" / "gl-venv.sh"), "cosine"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "unknown engine cosine" in r.stderr
