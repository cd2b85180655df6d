"""`kit demo` refuses what would stop it at its end before it starts: a report folder it may not replace,
a damaged images lock for --drift; nothing is written into the workdir then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KIT_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "kit", "demo", "--workdir", str(tmp_path / "w"), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_report_folder_kit_did_not_write_is_refused_before_the_sweep(tmp_path):
    mine = tmp_path / "w" / "results" / "report" / "mine.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n")
    r = demo(tmp_path)
    assert r.returncode == 2 and "report: holds files kit did not write" in r.stderr, r.stderr
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["results"]   # no roster, sites, logs
    assert not (tmp_path / "cache").exists() and mine.read_text() == "mine\n"


def test_a_damaged_images_lock_for_drift_is_refused_before_the_sweep(tmp_path):
    lock = tmp_path / "images.lock.json"
    lock.write_text('{"images": {"gguf": ')
    r = demo(tmp_path, "--drift", "--images-lock", str(lock))
    assert r.returncode == 2 and "not a valid images lock" in r.stderr, r.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "cache").exists()
