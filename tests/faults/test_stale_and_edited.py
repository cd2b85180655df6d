"""The fault suite (issue 12, items 1 and 2): a result that no longer matches its run is stale, and an
edited result is invalid, in every command that counts results (status, plan, run, report, check,
verify, collect). Checkpoints here are the ones a job would write (tests/unit/conftest_checkpoints.py);
the end-to-end reruns through a real engine are in test_rerun_windows.py."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from conftest_checkpoints import current_checkpoint, rewrite  # noqa: E402
from test_hostile_inputs import REV, kit, refused  # noqa: E402

from kit.config.dataset import whole_set_sha256  # noqa: E402
from kit.config.kinds import load_benchmark  # noqa: E402
from kit.config.roster import load_roster  # noqa: E402
from kit.demo.dataset import write_demo_benchmark  # noqa: E402
from kit.results.metrics import compute_metrics  # noqa: E402

RUN = "org/model-a"
OTHER_REV = "fedcba9876543210fedcba9876543210fedcba98"
BASE = {"model": f'"{RUN}"', "revision": f'"{REV}"', "backend": '"transformers-5.17"', "dtype": '"float32"',
        "max_new_tokens": "64", "options": '{ threshold = 0.5, attention_heads = 8 }'}


def write_roster(root: Path, **changes: str) -> None:
    fields = {**BASE, **changes}
    body = "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)
    (root / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\n{body}')


@pytest.fixture
def sweep(tmp_path) -> Path:
    """A workspace whose two pairs (de, en) hold the checkpoints a job would have written."""
    write_demo_benchmark(tmp_path / "data")
    write_roster(tmp_path)
    (tmp_path / "sites.toml").write_text('[site.local]\nscheduler = "local"\nruntime = "host"\n')
    roster, _ = load_roster(tmp_path / "roster.toml")
    bench = load_benchmark(tmp_path / "data")
    for lang in ("de", "en"):
        current_checkpoint(tmp_path / "results", roster.run[0], lang, bench)
    return tmp_path


def repin(root: Path) -> None:
    """Record the language files' digests as they are now in the manifest (a new data release)."""
    manifest = root / "data" / "translations" / "manifest.json"
    body = json.loads(manifest.read_text())
    for lang, entry in body["files"].items():
        entry["sha256"] = hashlib.sha256((manifest.parent / entry["path"]).read_bytes()).hexdigest()
    body["whole_set_sha256"] = whole_set_sha256({lang: e["sha256"] for lang, e in body["files"].items()})
    manifest.write_text(json.dumps(body, indent=2))


def states(root: Path, *extra: str) -> dict[str, dict]:
    r = kit("status", "results", "--languages", "de,en", "--json", *extra, cwd=root)
    assert r.returncode == 0, r.stderr
    return {p["language"]: p for p in json.loads(r.stdout)["data"]["pairs"]}


def test_the_job_written_checkpoints_are_complete_to_start_with(sweep):
    assert {lang: p["state"] for lang, p in states(sweep).items()} == {"de": "complete", "en": "complete"}


# ------------------------------------------------------------------ 1. stale: the run or data changed since

@pytest.mark.parametrize("change,key", [
    ({"revision": f'"{OTHER_REV}"'}, "model_revision"),
    ({"backend": '"transformers-5.11"'}, "backend"),
    ({"dtype": '"bfloat16"'}, "dtype"),
    ({"max_new_tokens": "65"}, "max_new_tokens"),
    ({"seed": "7"}, "seed"),
    ({"options": "{ threshold = 0.6, attention_heads = 8 }"}, "options"),
    ({"trust_remote_code": "true"}, "trust_remote_code"),
    ({"task": '"score"'}, "task"),
])
def test_a_changed_run_makes_its_checkpoints_stale(sweep, change, key):
    write_roster(sweep, **change)
    got = states(sweep)
    assert {lang: p["state"] for lang, p in got.items()} == {"de": "stale", "en": "stale"}
    assert f"metadata.{key} is" in " ".join(got["de"]["reasons"])


