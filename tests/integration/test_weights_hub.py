"""Staging the tiny demo models with huggingface_hub's real `snapshot_download` from the local test
hub (tests/hubserver.py), a transfer cut short and resumed with an HTTP Range request, and pushing
the staged snapshots through the local ssh frontend (scripts/dev/sshd.sh: kit-frontend logs in as
user kit), verified there with sha256sum, then `kit run`'s preflight over the same ssh.

Needs root on Debian for the ssh frontend (skipped elsewhere; a failure under CI=true). About 15 s:
building the two tiny models (torch) is most of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hubserver import HubServer, Repo, go_online  # noqa: E402
from services import start_service  # noqa: E402

from kit.files import file_sha256  # noqa: E402
from kit.weights import manifest as wm  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LLM, RERANKER = "kit-demo/tiny-llama", "kit-demo/tiny-reranker"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from kit.demo.model import build_tiny_classifier, build_tiny_llama

    origin = tmp_path_factory.mktemp("origin")
    models = {m: r for m, r in (build_tiny_llama(origin), build_tiny_classifier(origin))}
    server = HubServer({m: Repo(r, wm.snapshot_dir(origin, m, r)) for m, r in models.items()})
    url = server.start()
    work = tmp_path_factory.mktemp("work")
    roster = work / "roster.toml"
    roster.write_text("".join(f'[[run]]\nmodel = "{m}"\nrevision = "{r}"\nbackend = "transformers-5.17"\n'
                              f'task = "{"generate" if m == LLM else "score"}"\n\n' for m, r in models.items()))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=url, HF_HUB_DISABLE_TELEMETRY="1")
    yield SimpleNamespace(server=server, url=url, origin=origin, models=models, work=work, roster=roster, env=env)
    server.stop()


def kit(hub, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, timeout=300,
                          env=hub.env, cwd=cwd or hub.work)


@pytest.fixture(autouse=True)
def online(monkeypatch):
    """Staging runs in this process, whose huggingface_hub read HF_HUB_OFFLINE=1 at import."""
    go_online(monkeypatch)


def test_snapshot_download_stages_a_tiny_model_and_resumes_a_transfer_cut_short(hub, tmp_path, monkeypatch):
    from huggingface_hub import constants

    from kit.weights.snapshot import digests_at_load, resolve_snapshot
    from kit.weights.stage import stage

    # huggingface_hub hands bytes over in 10 MB chunks and resumes from the last whole chunk: smaller
    # chunks let a 1.6 MB file be cut after some of them, as a large file would be
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 64 * 1024)
    hub.server.cut["model.safetensors"] = 700_000
    revision = hub.models[LLM]
    result = stage(LLM, revision, "transformers-5.17", tmp_path, endpoint=hub.url)
    gets = hub.server.gets("model.safetensors")
    assert [(g.range, g.status) for g in gets] == [(None, 200), ("bytes=655360-", 206)]   # 10 chunks kept
    origin = wm.snapshot_dir(hub.origin, LLM, revision)
    manifest = wm.read_manifest(result.manifest)
    assert sorted(manifest.files) == sorted(p.name for p in origin.iterdir())
    assert all(e.sha256 == file_sha256(origin / n) for n, e in manifest.files.items())
    snapshot = resolve_snapshot(LLM, revision, tmp_path)                     # what a job finds offline
    assert snapshot.is_symlink() is False and (snapshot / "model.safetensors").is_symlink()   # hub layout: blobs
    assert digests_at_load(snapshot, LLM, revision).manifest_sha256 == manifest.digest


def test_the_cli_stages_every_run_of_the_roster_and_a_second_stage_downloads_nothing(hub):
    cache = hub.work / "cache"
    r = kit(hub, "weights", "stage", "--roster", str(hub.roster), "--cache", str(cache), "--json")
    assert r.returncode == 0, r.stderr
    staged = {s["model"]: s for s in json.loads(r.stdout)["data"]["staged"]}
    assert set(staged) == {LLM, RERANKER} and all(s["fetched"] == s["files"] for s in staged.values())
    before = len(hub.server.requests)
    r = kit(hub, "weights", "stage", "--roster", str(hub.roster), "--cache", str(cache))
    assert r.returncode == 0 and "(0 downloaded now)" in r.stdout, r.stderr
    assert not [q for q in hub.server.requests[before:] if q.method == "GET" and "/resolve/" in q.path]
    r = kit(hub, "weights", "verify", "--roster", str(hub.roster), "--cache", str(cache))
    assert r.returncode == 0 and r.stdout.count("ok  ") == 2, r.stdout + r.stderr


@pytest.fixture(scope="module")
def frontend(hub):
    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
        pytest.skip("needs root on Debian: scripts/dev/sshd.sh installs and starts the ssh frontend")
    start_service("sshd")
    cluster = Path(tempfile.mkdtemp(prefix="kit-weights-cluster-", dir="/tmp"))
    cluster.chmod(0o755)
    shutil.chown(cluster, "kit", "kit")
    (hub.work / "sites.toml").write_text(
        f'[site.ssh]\nscheduler = "oar"\nruntime = "host"\npython = "python3"\nfrontend = "kit-frontend"\nroot = "{cluster}/kit"\n'
        f'results = "{cluster}/results"\nweights = "{cluster}/hf-hub"\n\n'
        f'[site.ssh-empty]\nscheduler = "oar"\nruntime = "host"\npython = "python3"\nfrontend = "kit-frontend"\nroot = "{cluster}/kit"\n'
        f'results = "{cluster}/results"\nweights = "{cluster}/empty-hub"\n')
    yield cluster
    shutil.rmtree(cluster, ignore_errors=True)


def test_push_through_the_ssh_frontend_only_what_is_missing_verified_there(hub, frontend):
    cache, weights = hub.work / "cache", frontend / "hf-hub"
    if not (cache / wm.repo_dir_name(LLM)).is_dir():
        assert kit(hub, "weights", "stage", "--roster", str(hub.roster), "--cache", str(cache)).returncode == 0
    llm = hub.models[LLM]
    # a push killed half-way through the llama's weights left this partial copy (written as kit)
    whole = (wm.snapshot_dir(cache, LLM, llm) / "model.safetensors").read_bytes()
    part = weights / wm.repo_dir_name(LLM) / wm.PARTS_DIR / llm / "model.safetensors"
    part.parent.mkdir(parents=True)
    part.write_bytes(whole[: len(whole) // 2])
    for p in [weights, *weights.rglob("*")]:
        shutil.chown(p, "kit", "kit")
    r = kit(hub, "weights", "push", "--site", "ssh", "--roster", str(hub.roster), "--cache", str(cache), "--json")
    assert r.returncode == 0, r.stderr
    pushed = {s["model"]: s for s in json.loads(r.stdout)["data"]["snapshots"]}
    assert pushed[LLM]["resumed"] == {"model.safetensors": len(whole) // 2}
    assert pushed[LLM]["sent"]["model.safetensors"] == len(whole) - len(whole) // 2
    assert "checking sha256 of 6 files at frontend kit-frontend" in r.stderr
    snap = wm.snapshot_dir(weights, LLM, llm)
    assert (snap / "model.safetensors").read_bytes() == whole and (snap / "model.safetensors").owner() == "kit"
    assert wm.read_manifest(wm.manifest_path(weights, LLM, llm)).digest == \
        wm.read_manifest(wm.manifest_path(cache, LLM, llm)).digest
    r = kit(hub, "weights", "verify", "--site", "ssh", "--roster", str(hub.roster), "--json")
    assert r.returncode == 0 and all(s["ok"] for s in json.loads(r.stdout)["data"]["snapshots"]), r.stdout
    # a file changed on the cluster is found by the full check there, and a new push mends a removed one
    (snap / "tokenizer.json").write_text("{}" + " " * ((snap / "tokenizer.json").stat().st_size - 2))
    r = kit(hub, "weights", "verify", "--site", "ssh", "--roster", str(hub.roster), "--model", LLM)
    assert r.returncode == 1 and "FAIL  kit-demo/tiny-llama" in r.stdout and "tokenizer.json: sha256" in r.stdout
    (snap / "tokenizer.json").unlink()
    r = kit(hub, "weights", "push", "--site", "ssh", "--roster", str(hub.roster), "--cache", str(cache), "--json")
    pushed = {s["model"]: s for s in json.loads(r.stdout)["data"]["snapshots"]}
    assert list(pushed[LLM]["sent"]) == ["tokenizer.json"] and pushed[RERANKER]["state"] == "present"
    assert kit(hub, "weights", "verify", "--site", "ssh", "--roster", str(hub.roster)).returncode == 0


def test_the_run_preflight_asks_the_ssh_frontend_and_refuses_with_the_commands(hub, frontend):
    from kit.config.roster import load_roster
    from kit.errors import SubmitError
    from kit.launch.site import load_site
    from kit.launch.weights_check import preflight_weights
    from kit.plan import Pair

    runs = load_roster(hub.roster)[0].run
    ssh = load_site(hub.work / "sites.toml", "ssh")
    plan = SimpleNamespace(sites=[SimpleNamespace(site=ssh.config, where=ssh, pairs=[Pair(LLM, "en")])])
    cache = hub.work / "cache"
    if not wm.manifest_path(frontend / "hf-hub", LLM, hub.models[LLM]).is_file():   # run alone
        assert kit(hub, "weights", "stage", "--roster", str(hub.roster), "--cache", str(cache)).returncode == 0
        assert kit(hub, "weights", "push", "--site", "ssh", "--roster", str(hub.roster), "--cache",
                   str(cache)).returncode == 0
    report = preflight_weights(plan, runs)
    assert [c.state for c in report.checks] == ["ok"]
    empty = load_site(hub.work / "sites.toml", "ssh-empty")
    plan.sites[0].site, plan.sites[0].where = empty.config, empty
    with pytest.raises(SubmitError) as err:
        preflight_weights(plan, runs, roster=hub.roster)
    assert f"no snapshot at revision {hub.models[LLM][:12]} in {frontend}/empty-hub" in err.value.message
    assert err.value.fix == (f"kit weights stage --roster {hub.roster} --model {LLM} && "
                             f"kit weights push --site ssh-empty --roster {hub.roster} --model {LLM}")
