"""`kit run`, `kit status` and `kit pull` end to end on the real OAR 2.5.9 of this machine, with
the tiny demo model, run by user kit (OAR refuses root) and through the ssh frontend.

Services come from scripts/dev/oar.sh and sshd.sh (started once, left running). The jobs use
the host runtime: the site's `python` is this repository's venv python, run by user kit; the
workspace (results, job scripts, the tiny model and dataset) is a /tmp folder kit owns. If kit
cannot traverse a folder above that python (a venv made from a pyenv interpreter under /root),
the fixture gives others traverse-only (x) permission on that folder and says so.

Each OAR job costs about 4 s of scheduling and 7-12 s of torch import on 2 cores; the module
takes about 2.5 minutes. Needs root on Debian; skipped elsewhere (a failure under CI=true)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from services import let_kit_run_this_python, start_service
from sites import sites_toml

from kit.config.sites import Site

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
LLM, RERANKER = "kit-demo/tiny-llama", "kit-demo/tiny-reranker"
TUESDAY_1830 = "2026-12-01T18:30"

if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
    pytest.skip("needs root on Debian: scripts/dev/oar.sh and sshd.sh install packages and start daemons",
                allow_module_level=True)


KIT_ENV = {"HOME": "/home/kit", "USER": "kit", "LOGNAME": "kit", "PATH": "/usr/local/bin:/usr/bin:/bin",
           "HF_HUB_OFFLINE": "1", "LANG": "C.UTF-8"}


def as_kit(argv: list[str], cwd: Path, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run argv as the ordinary user kit in a clean environment."""
    pairs = [f"{k}={v}" for k, v in {**KIT_ENV, **(env or {})}.items()]
    return subprocess.run(["runuser", "-u", "kit", "--", "env", "-i", *pairs, *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class Workspace:
    root: Path          # owned by kit: kit's sites.toml, results, job files, demo assets
    roster: Path
    root_side: Path     # owned by root: the sites.toml kit uses (as root) through the ssh frontend
    cluster: Path       # owned by kit: the "cluster" paths of the ssh-frontend sites

    def kit(self, *args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
        """kit as user kit, with the local frontend."""
        return as_kit([PY, "-m", "kit", *args, "--roster", str(self.roster)], self.root, env, timeout)

    def kit_root(self, *args: str, roster: bool = True) -> subprocess.CompletedProcess:
        """kit as root, through the ssh frontend kit-frontend (which logs in as kit)."""
        extra = ["--roster", str(self.roster)] if roster else []
        return subprocess.run([PY, "-m", "kit", *args, *extra], cwd=self.root_side, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def sites_kit(py: str, ws: Path, hub: str) -> str:
    """The sites user kit runs kit with, on the OAR machine itself (frontend local)."""
    oar = dict(scheduler="oar", runtime="host", python=py, weights=hub,
               policy_checks=(f"{ws}/bin/usagepolicycheck -t",))
    return sites_toml(
        Site(name="ci-oar", root=f"{ws}/oar", results=f"{ws}/results", walltime="0:10", **oar),
        # the same, with a worker that waits before starting, so a job can be deleted while it runs
        Site(name="ci-oar-slow", **{**oar, "python": f"{ws}/bin/slow-python"}, root=f"{ws}/oar-slow",
             results=f"{ws}/results-slow", walltime="0:10"),
        Site(name="ci-oar-huge", root=f"{ws}/oar-huge", results=f"{ws}/results-huge", gpu_filter="gpu_mem>=999999",
             **oar),
        Site(name="ci-oar-day", root=f"{ws}/oar-day", results=f"{ws}/results-day", **oar))


def sites_root(py: str, ws: Path, hub: str, cl: Path) -> str:
    """The sites root runs kit with, reaching OAR through the ssh frontend kit-frontend (user kit)."""
    oar = dict(scheduler="oar", runtime="host", frontend="kit-frontend", python=py, weights=hub)
    return sites_toml(
        Site(name="ci-oar-ssh", root=f"{cl}/oar", results=f"{cl}/results", walltime="0:10",
             policy_checks=(f"{ws}/bin/usagepolicycheck -t",), **oar),
        Site(name="ci-oar-blocked", root=f"{cl}/oar-blocked", results=f"{cl}/results-blocked",
             policy_checks=(f"{ws}/bin/usagepolicycheck-over -t",), **oar))


@pytest.fixture(scope="module")
def ws() -> Workspace:
    t0 = time.monotonic()
    start_service("oar")
    start_service("sshd")
    t_services = time.monotonic() - t0
    changed = let_kit_run_this_python()
    if changed:
        print(f"\ngave others traverse (x) permission on {', '.join(map(str, changed))} so user kit can run {PY}")
    probe = as_kit([PY, "-c", "import kit, torch, transformers"], Path("/"))
    assert probe.returncode == 0, f"user kit cannot run this venv's python: {probe.stderr[-500:]}"
    base = Path(tempfile.mkdtemp(prefix="kit-oar-e2e-", dir="/tmp"))
    base.chmod(0o755)
    root, root_side, cluster = base / "kit", base / "root-side", base / "cluster"
    for d in (root, root / "bin", cluster):
        d.mkdir()
        shutil.chown(d, "kit", "kit")
    root_side.mkdir()
    made = as_kit([PY, "-c", "import sys; from pathlib import Path; from kit.demo.run import prepare_demo; "
                   "f = prepare_demo(Path(sys.argv[1])); print(f.hub)", str(root / "demo")], root,
                  {"KIT_CACHE_DIR": str(root / "cache")})
    assert made.returncode == 0, made.stderr
    hub = made.stdout.strip().splitlines()[-1]
    (root / "bin" / "usagepolicycheck").write_text(
        '#!/bin/sh\necho "fake usagepolicycheck ($*): 3% of the daily allowance used"\n')
    (root / "bin" / "slow-python").write_text(f'#!/bin/sh\nsleep 25\nexec {PY} "$@"\n')
    (root / "bin" / "usagepolicycheck-over").write_text(
        '#!/bin/sh\necho "fake usagepolicycheck ($*): daily allowance exceeded on every cluster" >&2\nexit 1\n')
    (root / "sites.toml").write_text(sites_kit(PY, root, hub))
    (root_side / "sites.toml").write_text(sites_root(PY, root, hub, cluster))
    for p in [*root.rglob("*")]:
        if p.parent == root or p.parent == root / "bin":
            shutil.chown(p, "kit", "kit")
    for p in (root / "bin").iterdir():
        p.chmod(0o755)
    print(f"\nservices ready in {t_services:.1f}s; workspace with demo assets in {time.monotonic() - t0:.1f}s")
    yield Workspace(root, root / "demo" / "roster.toml", root_side, cluster)
    shutil.rmtree(base, ignore_errors=True)


def status(ws: Workspace, site: str, model: str, as_root: bool = False) -> dict:
    args = ("status", "--site", site, "--model", model, "--json")
    r = ws.kit_root(*args) if as_root else ws.kit(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["data"]


def wait_settled(ws: Workspace, site: str, model: str, as_root: bool = False, timeout: float = 240) -> dict:
    """Poll `kit status` until no pair is queued or running."""
    end = time.monotonic() + timeout
    while True:
        data = status(ws, site, model, as_root)
        if not {"queued", "running"} & set(data["counts"]):
            return data
        if time.monotonic() > end:
            pytest.fail(f"{site}: still {data['counts']} after {timeout}s", pytrace=False)
        time.sleep(2)


def oarstat_state(job: str) -> str:
    out = as_kit(["oarstat", "-s", "-j", job], Path("/home/kit")).stdout.strip()
    return out.split(": ", 1)[1] if ": " in out else ""


def test_array_run_completes_every_pair(ws):
    t0 = time.monotonic()
    r = ws.kit("run", "--site", "ci-oar", "--model", LLM, "--array", "3", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3% of the daily allowance used" in r.stderr                     # the policy check's output is shown
    jobs = json.loads(r.stdout)["data"]["submitted"][0]["job_ids"]
    assert len(jobs) == 3
    data = wait_settled(ws, "ci-oar", LLM)
    print(f"\n--array 3 on OAR: submitted and complete in {time.monotonic() - t0:.1f}s")
    assert data["counts"] == {"complete": 3}, data
    assert sorted(p["job"] for p in data["pairs"]) == sorted(jobs)
    table = ws.kit("status", "--site", "ci-oar", "--model", LLM, "--pairs").stdout
    assert "3 pairs: 3 complete" in table and jobs[0] in table
    ckpt = json.loads((ws.root / "results" / "de" / "kit-demo__tiny-llama.json").read_text())
    job = ckpt["provenance"]["job"]
    assert (job["site"], job["scheduler"], str(job["job_id"])) == ("ci-oar", "oar", jobs[0])
    info = json.loads(as_kit(["oarstat", "-f", "-J", "-j", jobs[0]], Path("/home/kit")).stdout)[jobs[0]]
    assert info["types"] == ["night"] and info["owner"] == "kit" and info["array_index"] == 1
    assert "gpu_compute_capability_major>=7 AND gpu_mem>=23040" in info["properties"]
    assert (ws.root / "oar" / "logs" / f"OAR.{jobs[0]}.stderr").is_file()


def test_a_filter_no_resource_satisfies_is_kits_clear_error_not_a_hang(ws):
    t0 = time.monotonic()
    r = ws.kit("run", "--site", "ci-oar-huge", "--model", LLM, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("kit: error: site ci-oar-huge: oarsub") and "not enough resources" in err
    assert "gpu_mem>=999999" in err and "gpu_filter" in err
    assert time.monotonic() - t0 < 30


def test_oardel_of_one_array_job_shows_cancelled_and_a_rerun_completes_only_the_missing_pair(ws):
    t0 = time.monotonic()
    r = ws.kit("run", "--site", "ci-oar-slow", "--model", RERANKER, "--array", "3", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    jobs = json.loads(r.stdout)["data"]["submitted"][0]["job_ids"]
    # wait for Running, not Launching: its worker then sleeps 25 s in the slowed `python` before it
    # starts, so the deletion always lands before the pair can be written
    end = time.monotonic() + 120
    while oarstat_state(jobs[0]) != "Running" and time.monotonic() < end:
        time.sleep(0.2)
    assert oarstat_state(jobs[0]) == "Running", "job 1 of the array never started"
    time.sleep(2)
    as_kit(["oardel", jobs[0]], Path("/home/kit"))
    data = wait_settled(ws, "ci-oar-slow", RERANKER)
    by = {p["language"]: p for p in data["pairs"]}
    assert data["counts"] == {"complete": 2, "cancelled": 1}, data   # a user's oardel, as a scancel reads
    assert (by["de"]["state"], by["de"]["job"]) == ("cancelled", jobs[0])      # shard 0 = array index 1 = de
    assert "oardel" in by["de"]["reasons"][0]
    kept = {lang: (ws.root / "results-slow" / lang / "kit-demo__tiny-reranker.json").read_bytes() for lang in ("en", "fr")}
    r = ws.kit("run", "--site", "ci-oar-slow", "--model", RERANKER, "--array", "3", "--json")
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)["data"]
    assert (again["pending"], again["complete"], again["jobs"][0]["array_size"]) == (1, 2, 1)
    data = wait_settled(ws, "ci-oar-slow", RERANKER)
    assert data["counts"] == {"complete": 3}, data
    assert {p["language"]: p["job"] for p in data["pairs"]}["de"] == again["submitted"][0]["job_ids"][0]
    assert all((ws.root / "results-slow" / lang / "kit-demo__tiny-reranker.json").read_bytes() == kept[lang] for lang in kept)
    print(f"\noardel + rerun of the missing pair: {time.monotonic() - t0:.1f}s")


def test_a_weekday_1830_one_hour_non_night_job_is_refused(ws):
    r = ws.kit("run", "--site", "ci-oar-day", "--model", LLM, "--job-type", "exotic", "--walltime", "1:00",
               env={"KIT_NOW": TUESDAY_1830})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "would cross 19:00" in r.stderr and "--walltime 0:30" in r.stderr and "night" in r.stderr
    assert not (ws.root / "oar-day").exists() and not (ws.root / ".kit" / "jobs" / "ci-oar-day.jsonl").exists()


def test_a_failing_usagepolicycheck_on_the_ssh_frontend_blocks_the_submission(ws):
    r = ws.kit_root("run", "--site", "ci-oar-blocked", "--model", LLM)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "daily allowance exceeded on every cluster" in r.stderr      # its output, from the frontend
    assert "nothing was submitted" in r.stderr
    assert not (ws.cluster / "oar-blocked").exists()
    assert not (ws.root_side / ".kit" / "jobs" / "ci-oar-blocked.jsonl").exists()


def test_the_same_run_through_the_ssh_frontend(ws):
    t0 = time.monotonic()
    r = ws.kit_root("run", "--site", "ci-oar-ssh", "--model", LLM, "--array", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    scripts = list((ws.cluster / "oar" / "jobs").glob("*.sh"))
    assert len(scripts) == 1 and scripts[0].owner() == "kit"                # written on the frontend, as kit
    assert f"--roster {ws.cluster}/oar/inputs/roster-" in scripts[0].read_text()
    data = wait_settled(ws, "ci-oar-ssh", LLM, as_root=True)
    assert data["counts"] == {"complete": 3}, data
    assert (ws.root_side / ".kit" / "mirror" / "ci-oar-ssh" / "results" / "fr" / "kit-demo__tiny-llama.json").is_file()
    r = ws.kit_root("pull", "--site", "ci-oar-ssh", "--to", "pulled", roster=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 checkpoints: 3 complete" in r.stdout
    r = ws.kit_root("run", "--site", "ci-oar-ssh", "--model", LLM, "--array", "3")
    assert r.returncode == 0 and "nothing to submit" in r.stdout            # the remote checkpoints count
    print(f"\nssh frontend: run, status, pull, rerun in {time.monotonic() - t0:.1f}s")