@pytest.mark.parametrize("change", [{"batch_size": "64"}, {"options": "{ threshold = 0.5, attention_heads = 64 }"}])
def test_a_throughput_setting_does_not_make_a_result_stale(sweep, change):
    write_roster(sweep, **change)
    assert {p["state"] for p in states(sweep).values()} == {"complete"}


def test_an_edited_prompt_file_makes_every_pair_stale(sweep):
    prompt = sweep / "data" / "prompt_generate.txt"
    prompt.write_text(prompt.read_text() + "Answer with one word.\n")
    got = states(sweep)
    assert {p["state"] for p in got.values()} == {"stale"}
    assert "metadata.prompt_sha256 is" in got["en"]["reasons"][0]


def test_a_new_language_file_makes_only_its_pairs_stale(sweep):
    csv = sweep / "data" / "translations" / "de" / "v3-final-de.csv"
    csv.write_bytes(csv.read_bytes().replace(b"Das Dorf", b"Ein Dorf", 1))
    repin(sweep)
    got = states(sweep)
    assert (got["de"]["state"], got["en"]["state"]) == ("stale", "complete")
    assert "metadata.benchmark_sha256 is" in got["de"]["reasons"][0]


def test_plan_and_a_dry_run_show_stale_pairs_and_plan_to_rerun_them(sweep):
    write_roster(sweep, revision=f'"{OTHER_REV}"')
    r = kit("plan", "--languages", "de,en", cwd=sweep)
    assert r.returncode == 0 and "0 complete, 0 pending, 2 stale, 0 invalid" in r.stdout, r.stdout + r.stderr
    assert "stale    " in r.stdout and "model_revision" in r.stdout
    r = kit("run", "--site", "local", "--languages", "de,en", "--dry-run", "--allow-unpinned", cwd=sweep)
    assert r.returncode == 0, r.stderr
    assert "0 complete, 2 pending (2 of them stale" in r.stdout


def test_a_report_leaves_stale_results_out_unless_asked_and_then_says_so(sweep):
    write_roster(sweep, revision=f'"{OTHER_REV}"')
    refused(kit("report", "results", cwd=sweep), "no complete checkpoint")
    r = kit("report", "results", "--include-stale", "--json", cwd=sweep)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["pairs"] == 2 and data["stale_included"] and len(data["stale"]) == 2
    summary = (sweep / data["files"]["summary"]).read_text()
    assert "**2 stale checkpoints are counted (--include-stale)" in summary
    assert summary.count("STALE, counted because of --include-stale: metadata.model_revision is") == 2


def test_a_report_counts_current_results_and_names_the_stale_ones(sweep):
    rewrite(sweep / "results" / "en" / "org__model-a.json", lambda d: d["metadata"].update(seed=3))  # another seed
    r = kit("report", "results", cwd=sweep)
    assert r.returncode == 0, r.stderr
    assert "1 pairs counted; 1 stale (not counted" in r.stdout
    summary = (sweep / "results" / "report" / "summary.md").read_text()
    assert "`en/org__model-a.json` (stale): metadata.seed is 3; the run now has 0" in summary


def test_check_fails_a_stale_tree(sweep):
    write_roster(sweep, dtype='"bfloat16"')
    r = kit("check", "results", "--languages", "de,en", cwd=sweep)
    assert r.returncode == 1 and r.stdout.count("FAIL [checkpoints_current]") == 2, r.stdout


def test_collect_refuses_a_stale_site_tree(sweep):
    write_roster(sweep, max_new_tokens="8")
    r = kit("collect", "--from", "a=results", "-o", "release", "--languages", "de,en", cwd=sweep)
    assert r.returncode != 0 and "stale: a:" in r.stdout + r.stderr
    assert not (sweep / "release").exists()
    # under --json a refused merge is a finding, as verify's FAIL is: failed, exit 1, the problems in data
    # and on stderr, as without --json
    r = kit("collect", "--from", "a=results", "-o", "release", "--languages", "de,en", "--json", cwd=sweep)
    body = json.loads(r.stdout)
    assert r.returncode == 1 and body["status"] == "failed" and body["errors"] == []
    assert any("stale: a:" in p for p in body["data"]["problems"]) and "stale: a:" in r.stderr
    assert "collect refused" in r.stderr and not (sweep / "release").exists()


