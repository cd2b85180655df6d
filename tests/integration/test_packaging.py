"""The launcher installs with plain Python and no ML libraries, and works there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def launcher_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("launcher") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    r = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return venv


def test_launcher_install_has_no_ml_libraries(launcher_venv):
    code = "import importlib.util as u; print([m for m in ('torch','transformers','numpy','mlperf_logging','docker') if u.find_spec(m)])"
    out = subprocess.run([str(launcher_venv / "bin/python"), "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_launcher_commands_work_without_them(launcher_venv, lrb_dir, tmp_path):
    kit = str(launcher_venv / "bin/kit")
    assert subprocess.run([kit, "--help"], capture_output=True, check=True).returncode == 0
    r = subprocess.run([kit, "plan", "--benchmark", str(lrb_dir / "data"), "--languages", "en,fr,ja", "--json"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["prompts_per_language"] == {"en": 300, "fr": 300, "ja": 300}
    files = sorted(str(p) for p in (lrb_dir / "results").rglob("*.json"))
    r = subprocess.run([kit, "verify", *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_worker_without_its_extra_says_which_extra(launcher_venv, tmp_path):
    from kit.demo.dataset import write_demo_benchmark

    bench = write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "{bench}"\n[[run]]\nmodel = "org/m"\nrevision = "{"a" * 40}"\nbackend = "transformers-5.17"\n')
    r = subprocess.run([str(launcher_venv / "bin/kit"), "shard", "--results", "res", "--languages", "en"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    assert "kit-sweep[worker]" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not (tmp_path / "res" / "en").exists() or not list((tmp_path / "res" / "en").glob("*.json"))


def test_demo_without_the_worker_extra_says_which_extra(launcher_venv, tmp_path):
    r = subprocess.run([str(launcher_venv / "bin/kit"), "demo"], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "KIT_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("kit: error:") == 1
    assert "kit-sweep[worker]" in r.stderr, r.stderr
