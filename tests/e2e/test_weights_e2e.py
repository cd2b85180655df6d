"""Weights from a fresh workspace to a finished pair on the real local OAR 2.5.9, through the ssh
frontend: the tiny demo models are staged with huggingface_hub from the local test hub
(tests/hubserver.py, HF_ENDPOINT), pushed to the site's `weights` folder over ssh (kit-frontend logs
in as user kit), and `kit run` runs one pair from them; the checkpoint names the pushed manifest.
A run whose weights are missing at its site is refused with the commands that fix it.

Services come from scripts/dev/oar.sh and sshd.sh (started once, left running); the jobs use the host
runtime (this venv's python, run by user kit). About 40 s, most of it the OAR job (scheduling, torch
import). Needs root on Debian; skipped elsewhere (a failure under CI=true)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from services import let_kit_run_this_python, start_service
from sites import sites_toml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hubserver import HubServer, Repo  # noqa: E402

from kit.config.sites import Site  # noqa: E402
from kit.weights import manifest as wm  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
LLM = "kit-demo/tiny-llama"

if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
    pytest.skip("needs root on Debian: scripts/dev/oar.sh and sshd.sh install packages and start daemons",
                allow_module_level=True)

KIT_ENV = {"HOME": "/home/kit", "USER": "kit", "LOGNAME": "kit", "PATH": "/usr/local/bin:/usr/bin:/bin",
           "HF_HUB_OFFLINE": "1", "LANG": "C.UTF-8"}
def sites_text(py: str, cl: Path, bin_dir: Path) -> str:
    """Three sites behind the ssh frontend kit-frontend: weights staged there, weights staged nowhere
    yet, and no `weights` key at all (a Grid'5000 site as a new user writes it first)."""
    oar = dict(scheduler="oar", runtime="host", frontend="kit-frontend", python=py, walltime="0:10",
               policy_checks=(f"{bin_dir}/usagepolicycheck -t",))
    return sites_toml(
        Site(name="ci-weights", root=f"{cl}/oar", results=f"{cl}/results", weights=f"{cl}/hf-hub", **oar),
        Site(name="ci-weights-missing", root=f"{cl}/oar-missing", results=f"{cl}/results-missing",
             weights=f"{cl}/empty-hub", **oar),
        Site(name="ci-weights-none", root=f"{cl}/oar-none", results=f"{cl}/results-none", **oar))


def as_kit(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    pairs = [f"{k}={v}" for k, v in {**KIT_ENV, **(env or {})}.items()]
    return subprocess.run(["runuser", "-u", "kit", "--", "env", "-i", *pairs, *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def ws():
    start_service("oar")
    start_service("sshd")
    let_kit_run_this_python()
    base = Path(tempfile.mkdtemp(prefix="kit-weights-e2e-", dir="/tmp"))
    base.chmod(0o755)
    assets, cluster, here = base / "assets", base / "cluster", base / "here"
    for d in (assets, cluster):
        d.mkdir()
        shutil.chown(d, "kit", "kit")
    here.mkdir()
    made = as_kit([PY, "-c", "import sys; from pathlib import Path; from kit.demo.run import prepare_demo; "
                   "f = prepare_demo(Path(sys.argv[1])); print(f.hub)", str(assets / "demo")], assets,
                  {"KIT_CACHE_DIR": str(assets / "cache")})
    assert made.returncode == 0, made.stderr
    origin = Path(made.stdout.strip().splitlines()[-1])
    roster = assets / "demo" / "roster.toml"
    models = {p.name.removeprefix("models--").replace("--", "/"): (p / "refs" / "main").read_text().strip()
              for p in origin.glob("models--*")}
    server = HubServer({m: Repo(r, wm.snapshot_dir(origin, m, r)) for m, r in models.items()})
    url = server.start()
    (here / "bin").mkdir()
    check = here / "bin" / "usagepolicycheck"
    check.write_text('#!/bin/sh\necho "fake usagepolicycheck ($*): 3% of the daily allowance used"\n')
    check.chmod(0o755)
    (here / "sites.toml").write_text(sites_text(PY, cluster, here / "bin"))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    yield SimpleNamespace(here=here, cluster=cluster, roster=roster, models=models, server=server,
                          stage_env={**env, "HF_ENDPOINT": url, "HF_HUB_DISABLE_TELEMETRY": "1"},
                          run_env={**env, "HF_HUB_OFFLINE": "1"})
    server.stop()
    shutil.rmtree(base, ignore_errors=True)


def kit(ws, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """kit as root in the workspace, reaching the cluster through the ssh frontend."""
    return subprocess.run([PY, "-m", "kit", *args, "--roster", str(ws.roster)], cwd=ws.here, capture_output=True,
                          text=True, timeout=300, env=env or ws.run_env)


def wait_settled(ws, site: str, timeout: float = 240) -> dict:
    end = time.monotonic() + timeout
    while True:
        r = kit(ws, "status", "--site", site, "--model", LLM, "--languages", "en", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        data = json.loads(r.stdout)["data"]
        if not {"queued", "running"} & set(data["counts"]):
            return data
        if time.monotonic() > end:
            pytest.fail(f"{site}: still {data['counts']} after {timeout}s", pytrace=False)
        time.sleep(2)


def test_staged_and_pushed_weights_run_a_pair_on_oar_through_the_ssh_frontend(ws):
    t0 = time.monotonic()
    cache = ws.here / "hf-cache"
    r = kit(ws, "weights", "stage", "--cache", str(cache), env=ws.stage_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("staged kit-demo/") == 2
    r = kit(ws, "weights", "push", "--site", "ci-weights", "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    assert "2 pushed, 0 already there" in r.stdout
    t_weights = time.monotonic() - t0
    r = kit(ws, "run", "--site", "ci-weights", "--model", LLM, "--languages", "en", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = wait_settled(ws, "ci-weights")
    assert data["counts"] == {"complete": 1}, data
    revision = ws.models[LLM]
    pushed = wm.read_manifest(wm.manifest_path(ws.cluster / "hf-hub", LLM, revision))
    ckpt = json.loads((ws.cluster / "results" / "en" / "kit-demo__tiny-llama.json").read_text())
    model = ckpt["provenance"]["model"]
    assert model["weights_manifest_sha256"] == pushed.digest
    assert model["weight_files_sha256"] == pushed.weight_digests()
    assert "model.weights_manifest_sha256" not in ckpt["provenance"]["unknown"]
    logs = "".join(p.read_text() for p in (ws.cluster / "oar" / "logs").glob("*.stderr"))
    assert f"weights: manifest {pushed.digest[:12]}: 6 file sizes checked" in logs
    print(f"\nstage + push {t_weights:.1f}s; run of one pair from the pushed weights: {time.monotonic() - t0:.1f}s")


def test_a_run_whose_weights_are_missing_is_refused_with_the_commands_to_fix_it(ws):
    from kit.config.project import load_project
    from kit.errors import SubmitError
    from kit.launch.run import RunRequest, prepare_kit_run
    from kit.launch.weights_check import preflight_weights

    runs = load_project(ws.roster, None).roster.select([LLM])
    plan = prepare_kit_run(RunRequest(ws.here / "sites.toml", ("ci-weights-missing",), ws.roster, models=(LLM,),
                                      languages=("en",), dry_run=True)).plan
    want = (f"kit weights stage --roster {ws.roster} --model {LLM} && "
            f"kit weights push --site ci-weights-missing --roster {ws.roster} --model {LLM}")
    with pytest.raises(SubmitError) as err:          # asks the frontend over ssh
        preflight_weights(plan, runs, roster=ws.roster)
    assert err.value.fix == want and f"{ws.cluster}/empty-hub" in err.value.message
    r = kit(ws, "run", "--site", "ci-weights-missing", "--model", LLM, "--languages", "en")
    assert r.returncode != 0 and want in r.stderr, r.stdout + r.stderr
    assert not (ws.cluster / "oar-missing" / "jobs").exists()              # nothing was submitted
    r = kit(ws, "run", "--site", "ci-weights-missing", "--model", LLM, "--languages", "en", "--dry-run")
    assert r.returncode == 0, r.stderr                                      # the dry run shows the check (no ssh)
    assert (f"# weights of {LLM} at ci-weights-missing: unchecked: checked on kit-frontend before submitting: "
            f"{ws.cluster}/empty-hub/models--kit-demo--tiny-llama/snapshots/{ws.models[LLM]}") in r.stdout
    r = kit(ws, "run", "--site", "ci-weights-none", "--model", LLM, "--languages", "en", "--dry-run")
    assert r.returncode == 0 and "`kit run` will refuse" in r.stderr and "[site.ci-weights-none]" in r.stderr
    assert f"kit weights push --site ci-weights-none --roster {ws.roster} --model {LLM}" in r.stderr
    r = kit(ws, "run", "--site", "ci-weights-none", "--model", LLM, "--languages", "en")
    assert r.returncode == 2 and "has no `weights` folder" in r.stderr and "Traceback" not in r.stderr
