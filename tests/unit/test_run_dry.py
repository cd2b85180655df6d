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


SHORT_WALLTIME_SITE = """
[site.mesonet]
scheduler = "slurm"
frontend = "mesonet.example"
runtime = "host"
python = "/opt/kit/bin/python"
root = "/home/u/kit"
results = "/home/u/kit/results"
walltime = "2:00"
"""


def test_a_walltime_under_ten_minutes_is_a_warning_in_run_and_plan(tmp_path):
    from kit.demo.dataset import write_demo_benchmark

    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text('benchmark = "data"\n[[run]]\nmodel = "org/m-1B"\n'
                                          'revision = "0123456789abcdef0123456789abcdef01234567"\n'
                                          'backend = "transformers-5.17"\n')
    (tmp_path / "sites.toml").write_text(SHORT_WALLTIME_SITE)
    note = "kit: warning: site mesonet: walltime '2:00' is 2 minutes in Slurm's grammar (M:S); write 2:00:00 for 2 hours"
    env = {"PATH": "/usr/bin:/bin", "KIT_NOW": "2026-12-05T10:00"}
    for args in (["run", "--site", "mesonet", "--dry-run"], ["plan", "--site", "mesonet"]):
        r = subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert note in r.stderr.splitlines(), (args, r.stderr)
        if args[0] == "run":
            assert r.returncode == 0 and "#SBATCH --time=0:02:00" in r.stdout, r.stderr   # a warning, not an error
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "mesonet", "--dry-run", "--walltime", "3"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "kit: warning: site mesonet (--walltime): walltime '3' is 3 minutes" in r.stderr
    assert "walltime '2:00'" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "mesonet", "--dry-run", "--walltime", "2:00:00"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "walltime '" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "mesonet", "--dry-run", "--walltime", " "],
                       capture_output=True, text=True, cwd=tmp_path, env=env)   # blank: never the site's in silence
    assert r.returncode == 2 and r.stderr.strip() == ("kit: error: --walltime ' ' is empty; fix: give a walltime "
                                                      "(2:00:00, 90m, auto), or leave the option out for the site's own")
