"""`kit collect`: three site trees merge atomically, or every problem is listed."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_helpers import kit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from conftest_checkpoints import seal  # noqa: E402

from kit.results.store import iter_checkpoint_files  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def sites(first_demo, demo_env, tmp_path):
    """The demo's 6 checkpoints split over three site trees (2 each)."""
    root, env = demo_env
    demo = root / "kit-demo"
    files = iter_checkpoint_files(demo / "results")
    for i, f in enumerate(files):
        site = tmp_path / f"site{i % 3}"
        dst = site / f.parent.name / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
        shutil.copy(f.with_suffix(".mllog"), dst.with_suffix(".mllog"))
    shutil.copy(demo / "roster.toml", tmp_path / "roster.toml")
    return tmp_path, env


def collect(d, env, *extra):
    args = ["collect", "--from", "a=site0", "--from", "b=site1", "--from", "c=site2", "-o", "merged", *extra]
    return kit(*args, cwd=d, env=env)


def test_clean_sites_merge(sites):
    d, env = sites
    r = collect(d, env)
    assert r.returncode == 0, r.stderr
    assert "collected 6 pairs" in r.stdout
    assert len(iter_checkpoint_files(d / "merged")) == 6
    assert len(list((d / "merged").glob("*/*.mllog"))) == 6
    assert not list(d.glob(".merged.*"))
    r = kit("check", "merged", "--roster", "roster.toml", cwd=d, env=env)
    assert r.returncode == 0, r.stdout
    r = collect(d, env)
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    assert collect(d, env, "--force").returncode == 0


def test_every_problem_is_listed_and_nothing_written(sites):
    d, env = sites
    f = iter_checkpoint_files(d / "site0")[0]
    dup = d / "site1" / f.parent.name / f.name
    dup.parent.mkdir(parents=True, exist_ok=True)
    dup.write_text(json.dumps(json.loads(f.read_text())))  # the same pair, other bytes (an identical copy counts once)
    seal(dup)                                             # and the log its job wrote of them
    other = d / "site2" / "en" / "org__other-model.json"  # a pair of another plan
    data = json.loads(iter_checkpoint_files(d / "site2")[0].read_text())
    data["metadata"]["run"] = data["metadata"]["model_id"] = data["provenance"]["model"]["id"] = "org/other-model"
    data["metadata"]["language"] = "en"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text(json.dumps(data))
    seal(other)
    victim = iter_checkpoint_files(d / "site2")[-1]
    victim.unlink()                                       # a missing pair
    r = collect(d, env)
    assert r.returncode == 1
    err = r.stderr
    assert "duplicate:" in err and "outside the plan: org/other-model [en]" in err and "missing:" in err
    assert "nothing written" in err and not (d / "merged").exists()


def test_interrupted_collect_leaves_output_absent_or_complete(sites):
    d, env = sites
    for attempt in range(5):
        p = subprocess.Popen([sys.executable, "-m", "kit", "collect", "--from", "a=site0", "--from", "b=site1",
                              "--from", "c=site2", "-o", "merged", "--force"], cwd=d, env=env)
        time.sleep(0.4 + 0.15 * attempt)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if (d / "merged").exists():
            assert len(iter_checkpoint_files(d / "merged")) == 6
