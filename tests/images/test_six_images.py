"""Every backend in its own image, for real: the CPU variants of the six backend images
(transformers-5.17, transformers-5.11, gliner2 on transformers<5, gliclass, gguf, vllm), built
offline from the wheelhouse on the bootstrapped Debian base, and one sweep with a pair per image.

- `kit plan --site local` names each run's image; `kit run --site local` (docker runtime) runs
  each pair in its own image: six distinct image digests and at least three transformers
  versions (5.17, 5.11 and 4.x for GLiNER2) in the checkpoints' provenance; `kit check` passes;
  `kit reproduce` of each pair says REPRODUCED.
- The same through the real local Slurm (scripts/dev/slurm.sh) with the Apptainer runtime for
  two images (gguf and transformers-5.11), their SIFs run by Apptainer 1.4 in the helper image
  kit/apptainer:sid through an `apptainer` stand-in on the job's PATH (Debian 12 has none).

Tier `images` (`make test-images`: KIT_IMAGES_TIER=1 pytest -m images tests/images): six image
builds do not fit CI's budget, so CI never runs or skips it: without KIT_IMAGES_TIER=1,
tests/conftest.py deselects the marker whatever the -m expression (scripts/test.sh and the
Makefile's tiers also say `not images`). Every image is also converted to sqsh. The images are built by scripts/images/cpu-images.sh into $KIT_IMAGES_LOCK (default
/var/tmp/kit-images-tier/images.lock.json, kept between runs: a rebuild with unchanged inputs is a
Docker cache hit). Needs root on Debian with Docker and about 15 GB of disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from timings import StepTimes

pytestmark = [pytest.mark.images, pytest.mark.timeout(7200)]

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("transformers-5.17", "transformers-5.11", "gliner2", "gliclass", "gguf", "vllm")
ON_APPTAINER = ("gguf", "transformers-5.11")
TIER_DIR = Path(os.environ.get("KIT_IMAGES_TIER_DIR", "/var/tmp/kit-images-tier"))
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"
LANG = "en"
TIMES = StepTimes("six-images")
timed = TIMES.timed
EXEC_OPTS = ["--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
             "--security-opt", "systempaths=unconfined"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", **extra}
    if "/usr/sbin" not in env.get("PATH", "").split(":"):
        env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":" + SBIN
    return env


def sh(argv: list[str], *, cwd: Path = REPO, env: dict | None = None, timeout: float = 3600,
       check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if check and r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}",
                    pytrace=False)
    return r


def kit(*args: str, cwd: Path, env: dict, check: bool = True, timeout: float = 3600) -> subprocess.CompletedProcess:
    return sh([sys.executable, "-m", "kit", *args], cwd=cwd, env=env, check=check, timeout=timeout)


@pytest.fixture(scope="module")
def images(request) -> dict:
    """KIT_IMAGES_LOCK / KIT_IMAGES_DIR with the six CPU variants built (what is missing is built)."""
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("docker") is None:
        pytest.skip("needs root on Debian with Docker (scripts/images/tools.sh, the image builds)")
    TIMES.report_at_end(request.config)
    TIER_DIR.mkdir(parents=True, exist_ok=True)
    TIER_DIR.chmod(0o755)
    env = {"KIT_IMAGES_LOCK": os.environ.get("KIT_IMAGES_LOCK") or str(TIER_DIR / "images.lock.json"),
           "KIT_IMAGES_DIR": os.environ.get("KIT_IMAGES_DIR") or str(TIER_DIR / "images")}
    timed("builds", sh, ["bash", "scripts/images/cpu-images.sh", *BACKENDS], env=_env(**env), timeout=7200)
    from kit.images.built import load_lock

    lock = load_lock(Path(env["KIT_IMAGES_LOCK"]))
    assert set(BACKENDS) <= set(lock.images), lock.images.keys()
    assert all(lock.images[b].variant == "cpu" and lock.images[b].offline for b in BACKENDS)
    return {"env": env, "lock": lock}


def _in_image(tag: str, hub: Path, code: str) -> list:
    r = sh(["docker", "run", "--rm", "-v", f"{hub}:{hub}", "-e", "HF_HUB_OFFLINE=1", tag, "python", "-c", code, str(hub)])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ws(images) -> Path:
    """A workspace: the tiny models in one hub cache, the benchmark, a roster with a run per image,
    and the sites (local + docker; real Slurm + Apptainer)."""
    from kit.demo.backends import roster_text, write_backend_benchmark
    from kit.demo.model import build_tiny_llama

    root = Path(tempfile.mkdtemp(prefix="kit-six-images-", dir="/var/tmp"))
    root.chmod(0o755)
    hub = root / "hub"
    llama = build_tiny_llama(hub)
    # the GGUF writer needs the pure-Python `gguf` package (as .venv-llamacpp has it), lent by PYTHONPATH
    gguf_py = TIER_DIR / "gguf-py-0.19.0"
    if not (gguf_py / "gguf").is_dir():
        sh([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(gguf_py), "gguf==0.19.0"])
    code = "import json, sys; from kit.demo.gguf import write_gguf; print(json.dumps(write_gguf(sys.argv[1])))"
    r = sh([sys.executable, "-c", code, str(hub)], env=_env(PYTHONPATH=f"{gguf_py}:{REPO}"))
    gguf = tuple(json.loads(r.stdout.strip().splitlines()[-1]))
    # the GLiNER2 and GLiClass tiny models are built by kit inside their own images (their engines live there)
    tags = {b: images["lock"].images[b].tag for b in BACKENDS}
    builder = "import json, sys; from kit.demo.gl import {0}; print(json.dumps({0}(sys.argv[1])))"
    gliner2 = tuple(_in_image(tags["gliner2"], hub, builder.format("build_tiny_gliner2")))
    gliclass = tuple(_in_image(tags["gliclass"], hub, builder.format("build_tiny_gliclass")))
    bench = write_backend_benchmark(root / "bench", "zeroshot")
    gen = {"task": "generate", "batch_size": 8, "max_new_tokens": 8}
    score = {"task": "score", "batch_size": 8, "max_new_tokens": 1, "options": {"threshold": 0.5}}
    runs = [
        {"model": llama[0], "revision": llama[1], "backend": "transformers-5.17", "dtype": "float32", **gen},
        {"model": f"{llama[0]}@t511", "revision": llama[1], "backend": "transformers-5.11", "dtype": "float32", **gen},
        {"model": f"{llama[0]}@vllm", "revision": llama[1], "backend": "vllm", **gen,
         "options": {"enforce_eager": True, "max_num_seqs": 8, "max_model_len": 1024}},
        {"model": gguf[0], "revision": gguf[1], "backend": "gguf", **gen,
         "options": {"gguf_file": "tiny-llama-f32.gguf", "quantization": "F32", "n_ctx": 1024}},
        {"model": gliner2[0], "revision": gliner2[1], "backend": "gliner2", **score},
        {"model": gliclass[0], "revision": gliclass[1], "backend": "gliclass", **score},
    ]
    (root / "roster.toml").write_text(roster_text(runs, bench), encoding="utf-8")
    (root / "sites.toml").write_text(
        f'[site.local]\nscheduler = "local"\nruntime = "docker"\nroot = "."\nresults = "results"\nweights = "{hub}"\n'
        f'gpus_per_node = 0\nwalltime = "60m"\nforward_env = ["VLLM_CPU_KVCACHE_SPACE"]\n\n'
        f'[site.slurm-apptainer]\nscheduler = "slurm"\nruntime = "apptainer"\npartition = "debug"\n'
        f'root = "{root}/slurm"\nresults = "{root}/slurm/results"\nimages = "{images["env"]["KIT_IMAGES_DIR"]}"\n'
        f'weights = "{hub}"\nscratch = "{root}/scratch"\ngpus_per_node = 0\nwalltime = "30m"\n', encoding="utf-8")
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _checkpoints(results: Path) -> dict[str, dict]:
    out = {}
    for p in sorted((results / LANG).glob("*.json")):
        data = json.loads(p.read_text(encoding="utf-8"))
        out[data["provenance"]["image"]["backend"]] = {"path": p, "data": data}
    return out


@pytest.fixture(scope="module")
def docker_sweep(ws, images) -> dict[str, dict]:
    """`kit run --site local` of the six runs (docker runtime): one job per backend, each in its image."""
    env = _env(**images["env"])
    r = timed("plan", kit, "plan", "--site", "local", "--languages", LANG, cwd=ws, env=env)
    for b in BACKENDS:
        assert f"{images['lock'].images[b].tag}  {images['lock'].images[b].image_id}" in r.stdout, r.stdout
    timed("docker-sweep", kit, "run", "--site", "local", "--languages", LANG, cwd=ws, env=env)
    return _checkpoints(ws / "results")


def test_each_pair_ran_in_its_own_image(docker_sweep, images):
    assert sorted(docker_sweep) == sorted(BACKENDS)
    digests = {b: c["data"]["provenance"]["image"]["digest"] for b, c in docker_sweep.items()}
    assert len(set(digests.values())) == 6, digests
    for b, digest in digests.items():
        built = images["lock"].images[b]
        prov = docker_sweep[b]["data"]["provenance"]
        assert digest == built.image_id and prov["image"]["lock_sha256"] == built.lock_sha256, b
        assert prov["image"]["artifact"] == "oci" and prov["job"]["runtime"] == "docker", b
    versions = {b: c["data"]["provenance"]["packages"].get("transformers") for b, c in docker_sweep.items()}
    assert versions["transformers-5.17"] == "5.17.0" and versions["transformers-5.11"] == "5.11.0", versions
    assert versions["gliner2"].startswith("4."), versions
    assert len({v for v in versions.values() if v}) >= 3, versions
    packages = {b: c["data"]["provenance"]["packages"] for b, c in docker_sweep.items()}
    assert packages["gguf"]["llama_cpp_python"] == "0.3.36" and packages["vllm"]["vllm"] == "0.32.0", packages
    assert all(p["torch"].endswith("+cpu") for b, p in packages.items() if b != "gguf"), packages


def test_kit_check_passes(docker_sweep, ws, images):
    r = timed("check", kit, "check", "results", "--languages", LANG, cwd=ws, env=_env(**images["env"]), check=False)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_image_reproduces_its_pair(docker_sweep, ws, images, backend):
    rel = docker_sweep[backend]["path"].relative_to(ws)
    r = timed(f"reproduce-{backend}", kit, "reproduce", str(rel), cwd=ws, env=_env(**images["env"]), check=False)
    assert r.returncode == 0 and r.stdout.startswith("REPRODUCED"), r.stdout[-2000:] + r.stderr[-3000:]


def test_deliberate_reruns_across_engines_form_the_drift_table(docker_sweep, ws, images):
    """The transformers float32 result rerun on purpose in bfloat16, through llama.cpp (its GGUF) and through
    vLLM, each in its own image: four setups in the report's drift table, each verdict with a paired change."""
    import csv

    rel = str(docker_sweep["transformers-5.17"]["path"].relative_to(ws))
    gguf = docker_sweep["gguf"]["data"]["metadata"]
    env = _env(**images["env"])
    for args in (("--as", "bfloat16"),
                 ("--as", "gguf", "--as-model", f"{gguf['model_id']}@{gguf['model_revision']}",
                  "--as-option", 'gguf_file="tiny-llama-f32.gguf"', "--as-option", 'quantization="F32"'),
                 ("--as", "vllm", "--as-option", "enforce_eager=true", "--as-option", "max_model_len=1024",
                  "--engine-env", "VLLM_CPU_KVCACHE_SPACE=1")):
        r = timed(f"reproduce-as-{args[1]}", kit, "reproduce", rel, "--runtime", "docker", *args,
                  "-o", "reproduce-drift", cwd=ws, env=env, check=False)
        assert r.returncode == 0 and "deliberate rerun" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    kit("report", "results", "-o", "report-drift", cwd=ws, env=env)
    rows = [r for r in csv.DictReader((ws / "report-drift" / "drift.csv").open(encoding="utf-8")) if r["deliberate"]]
    setups = {r["rerun_setup"].split(" · ")[0].split()[0] + " " + r["rerun_setup"].split(" · ")[1] for r in rows}
    assert setups == {"transformers-5.17 bfloat16", "gguf GGUF F32", "vllm float32"}, rows
    assert all(r["recorded_setup"].startswith("transformers-5.17") and "float32" in r["recorded_setup"] for r in rows)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_image_converts_to_sqsh(images, backend):
    """Every image also converts to Enroot's squashfs, recorded against the same image id."""
    from kit.images.built import load_lock

    timed(f"sqsh-{backend}", kit, "images", "convert", backend, "--to", "sqsh", cwd=REPO, env=_env(**images["env"]))
    built = load_lock(Path(images["env"]["KIT_IMAGES_LOCK"])).images[backend]
    art = built.artifacts["sqsh"]
    path = Path(images["env"]["KIT_IMAGES_DIR"]) / art.file
    assert art.image_id == built.image_id and path.is_file()
    path.unlink()   # 0.3 to 2 GB each: the disk is shared (a later convert makes it again)


