"""Job start: from launching a job's command to its first prompt, with kit (the environment is already
there: the host's venv, the Docker image, the SIF) against what it replaces, a per-job environment
sync (a fresh venv, the image's own hashed lock installed offline from the wheelhouse, then import and
load the same model), as the seed's users do on every node.

kit's figure ends at the pair's `run_start` event in its :::MLLOG log (model loaded, data and prompt
digests checked, the first batch next); the anchor's ends when bench/anchors/load_model.py has loaded
the same snapshot. A runtime that is not on this machine (no image built, no apptainer) gets a row
saying so instead of a figure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.tree import REPO

LOCK = REPO / "containers" / "transformers-5.17" / "requirements-cpu.lock"
IMAGE = "kit/transformers-5.17:5.17.0-cpu"
LOAD_MODEL = Path(__file__).resolve().parent / "anchors" / "load_model.py"


@dataclass(frozen=True)
class Start:
    """One runtime's job start in seconds, or why there is none."""

    runtime: str
    seconds: float | None
    note: str = ""


def first_prompt_seconds(argv: list[str], results: Path, env: dict[str, str]) -> float | None:
    """Run a one-pair `kit shard` command writing into `results` (emptied first, and there for a bind
    mount); seconds from launch to its run_start event (None: it failed)."""
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    started = time.time()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"bench: {' '.join(argv[:4])}... exited {proc.returncode}: {proc.stderr[-1500:]}\n")
        return None
    for log in results.glob("*/*.mllog"):
        for line in log.read_text(encoding="utf-8").splitlines():
            if '"run_start"' in line:
                return json.loads(line.split(":::MLLOG ", 1)[1])["time_ms"] / 1000 - started
    return None


def shard_args(roster: Path, results: Path, hub: Path) -> list[str]:
    """kit shard's arguments for the bench's one-pair roster."""
    return ["shard", "--roster", str(roster), "--results", str(results), "--cache-dir", str(hub)]


def best_start(name: str, argv: list[str], results: Path, env: dict[str, str], repeat: int) -> Start:
    """The fastest of `repeat` launches of a one-pair kit shard command (see first_prompt_seconds)."""
    runs = [first_prompt_seconds(argv, results, env) for _ in range(repeat)]
    best = min((r for r in runs if r is not None), default=None)
    return Start(name, best, "" if best is not None else f"{Path(argv[0]).name} failed (its error is above)")


def host_start(roster: Path, folder: Path, hub: Path, env: dict[str, str], repeat: int) -> Start:
    """kit shard in this venv."""
    results = folder / "results-host"
    return best_start("host (this venv)", [sys.executable, "-m", "kit", *shard_args(roster, results, hub)],
                      results, env, repeat)


def docker_start(roster: Path, benchmark: Path, folder: Path, hub: Path, env: dict[str, str], repeat: int) -> Start:
    """kit shard in the transformers-5.17 CPU image, the paths mounted where they are."""
    name = f"Docker ({IMAGE})"
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        return Start(name, None, "image not built here (make image-transformers-5.17-cpu)")
    results = folder / "results-docker"
    mounts = [arg for p in {roster.parent, benchmark, hub, results} for arg in ("-v", f"{p.resolve()}:{p.resolve()}")]
    argv = [docker, "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HF_HUB_OFFLINE=1",
            "-e", "HOME=/tmp", *mounts, "-w", str(results.resolve()), IMAGE,
            "kit", *shard_args(roster.resolve(), results.resolve(), hub.resolve())]
    return best_start(name, argv, results, env, repeat)


