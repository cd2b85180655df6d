"""The fault suite (issue 12, items 1, 2 and 6) through a real engine: `kit shard` on a tiny local
Llama (transformers, this venv) reruns a stale pair and keeps the old result aside; `kit check`
finds a byte edited after the job wrote the file (the checkpoint's sha256 in its log's run_stop);
a kill -9 between the log and the checkpoint leaves a whole log and no checkpoint, and the next
run fills the pair so that `kit check` passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.demo.backends import roster_text, write_backend_benchmark
from kit.demo.model import build_tiny_llama

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# `kit shard`, except that the process kills itself (SIGKILL) the moment it would write a checkpoint:
# after the pair's log is committed, before the checkpoint exists.
KILLED_AT_CHECKPOINT = """
import os, signal, sys
import kit.worker.shard as shard
def killed(path, data):
    if str(path).endswith(".json"):
        os.kill(os.getpid(), signal.SIGKILL)
shard.write_bytes_atomic = killed
from kit.cli.main import main
sys.argv = ["kit", *sys.argv[1:]]
main()
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("rerun")
    cache = root / "hub"
    model_id, revision = build_tiny_llama(cache)
    bench = write_backend_benchmark(root / "bench")

    def roster(**settings) -> None:
        run = {"model": model_id, "revision": revision, "backend": "transformers-5.17", "dtype": "float32",
               "batch_size": 8, "max_new_tokens": 4, "languages": ["en"], **settings}
        (root / "roster.toml").write_text(roster_text([run], bench))

    roster()
    return root, cache, roster, root / "results" / "en" / f"{model_id.replace('/', '__')}.json"


def kit(root: Path, *args: str, script: str | None = None) -> subprocess.CompletedProcess:
    head = ["-c", script] if script else ["-m", "kit"]
    return subprocess.run([sys.executable, *head, *args], cwd=root, env=ENV, capture_output=True, text=True, timeout=900)


def shard(root: Path, cache: Path, script: str | None = None) -> subprocess.CompletedProcess:
    return kit(root, "shard", "--roster", "roster.toml", "--results", "results", "--cache-dir", str(cache), script=script)


def run_stop(log: Path) -> dict:
    lines = [json.loads(x.split(" ", 1)[1]) for x in log.read_text().splitlines() if x.startswith(":::MLLOG")]
    return next(x for x in lines if x["key"] == "run_stop")["metadata"]


def test_a_job_logs_its_checkpoint_digest_and_check_finds_a_later_edit(sweep):
    root, cache, _, ckpt = sweep
    r = shard(root, cache)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = kit(root, "check", "results")
    assert r.returncode == 0 and "PASS: 1 checkpoints" in r.stdout, r.stdout + r.stderr
    original = ckpt.read_bytes()
    data = json.loads(original)
    data["predictions"][0]["raw_output"] += " "   # labels and metrics unchanged: valid, but not what the job wrote
    ckpt.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    try:
        assert kit(root, "verify", str(ckpt)).returncode == 0
        r = kit(root, "check", "results")
        assert r.returncode == 1 and "FAIL [log_matches_checkpoint]" in r.stdout
        assert "the file was changed after the job wrote it" in r.stdout
    finally:
        ckpt.write_bytes(original)


def test_a_stale_pair_is_rerun_and_the_old_result_kept_aside(sweep):
    root, cache, roster, ckpt = sweep
    before = ckpt.read_bytes()
    roster(max_new_tokens=6)
    r = shard(root, cache)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "1 complete" not in r.stdout and "stale checkpoint, rerun" in r.stdout + r.stderr
    assert json.loads(ckpt.read_text())["metadata"]["max_new_tokens"] == 6
    kept = sorted((ckpt.parent / ".superseded").glob(f"{ckpt.stem}.*.json"))
    assert [p.read_bytes() for p in kept] == [before] and kept[0].with_suffix(".mllog").is_file()
    r = kit(root, "check", "results")
    assert r.returncode == 0, r.stdout
    assert "0 to run" in shard(root, cache).stdout + shard(root, cache).stderr   # complete again: nothing reruns


def test_a_kill_between_log_and_checkpoint_leaves_a_pending_pair_the_next_run_fills(sweep):
    root, cache, roster, ckpt = sweep
    roster(max_new_tokens=5)
    r = shard(root, cache, script=KILLED_AT_CHECKPOINT)
    assert r.returncode == -9, r.stdout[-2000:] + r.stderr[-2000:]
    log = ckpt.with_suffix(".mllog")
    assert not ckpt.exists() and run_stop(log)["status"] == "success"   # a whole log, and no checkpoint
    status = json.loads(kit(root, "status", "results", "--json").stdout)["data"]["pairs"]
    assert [p["state"] for p in status] == ["pending"]
    r = shard(root, cache)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = kit(root, "check", "results")
    assert r.returncode == 0 and "PASS: 1 checkpoints" in r.stdout, r.stdout