# ------------------------------------------------------------------ 2. edited: the file is not what the job wrote

def flip_expected_and_recompute(data: dict) -> None:
    """A careful forgery: flip the first expected label and recompute the metrics to match."""
    first = data["predictions"][0]
    first["expected"] = "no" if first["expected"] == "yes" else "yes"
    data["metrics"] = compute_metrics(data["predictions"])


def test_flipped_expected_labels_are_invalid_in_status_verify_and_check(sweep):
    path = rewrite(sweep / "results" / "de" / "org__model-a.json", flip_expected_and_recompute)
    got = states(sweep)
    assert got["de"]["state"] == "invalid" and "is not the benchmark's" in got["de"]["reasons"][0]
    r = kit("verify", str(path), cwd=sweep)   # roster.toml here: its benchmark holds the labels
    assert r.returncode == 1 and "predictions[0].expected" in r.stdout, r.stdout
    r = kit("verify", str(path), "--benchmark", str(sweep / "data"), cwd=sweep.parent)
    assert r.returncode == 1 and "is not the benchmark's" in r.stdout, r.stdout
    r = kit("check", "results", "--languages", "de,en", cwd=sweep)
    assert r.returncode == 1 and "FAIL [checkpoints_valid]" in r.stdout


@pytest.mark.parametrize("key,value", [
    ("model_revision", OTHER_REV), ("benchmark_sha256", "0" * 64), ("backend", "vllm"), ("model_id", "org/other"),
    ("prompt_sha256", "1" * 64), ("manifest_sha256", "2" * 64),
])
def test_an_identity_field_edited_in_metadata_alone_is_invalid(sweep, key, value):
    path = rewrite(sweep / "results" / "en" / "org__model-a.json", lambda d: d["metadata"].update({key: value}))
    got = states(sweep)
    assert got["en"]["state"] == "invalid", got["en"]
    assert f"metadata.{key}" in got["en"]["reasons"][0] and "edited" in got["en"]["reasons"][0]
    r = kit("verify", str(path), cwd=sweep.parent)   # on its own, without any benchmark
    assert r.returncode == 1 and "the file was edited after the job wrote it" in r.stdout


def test_a_task_edited_in_the_checkpoint_no_longer_counts(sweep):
    rewrite(sweep / "results" / "en" / "org__model-a.json", lambda d: d["metadata"].update(task="score"))
    got = states(sweep)["en"]   # a generate run's text answers in a file that now claims a score run
    assert got["state"] == "invalid" and "parse_mode is 'exact' in a 'score' run" in got["reasons"][0], got


def test_a_new_language_file_is_stale_not_forged_even_though_its_labels_changed(sweep):
    """Labels are only compared with the data the checkpoint was run on: a corrected label file
    makes the old result stale (rerun), it does not brand it a forgery."""
    csv = sweep / "data" / "translations" / "de" / "v3-final-de.csv"
    lines = csv.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    row = lines[1].rstrip("\n").split(",")
    at = header.index("label")
    row[at] = "no" if row[at] == "yes" else "yes"
    lines[1] = ",".join(row) + "\n"
    csv.write_text("".join(lines))
    repin(sweep)
    assert states(sweep)["de"]["state"] == "stale"


def test_status_shows_one_row_per_run_then_only_the_pairs_that_need_a_look(sweep):
    rewrite(sweep / "results" / "en" / "org__model-a.json", lambda d: d["metadata"].update(seed=3))
    r = kit("status", "results", "--languages", "de,en", cwd=sweep)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "org/model-a" in line]
    assert len(rows) == 2 and "de" not in rows[0].split() and "en" in rows[1].split() and "stale" in rows[1]
    full = kit("status", "results", "--languages", "de,en", "--pairs", cwd=sweep).stdout
    assert len([line for line in full.splitlines() if "org/model-a" in line]) == 2 and "complete" in full
