"""`kit check` on the demo results: a good tree passes; each kind of defect fails, named."""

from __future__ import annotations

import json
import shutil

import pytest
from e2e_helpers import kit

from kit.images.built import Artifact, BuiltImage, ImagesLock, save_lock

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def tree(first_demo, demo_env, tmp_path):
    root, env = demo_env
    demo = root / "kit-demo"
    shutil.copytree(demo / "results", tmp_path / "results")
    shutil.copy(demo / "roster.toml", tmp_path / "roster.toml")
    return tmp_path, env


def check(tree_dir, env, *extra):
    return kit("check", "results", "--roster", "roster.toml", *extra, cwd=tree_dir, env=env)


def test_good_tree_passes(tree):
    d, env = tree
    r = check(d, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS: 6 checkpoints, 6 expected pairs, 0 findings" in r.stdout


def test_missing_pair_fails_naming_it(tree):
    d, env = tree
    (d / "results/fr/kit-demo__tiny-reranker.json").unlink()
    r = check(d, env)
    assert r.returncode == 1
    assert "FAIL [pairs_complete]" in r.stdout and "kit-demo/tiny-reranker [fr]" in r.stdout


def test_altered_metric_fails(tree):
    d, env = tree
    p = d / "results/en/kit-demo__tiny-llama.json"
    data = json.loads(p.read_text())
    data["metrics"]["accuracy"] = 0.99
    p.write_text(json.dumps(data))
    r = check(d, env)
    assert r.returncode == 1
    assert "FAIL [checkpoints_valid]" in r.stdout and "accuracy" in r.stdout


def test_unknown_image_digest_fails(tree):
    d, env = tree
    p = d / "results/de/kit-demo__tiny-llama.json"
    data = json.loads(p.read_text())
    data["provenance"]["image"]["digest"] = "sha256:" + "ab" * 32
    data["provenance"]["job"]["runtime"] = "docker"
    p.write_text(json.dumps(data))
    lock = ImagesLock(images={"transformers-5.17": BuiltImage(
        backend="transformers-5.17", tag="kit/t:1", image_id="sha256:" + "cd" * 32, dockerfile_sha256="0" * 64,
        lock_sha256="1" * 64, base="kit/base:bookworm", kit_version="0.1.0", built_at="2026-11-29T00:00:00Z",
        artifacts={"sif": Artifact(file="x.sif", sha256="2" * 64)})})
    save_lock(lock, d / "images.lock.json")
    r = check(d, env, "--images-lock", "images.lock.json")
    assert r.returncode == 1
    assert "FAIL [images_locked]" in r.stdout and "sha256:abababab" in r.stdout
    # and the edit itself: the file is not the one its job logged
    assert "FAIL [log_matches_checkpoint]" in r.stdout and r.stdout.count("FAIL [") == 2


def test_unpinned_revision_fails(tree):
    d, env = tree
    p = d / "results/de/kit-demo__tiny-reranker.json"
    data = json.loads(p.read_text())
    data["metadata"]["model_revision"] = None
    r = write_and_check(d, env, p, data)
    assert r.returncode == 1 and "FAIL [checkpoints_valid]" in r.stdout and "edited" in r.stdout
    data["provenance"]["model"]["revision"] = None   # as a job run with --allow-unpinned records it
    r = write_and_check(d, env, p, data)
    assert "FAIL [checkpoints_current]" in r.stdout   # the roster still pins the revision
    roster = d / "roster.toml"
    roster.write_text(roster.read_text().replace(f'revision = "{_revision(d, "tiny-reranker")}"', "", 1))
    r = check(d, env)
    assert r.returncode == 1 and "FAIL [revisions_pinned]" in r.stdout


def write_and_check(d, env, path, data):
    path.write_text(json.dumps(data))
    return check(d, env)


def _revision(d, name: str) -> str:
    return json.loads((d / f"results/en/kit-demo__{name}.json").read_text())["metadata"]["model_revision"]


def test_broken_mllog_fails_the_compliance_rule(tree):
    d, env = tree
    log = d / "results/en/kit-demo__tiny-reranker.mllog"
    lines = [line for line in log.read_text().splitlines() if '"key": "run_stop"' not in line]
    log.write_text("\n".join(lines) + "\n")
    r = check(d, env)
    assert r.returncode == 1
    assert "FAIL [mllog_compliant]" in r.stdout and "run_stop" in r.stdout
