"""The GPU request kit writes for Slurm, read by the real sbatch of this machine (scripts/dev/slurm.sh:
node1 has the features a40, l40s and ib): a site's gpu_features become a --constraint for the GPUs the
job's image runs on, joined to the site's own constraint, and `sbatch --test-only` accepts the script kit
wrote; a feature no node has is refused by the same sbatch (so the check can fail). Needs root on Debian."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from services import start_service
from sites import plan_kit_run

from kit.config.sites import Site

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]

if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
    pytest.skip("needs root on Debian: scripts/dev/slurm.sh installs packages and starts daemons",
                allow_module_level=True)


@pytest.fixture
def workspace(tmp_path):
    """A roster of one vLLM run (a torch image: compute capability 7.5 and newer), the lock's folder
    beside the repository's images.toml (no image built: the dry run reads what the build will carry)."""
    from kit.demo.dataset import write_demo_benchmark

    start_service("slurm")
    write_demo_benchmark(tmp_path / "bench")
    (tmp_path / "containers").mkdir()
    shutil.copy(REPO / "containers" / "images.toml", tmp_path / "containers")
    (tmp_path / "roster.toml").write_text(f'benchmark = "bench"\n\n[[run]]\nmodel = "org/m-1B"\nrevision = "{"c" * 40}"\n'
                                          'backend = "vllm"\n')
    return tmp_path


def script_for(workspace: Path, **site) -> Path:
    """The job script kit plans for a Slurm site (partition debug, apptainer), written to a file."""
    site = Site(name="here", scheduler="slurm", runtime="apptainer", partition="debug", gpus_per_node=2,
                root=str(workspace / "slurm"), results=str(workspace / "slurm" / "results"), **site)
    plan = plan_kit_run(workspace, ["here"], sites=[site], languages=("en",),
                        images_lock=workspace / "containers" / "images.lock.json").plan
    (job,) = plan.sites
    path = workspace / "job.sh"
    path.write_text(job.script_text)
    return path


def test_sbatch_accepts_the_constraint_kit_writes_for_the_image_s_gpus(workspace):
    script = script_for(workspace, constraint="ib", gpu_features={"v100": "V100", "a40": "A40", "l40s": "L40S"})
    assert "#SBATCH --constraint=(ib)&(a40|l40s)" in script.read_text().splitlines()
    r = subprocess.run(["sbatch", "--test-only", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "to start at" in r.stderr, r.stderr


def test_sbatch_refuses_a_feature_no_node_has(workspace):
    script = script_for(workspace, gpu_features={"v100": "V100", "h100": "H100"})
    assert "#SBATCH --constraint=h100" in script.read_text().splitlines()
    r = subprocess.run(["sbatch", "--test-only", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "feature" in r.stderr.lower(), r.stderr
