"""A job asks for the GPUs its image runs on (kit.launch.gpu_arch): the OAR filter gains the image's
compute-capability term in Grid'5000's properties, a Slurm site with gpu_features gets a constraint, a
site whose stated GPUs cannot run the image is refused before anything is submitted, and what kit cannot
make sure of is a warning; through `kit run --dry-run --json` with the repository's images.toml."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from inprocess import kit_in_process
from sites import sites_toml

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.gpus import parse_cmake_archs, parse_torch_archs
from kit.launch.gpu_arch import fit_image_gpus

REPO = Path(__file__).resolve().parents[2]
TORCH = parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0")      # the torch images' CUDA 13 code
GGUF = parse_cmake_archs("70;75;80;86;89;90")               # gguf's CUDA 12.8 build
TURING_UP = ("(gpu_compute_capability_major>7 OR (gpu_compute_capability_major=7 AND "
             "gpu_compute_capability>='7.5'))")


def oar(**kw) -> Site:
    return Site(name="g5k", scheduler="oar", gpus_per_node=4, **kw)


def slurm(**kw) -> Site:
    return Site(name="jz", scheduler="slurm", gpus_per_node=4, **kw)


def test_the_grid5000_default_filter_gains_the_torch_images_term():
    fit = fit_image_gpus(oar(), "transformers-5.17", TORCH, 1)
    assert fit.gpu_filter == f"gpu_compute_capability_major>=7 AND gpu_mem>=23040 AND {TURING_UP}"
    assert fit.runs_on == "compute capability 7.5 and newer" and fit.warning is None


def test_gguf_runs_on_every_gpu_the_default_filter_selects():
    fit = fit_image_gpus(oar(), "gguf", GGUF, 1)
    assert fit.gpu_filter is None and "already selects only such GPUs" in fit.asked


def test_a_filter_that_already_asks_for_ampere_is_left_alone():
    fit = fit_image_gpus(oar(gpu_filter="gpu_compute_capability_major>=8 AND gpu_mem>=40000"), "vllm", TORCH, 2)
    assert fit.gpu_filter is None


def test_a_filter_with_or_is_parenthesised_before_the_term():
    fit = fit_image_gpus(oar(gpu_filter="cluster='chuc' OR gpu_mem>=23040"), "vllm", TORCH, 1)
    assert fit.gpu_filter == f"(cluster='chuc' OR gpu_mem>=23040) AND {TURING_UP}"


def test_a_site_of_v100s_is_refused_for_a_torch_image_and_named():
    with pytest.raises(ConfigError) as exc:
        fit_image_gpus(oar(gpu_model=("Tesla V100-SXM2-32GB",)), "transformers-5.17", TORCH, 1)
    assert "Tesla V100-SXM2-32GB (7.0)" in str(exc.value) and "compute capability 7.5 and newer" in str(exc.value)
    assert "gguf" in exc.value.fix
    assert fit_image_gpus(oar(gpu_model=("Tesla V100-SXM2-32GB",)), "gguf", GGUF, 1).warning is None


def test_slurm_features_become_a_constraint_for_the_gpus_that_run_the_image():
    site = slurm(gpu_features={"v100": "V100", "a100": "A100", "h100": "9.0"})
    assert fit_image_gpus(site, "vllm", TORCH, 2).constraint == "(a100|h100)"
    assert fit_image_gpus(site, "gguf", GGUF, 1).constraint is None          # every feature's GPU runs it
    joined = fit_image_gpus(slurm(gpu_features={"v100": "V100", "a100": "A100"}, constraint="ib"), "vllm", TORCH, 1)
    assert joined.constraint == "(ib)&(a100)"
    with pytest.raises(ConfigError, match="cannot run image vllm"):
        fit_image_gpus(slurm(gpu_features={"v100": "V100", "p100": "P100"}), "vllm", TORCH, 1)


def test_what_kit_cannot_ask_slurm_for_is_a_warning():
    mixed = fit_image_gpus(slurm(gpu_model=("V100", "A100-SXM4-80GB")), "vllm", TORCH, 1)
    assert mixed.constraint is None and "V100 (7.0)" in mixed.warning and "gpu_features" in mixed.warning
    unstated = fit_image_gpus(slurm(), "vllm", TORCH, 1)
    assert "states no GPU model" in unstated.warning and "gpu_model" in unstated.warning
    assert fit_image_gpus(slurm(), "gguf", GGUF, 1).warning is None          # runs from Volta on
    assert fit_image_gpus(slurm(gpu_model=("H100",)), "vllm", TORCH, 1).warning is None


def test_cpu_images_and_cpu_jobs_ask_nothing():
    assert fit_image_gpus(oar(), "transformers-5.17", None, 1).gpu_filter is None
    assert fit_image_gpus(oar(gpu_model=("V100",)), "transformers-5.17", TORCH, 0).gpu_filter is None


def test_site_gpu_statements_are_checked_as_written(tmp_path):
    from kit.config.sites import load_sites

    path = tmp_path / "sites.toml"
    path.write_text('[site.jz]\nscheduler = "slurm"\ngpu_compute_capability = 8.0\n'
                    'gpu_features = { a100 = "A100", h100 = 9.0 }\n')
    site = load_sites(path).site["jz"]
    assert site.stated_gpus() == {"8.0": (8, 0), "A100": (8, 0), "9.0": (9, 0)}
    for bad, said in (('gpu_model = "Radeon VII"', "not a GPU kit knows"), ('gpu_compute_capability = "86"', "'86'"),
                      ('gpu_features = { "a 100" = "A100" }', "not a Slurm node feature")):
        path.write_text(f'[site.jz]\nscheduler = "slurm"\n{bad}\n')
        with pytest.raises(ConfigError, match=said):
            load_sites(path)


@pytest.fixture
def project(tmp_path, fake_oar):
    """A workspace whose images lock sits in containers/ beside the repository's images.toml (no image
    built: the dry run reads what the build will carry), a roster of a vLLM and a gguf run; the
    schedulers asked for live jobs are conftest's fakes."""
    from kit.demo.dataset import write_demo_benchmark

    write_demo_benchmark(tmp_path / "bench")
    (tmp_path / "containers").mkdir()
    shutil.copy(REPO / "containers" / "images.toml", tmp_path / "containers" / "images.toml")
    rev = "b" * 40
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "bench"\n\n[[run]]\nmodel = "org/m-1B"\nrevision = "{rev}"\nbackend = "vllm"\n\n'
        f'[[run]]\nmodel = "org/q-1B-GGUF"\nrevision = "{rev}"\nbackend = "gguf"\noptions = {{ gguf_file = "q.gguf" }}\n')
    sites = [Site(name="nancy", scheduler="oar", gpus_per_node=4, weights="hub"),
             Site(name="v100s", scheduler="oar", gpus_per_node=4, gpu_model=("Tesla V100-SXM2-32GB",), weights="hub"),
             Site(name="jz", scheduler="slurm", runtime="apptainer", gpus_per_node=4, weights="hub",
                  gpu_features={"v100": "V100", "a100": "A100-SXM4-80GB"})]
    (tmp_path / "sites.toml").write_text(sites_toml(*sites))
    return tmp_path