def sif_start(roster: Path, benchmark: Path, folder: Path, hub: Path, env: dict[str, str], repeat: int) -> Start:
    """kit shard in the image's SIF (`kit images convert transformers-5.17 --to sif`), where apptainer
    runs on this machine's PATH, as a job runs it: --containall --cleanenv, the paths bound where they are."""
    name = "Apptainer (SIF)"
    apptainer = shutil.which("apptainer")
    if apptainer is None:
        return Start(name, None, "no apptainer on this machine's PATH (here it runs in a helper container)")
    sif = _sif_file()
    if sif is None:
        return Start(name, None, "no SIF recorded for the image (kit images convert transformers-5.17 --to sif)")
    results = folder / "results-sif"
    binds = [arg for p in {roster.parent, benchmark, hub, results} for arg in ("--bind", f"{p.resolve()}:{p.resolve()}")]
    argv = [apptainer, "exec", "--containall", "--cleanenv", "--env", "HF_HUB_OFFLINE=1", *binds, str(sif),
            "kit", *shard_args(roster.resolve(), results.resolve(), hub.resolve())]
    return best_start(name, argv, results, env, repeat)


def _sif_file() -> Path | None:
    """The SIF the lock of built images records for the transformers-5.17 image, if it is on disk."""
    from kit.errors import KitError
    from kit.images.built import DEFAULT_LOCK, load_lock

    lock_path = REPO / os.environ.get("KIT_IMAGES_LOCK", str(DEFAULT_LOCK))
    if not lock_path.is_file():
        return None
    try:
        built = load_lock(lock_path).get("transformers-5.17")
    except KitError:   # an unreadable lock, or one without that image: no SIF to time
        return None
    art = built.artifacts.get("sif")
    sif = REPO / os.environ.get("KIT_IMAGES_DIR", "build/images") / art.file if art else None
    return sif if sif is not None and sif.is_file() else None


def sync_anchor(folder: Path, snapshot: Path, wheelhouse: Path, env: dict[str, str]) -> Start:
    """A fresh venv, the image's lock installed offline from the wheelhouse, then the model loaded."""
    name = "per-job environment sync (fresh venv + lock from local wheels + load)"
    if not wheelhouse.is_dir():
        return Start(name, None, f"no wheelhouse at {wheelhouse} (make image-transformers-5.17-cpu fills it)")
    venv = folder / "sync-venv"
    shutil.rmtree(venv, ignore_errors=True)
    started = time.perf_counter()
    steps = [[sys.executable, "-m", "venv", "--without-pip", str(venv)],
             [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
              "--no-index", "--find-links", str(wheelhouse), "--require-hashes", "--no-deps", "-r", str(LOCK)],
             [str(venv / "bin" / "python"), str(LOAD_MODEL), str(snapshot)]]
    for argv in steps:
        proc = subprocess.run(argv, env={**env, "PIP_CONSTRAINT": "", "PIP_CONFIG_FILE": os.devnull},
                              capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            return Start(name, None, f"{Path(argv[0]).name} {argv[1]} failed: {proc.stderr.strip()[-300:]}")
    seconds = time.perf_counter() - started
    shutil.rmtree(venv, ignore_errors=True)
    return Start(name, seconds)


def measure_job_start(folder: Path, benchmark: Path, language: str, env: dict[str, str], repeat: int,
                      quick: bool) -> tuple[list[Start], Start]:
    """Each runtime's job start on one pair of the tiny Llama, and the sync anchor (skipped with
    `quick`: it installs about 1.5 GB)."""
    from kit.demo.backends import roster_text
    from kit.demo.model import build_tiny_llama

    folder.mkdir(parents=True, exist_ok=True)
    hub = folder / "hub"
    repo, revision = build_tiny_llama(hub)
    snapshot = hub / f"models--{repo.replace('/', '--')}" / "snapshots" / revision
    roster = folder / "roster.toml"
    roster.write_text(roster_text([{"model": repo, "revision": revision, "backend": "transformers-5.17",
                                    "dtype": "float32", "batch_size": 16, "max_new_tokens": 4,
                                    "languages": [language]}], benchmark.resolve()))
    starts = [host_start(roster, folder, hub, env, repeat)]
    if quick:
        return starts, Start("per-job environment sync", None, "skipped by --quick")
    starts += [docker_start(roster, benchmark, folder, hub, env, repeat),
               sif_start(roster, benchmark, folder, hub, env, repeat)]
    wheelhouse = Path(os.environ.get("KIT_WHEELHOUSE") or Path.home() / ".cache" / "kit" / "wheelhouse")
    return starts, sync_anchor(folder, snapshot, wheelhouse, env)