APPTAINER_STANDIN = """#!/bin/sh
# apptainer for a host without one (tests only): the same command in the helper image kit/apptainer:sid,
# as uid 1000, with the job's APPTAINERENV_* variables and the workspace and images at their own paths;
# APPTAINER_UNSQUASH=1 (no /dev/fuse for that user here), as tests/integration/test_slurm_apptainer.py
set -eu
envs=$(env | sed -n 's/^\\(APPTAINERENV_[A-Za-z0-9_]*\\)=.*/-e \\1/p' | tr '\\n' ' ')
# shellcheck disable=SC2086
exec docker run --rm --user 1000:1000 {opts} --tmpfs /tmp:rw,exec,size=8g,mode=1777 \\
  -v {ws}:{ws} -v {images}:{images}:ro -e APPTAINER_UNSQUASH=1 $envs {helper} apptainer "$@"
"""


def _wait(ws: Path, env: dict, models: list[str], timeout: float) -> dict[str, dict]:
    end = time.monotonic() + timeout
    while True:
        args = [a for m in models for a in ("--model", m)]
        r = kit("status", "--site", "slurm-apptainer", "--languages", LANG, *args, "--json", cwd=ws, env=env)
        pairs = json.loads(r.stdout)["data"]["pairs"]
        if not any(p["state"] in ("queued", "running") for p in pairs):
            return {p["run"]: p for p in pairs}
        assert time.monotonic() < end, f"still live after {timeout}s: {pairs}"
        time.sleep(5)