def dry_run(root: Path, *args: str):
    return kit_in_process("run", *args, "--dry-run", "--json", "--languages", "en", cwd=root,
                          env={"KIT_NOW": "2026-12-05T20:00", "KIT_IMAGES_LOCK": str(root / "containers" / "images.lock.json")})


def test_the_dry_run_shows_each_job_s_gpu_request_and_its_basis(project):
    r = dry_run(project, "--site", "nancy")
    data = json.loads(r.stdout)["data"]
    jobs = {j["backend"]: j for j in data["jobs"]}
    vllm, gguf = jobs["vllm"], jobs["gguf"]
    assert TURING_UP in vllm["command"][vllm["command"].index("-p") + 1]
    assert vllm["sizing"]["gpu_arch"] == {"image_runs_on": "compute capability 7.5 and newer",
                                          "request": f"-p gained {TURING_UP}"}
    assert gguf["command"][gguf["command"].index("-p") + 1] == "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
    assert gguf["sizing"]["gpu_arch"]["image_runs_on"] == "compute capability 7.0 and newer"


def test_a_site_whose_gpus_cannot_run_the_image_is_refused_before_anything_is_written(project):
    r = dry_run(project, "--site", "v100s", "--model", "org/m-1B")
    assert r.returncode == 2 and "cannot run image vllm" in r.stderr and "Traceback" not in r.stderr
    assert not (project / "oar").exists()
    ok = dry_run(project, "--site", "v100s", "--model", "org/q-1B-GGUF")
    assert ok.returncode == 0, ok.stderr


def test_slurm_gets_the_constraint_in_its_script(project):
    r = dry_run(project, "--site", "jz", "--model", "org/m-1B")
    data = json.loads(r.stdout)["data"]
    script = next(iter(data["scripts"].values()))
    assert "#SBATCH --constraint=a100" in script.splitlines()
    assert data["jobs"][0]["sizing"]["gpu_arch"]["request"] == "--constraint=a100"
