"""Weights: the manifest (format, digest, size and hash checks), which files each backend stages, the
job's load-time check against the manifest, staging with the real huggingface_hub client against
the local test hub (tests/hubserver.py, synthetic files: no torch), pushing to a site whose frontend
is this machine (the same shell protocol as over ssh), and `kit run`'s preflight."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hubserver import HubServer, Repo, go_online  # noqa: E402

from kit.config.roster import Run  # noqa: E402
from kit.config.sites import Site  # noqa: E402
from kit.errors import ConfigError, KitError, SubmitError  # noqa: E402
from kit.launch.frontend import Frontend  # noqa: E402
from kit.launch.site import resolve_site  # noqa: E402
from kit.launch.weights_check import fix_commands, preflight_weights  # noqa: E402
from kit.launch.weights_push import probe, push_snapshot, verify_on_site  # noqa: E402
from kit.plan import Pair  # noqa: E402
from kit.weights import manifest as wm  # noqa: E402
from kit.weights.select import files_for, missing_for  # noqa: E402
from kit.weights.snapshot import digests_at_load  # noqa: E402

REV = "a" * 40
MODEL = "org/tiny"


def make_repo(folder: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


REPO_FILES = {"config.json": b'{"model_type": "llama"}', "model.safetensors": os.urandom(300_000),
              "tokenizer.json": b'{"version": "1.0"}', "pytorch_model.bin": b"pickle", "README.md": b"# tiny",
              "sub/extra.gguf": b"GGUF" + os.urandom(100)}


def staged(cache: Path, files: dict[str, bytes] | None = None, model: str = MODEL, revision: str = REV) -> wm.Manifest:
    """A snapshot in `cache` with its manifest, as staging leaves it."""
    snap = make_repo(wm.snapshot_dir(cache, model, revision), files or {"config.json": b"{}", "model.safetensors": b"w" * 1000})
    manifest = wm.build_manifest(snap, model, revision, wm.local_sizes(snap), ["transformers-5.17"])
    wm.write_manifest(cache, manifest)
    return manifest


# --- the manifest -------------------------------------------------------------------------------


def test_the_manifest_lists_every_file_and_carries_its_own_digest(tmp_path):
    m = staged(tmp_path)
    path = wm.manifest_path(tmp_path, MODEL, REV)
    assert path == tmp_path / "models--org--tiny" / "kit-manifests" / f"{REV}.json"
    data = json.loads(path.read_text())
    assert data["files"]["model.safetensors"] == {"size": 1000, "sha256": hashlib.sha256(b"w" * 1000).hexdigest()}
    assert (data["model"], data["revision"], data["backends"], data["kit_weights_manifest"]) == (MODEL, REV, ["transformers-5.17"], 1)
    assert data["digest"] == m.digest == wm.read_manifest(path).digest
    assert m.weight_digests() == {"model.safetensors": hashlib.sha256(b"w" * 1000).hexdigest()}
    assert not (tmp_path / "models--org--tiny" / "snapshots" / f"{REV}.json").exists()   # outside snapshots/


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["files"]["config.json"].update(size=3), "digest"),
    (lambda d: d.update(revision="main"), "revision"),
    (lambda d: d["files"].update({"../evil": {"size": 1, "sha256": "0" * 64}}), "../evil"),
    (lambda d: d["files"]["config.json"].update(sha256="xyz"), "files.config.json.sha256"),
    (lambda d: d.update(kit_weights_manifest=9), "kit_weights_manifest"),
    (lambda d: d.pop("backends"), "keys"),
])
def test_an_edited_or_unsound_manifest_is_refused_naming_the_field(tmp_path, edit, field):
    staged(tmp_path)
    path = wm.manifest_path(tmp_path, MODEL, REV)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as err:
        wm.read_manifest(path)
    assert str(path) in err.value.one_line() and field in err.value.one_line() and "kit weights stage" in err.value.fix


def test_size_and_hash_problems(tmp_path):
    m = staged(tmp_path)
    snap = wm.snapshot_dir(tmp_path, MODEL, REV)
    assert wm.size_problems(m, wm.local_sizes(snap)) == [] and wm.verify_snapshot(snap, m) == []
    (snap / "model.safetensors").write_bytes(b"x" * 1000)                    # same size, other bytes
    assert wm.size_problems(m, wm.local_sizes(snap)) == []
    assert wm.verify_snapshot(snap, m) == [f"model.safetensors: sha256 {hashlib.sha256(b'x' * 1000).hexdigest()[:16]}, "
                                           f"the manifest says {m.files['model.safetensors'].sha256[:16]}"]
    (snap / "model.safetensors").write_bytes(b"x" * 10)
    (snap / "extra.safetensors").write_bytes(b"x")
    (snap / "special_tokens_map.json").write_bytes(b"{}")   # a tokenizer reads it: answers change
    (snap / "README.md").write_bytes(b"x")                    # no loader reads a model card
    (snap / "LICENSE.txt").write_bytes(b"x")
    (snap / "config.json").unlink()
    assert wm.size_problems(m, wm.local_sizes(snap)) == [
        "config.json is missing", "model.safetensors is 10 bytes, the manifest says 1000",
        "extra.safetensors is a weight file the manifest does not list",
        "special_tokens_map.json is a file the manifest does not list (an engine may read it)"]


# --- the job's load-time check ------------------------------------------------------------------


def test_a_job_trusts_the_manifest_after_a_size_check_and_hashes_nothing(tmp_path, monkeypatch):
    m = staged(tmp_path)
    snap = wm.snapshot_dir(tmp_path, MODEL, REV)
    import kit.weights.snapshot as snapshot_mod

    def no_hashing(*a):
        raise AssertionError("hashed a weight file at load")

    monkeypatch.setattr(snapshot_mod, "weight_files_sha256", no_hashing)
    monkeypatch.setattr(wm, "file_sha256", no_hashing)
    got = digests_at_load(snap, MODEL, REV)
    assert (got.files, got.manifest_sha256) == (m.weight_digests(), m.digest)


def test_a_job_refuses_weights_that_do_not_match_their_manifest(tmp_path):
    staged(tmp_path)
    snap = wm.snapshot_dir(tmp_path, MODEL, REV)
    (snap / "model.safetensors").write_bytes(b"short")
    with pytest.raises(ConfigError, match="model.safetensors is 5 bytes, the manifest says 1000") as err:
        digests_at_load(snap, MODEL, REV)
    assert "kit weights verify" in err.value.fix
    with pytest.raises(ConfigError, match="the manifest is for org/tiny"):
        digests_at_load(snap, "org/other", REV)


def test_without_a_manifest_a_job_hashes_every_weight_file(tmp_path):
    snap = make_repo(wm.snapshot_dir(tmp_path, MODEL, REV), {"model.safetensors": b"w", "config.json": b"{}"})
    got = digests_at_load(snap, MODEL, REV)
    assert got.files == {"model.safetensors": hashlib.sha256(b"w").hexdigest()} and got.manifest_sha256 is None


def test_the_provenance_names_the_manifest_or_says_why_not():
    from kit.worker.jobinfo import JobInfo
    from kit.worker.provenance import build_provenance

    args = dict(backend="transformers-5.17", model_id=MODEL, revision=REV, weight_files_sha256={"m.safetensors": "0" * 64},
                manifest_sha256="1", file_sha256="2", prompt_sha256="3", shard="0/1", packages={},
                job=JobInfo(None, None, None, None, "node", "host"), hardware_facts={"_unknown": {}})
    with_manifest = build_provenance(**args, weights_manifest_sha256="f" * 64)
    assert with_manifest["model"]["weights_manifest_sha256"] == "f" * 64
    assert "model.weights_manifest_sha256" not in with_manifest["unknown"]
    without = build_provenance(**args)
    assert without["model"]["weights_manifest_sha256"] is None
    assert "hashed at load" in without["unknown"]["model.weights_manifest_sha256"]


# --- which files a backend stages -----------------------------------------------------------------


def test_transformers_and_vllm_stage_safetensors_and_tokenizer_files_only():
    names = [*REPO_FILES, "modeling_x.py", "vocab.txt", "chat_template.jinja", "original/consolidated.pth"]
    want = ["chat_template.jinja", "config.json", "model.safetensors", "tokenizer.json", "vocab.txt"]
    assert files_for("transformers-5.17", names, model=MODEL) == want
    assert files_for("vllm", names, model=MODEL) == want
    assert files_for("vllm", names, model=MODEL, trust_remote_code=True) == sorted([*want, "modeling_x.py"])
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "consolidated.safetensors"]
    assert "consolidated.safetensors" not in files_for("vllm", shards, model=MODEL)
    assert files_for("transformers-5.11", ["pytorch_model.bin", "config.json"], model=MODEL) == ["config.json",
                                                                                                   "pytorch_model.bin"]
    with pytest.raises(ConfigError, match="no \\*.safetensors"):
        files_for("vllm", ["config.json", "x.gguf"], model=MODEL)


def test_llama_cpp_stages_the_one_gguf_file_the_run_names():
    names = ["a-Q4_K_M.gguf", "a-Q8_0.gguf", "config.json", "model.safetensors"]
    assert files_for("gguf", names, model=MODEL, gguf_file="a-Q8_0.gguf") == ["a-Q8_0.gguf"]
    assert files_for("gguf", ["one.gguf", "README.md"], model=MODEL) == ["one.gguf"]
    with pytest.raises(ConfigError, match="2 .gguf files") as err:
        files_for("gguf", names, model=MODEL)
    assert "options.gguf_file" in err.value.fix and "a-Q4_K_M.gguf" in err.value.fix
    with pytest.raises(ConfigError, match="'b.gguf' is not a file"):
        files_for("gguf", names, model=MODEL, gguf_file="b.gguf")
    assert missing_for("gguf", ["a.gguf"], "b.gguf") == "the staged files hold no b.gguf"
    assert missing_for("gguf", ["a.gguf", "config.json"]) is None
    assert missing_for("vllm", ["a.gguf"]) == "the staged files hold no safetensors weights for backend vllm"


# --- staging with huggingface_hub against the local test hub ----------------------------------------


@pytest.fixture
def hub(tmp_path, monkeypatch):
    go_online(monkeypatch)
    origin = make_repo(tmp_path / "origin", REPO_FILES)
    gated = make_repo(tmp_path / "gated", {"config.json": b"{}", "model.safetensors": b"g" * 5000})
    server = HubServer({MODEL: Repo(REV, origin), "org/gated": Repo("b" * 40, gated, token="hf_secret_token_123")})
    url = server.start()
    yield SimpleNamespace(server=server, url=url, origin=origin)
    server.stop()


def test_stage_downloads_the_backends_files_checks_them_and_writes_the_manifest(hub, tmp_path):
    from kit.weights.stage import stage

    cache = tmp_path / "cache"
    result = stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert result.files == ["config.json", "model.safetensors", "tokenizer.json"] == result.fetched
    m = wm.read_manifest(result.manifest)
    assert m.files["model.safetensors"].sha256 == hashlib.sha256(REPO_FILES["model.safetensors"]).hexdigest()
    assert {r.path.rsplit("/", 1)[-1] for r in hub.server.requests if r.method == "GET" and "/resolve/" in r.path} == \
        set(result.files)                                                    # nothing else was downloaded
    again = stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert again.fetched == [] and again.digest == result.digest
    assert len(hub.server.gets("model.safetensors")) == 1                   # not downloaded twice
    both = stage(MODEL, REV, "gguf", cache, gguf_file="sub/extra.gguf", endpoint=hub.url)
    m = wm.read_manifest(both.manifest)                                     # one manifest, both file sets
    assert sorted(m.files) == ["config.json", "model.safetensors", "sub/extra.gguf", "tokenizer.json"]
    assert m.backends == ("gguf", "vllm")


def test_a_file_the_hub_serves_wrong_is_refused_and_removed_and_the_next_stage_fetches_it(hub, tmp_path):
    from kit.weights.stage import stage

    cache = tmp_path / "cache"
    hub.server.corrupt.add("model.safetensors")
    with pytest.raises(KitError, match="model.safetensors does not match the Hub: sha256") as err:
        stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert "run the same `kit weights stage` again" in err.value.fix
    assert not (wm.snapshot_dir(cache, MODEL, REV) / "model.safetensors").exists()
    assert not wm.manifest_path(cache, MODEL, REV).exists()
    hub.server.corrupt.clear()
    assert stage(MODEL, REV, "vllm", cache, endpoint=hub.url).fetched == ["model.safetensors"]


def test_a_snapshot_link_out_of_the_cache_is_refused_and_what_it_points_at_is_kept(hub, tmp_path):
    """A snapshot file that is a link out of the model's folder (not a blob of the cache) is neither read
    nor removed with its target; a file damaged in the cache is said to be, not blamed on a download."""
    from kit.weights.stage import stage

    cache = tmp_path / "cache"
    stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    victim = tmp_path / "victim.txt"
    victim.write_text("my notes")
    config = wm.snapshot_dir(cache, MODEL, REV) / "config.json"
    config.unlink()
    config.symlink_to(victim)
    with pytest.raises(ConfigError, match="config.json is a link out of the cache"):
        stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert victim.read_text() == "my notes"
    config.unlink()
    stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    blob = (wm.snapshot_dir(cache, MODEL, REV) / "model.safetensors").resolve()
    blob.write_bytes(b"z" * blob.stat().st_size)
    with pytest.raises(KitError, match="model.safetensors, already in the cache, does not match the Hub"):
        stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert not blob.exists()


def test_a_listed_name_that_leaves_the_snapshot_is_one_error_line(hub, tmp_path):
    from kit.weights.stage import stage

    hub.server.extra_names = ["../../evil.json"]
    with pytest.raises(KitError, match="lists a file name '../../evil.json' is not a plain relative path"):
        stage(MODEL, REV, "vllm", tmp_path / "cache", endpoint=hub.url)


def test_an_interrupted_stage_keeps_what_it_got_and_finishes_on_the_next_run(hub, tmp_path):
    from kit.weights.stage import stage

    cache = tmp_path / "cache"
    hub.server.fail["tokenizer.json"] = 1
    with pytest.raises(KitError, match="failed while staging org/tiny") as err:
        stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert "files already downloaded are kept" in err.value.fix
    assert not wm.manifest_path(cache, MODEL, REV).exists()                 # no manifest for a partial snapshot
    result = stage(MODEL, REV, "vllm", cache, endpoint=hub.url)
    assert result.fetched == ["tokenizer.json"] and len(hub.server.gets("model.safetensors")) == 1


def test_gated_models_need_the_token_which_appears_nowhere(hub, tmp_path):
    from kit.weights.stage import stage

    with pytest.raises(ConfigError, match="org/gated is gated or private") as err:
        stage("org/gated", "b" * 40, "vllm", tmp_path / "cache", endpoint=hub.url)
    assert "--token-file" in err.value.fix
    result = stage("org/gated", "b" * 40, "vllm", tmp_path / "cache", endpoint=hub.url, token="hf_secret_token_123")
    assert result.files == ["config.json", "model.safetensors"]
    assert "hf_secret_token_123" not in result.manifest.read_text()


def test_unknown_revisions_and_models_are_one_line_config_errors(hub, tmp_path):
    from kit.weights.stage import stage

    with pytest.raises(ConfigError, match=f"has no revision {'c' * 40}"):
        stage(MODEL, "c" * 40, "vllm", tmp_path / "cache", endpoint=hub.url)
    with pytest.raises(ConfigError, match="org/absent is not found"):
        stage("org/absent", REV, "vllm", tmp_path / "cache", endpoint=hub.url)


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_the_cli_stage_reads_the_token_file_mode_checked_and_never_prints_it(hub, tmp_path):
    roster = tmp_path / "roster.toml"
    roster.write_text(f'[[run]]\nmodel = "org/gated"\nrevision = "{"b" * 40}"\nbackend = "vllm"\n')
    token = tmp_path / "token"
    token.write_text("hf_secret_token_123\n")
    token.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_ENDPOINT"] = hub.url

    def kit(*args):
        return subprocess.run([sys.executable, "-m", "kit", "weights", "stage", "--roster", str(roster), "--cache",
                               str(tmp_path / "cache"), *args], capture_output=True, text=True, env=env, timeout=120)

    r = kit("--token-file", str(token))
    assert r.returncode == 2 and "chmod 600" in r.stderr and "Traceback" not in r.stderr
    token.chmod(0o600)
    r = kit("--token-file", str(token), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["staged"][0]["files"] == ["config.json", "model.safetensors"]
    assert "hf_secret_token_123" not in r.stdout + r.stderr
    (tmp_path / "sites.toml").write_text('[site.here]\nscheduler = "local"\nhf_token_file = "token"\n')
    r = kit("--site", "here", "--sites-file", str(tmp_path / "sites.toml"), "--cache", str(tmp_path / "cache3"))
    assert r.returncode == 0 and "staged org/gated" in r.stdout, r.stderr        # the site's token file, here
    r = subprocess.run([sys.executable, "-m", "kit", "weights", "stage", "--roster", str(roster), "--cache",
                        str(tmp_path / "cache2")], capture_output=True, text=True, env={**env, "HF_HUB_OFFLINE": "1"},
                       timeout=120)
    assert r.returncode == 2 and "unset HF_HUB_OFFLINE" in r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("command", ["stage", "verify", "push"])
@pytest.mark.parametrize("cache", ["/dev/null", "roster.toml", "roster.toml/hub"])
def test_a_weights_cache_that_is_not_a_folder_is_one_line_exit_2(tmp_path, command, cache):
    """Every weights command refuses a --cache where a file stands (itself or a parent) in one line,
    instead of a failure per model."""
    (tmp_path / "roster.toml").write_text(f'[[run]]\nmodel = "org/m"\nrevision = "{"b" * 40}"\nbackend = "vllm"\n')
    (tmp_path / "sites.toml").write_text('[site.here]\nscheduler = "local"\n')
    site = ["--site", "here"] if command == "push" else []
    r = subprocess.run([sys.executable, "-m", "kit", "weights", command, "--cache", cache, *site], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    blocker = "/dev/null" if cache == "/dev/null" else "roster.toml"
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{blocker} is not a folder" in r.stderr and "fix: point --cache" in r.stderr


# --- push to a site (frontend = local: the same shell protocol as over ssh) --------------------------


def local_site(tmp_path: Path, name: str = "here", weights: str | None = "site-weights") -> Site:
    return Site(name=name, scheduler="local", weights=str(tmp_path / weights) if weights else None)


def test_push_copies_only_what_is_missing_verifies_there_and_writes_the_manifest_last(tmp_path):
    cache = tmp_path / "cache"
    m = staged(cache, {"config.json": b"{}", "model.safetensors": os.urandom(9_000_000)})
    root, fe = str(tmp_path / "site"), Frontend("local")
    lines: list[str] = []
    r = push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lines.append)
    assert (r.state, r.sent, r.verified) == ("pushed", {"config.json": 2, "model.safetensors": 9_000_000}, 2)
    assert wm.read_manifest(wm.manifest_path(root, MODEL, REV)).digest == m.digest
    assert not (Path(root) / "models--org--tiny" / ".kit-parts").exists()
    assert any("checking sha256 of 2 files" in line for line in lines)
    again = push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lines.append)
    assert (again.state, again.sent) == ("present", {})
    (wm.snapshot_dir(root, MODEL, REV) / "config.json").unlink()
    third = push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lines.append)
    assert third.sent == {"config.json": 2}


def test_an_interrupted_push_resumes_from_its_partial_copy(tmp_path):
    cache = tmp_path / "cache"
    data = os.urandom(5_000_000)
    m = staged(cache, {"model.safetensors": data})
    root, fe = str(tmp_path / "site"), Frontend("local")
    part = Path(root) / "models--org--tiny" / ".kit-parts" / REV / "model.safetensors"
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:3_000_000])                      # what a killed push left
    r = push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lambda line: None)
    assert r.resumed == {"model.safetensors": 3_000_000} and r.sent == {"model.safetensors": 2_000_000}
    assert (wm.snapshot_dir(root, MODEL, REV) / "model.safetensors").read_bytes() == data


def test_a_bad_partial_copy_fails_the_far_side_check_is_removed_and_the_next_push_mends_it(tmp_path):
    cache = tmp_path / "cache"
    data = os.urandom(1_000_000)
    m = staged(cache, {"model.safetensors": data})
    root, fe = str(tmp_path / "site"), Frontend("local")
    part = Path(root) / "models--org--tiny" / ".kit-parts" / REV / "model.safetensors"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\0" * 500_000)                       # not a prefix of the file
    with pytest.raises(SubmitError, match="did not hash to the manifest's sha256 there") as err:
        push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lambda line: None)
    assert "again" in err.value.fix
    assert not (wm.snapshot_dir(root, MODEL, REV) / "model.safetensors").exists()
    assert not wm.manifest_path(root, MODEL, REV).exists()
    r = push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lambda line: None)
    assert r.state == "pushed" and r.resumed == {}


def test_verify_on_the_site_hashes_every_file_against_the_sites_manifest(tmp_path):
    cache = tmp_path / "cache"
    m = staged(cache)
    root, fe = str(tmp_path / "site"), Frontend("local")
    push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lambda line: None)
    [ok] = verify_on_site(fe, root, [(MODEL, REV)], lambda line: None)
    assert ok.problems == [] and ok.digest == m.digest and ok.files == 2
    (wm.snapshot_dir(root, MODEL, REV) / "model.safetensors").write_bytes(b"v" * 1000)
    [bad] = verify_on_site(fe, root, [(MODEL, REV)], lambda line: None)
    assert len(bad.problems) == 1 and bad.problems[0].startswith("model.safetensors: sha256")
    [absent] = verify_on_site(fe, root, [("org/none", REV)], lambda line: None)
    assert absent.problems == ["no weights manifest there: not pushed"]


# --- kit run's preflight -------------------------------------------------------------------------


def run_(model: str = MODEL, backend: str = "transformers-5.17", **kw) -> Run:
    return Run(model=model, revision=REV, backend=backend, **kw)


def plan_of(site: Site, *runs: Run) -> SimpleNamespace:
    """A run plan with one job at `site` holding these runs' pairs (the site's weights path is absolute)."""
    where = resolve_site(site, Path("/"))
    return SimpleNamespace(sites=[SimpleNamespace(site=site, where=where, pairs=[Pair(r.name, "en") for r in runs])])


def test_a_site_without_weights_is_refused_and_a_dry_run_warns_with_the_commands(tmp_path):
    site, run = local_site(tmp_path, "g5k", weights=None), run_()
    dry = preflight_weights(plan_of(site, run), [run], dry_run=True)
    assert [c.state for c in dry.checks] == ["missing"]
    assert len(dry.warnings) == 1 and "kit run` will refuse" in dry.warnings[0]
    with pytest.raises(ConfigError) as err:
        preflight_weights(plan_of(site, run), [run], roster=Path("sweep/roster.toml"))
    assert "nothing was submitted" in err.value.message
    assert err.value.fix == ('add weights = "/home/<login>/hf-hub" (a path on the cluster) to [site.g5k] in sites.toml, '
                             "then kit weights stage --roster sweep/roster.toml --model org/tiny && "
                             "kit weights push --site g5k --roster sweep/roster.toml --model org/tiny")


def test_a_snapshot_damaged_here_is_said_to_be_so_and_not_sent_again_as_a_bad_transfer(tmp_path):
    cache = tmp_path / "cache"
    m = staged(cache, {"model.safetensors": os.urandom(1_000_000)})
    local = wm.snapshot_dir(cache, MODEL, REV) / "model.safetensors"
    body = bytearray(local.read_bytes())
    body[100] ^= 1                                          # same size, other bytes: only a hash tells
    local.write_bytes(bytes(body))
    root, fe = str(tmp_path / "site"), Frontend("local")
    with pytest.raises(SubmitError, match="is damaged here") as err:
        push_snapshot(fe, root, cache, m, probe(fe, root, [(MODEL, REV)])[MODEL, REV], lambda line: None)
    assert "kit weights verify" in err.value.fix and "stage" in err.value.fix
    assert not wm.manifest_path(root, MODEL, REV).exists()


def test_runs_whose_weights_are_not_at_the_site_are_refused_with_the_stage_and_push_commands(tmp_path):
    site = local_site(tmp_path)
    ok, absent, gguf = run_(), run_("org/absent"), run_(backend="gguf", options={"gguf_file": "x.gguf"})
    staged(site.weights)
    plan = plan_of(site, ok, absent, gguf)
    with pytest.raises(SubmitError) as err:
        preflight_weights(plan, [ok, absent, gguf])
    text = err.value.one_line()
    assert f"org/absent at here: no snapshot at revision {REV[:12]}" in text
    assert "the staged files hold no x.gguf" in text
    assert err.value.fix == ("kit weights stage --model org/absent --model org/tiny && "
                             "kit weights push --site here --model org/absent --model org/tiny")
    report = preflight_weights(plan_of(site, ok), [ok])
    assert [c.state for c in report.checks] == ["ok"] and "manifest" in report.lines("here")[0]


def test_a_dry_run_of_a_remote_site_says_what_will_be_checked_and_asks_nobody(tmp_path, monkeypatch):
    import kit.launch.weights_check as wc

    monkeypatch.setattr(wc, "probe", lambda *a: pytest.fail("a dry run asked the frontend"))
    site = Site(name="nancy", scheduler="oar", frontend="nancy.g5k", weights="/home/me/hf-hub")
    report = preflight_weights(plan_of(site, run_()), [run_()], dry_run=True)
    [line] = report.lines()
    assert line == (f"weights of org/tiny at nancy: unchecked: checked on nancy.g5k before submitting: "
                    f"/home/me/hf-hub/models--org--tiny/snapshots/{REV} and its manifest "
                    f"/home/me/hf-hub/models--org--tiny/kit-manifests/{REV}.json")


def test_fix_commands_quote_odd_names():
    from kit.launch.weights_check import WeightsCheck

    checks = [WeightsCheck("s", "org/m@v 1", REV, "-", "missing", "x")]
    assert fix_commands(checks, Path("my roster.toml"), Path("a/sites.toml"), []) == (
        "kit weights stage --roster 'my roster.toml' --model 'org/m@v 1' && kit weights push --site s "
        "--sites-file a/sites.toml --roster 'my roster.toml' --model 'org/m@v 1'")


# --- kit check and kit weights verify ------------------------------------------------------------


def test_kit_check_finds_pairs_of_a_run_that_loaded_other_weights_or_not_the_manifests(tmp_path):
    from kit.results.check import CheckInput, weights_recorded
    from kit.results.checkpoint import CheckpointState

    m = staged(tmp_path / "hub")

    def ckpt(files, digest):
        return CheckpointState("complete", data={"metadata": {"run": MODEL, "model_id": MODEL, "model_revision": REV},
                                                 "provenance": {"model": {"weight_files_sha256": files,
                                                                          "weights_manifest_sha256": digest}}})

    good = ckpt(m.weight_digests(), m.digest)
    inp = CheckInput(tmp_path, None, [], frozenset(), checkpoints={tmp_path / "en.json": good, tmp_path / "fr.json": good},
                     weights=tmp_path / "hub")
    assert weights_recorded(inp) == []
    inp.checkpoints[tmp_path / "fr.json"] = ckpt(m.weight_digests(), "0" * 64)
    found = weights_recorded(inp)
    assert [f.key for f in found] == ["provenance.model", "provenance.model.weights_manifest_sha256"]
    assert "loaded other weights here than in" in found[0].message
    inp.checkpoints[tmp_path / "fr.json"] = good
    weights = wm.snapshot_dir(tmp_path / "hub", MODEL, REV) / "model.safetensors"
    weights.write_bytes(b"\0" * weights.stat().st_size)   # corrupted at the same size: only a full hash sees it
    [found] = weights_recorded(inp)
    assert "the staged weights are not those the job recorded: model.safetensors: sha256" in found.message


def test_kit_weights_verify_here_fails_on_a_changed_file(tmp_path):
    cache = tmp_path / "cache"
    staged(cache)
    roster = tmp_path / "roster.toml"
    roster.write_text(f'[[run]]\nmodel = "{MODEL}"\nrevision = "{REV}"\nbackend = "vllm"\n')

    def verify():
        return subprocess.run([sys.executable, "-m", "kit", "weights", "verify", "--roster", str(roster), "--cache",
                               str(cache), "--json"], capture_output=True, text=True, timeout=120)

    r = verify()
    assert r.returncode == 0 and json.loads(r.stdout)["data"]["snapshots"][0]["ok"], r.stderr
    (wm.snapshot_dir(cache, MODEL, REV) / "config.json").write_bytes(b"[]")
    r = verify()
    env = json.loads(r.stdout)
    assert r.returncode == 1 and env["status"] == "failed"
    assert env["data"]["snapshots"][0]["problems"][0].startswith("config.json: sha256")


def test_kit_reproduce_hashes_every_weight_byte_before_its_verdict(tmp_path):
    from kit.repro.resolve import check_weights

    m = staged(tmp_path)
    snap = wm.snapshot_dir(tmp_path, MODEL, REV)
    result = {"provenance": {"model": {"weight_files_sha256": m.weight_digests(), "weights_manifest_sha256": m.digest}}}
    assert check_weights(result, snap) == []
    weights = snap / "model.safetensors"
    before = weights.stat()
    weights.write_bytes(b"\0" * before.st_size)                     # zeroed at the same size...
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))   # ...and the same time: the manifest still fits
    assert wm.size_problems(m, wm.local_sizes(snap)) == []
    assert check_weights(result, snap)[0].startswith("model.safetensors: recorded")
    (snap / "extra.safetensors").write_bytes(b"w")
    assert "extra.safetensors: a weight file the result does not record" in check_weights(result, snap)


def test_a_job_records_whether_it_hashed_its_weights_or_checked_their_sizes(tmp_path):
    from kit.weights.snapshot import digests_at_load

    m = staged(tmp_path)
    snap = wm.snapshot_dir(tmp_path, MODEL, REV)
    by_manifest = digests_at_load(snap, MODEL, REV)
    assert not by_manifest.hashed and by_manifest.files == m.weight_digests()
    wm.manifest_path(tmp_path, MODEL, REV).unlink()
    assert digests_at_load(snap, MODEL, REV).hashed


def test_weights_commands_need_a_revision_only_of_the_runs_they_act_on(tmp_path):
    """`kit weights verify --model A` works beside an unpinned run B of the same roster; B itself is
    refused naming it, with a fix the command can follow (it has no --allow-unpinned)."""
    import subprocess
    import sys

    roster = tmp_path / "roster.toml"
    data = tmp_path / "data"
    from kit.demo.dataset import write_demo_benchmark

    write_demo_benchmark(data)
    roster.write_text(f'benchmark = "{data.as_posix()}"\n[[run]]\nmodel = "org/a"\nrevision = "{"a" * 40}"\n'
                      'backend = "transformers-5.17"\n[[run]]\nmodel = "org/b"\nbackend = "transformers-5.17"\n',
                      encoding="utf-8")
    cache = tmp_path / "hub"
    cache.mkdir()
    run = [sys.executable, "-m", "kit", "weights", "verify", "--roster", str(roster), "--cache", str(cache)]
    pinned = subprocess.run([*run, "--model", "org/a"], capture_output=True, text=True)
    assert pinned.returncode == 1 and "org/a" in pinned.stdout and "no weights manifest" in pinned.stdout, pinned.stderr
    every = subprocess.run(run, capture_output=True, text=True)
    line = every.stderr.strip()
    assert every.returncode == 2 and "run 'org/b' has no revision" in line and "--allow-unpinned" not in line, line


def test_a_revision_that_is_a_branch_named_like_a_commit_is_refused_with_the_commit(tmp_path, monkeypatch):
    """A 40-hex revision the Hub resolves to another commit (a branch of that name) would land under the
    commit's folder and never be found: refused, naming the commit to pin."""
    from kit.weights.stage import stage

    go_online(monkeypatch)
    origin = make_repo(tmp_path / "origin", REPO_FILES)
    server = HubServer({MODEL: Repo(REV, origin, branches=("b" * 40,))})
    url = server.start()
    try:
        with pytest.raises(ConfigError, match=f"revision {'b' * 40} is not a commit: the Hub resolves it to {REV}"):
            stage(MODEL, "b" * 40, "vllm", tmp_path / "cache", endpoint=url)
        assert stage(MODEL, REV, "vllm", tmp_path / "cache", endpoint=url).files
    finally:
        server.stop()
