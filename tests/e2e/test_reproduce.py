"""`kit reproduce` on demo results (host runtime): verdicts, evidence, refusals."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from e2e_helpers import kit

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from conftest_checkpoints import seal  # noqa: E402

from kit.demo.run import DEMO_VERSION
from kit.results.metrics import compute_metrics

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RESULT = "results/en/kit-demo__tiny-llama.json"


@pytest.fixture
def work(first_demo, demo_env, tmp_path):
    """A copy of the demo's workspace: results, and the roster and sites that name its benchmark and weights."""
    root, env = demo_env
    shutil.copytree(root / "kit-demo" / "results", tmp_path / "results")
    for name in ("roster.toml", "sites.toml"):
        shutil.copy(root / "kit-demo" / name, tmp_path / name)
    return tmp_path, env


def test_reproduced(work):
    d, env = work
    r = kit("reproduce", RESULT, cwd=d, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("REPRODUCED")
    verdict = json.loads((d / "reproduce/reproduce-kit-demo__tiny-llama-en.json").read_text())
    assert verdict["verdict"] == "REPRODUCED" and verdict["differing_items"] == []
    assert "same GPU model" in (d / "reproduce/reproduce-kit-demo__tiny-llama-en.md").read_text()


def test_altered_prediction_is_different_and_named(work):
    d, env = work
    p = d / RESULT
    data = json.loads(p.read_text())
    victim = data["predictions"][7]
    victim["raw_output"] = "no" if victim["predicted"] == "yes" else "yes"   # another answer, read as its verdict:
    victim["predicted"] = victim["raw_output"]                              # a sound checkpoint of another run
    victim["parse_mode"] = "exact"
    data["metrics"] = compute_metrics(data["predictions"])
    p.write_text(json.dumps(data))
    seal(p)   # as its job would have logged it: reproduce holds a result to its log first
    r = kit("reproduce", RESULT, "--json", cwd=d, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    env_json = json.loads(r.stdout)
    assert env_json["status"] == "failed" and env_json["data"]["verdict"] == "DIFFERENT"
    assert [x["item_id"] for x in env_json["data"]["differing_items"]] == [victim["item_id"]]
    md = (d / "reproduce/reproduce-kit-demo__tiny-llama-en.md").read_text()
    assert victim["item_id"] in md


def test_other_batch_size_is_explained(work):
    d, env = work
    r = kit("reproduce", RESULT, "--batch-size", "3", cwd=d, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "setting differs from the record: batch_size: 8 -> 3" in r.stdout


def test_unknown_image_digest_is_a_clear_error(work):
    d, env = work
    p = d / RESULT
    data = json.loads(p.read_text())
    digest = "sha256:" + "ef" * 32
    data["provenance"]["image"].update({"digest": digest, "artifact": "oci"})
    data["provenance"]["job"]["runtime"] = "docker"
    p.write_text(json.dumps(data))
    seal(p)   # as its job would have logged it: reproduce holds a result to its log first
    r = kit("reproduce", RESULT, "--runtime", "docker", cwd=d, env=env)
    assert r.returncode == 2
    assert digest in r.stderr and "fix:" in r.stderr and "docker load" in r.stderr
    r = kit("reproduce", RESULT, "--runtime", "apptainer", "--images", str(d), cwd=d, env=env)
    assert r.returncode == 2 and "no .sif with the recorded sha256" in r.stderr


def test_a_changed_dataset_file_is_refused(work, tmp_path):
    d, env = work
    from kit.demo.dataset import write_demo_benchmark

    bench = write_demo_benchmark(tmp_path / "bench")
    csv = bench / "translations/en/v3-final-en.csv"
    csv.write_bytes(csv.read_bytes().replace(b"vineyards", b"wineyards", 1))
    r = kit("reproduce", RESULT, "--benchmark", str(bench), cwd=d, env=env)
    assert r.returncode == 2 and "sha256" in r.stderr


def test_against_an_existing_rerun(work, demo_env):
    d, env = work
    root, _ = demo_env
    env = {**env, "HF_HUB_CACHE": str(root / "cache" / f"demo-{DEMO_VERSION}" / "hub")}
    r = kit("shard", "--roster", str(root / "kit-demo/roster.toml"), "--results", "rerun", "--model",
            "kit-demo/tiny-llama", "--languages", "en", cwd=d, env=env)
    assert r.returncode == 0, r.stderr
    r = kit("reproduce", RESULT, "--against", "rerun/en/kit-demo__tiny-llama.json", cwd=d, env=env)
    assert r.returncode == 0 and r.stdout.startswith("REPRODUCED"), r.stdout + r.stderr
    r = kit("reproduce", RESULT, "--against", "results/fr/kit-demo__tiny-llama.json", cwd=d, env=env)
    assert r.returncode == 2 and "language 'fr' is not the result's 'en'" in r.stderr
    r = kit("reproduce", RESULT, "--against", f"./{RESULT}", cwd=d, env=env)   # itself, spelled otherwise
    assert r.returncode == 2 and "--against names the result itself" in r.stderr, r.stderr


def test_a_result_outside_its_workspace_needs_the_benchmark_named(work, demo_env, tmp_path_factory):
    d, env = work
    root, _ = demo_env
    alone = tmp_path_factory.mktemp("alone")   # no roster.toml in any folder above
    shutil.copytree(d / "results", alone / "results")   # no roster.toml above: nothing names the benchmark
    r = kit("reproduce", RESULT, cwd=alone, env=env)
    assert r.returncode == 2 and "not inside a kit workspace" in r.stderr and "--benchmark" in r.stderr
    r = kit("reproduce", RESULT, "--benchmark", str(root / f"cache/demo-{DEMO_VERSION}/data"),
            "--weights", str(root / f"cache/demo-{DEMO_VERSION}/hub"), cwd=alone, env=env)
    assert r.returncode == 0 and r.stdout.startswith("REPRODUCED"), r.stdout + r.stderr
