"""A rerun never destroys a result (docs/checkpoint-format.md, "Superseded files"): `kit shard --force` on
a pair whose checkpoint is a link keeps the link (as a link, its target untouched) and the pair's log and
signed statement in <language>/.superseded/, as it keeps a damaged checkpoint's own files. Through the
real `kit shard`, its engine stubbed (stub_worker.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_signals_and_races import STUB, make_project


@pytest.fixture
def project(tmp_path) -> Path:
    make_project(tmp_path)
    (tmp_path / "stub").mkdir()
    return tmp_path


def shard(project: Path, *extra: str, code: int = 0) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(STUB), "shard", "--roster", "roster.toml", "--results", "results",
                        "--cache-dir", "hub", "--model", "org/model-a", "--languages", "de", *extra], cwd=project,
                       env={**os.environ, "STUB_DIR": str(project / "stub")}, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == code, r.stdout[-2000:] + r.stderr[-2000:]
    return r


@pytest.mark.parametrize("target", ["truncated", "missing"])
def test_force_over_a_linked_checkpoint_keeps_the_link_its_log_and_its_envelope_aside(project, target):
    shard(project)
    ckpt = project / "results" / "de" / "org__model-a.json"
    log, envelope = ckpt.with_suffix(".mllog"), ckpt.with_name("org__model-a.intoto.jsonl")
    old_log = log.read_bytes()
    envelope.write_text("an earlier statement\n")
    pointed = project / "elsewhere" / "org__model-a.json"   # a relative link, which must still point there
    pointed.parent.mkdir()
    if target == "truncated":
        pointed.write_bytes(ckpt.read_bytes()[:100])
    before = pointed.read_bytes() if target == "truncated" else None
    ckpt.unlink()
    ckpt.symlink_to(os.path.relpath(pointed, ckpt.parent))
    text = os.readlink(ckpt)
    r = shard(project, code=1)
    assert "invalid checkpoint kept" in r.stdout + r.stderr and ckpt.is_symlink()   # never replaced unasked
    shard(project, "--force")
    assert not ckpt.is_symlink() and ckpt.is_file() and log.read_bytes() != old_log
    keep = ckpt.parent / ".superseded"
    (link,) = keep.glob("org__model-a.*.json")
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", text)
    assert os.path.abspath(os.path.join(link.parent, os.readlink(link))) == os.path.abspath(
        os.path.join(ckpt.parent, text))
    if target == "truncated":   # its target untouched
        assert link.resolve() == pointed.resolve() and pointed.read_bytes() == before
    assert link.with_suffix(".mllog").read_bytes() == old_log
    assert link.with_name(link.stem + ".intoto.jsonl").read_text() == "an earlier statement\n"
    assert not envelope.exists()   # never left beside the new checkpoint


def test_force_over_a_damaged_checkpoint_keeps_it_and_its_log_aside(project):
    shard(project)
    ckpt = project / "results" / "de" / "org__model-a.json"
    old, old_log = ckpt.read_bytes()[:100], ckpt.with_suffix(".mllog").read_bytes()
    ckpt.write_bytes(old)
    shard(project, "--force")
    (kept,) = (ckpt.parent / ".superseded").glob("org__model-a.*.json")
    assert not kept.is_symlink() and kept.read_bytes() == old and kept.with_suffix(".mllog").read_bytes() == old_log
