"""Inputs that used to hang kit, crash it with a traceback, or mean something other than they say
(issue 29, sections 4 and 5): a FIFO or device in a weights manifest's place, links that loop inside
a snapshot, a manifest nested 100k deep, a roster with a byte order mark or a 5000-digit number,
an option that names nothing, a results path that is a file, a reproduce of a checkpoint whose
language or revision is hostile, and names from checkpoints that would inject into what kit
publishes (spreadsheet formulas, Markdown and HTML, matplotlib's mathtext)."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from conftest_checkpoints import make_checkpoint, predictions_of, rewrite, seal  # noqa: E402
from inprocess import kit_in_process as kit  # noqa: E402
from test_hostile_inputs import REV, project, refused  # noqa: E402,F401
from test_stale_and_edited import sweep  # noqa: E402,F401

from kit.results import keys  # noqa: E402
from kit.weights import manifest as wm  # noqa: E402

MODEL = "org/tiny"


@pytest.fixture
def staged(tmp_path) -> Path:
    """A weights cache holding one staged snapshot and its manifest, and a roster naming it."""
    cache = tmp_path / "cache"
    snap = wm.snapshot_dir(cache, MODEL, REV)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap / "model.safetensors").write_bytes(b"w" * 1000)
    wm.write_manifest(cache, wm.build_manifest(snap, MODEL, REV, wm.local_sizes(snap), ["vllm"]))
    (tmp_path / "roster.toml").write_text(f'[[run]]\nmodel = "{MODEL}"\nrevision = "{REV}"\nbackend = "vllm"\n')
    return cache


def weights_verify(root: Path) -> subprocess.CompletedProcess:
    """`kit weights verify` of the staged cache, bounded in time: a hang fails the test, not the run."""
    return subprocess.run([sys.executable, "-m", "kit", "weights", "verify", "--roster", "roster.toml", "--cache",
                           "cache"], cwd=root, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("replace", ["fifo", "/dev/zero", "nested"])
def test_a_manifest_that_is_no_file_or_no_json_is_one_error_line(staged, replace):
    path = wm.manifest_path(staged, MODEL, REV)
    path.unlink()
    if replace == "fifo":
        os.mkfifo(path)
    elif replace == "nested":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.symlink_to(replace)
    r = weights_verify(staged.parent)   # the snapshot fails, naming its manifest: no hang, no traceback
    assert r.returncode == 1 and "Traceback" not in r.stderr and f"{path.relative_to(staged.parent)}: " in r.stdout


def test_links_that_loop_inside_a_snapshot_do_not_make_the_walk_endless(staged):
    snap = wm.snapshot_dir(staged, MODEL, REV)
    for name in "abcdefgh":                     # 8 links to the folder itself: 8^32 paths if each were followed
        (snap / name).symlink_to(".", target_is_directory=True)
    r = weights_verify(staged.parent)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert wm.local_sizes(snap) == {"config.json": 2, "model.safetensors": 1000}


def test_a_fifo_among_the_weights_is_missing_not_waited_for(staged):
    snap = wm.snapshot_dir(staged, MODEL, REV)
    (snap / "model.safetensors").unlink()
    os.mkfifo(snap / "model.safetensors")
    r = weights_verify(staged.parent)
    assert r.returncode == 1 and "model.safetensors is missing" in r.stdout + r.stderr


def test_a_roster_saved_with_a_byte_order_mark_is_read(project):
    text = (project / "roster.toml").read_text()
    (project / "roster.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    r = kit("plan", "--json", cwd=project)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("value,why", [("1" * 5000, "a value kit cannot read"),
                                       ("[" * 5000 + "]" * 5000, "nested too deeply")])
def test_a_roster_value_tomllib_cannot_hold_is_one_error_line(project, value, why):
    with open(project / "roster.toml", "a") as fh:
        fh.write(f"batch_size = {value}\n")
    refused(kit("plan", cwd=project), "roster.toml", why)


@pytest.mark.parametrize("option", [("--languages", ","), ("--languages", " , "), ("--languages", "")])
def test_an_option_that_names_nothing_is_refused_not_read_as_everything(project, option):
    refused(kit("plan", *option, cwd=project), repr(option[1]), "names nothing")


def test_an_empty_job_type_is_refused_not_read_as_the_site_without_its_night_type():
    from kit.config.sites import Site
    from kit.errors import ConfigError
    from kit.launch.run import site_for_run
    from kit.launch.site import resolve_site

    resolved = resolve_site(Site(name="n", scheduler="oar"), Path("/cfg"))
    with pytest.raises(ConfigError, match="names no job type"):
        site_for_run(resolved, None, ("",))
    assert site_for_run(resolved, None, ("besteffort",)).config.job_types == ("besteffort",)


def test_the_status_of_a_file_is_refused(project):
    (project / "results").write_text("not a folder")
    refused(kit("status", "results", cwd=project), "is not a folder of results")


def test_reproduce_refuses_a_checkpoint_whose_language_would_leave_its_folder(sweep):
    en = sweep / "results" / "en" / "org__model-a.json"
    rewrite(en, lambda d: d[keys.METADATA].update({keys.LANGUAGE: "../../outside"}))
    seal(en)
    refused(kit("reproduce", str(en), "--against", str(en), "-o", "verdicts", cwd=sweep), str(en))
    assert not (sweep / "verdicts").exists() and not list(sweep.parent.glob("reproduce-*"))


def test_reproduce_refuses_a_revision_that_is_not_a_commit(sweep):
    en = sweep / "results" / "en" / "org__model-a.json"

    def unpin(data: dict) -> None:
        data[keys.METADATA][keys.MODEL_REVISION] = "main; rm -rf ~"
        data[keys.PROVENANCE]["model"]["revision"] = "main; rm -rf ~"

    rewrite(en, unpin)
    seal(en)
    refused(kit("reproduce", str(en), "--against", str(en), "-o", "verdicts", cwd=sweep), str(en))


def test_a_release_of_a_file_lrb_cannot_read_back_is_one_error_line(sweep):
    en = sweep / "results" / "en" / "org__model-a.json"
    rewrite(en, lambda d: d[keys.METADATA].pop(keys.STARTED_AT))
    seal(en)
    r = kit("release", "results", "-o", "release", cwd=sweep)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and "started_at" in r.stdout + r.stderr, r.stderr
    assert not (sweep / "release").exists()


# ------------------------------------------------------------------ names that would inject

HOSTILE_RUNS = ["=HYPERLINK(\"http://x\",\"y\")", "org/m$^{$x", "org/`x` <script>alert(1)</script> *b* [l](u)|c"]


@pytest.fixture
def hostile_results(tmp_path) -> Path:
    """A results tree whose runs are named to break out of a CSV cell, a Markdown code span, HTML or mathtext."""
    results = tmp_path / "results"
    for run in HOSTILE_RUNS:
        make_checkpoint(results, run, "en", predictions_of([("yes", "yes"), ("no", "yes"), ("no", "no")]))
    return results


def test_hostile_run_names_are_text_in_every_report_file(hostile_results, tmp_path):
    r = kit("report", str(hostile_results), "-o", str(tmp_path / "report"), cwd=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr   # mathtext did not parse "$^{$"
    report = tmp_path / "report"
    rows = list(csv.reader(io.StringIO((report / "leaderboard.csv").read_text())))
    assert not [cell for row in rows[1:] for cell in row if cell[:1] in ("=", "+", "@")]
    assert "'=HYPERLINK(" in (report / "leaderboard.csv").read_text()
    summary = (report / "summary.md").read_text()
    assert not re.search(r"(?<!\\)<script", summary) and "\\<script\\>" in summary
    html = "".join(p.read_text() for p in report.rglob("*.html"))
    assert "<script>alert" not in html


def test_hostile_names_stay_text_in_a_release_card(sweep):
    en = sweep / "results" / "en" / "org__model-a.json"
    r = kit("release", "results", "-o", "release", "--name", "x` <img src=x onerror=alert(1)> [a](b)", cwd=sweep)
    assert r.returncode == 0, r.stderr
    card = (sweep / "release" / "README.md").read_text().split("---\n", 2)[2]   # after the YAML front matter
    assert not re.search(r"(?<!\\)<img", card) and "\\<img" in card
    assert en.exists()
