"""`kit plan --site`: the image each run uses at a container site, and a refusal (exit 2, one
line naming the backend and the build command) when a run's backend has no built image for the
site's runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.images.built import Artifact, BuiltImage, ImagesLock, save_lock

REPO = Path(__file__).resolve().parents[2]
REV = "0" * 40


def _image(backend: str, image_id: str, artifacts: dict | None = None) -> BuiltImage:
    return BuiltImage(backend=backend, tag=f"kit/{backend}:test-cpu", image_id=image_id, dockerfile_sha256="d" * 64,
                      lock_sha256="l" * 64, base="kit/base:bookworm", kit_version="0.1.0", built_at="2026-12-01T00:00:00+00:00",
                      variant="cpu", artifacts=artifacts or {})


@pytest.fixture
def project(tmp_path) -> Path:
    from kit.demo.dataset import write_demo_benchmark

    bench = write_demo_benchmark(tmp_path / "data")
    runs = "".join(f'\n[[run]]\nmodel = "kit-test/{b}"\nrevision = "{REV}"\nbackend = "{b}"\ntask = "generate"\n'
                   for b in ("transformers-5.17", "transformers-5.11"))
    (tmp_path / "roster.toml").write_text(f'benchmark = "{bench}"\n{runs}')
    sites = ""
    for name, runtime in (("dock", "docker"), ("appt", "apptainer"), ("here", "host")):
        sites += (f'[site.{name}]\nscheduler = "local"\nruntime = "{runtime}"\nroot = "."\nresults = "results"\n'
                  f'gpus_per_node = 0\nwalltime = "30m"\n')
    (tmp_path / "sites.toml").write_text(sites)
    return tmp_path


def plan(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KIT_IMAGES_LOCK"}
    return subprocess.run([sys.executable, "-m", "kit", "plan", "--images-lock", "images.lock.json", *args], cwd=cwd,
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO)}, timeout=120)


def test_a_backend_without_an_image_is_refused_with_the_build_command(project):
    save_lock(ImagesLock(images={"transformers-5.17": _image("transformers-5.17", "sha256:" + "a" * 64)}),
              project / "images.lock.json")
    r = plan(project, "--site", "dock")
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "backend transformers-5.11 has no built image for site dock's runtime docker" in line
    assert "kit images build transformers-5.11 --variant cpu" in line


def test_each_run_shows_its_image_and_digest(project):
    ids = {"transformers-5.17": "sha256:" + "a" * 64, "transformers-5.11": "sha256:" + "b" * 64}
    save_lock(ImagesLock(images={b: _image(b, i) for b, i in ids.items()}), project / "images.lock.json")
    r = plan(project, "--site", "dock")
    assert r.returncode == 0, r.stderr
    assert "images     site dock (docker): 2 runs" in r.stdout
    for backend, image_id in ids.items():
        assert f"kit-test/{backend}  {backend}  kit/{backend}:test-cpu  {image_id}" in r.stdout
    data = json.loads(plan(project, "--site", "dock", "--json").stdout)["data"]
    assert {i["backend"]: i["digest"] for i in data["images"]} == ids


def test_apptainer_needs_the_sif_and_names_the_conversion(project):
    sif = Artifact(file="kit-transformers-5.17.sif", sha256="c" * 64)
    save_lock(ImagesLock(images={"transformers-5.17": _image("transformers-5.17", "sha256:" + "a" * 64, {"sif": sif}),
                                 "transformers-5.11": _image("transformers-5.11", "sha256:" + "b" * 64)}),
              project / "images.lock.json")
    r = plan(project, "--site", "appt", "--model", "kit-test/transformers-5.11")
    assert r.returncode == 2 and "kit images convert transformers-5.11 --to sif" in r.stderr, r.stderr
    r = plan(project, "--site", "appt", "--model", "kit-test/transformers-5.17")
    assert r.returncode == 0 and "kit-transformers-5.17.sif" in r.stdout, r.stderr


def test_the_host_runtime_needs_no_image(project):
    r = plan(project, "--site", "here")
    assert r.returncode == 0 and "host venv (no image)" in r.stdout, r.stderr


def test_a_dry_run_outside_the_repository_says_the_gpus_are_not_checked(tmp_path):
    """From a folder without containers/images.toml beside the lock, a dry run cannot know the GPUs a
    not-yet-built image runs on: it says so (and how to fix it), never passes the check in silence."""
    import subprocess
    import sys

    sites = tmp_path / "sites.toml"
    sites.write_text('[site.g]\nscheduler = "oar"\nfrontend = "f"\nroot = "/r"\nresults = "/r/res"\nimages = "/r/img"\n'
                     'weights = "/r/hf"\ngpu_model = "V100"\n', encoding="utf-8")
    from kit.demo.dataset import write_demo_benchmark

    data = write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(f'benchmark = "{data.as_posix()}"\n[[run]]\nmodel = "org/m-8B"\n'
                                          f'revision = "{"a" * 40}"\nbackend = "vllm"\n', encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "g", "--dry-run"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "the GPUs image vllm runs on are not checked either: no images.toml beside" in r.stderr, r.stderr
