"""Atomic checkpoint store: a kill at any instant leaves the old file or none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kit.errors import ConfigError
from kit.config.names import run_file_stem, run_from_stem
from kit.results.store import checkpoint_path, checkpoint_paths, dumps_checkpoint, write_checkpoint


def test_path_layout_and_round_trip(tmp_path):
    p = checkpoint_path(tmp_path, "LiquidAI/LFM2.5-2.6B@sglang", "fr")
    assert p == tmp_path / "fr" / "LiquidAI__LFM2.5-2.6B@sglang.json"
    assert run_from_stem(run_file_stem("org/name@v")) == "org/name@v"


@pytest.mark.parametrize("run,lang", [("../x", "fr"), ("a/b", ".."), ("a/b", "f/r"), ("..", "fr"), ("a/b", "")])
def test_unsafe_names_are_refused(tmp_path, run, lang):
    with pytest.raises(ConfigError):
        checkpoint_path(tmp_path, run, lang)


def test_many_paths_at_once_are_each_pair_s_path_in_order(tmp_path):
    pairs = [("org/b", "fr"), ("org/a@v", "fr"), ("org/b", "en"), ("org/a@v", "en")]
    assert checkpoint_paths(tmp_path, pairs) == [checkpoint_path(tmp_path, run, lang) for run, lang in pairs]


@pytest.mark.parametrize("run,lang", [("../x", "fr"), ("a/b", ".."), ("a/b", "f/r"), ("..", "fr"), ("a/b", "")])
def test_many_paths_refuse_an_unsafe_name_among_safe_ones(tmp_path, run, lang):
    with pytest.raises(ConfigError):
        checkpoint_paths(tmp_path, [("org/a", "en"), (run, lang)])


def test_canonical_text_sorted_utf8_newline(tmp_path):
    data = {"b": 1, "a": {"z": "日本", "y": 2}}
    text = dumps_checkpoint(data)
    assert text.endswith("}\n") and "日本" in text
    assert text.index('"a"') < text.index('"b"')
    write_checkpoint(tmp_path / "x.json", data)
    assert (tmp_path / "x.json").read_text(encoding="utf-8") == text


WRITER = r"""
import sys, time
from pathlib import Path
from kit.results.store import write_checkpoint
path = Path(sys.argv[1]); n = 0
big = "x" * 200_000
while True:
    n += 1
    write_checkpoint(path, {"generation": n, "payload": big, "check": n * 7})
"""


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_kill_minus_nine_never_leaves_a_partial_file(tmp_path):
    target = tmp_path / "fr" / "org__m.json"
    write_checkpoint(target, {"generation": 0, "payload": "", "check": 0})
    for attempt in range(8):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)])
        time.sleep(0.3 + 0.07 * attempt)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        data = json.loads(target.read_text(encoding="utf-8"))  # parses: old or new, never half
        assert data["check"] == data["generation"] * 7
    leftovers = [p for p in target.parent.iterdir() if p.name != target.name]
    # temporary files of a killed writer may remain, but are never mistaken for checkpoints
    assert all(p.name.startswith(".") and p.name.endswith(".tmp") for p in leftovers)


@pytest.mark.parametrize("absolute", [True, False])
def test_a_linked_checkpoint_is_set_aside_as_a_link_with_its_log_and_envelope(tmp_path, absolute):
    """A rerun keeps what stood at a checkpoint's name: a link stays a link to the same file (never
    followed, its target untouched), and the pair's log and signed statement go with it."""
    from kit.results.store import envelope_path, mllog_path, set_aside

    target = tmp_path / "elsewhere" / "x.json"
    target.parent.mkdir()
    target.write_text("garbage")
    ckpt = checkpoint_path(tmp_path / "results", "org/m", "de")
    ckpt.parent.mkdir(parents=True)
    ckpt.symlink_to(target if absolute else os.path.relpath(target, ckpt.parent))
    mllog_path(ckpt).write_text(":::MLLOG old\n")
    envelope_path(ckpt).write_text("old statement\n")
    kept = set_aside(ckpt)
    assert kept is not None and kept.parent == ckpt.parent / ".superseded"
    assert kept.is_symlink() and kept.resolve() == target.resolve() and target.read_text() == "garbage"
    assert mllog_path(kept).read_text() == ":::MLLOG old\n" and envelope_path(kept).read_text() == "old statement\n"
    assert not any(os.path.lexists(p) for p in (ckpt, mllog_path(ckpt), envelope_path(ckpt)))
