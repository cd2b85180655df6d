"""A site's job is resolved once (kit.launch.siteplan): its folders, the image for its runtime, the
request; the script and the submit command are rendered from that object, and `kit run --dry-run`
shows which image each job uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.config.project import load_project
from kit.config.sites import Site
from kit.demo.dataset import write_demo_benchmark
from kit.errors import ConfigError, ImageError
from kit.launch.runtimes.base import KNOWN_RUNTIMES
from kit.launch.schedulers.base import KNOWN_SCHEDULERS
from kit.launch.site import load_site, resolve_site
from kit.launch.siteplan import NOT_BUILT, JobGroup, SubmitOptions, build_site_plan, resolve_image
from kit.plan import Pair, plan_text
from sites import plan_kit_run

REV = "0123456789abcdef0123456789abcdef01234567"
LOCK = {"kit_images_lock_version": 1, "images": {"transformers-5.17": {
    "backend": "transformers-5.17", "tag": "kit/transformers-5.17:abc", "image_id": "sha256:" + "a" * 64,
    "dockerfile_sha256": "b" * 64, "lock_sha256": "c" * 64, "base": "kit/base:bookworm", "kit_version": "0.1.0",
    "built_at": "2026-11-29T00:00:00Z",
    "artifacts": {"sif": {"file": "kit-t-aaaaaaaaaaaa.sif", "sha256": "d" * 64}}}}}
SITES = '''
[site.box]
scheduler = "slurm"
runtime = "{runtime}"
root = "kit-root"
results = "out"
images = "/shared/images"
weights = "hub"
'''


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "data"\n[[run]]\nmodel = "org/m-1B"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n'
        'languages = ["en", "fr"]\n')
    (tmp_path / "images.lock.json").write_text(json.dumps(LOCK))
    return tmp_path


def test_a_site_is_resolved_once_with_its_folders_records_and_the_checkpoints_kit_reads_here():
    local = resolve_site(Site(name="l", scheduler="slurm", root="kit", results="/abs/out", weights="hub"), Path("/cfg"))
    paths = local.paths
    assert (paths.root, paths.results, paths.weights) == (Path("/cfg/kit"), Path("/abs/out"), Path("/cfg/hub"))
    assert paths.plan_file("abc") == Path("/cfg/kit/plans/plan-abc.json")
    assert paths.script("job") == Path("/cfg/kit/jobs/job.sh") and paths.shards_file("job") == Path("/cfg/kit/jobs/job.json")
    assert local.checkpoints == Path("/abs/out") and local.state_dir == Path("/cfg/.kit")
    assert local.local_path("token") == Path("/cfg/token") and local.scheduler.name == "slurm"
    remote = resolve_site(Site(name="r", scheduler="oar", frontend="lyon.g5k", root="/home/u/kit", images="/home/u/img",
                               results="/home/u/kit/results"), Path("/cfg"))
    assert remote.paths.root == Path("/home/u/kit") and remote.paths.weights is None
    assert remote.paths.images == Path("/home/u/img")
    # a remote site's checkpoints are read from the local mirror, never from the cluster path
    assert remote.checkpoints == Path("/cfg/.kit/mirror/r/results") and remote.frontend.host == "lyon.g5k"
    grown = remote.with_config(gpu_filter="gpu_mem>=40000")
    assert grown.scheduler is not remote.scheduler and grown.scheduler.site.gpu_filter == "gpu_mem>=40000"
    assert remote.config.gpu_filter != grown.config.gpu_filter and grown.paths == remote.paths


@pytest.mark.parametrize("runtime,ref,artifact", [
    ("docker", "kit/transformers-5.17:abc", "oci"),
    ("apptainer", "/shared/images/kit-t-aaaaaaaaaaaa.sif", "sif"),
])
def test_the_built_image_is_chosen_for_the_sites_runtime(sweep, runtime, ref, artifact):
    site = Site(name="box", scheduler="slurm", runtime=runtime, images="/shared/images")
    chosen = resolve_image(resolve_site(site, sweep), "transformers-5.17", sweep / "images.lock.json")
    assert chosen.ref == ref and chosen.warning is None
    assert chosen.env["KIT_IMAGE_DIGEST"] == "sha256:" + "a" * 64 and chosen.env["KIT_IMAGE_ARTIFACT"] == artifact
    assert ("KIT_IMAGE_SHA256" in chosen.env) == (artifact == "sif")


def test_an_image_not_built_stops_a_run_but_a_dry_run_shows_a_placeholder(sweep):
    site = resolve_site(Site(name="box", scheduler="slurm", runtime="enroot", images="/shared/images"), sweep)
    with pytest.raises(ImageError, match="transformers-5.17"):
        resolve_image(site, "transformers-5.17", sweep / "missing.lock.json")
    chosen = resolve_image(site, "transformers-5.17", sweep / "missing.lock.json", dry_run=True)
    assert chosen.ref == f"/shared/images/kit-transformers-5.17-{NOT_BUILT}.sqsh"
    assert chosen.env["KIT_IMAGE_DIGEST"] == NOT_BUILT and "placeholder" in chosen.warning


def test_the_script_and_command_are_rendered_from_the_one_resolved_plan(sweep):
    (sweep / "sites.toml").write_text(SITES.format(runtime="apptainer"))
    site = load_site(sweep / "sites.toml", "box")
    project = load_project(sweep / "roster.toml", None)
    pairs = (Pair("org/m-1B", "en"), Pair("org/m-1B", "fr"))
    group = JobGroup("transformers-5.17", pairs, 2, plan_text(list(pairs)), "0123456789ab")
    job = build_site_plan(project, site, group, 1, [0, 1], SubmitOptions(walltime="2h",
                                                                                 images_lock=sweep / "images.lock.json"))
    assert job.paths.root == sweep / "kit-root" and job.plan_path == sweep / "kit-root/plans/plan-0123456789ab.json"
    assert job.script_path == sweep / "kit-root/jobs" / f"{job.request.name}.sh"
    assert job.request.name.endswith("-0123456789ab") and job.request.walltime_s == 7200 and job.request.array_size == 2
    assert str(job.plan_path) in job.script_text and str(sweep / "out") in job.script_text
    assert "/shared/images/kit-t-aaaaaaaaaaaa.sif" in job.script_text
    assert job.env["HF_HUB_CACHE"] == str(sweep / "hub") and job.env["KIT_IMAGE_SHA256"] == "d" * 64
    assert str(job.script_path) in job.submit_argv and job.log_dir == sweep / "kit-root/logs"


def test_a_dry_run_says_which_image_each_job_uses(sweep, fake_oar):   # fake_oar: an idle squeue, not this machine's
    (sweep / "sites.toml").write_text(SITES.format(runtime="apptainer"))
    env = {"KIT_IMAGES_LOCK": str(sweep / "images.lock.json"), "PATH": f"{fake_oar.bin}:/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "box", "--dry-run", "--allow-unpinned"],
                       cwd=sweep, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert f"# image: /shared/images/kit-t-aaaaaaaaaaaa.sif (digest sha256:{'a' * 64})" in r.stdout
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "box", "--dry-run", "--json"],
                       cwd=sweep, capture_output=True, text=True, env=env)
    job = json.loads(r.stdout)["data"]["jobs"][0]
    assert (job["image"], job["image_digest"]) == ("/shared/images/kit-t-aaaaaaaaaaaa.sif", "sha256:" + "a" * 64)


def test_memory_and_cores_an_oar_gpu_job_does_not_ask_are_said():
    site = Site(name="g", scheduler="oar", mem_gb=64, cpus_per_task=8, gpus_per_node=2)
    lines = site.ignored_keys()
    assert any(line.startswith("site g: `mem_gb` is read by slurm only") for line in lines), lines
    assert any("`cpus_per_task` is read by oar for jobs without GPUs only" in line for line in lines), lines
    assert Site(name="c", scheduler="oar", cpus_per_task=8, gpus_per_node=0).ignored_keys() == []


def test_a_key_the_sites_runtime_does_not_read_is_said():
    site = Site(name="r", scheduler="slurm", runtime="apptainer", docker_image="kit/vllm:cpu", python="/opt/py")
    assert site.ignored_keys() == ["site r: `docker_image` is read by runtime docker only; this site's runtime, "
                                   "apptainer, ignores it",
                                   "site r: `python` is read by runtime host only; this site's runtime, apptainer, "
                                   "ignores it"]
    enroot = Site(name="e", scheduler="slurm", runtime="enroot", container_command="singularity")
    assert enroot.ignored_keys() == ["site e: `container_command` is read by runtime apptainer only; this site's "
                                     "runtime, enroot, ignores it"]
    assert Site(name="s", scheduler="slurm", runtime="singularity").ignored_keys() == []   # it sets the command
    assert Site(name="h", scheduler="local", runtime="host", python="/opt/py").ignored_keys() == []


def test_a_key_the_sites_scheduler_does_not_read_is_said_not_silently_ignored(sweep, fake_oar):   # fake_oar: an idle squeue
    (sweep / "sites.toml").write_text(
        '[site.slurmy]\nscheduler = "slurm"\nruntime = "host"\nqueue = "gpu"\npartition = "gpu"\n'
        '[site.oary]\nscheduler = "oar"\nruntime = "host"\npartition = "gpu"\nqueue = "default"\n')
    slurmy, oary = load_site(sweep / "sites.toml", "slurmy"), load_site(sweep / "sites.toml", "oary")
    [line] = slurmy.config.ignored_keys()
    assert line.startswith("site slurmy: `queue` is read by oar only") and "write partition = ..." in line
    [line] = oary.config.ignored_keys()
    assert line.startswith("site oary: `partition` is read by slurm only") and "gpu_filter" in line
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "slurmy", "--dry-run"], cwd=sweep,
                       capture_output=True, text=True, env={**os.environ, "KIT_IMAGES_LOCK": str(sweep / "images.lock.json")})
    assert "kit: warning: site slurmy: `queue` is read by oar only" in r.stderr, r.stderr


@pytest.mark.parametrize("scheduler", KNOWN_SCHEDULERS)
@pytest.mark.parametrize("runtime", KNOWN_RUNTIMES)
def test_every_scheduler_and_runtime_pair_plans_a_valid_script_or_is_refused_by_name(sweep, scheduler, runtime,
                                                                                    fake_oar):
    from pydantic import ValidationError

    try:
        site = Site(name="s", scheduler=scheduler, runtime=runtime, images="/shared/images", gpus_per_node=1,
                    gpu_memory_gib=80, **({"python": "/venv/bin/python"} if runtime == "host" else {}))
    except ValidationError as exc:   # refused as the sites file is read (a ConfigError naming file and line there)
        assert (runtime, scheduler != "slurm") == ("pyxis", True) and "runs only under Slurm" in str(exc), str(exc)
        return
    try:
        plan = plan_kit_run(sweep, ["s"], sites=[site], images_lock=sweep / "images.lock.json").plan
    except ConfigError as exc:      # a pair that cannot work (pyxis is a Slurm plugin) is refused, naming it
        assert runtime in exc.one_line() or scheduler in exc.one_line(), exc.one_line()
        return
    [job] = plan.sites
    if runtime in ("pyxis", "enroot"):    # the lock's image has a SIF only: the dry run says how to make the sqsh
        assert any("kit images convert transformers-5.17 --to sqsh" in w for w in plan.warnings), plan.warnings
    r = subprocess.run(["bash", "-n"], input=job.script_text, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    assert job.submit_argv and str(job.script_path) in " ".join(job.submit_argv) + job.script_text


def test_a_language_file_a_job_would_fail_on_is_refused_before_anything_is_submitted(sweep, fake_oar):
    """kit run reads every language file of its pending pairs first: a file that matches its pin but
    cannot be read (here an empty sentence) is one line naming it, not a job that fails on its node."""
    import hashlib

    from kit.config.dataset import whole_set_sha256

    (sweep / "sites.toml").write_text(SITES.format(runtime="apptainer"))
    path = sweep / "data" / "translations" / "en" / "v3-final-en.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    row = lines[1].rstrip("\n").split(",")
    row[header.index("sentence")] = ""
    lines[1] = ",".join(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    manifest = sweep / "data" / "translations" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["files"]["en"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    data["whole_set_sha256"] = whole_set_sha256({lang: f["sha256"] for lang, f in data["files"].items()})
    manifest.write_text(json.dumps(data), encoding="utf-8")
    env = {"KIT_IMAGES_LOCK": str(sweep / "images.lock.json"), "PATH": f"{fake_oar.bin}:/usr/bin:/bin",
           **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "box", "--dry-run", "--allow-unpinned"],
                       cwd=sweep, capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "v3-final-en.csv: row 1 (line 2) has an empty sentence" in r.stderr, r.stderr