def test_slurm_apptainer_sweep_of_two_images(docker_sweep, ws, images):
    """Two of the images as SIFs, through the real single-machine Slurm with the apptainer runtime."""
    from kit.images.built import load_lock

    env = _env(**images["env"])
    for b in ON_APPTAINER:
        timed(f"sif-{b}", kit, "images", "convert", b, "--to", "sif", cwd=REPO, env=env, timeout=3600)
    lock = load_lock(Path(images["env"]["KIT_IMAGES_LOCK"]))
    sh(["bash", "scripts/dev/slurm.sh", "start"], timeout=600)
    sh(["bash", "scripts/dev/apptainer-image.sh"], timeout=1200)
    images_dir = Path(images["env"]["KIT_IMAGES_DIR"])
    images_dir.chmod(0o755)
    for b in ON_APPTAINER:
        (images_dir / lock.images[b].artifacts["sif"].file).chmod(0o644)
    bin_dir = ws / "bin"
    bin_dir.mkdir(exist_ok=True)
    standin = bin_dir / "apptainer"
    standin.write_text(APPTAINER_STANDIN.format(opts=" ".join(EXEC_OPTS), ws=ws, images=images_dir,
                                                helper="kit/apptainer:sid"))
    standin.chmod(0o755)
    for d in ("slurm", "slurm/results", "scratch"):
        (ws / d).mkdir(parents=True, exist_ok=True)
        (ws / d).chmod(0o777)   # the container runs as uid 1000
    roster = (ws / "roster.toml").read_text()
    names = [n for n in _run_names(roster) if _backend_of(roster, n) in ON_APPTAINER]
    assert len(names) == 2, names
    env_slurm = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    args = [a for n in names for a in ("--model", n)]
    r = kit("plan", "--site", "slurm-apptainer", "--languages", LANG, *args, cwd=ws, env=env_slurm)
    assert ".sif" in r.stdout, r.stdout
    t0 = time.monotonic()
    kit("run", "--site", "slurm-apptainer", "--languages", LANG, *args, cwd=ws, env=env_slurm)
    states = _wait(ws, env_slurm, names, timeout=1800)
    TIMES.since("slurm-apptainer-sweep", t0)
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in (ws / "slurm").rglob("*.out"))
    assert {s["state"] for s in states.values()} == {"complete"}, (states, logs)
    done = _checkpoints(ws / "slurm" / "results")
    assert sorted(done) == sorted(ON_APPTAINER)
    for b, c in done.items():
        prov = c["data"]["provenance"]
        assert prov["image"]["digest"] == lock.images[b].image_id and prov["image"]["artifact"] == "sif", prov["image"]
        assert prov["image"]["artifact_sha256"] == lock.images[b].artifacts["sif"].sha256
        assert prov["job"]["scheduler"] == "slurm" and prov["job"]["runtime"] == "apptainer", prov["job"]
        # the same image gives the same predictions under Docker and under Apptainer
        assert c["data"]["predictions"] == docker_sweep[b]["data"]["predictions"], b


def _run_names(roster: str) -> list[str]:
    import tomllib

    return [r["model"] for r in tomllib.loads(roster)["run"]]


def _backend_of(roster: str, name: str) -> str:
    import tomllib

    return next(r["backend"] for r in tomllib.loads(roster)["run"] if r["model"] == name)
