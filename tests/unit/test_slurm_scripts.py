"""Slurm job scripts per runtime: golden files, bash -n and shellcheck, hostile values run
through every renderer with stub srun/apptainer/docker (nothing injected may execute),
and the HF token file rules."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_golden import HOSTILE, assert_golden

from kit.config.sites import Site
from kit.demo.dataset import write_demo_benchmark
from kit.errors import ConfigError
from kit.launch.jobscript import JobScript, render_job_script
from kit.launch.request import JobRequest
from kit.launch.runtimes.base import KNOWN_RUNTIMES, RuntimeContext, get_runtime
from kit.launch.schedulers.slurm import SlurmScheduler
from kit.launch.run import RunRequest, prepare_kit_run

RUNTIMES = KNOWN_RUNTIMES
REV = "0123456789abcdef0123456789abcdef01234567"
ROSTER = f'''benchmark = "data"

[[run]]
model = "org/big-model"
revision = "{REV}"
backend = "vllm"
params = "70B"
options = {{ attention_heads = 64, kv_heads = 8 }}
'''
CLUSTER = '''[site.cluster]
scheduler = "slurm"
frontend = "login.cluster.example"
runtime = "{runtime}"
partition = "gpu"
account = "proj123"
qos = "normal"
gres = "gpu:a100:{{gpus}}"
gpus_per_node = 4
gpu_memory_gib = 80
cpus_per_task = 8
mem_per_gpu_gb = 64
walltime = "2:00:00"
setup = ["module load apptainer/1.3"]
root = "/lustre/me/kit"
results = "/lustre/me/kit/results"
images = "/lustre/me/kit-images"
weights = "/lustre/me/hf-hub"
scratch = "/tmp"
hf_token_file = "/home/me/.config/kit/hf_token"
python = "/opt/kit/.venv/bin/python"
docker_image = "kit/vllm:cpu"
'''
LOCK = {"kit_images_lock_version": 1, "images": {"vllm": {
    "backend": "vllm", "tag": "kit/vllm:abc", "image_id": "sha256:" + "a" * 64,
    "dockerfile_sha256": "b" * 64, "lock_sha256": "c" * 64, "base": "kit/base:bookworm", "kit_version": "0.1.0",
    "built_at": "2026-11-29T00:00:00Z",
    "artifacts": {"sif": {"file": "kit-vllm-aaaaaaaaaaaa.sif", "sha256": "d" * 64},
                  "sqsh": {"file": "kit-vllm-aaaaaaaaaaaa.sqsh", "sha256": "e" * 64}}}}}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    write_demo_benchmark(root / "data")
    (root / "roster.toml").write_text(ROSTER)
    (root / "images.lock.json").write_text(json.dumps(LOCK))
    return root


def cluster_script(sweep: Path, runtime: str) -> str:
    """What `kit run --site cluster --array 2 --dry-run` prints as the job script, for one runtime."""
    sites_file = sweep / f"sites-{runtime}.toml"
    sites_file.write_text(CLUSTER.format(runtime=runtime))
    plan = prepare_kit_run(RunRequest(sites_file, ("cluster",), sweep / "roster.toml", array=2,
                                      images_lock=sweep / "images.lock.json", dry_run=True)).plan
    assert len(plan.sites) == 1 and plan.sites[0].gpus == 4
    assert plan.sites[0].submit_argv[:2] == ["sbatch", "--parsable"]
    return plan.sites[0].script_text


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_golden(sweep, runtime):
    assert_golden(cluster_script(sweep, runtime), f"slurm-{runtime}.sh")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_script_is_valid_bash_and_asks_for_what_the_model_needs(sweep, runtime):
    text = cluster_script(sweep, runtime)
    r = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    lines = text.splitlines()
    # the site's setup line runs before the runtime's own lines (the module that provides apptainer first)
    setup = lines.index("module load apptainer/1.3")
    assert setup < next(i for i, x in enumerate(lines) if x.startswith(("test -r", "KIT_UID=", "echo \"kit: job")))
    for line in ("#SBATCH --gres=gpu:a100:4", "#SBATCH --mem-per-gpu=64G", "#SBATCH --array=0-1", "#SBATCH --time=2:00:00",
                 "#SBATCH --export=PATH,HOME,USER,LANG,TZ", "export HF_HUB_OFFLINE=1", "export KIT_GPUS=4",
                 "export SLURM_EXPORT_ENV=ALL"):
        assert line in text.splitlines(), line
    assert "KIT_CACHE=/tmp\"/kit-cache-$KIT_JOB_ID\"" in text.splitlines()
    assert 'export HF_HOME="$KIT_CACHE/hf"' in text and 'rm -rf -- "$KIT_CACHE"' in text


def test_site_setup_lines_of_the_job_script_survive_set_u_and_a_missing_module(sweep, tmp_path):
    lines = cluster_script(sweep, "apptainer").splitlines()
    start, end = lines.index("set +u"), lines.index("set -u")
    fragment = lines[start:end + 1]
    assert "module load apptainer/1.3" in fragment and "  . /etc/profile || true" in fragment
    assert lines.index("set -euo pipefail") < start
    # the generated lines, run by bash with a fake Lmod in place of /etc/profile: `module` reads unset variables
    profile = tmp_path / "profile"
    profile.write_text('module() { echo "module $* ${LMOD_NOT_SET}"; }\nfalse\n')
    text = "\n".join(["set -euo pipefail", *fragment, "echo after setup"]).replace("/etc/profile", str(profile))
    r = subprocess.run(["bash", "-c", text], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout.splitlines() == ["module load apptainer/1.3 ", "after setup"], r.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)")
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_script_passes_shellcheck(sweep, runtime, tmp_path):
    p = tmp_path / "job.sh"
    p.write_text(cluster_script(sweep, runtime))
    r = subprocess.run(["shellcheck", "-S", "warning", str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_pyxis_script_reads_the_squashfs_as_a_file(sweep):
    text = cluster_script(sweep, "pyxis")
    line = next(x for x in text.splitlines() if x.startswith("srun "))
    argv = shlex.split(line.removesuffix(" &").replace('"$KIT_SHARD_INDEX/2"', "0/2"))
    assert "--container-image=/lustre/me/kit-images/kit-vllm-aaaaaaaaaaaa.sqsh" in argv
    assert "--no-container-mount-home" in argv and "--container-workdir=/lustre/me/kit" in argv
    mounts = next(a for a in argv if a.startswith("--container-mounts=")).split("=", 1)[1].split(",")
    # what the job only reads is read-only (weights, inputs); results and scratch are writable,
    # a folder is mounted after the folder holding it, and the token file is not mounted at all
    assert "/lustre/me/hf-hub:/lustre/me/hf-hub:ro" in mounts and "/tmp:/tmp" in mounts
    assert not any("hf_token" in m for m in mounts)
    assert "/lustre/me/kit/results:/lustre/me/kit/results" in mounts
    assert mounts.index("/lustre/me/kit:/lustre/me/kit") < mounts.index("/lustre/me/kit/inputs:/lustre/me/kit/inputs:ro")
    names = next(a for a in argv if a.startswith("--container-env=")).split("=", 1)[1].split(",")
    assert {"HF_HUB_OFFLINE", "HF_HOME", "TRITON_CACHE_DIR", "VLLM_CACHE_ROOT", "HF_TOKEN_PATH", "KIT_SHARD_INDEX"} <= set(names)
    assert argv[argv.index("kit"):][:2] == ["kit", "shard"]


def test_apptainer_runs_as_a_slurm_step_and_docker_sees_the_jobs_gpus(sweep):
    app = cluster_script(sweep, "apptainer")
    assert "\nsrun apptainer exec --nv --containall --cleanenv --no-home --bind " in app
    assert '[ -z "${CUDA_VISIBLE_DEVICES+set}" ] || export APPTAINERENV_CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES}"' in app
    dock = cluster_script(sweep, "docker")
    assert "--gpus all" in dock and "-e CUDA_VISIBLE_DEVICES" in dock


# ----------------------------------------------------------------- hostile values

STUB = "#!/bin/sh\n{ printf '%s\\0' \"$(basename \"$0\")\" \"$@\"; } > \"$KIT_ARGV_OUT\"\n"


def hostile_script(runtime: str, tmp: Path) -> tuple[str, list[str]]:
    """A Slurm job script whose worker argv, image path and folders carry hostile values."""
    # binds may hold anything but ',' and ':', and for enroot and pyxis no blank
    folder = tmp / ("in$(touch${IFS}PWNED4)'q\"dir" if runtime in ("enroot", "pyxis") else "in $(touch PWNED4) 'q\" dir")
    folder.mkdir()
    image = folder / "img `touch PWNED5`.sif"
    image.write_text("")
    site = Site(name="c", scheduler="slurm", runtime=runtime, gpus_per_node=1, python=str(tmp / "py $(touch PWNED6)"))
    ctx = RuntimeContext(("shard", "--results", str(folder), *HOSTILE), (str(folder),), ("KIT_SITE", "HF_HUB_OFFLINE"),
                         str(image), str(folder))
    rt = get_runtime(runtime)(site)
    argv = rt.worker_argv(ctx)
    spec = JobScript(job_name="kit-c", worker_argv=tuple(argv), shard_slots=(0, 1), shard_count=2,
                     env={"KIT_SITE": "c $(touch PWNED7)", "HF_HUB_OFFLINE": "1"}, setup=tuple(rt.setup_lines(ctx)),
                     cache_root=str(folder))
    req = JobRequest(name="kit-c", gpus=1, walltime_s=600, array_size=2)
    return render_job_script(SlurmScheduler(site).job_script(spec, req, "/logs")), argv


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_hostile_values_reach_the_runtime_literally_and_never_execute(runtime, tmp_path):
    text, argv = hostile_script(runtime, tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("srun", "apptainer", "docker", "enroot", Path(argv[0]).name):
        (bin_dir / tool).write_text(STUB)
        (bin_dir / tool).chmod(0o755)
    if runtime == "host":  # the host runtime runs the site's python by absolute path: put the stub there
        shutil.copy(bin_dir / Path(argv[0]).name, argv[0])
    script = tmp_path / "job.sh"
    script.write_text(text)
    out = tmp_path / "argv.bin"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_ID": "77",
           "KIT_ARGV_OUT": str(out), "HOME": str(tmp_path)}
    r = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert not list(tmp_path.rglob("PWNED*")), "an injected command ran"
    got = out.read_bytes().split(b"\0")[:-1]
    expected = [Path(argv[0]).name, *argv[1:], "--shard", "1/2"]
    if runtime == "docker":  # the script fills in the user and group
        expected[expected.index("${KIT_UID}:${KIT_GID}")] = f"{os.getuid()}:{os.getgid()}"
    if runtime == "enroot":  # and enroot's container name, after the job
        expected[expected.index("kit-${KIT_JOB_ID:-$$}")] = "kit-77"
    assert [g.decode() for g in got] == expected


def test_hostile_model_ids_and_languages_are_refused_with_exit_2(sweep, tmp_path):
    for bad in ("org/$(touch PWNED)", "../../etc/passwd", "org/a b", "org/m'"):
        roster = tmp_path / "r.toml"
        roster.write_text(ROSTER.replace('"org/big-model"', json.dumps(bad)).replace('"data"', json.dumps(str(sweep / "data"))))
        r = subprocess.run([sys.executable, "-m", "kit", "plan", "--roster", str(roster)], capture_output=True, text=True,
                           cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "model" in r.stderr, (bad, r.stderr)
    r = subprocess.run([sys.executable, "-m", "kit", "plan", "--roster", str(sweep / "roster.toml"),
                        "--languages", "en,$(touch PWNED)"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "$(touch pwned)" in r.stderr   # named as read: lower-cased, as lrb reads languages
    assert not list(tmp_path.rglob("PWNED*"))


@pytest.mark.parametrize("runtime, path", [("pyxis", "/x/a,b"), ("apptainer", "/x/a,b"), ("docker", "/x/a:b"),
                                           ("enroot", "/x/a:b"), ("enroot", "/x/a b"), ("pyxis", "/x/a b"),
                                           ("pyxis", "/x/a\tb"), ("enroot", "/x/a\nb")])
def test_bind_lists_refuse_paths_with_their_separators(runtime, path):
    """What each runtime's mount list cannot hold: its separators, and for enroot (a mount is two runs of
    non-blanks around ':') and pyxis (each mount an fstab line) any blank."""
    rt = get_runtime(runtime)(Site(name="c", scheduler="slurm", runtime=runtime))
    with pytest.raises(ConfigError, match="cannot bind the path"):
        rt.worker_argv(RuntimeContext(("shard",), (path,), (), "/i.img"))


@pytest.mark.parametrize("runtime", ["apptainer", "docker"])
def test_a_blank_in_a_path_is_bound_where_the_runtime_takes_it(runtime):
    rt = get_runtime(runtime)(Site(name="c", scheduler="slurm", runtime=runtime))
    assert any("/x/a b" in str(arg) for arg in rt.worker_argv(RuntimeContext(("shard",), ("/x/a b",), (), "/i.img")))


def test_pyxis_refuses_a_relative_image_path():
    rt = get_runtime("pyxis")(Site(name="c", scheduler="slurm", runtime="pyxis"))
    with pytest.raises(ConfigError, match="absolute"):
        rt.worker_argv(RuntimeContext(("shard",), (), (), "images/x.sqsh"))


# ----------------------------------------------------------------- the HF token file


def local_site(tmp: Path, token: Path) -> Path:
    sites = tmp / "sites.toml"
    sites.write_text(f'[site.ws]\nscheduler = "slurm"\nruntime = "host"\nroot = "kit"\nresults = "results"\n'
                     f'gpus_per_node = 0\nhf_token_file = "{token}"\n')
    return sites


def test_no_token_reaches_a_job(sweep, tmp_path, fake_oar):   # fake_oar: an idle squeue
    token = tmp_path / "hf_token"
    token.write_text("hf_SECRET_VALUE\n")
    token.chmod(0o600)
    sp = prepare_kit_run(RunRequest(local_site(tmp_path, token), ("ws",), sweep / "roster.toml", languages=("en",),
                                    dry_run=True)).plan.sites[0]
    seen = sp.script_text + " ".join(sp.submit_argv) + json.dumps(sp.env)
    assert "hf_SECRET_VALUE" not in seen and str(token) not in seen and "HF_TOKEN_PATH" not in sp.env


@pytest.mark.parametrize("mode,ok", [(0o600, True), (0o400, True), (0o640, False), (0o604, False)])
def test_the_job_checks_the_token_file_mode_on_the_node(tmp_path, mode, ok):
    token = tmp_path / "hf_token"
    token.write_text("hf_x\n")
    token.chmod(mode)
    spec = JobScript(job_name="j", worker_argv=("true",), shard_slots=(0,), shard_count=1,
                     env={"HF_TOKEN_PATH": str(token)})
    r = subprocess.run(["bash", "-c", render_job_script(spec)], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"]})
    assert (r.returncode == 0) == ok, r.stderr
    if not ok:
        assert r.returncode == 2 and "chmod 600" in r.stderr and "hf_x" not in r.stderr
