"""The evidence policy (kit.results.evidence, docs/checkpoint-format.md "What counts as evidence"), held
to every command that counts, shows or publishes a checkpoint. Each case is one issue 29 saw pass
somewhere: a kit checkpoint without its log or provenance, a verdict re-read dodged by claiming
another parse mode, a truncated answer keeping its verdict, a hand-edited cache, a NaN score."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from conftest_checkpoints import rewrite, seal  # noqa: E402
from inprocess import kit_in_process as kit  # noqa: E402
from test_hostile_inputs import refused  # noqa: E402
from test_stale_and_edited import sweep  # noqa: E402,F401

from kit.results import keys
from kit.results.cache import RACY_SECONDS
from kit.results.evidence import LEGACY_NOTICE, NOT_PROVEN
from kit.results.metrics import compute_metrics

EN = "results/en/org__model-a.json"


def status_of(root: Path, *env: tuple[str, str]) -> dict:
    r = kit("status", "results", "--languages", "de,en", "--json", cwd=root, env=dict(env))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["data"]


def states(root: Path) -> dict[str, str]:
    return {p["language"]: p["state"] for p in status_of(root)["pairs"]}


def counted_everywhere_but(root: Path, why: str) -> None:
    """The en checkpoint is not counted by status, verify, report, check, collect, release or export,
    each naming `why`."""
    assert states(root) == {"de": "complete", "en": "invalid"}
    r = kit("verify", EN, cwd=root)
    assert r.returncode == 1 and why in r.stdout, r.stdout + r.stderr
    r = kit("check", "results", "--languages", "de,en", cwd=root)
    assert r.returncode == 1 and "FAIL" in r.stdout
    r = kit("collect", "--from", "a=results", "--languages", "de,en", "-o", "collected", cwd=root)
    assert r.returncode == 1 and why in r.stderr and not (root / "collected").exists(), r.stderr
    r = kit("release", "results", "-o", "release", cwd=root)   # an invalid checkpoint stops a release
    assert r.returncode != 0 and why in r.stderr and not (root / "release").exists(), r.stderr
    r = kit("export", "lrb", "results", "-o", "exported", cwd=root)
    assert r.returncode == 1 and why in r.stdout and not (root / "exported").exists()
    r = kit("report", "results", "-o", "report", cwd=root)   # written, with the file listed as not counted
    assert r.returncode == 1 and why in r.stderr
    assert "1 pairs counted; 1 files not counted" in (root / "report" / "summary.md").read_text()


def test_a_kit_checkpoint_whose_log_was_deleted_is_counted_nowhere(sweep):
    (sweep / EN).with_suffix(".mllog").unlink()
    counted_everywhere_but(sweep, "log org__model-a.mllog is missing")


def test_a_kit_checkpoint_whose_log_is_a_link_is_counted_nowhere(sweep, tmp_path_factory):
    log = (sweep / EN).with_suffix(".mllog")
    elsewhere = tmp_path_factory.mktemp("logs") / "copy.mllog"
    elsewhere.write_bytes(log.read_bytes())
    log.unlink()
    log.symlink_to(elsewhere)
    counted_everywhere_but(sweep, "not a regular file")


def test_a_log_that_is_a_folder_is_named_as_one(sweep):
    log = (sweep / EN).with_suffix(".mllog")
    log.unlink()
    log.mkdir()
    r = kit("verify", EN, cwd=sweep)
    assert r.returncode == 1 and "its log org__model-a.mllog is a folder, not a regular file" in r.stdout, r.stdout


def test_a_kit_checkpoint_whose_log_this_user_cannot_read_is_no_evidence(sweep):
    """check, export and collect read the log and refuse the pair; status, verify and report, which only
    look for it, must not count it either. Run without the power to read any file (root's DAC capabilities
    dropped, as a user's kit runs)."""
    import shutil
    import subprocess

    log = (sweep / EN).with_suffix(".mllog")
    log.chmod(0)
    argv = [sys.executable, "-m", "kit", "status", "results", "--languages", "de,en", "--json"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run kit as root without reading every file"
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search",
                "--inh-caps=-dac_override,-dac_read_search", *argv]
    try:
        r = subprocess.run(argv, cwd=sweep, capture_output=True, text=True, timeout=120)
    finally:
        log.chmod(0o644)
    assert r.returncode == 0, r.stderr
    pairs = {p["language"]: p for p in json.loads(r.stdout)["data"]["pairs"]}
    assert pairs["de"]["state"] == "complete" and pairs["en"]["state"] == "invalid"
    assert any("log org__model-a.mllog cannot be read by this user" in why for why in pairs["en"]["reasons"])
    assert states(sweep) == {"de": "complete", "en": "complete"}   # readable again: evidence again


@pytest.mark.parametrize("also_log", [False, True], ids=["log kept", "log deleted too"])
def test_a_kit_checkpoint_without_its_provenance_is_counted_nowhere(sweep, also_log):
    rewrite(sweep / EN, lambda d: d.pop(keys.PROVENANCE))
    seal(sweep / EN)   # as if its job had logged it so: the block itself is what is missing
    if also_log:
        (sweep / EN).with_suffix(".mllog").unlink()
    counted_everywhere_but(sweep, "without its provenance block")


def forge_scores(data: dict) -> None:
    """Every generated answer claimed as a score whose yes-score matches the label, every verdict right."""
    for item in data[keys.PREDICTIONS]:
        item[keys.PREDICTED] = item[keys.EXPECTED]
        item[keys.PARSE_MODE] = keys.PARSE_SCORE
        item[keys.SCORE_YES] = 1.0 if item[keys.EXPECTED] == keys.YES else 0.0
    data[keys.METRICS] = compute_metrics(data[keys.PREDICTIONS])


def test_claiming_score_parsing_for_generated_answers_does_not_dodge_the_re_read(sweep):
    path = sweep / EN
    rewrite(path, lambda d: [item.update({keys.RAW_OUTPUT: "no idea"}) for item in d[keys.PREDICTIONS]])
    rewrite(path, forge_scores)
    seal(path)   # the log resealed: only the re-read can tell
    counted_everywhere_but(sweep, "parse_mode is 'score' in a 'generate' run")


def test_a_truncated_answer_never_keeps_its_verdict(sweep):
    def truncate_first(data: dict) -> None:
        first = data[keys.PREDICTIONS][0]
        first.update({keys.TRUNCATED: True, keys.RAW_OUTPUT: first[keys.EXPECTED]})   # a verdict it would read
        data[keys.METRICS] = compute_metrics(data[keys.PREDICTIONS])

    rewrite(sweep / EN, truncate_first)
    seal(sweep / EN)
    r = kit("verify", EN, cwd=sweep)
    assert r.returncode == 1 and "predictions[0].predicted is not the 'unparsed'" in r.stdout, r.stdout


@pytest.mark.parametrize("value", [math.nan, math.inf, "0.9", None])
def test_a_score_that_is_not_a_finite_number_is_no_verdict(tmp_path, value):
    from conftest_checkpoints import make_checkpoint, predictions_of

    from kit.results.checkpoint import validate_checkpoint

    preds = predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO)])
    for item, yes in zip(preds, (value, 0.1)):
        item.update({keys.PARSE_MODE: keys.PARSE_SCORE, keys.SCORE_YES: yes, keys.RAW_OUTPUT: "0.5"})
    path = make_checkpoint(tmp_path, "org/scorer", "en", preds)
    rewrite(path, lambda d: d[keys.METADATA].update({keys.TASK: keys.TASK_SCORE}))
    seal(path)
    state = validate_checkpoint(path)
    assert state.state == "invalid" and "score_yes" in "; ".join(state.reasons), state.reasons


def settled() -> None:
    """Wait until the sweep's files are older than the cache's racy window (a fresh file is not cached)."""
    time.sleep(RACY_SECONDS + 0.2)


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_a_hand_edited_cache_is_not_believed_by_status_or_report(sweep, tmp_path_factory):
    settled()
    cache = tmp_path_factory.mktemp("cache")
    env = ("KIT_CACHE_DIR", str(cache))
    assert status_of(sweep, env)["from_cache"] == 0
    assert status_of(sweep, env)["from_cache"] == 2          # said, not hidden
    r = kit("report", "results", "-o", "report", cwd=sweep, env=dict([env]))
    assert r.returncode == 0
    real = (sweep / "report" / "leaderboard.csv").read_text()
    (sweep / EN).with_suffix(".mllog").unlink()               # the file is no longer evidence...
    for file in (cache / "checkpoints").glob("*.json"):        # ...but the cache says complete and F1 0.99
        text = file.read_text().replace('"invalid"', '"complete"').replace('"f1":1.0', '"f1":0.99')
        file.write_text(text.replace('"complete"', '"queued"', 1))
    assert states(sweep) == {"de": "complete", "en": "invalid"}
    data = status_of(sweep, env)
    assert {p["language"]: p["state"] for p in data["pairs"]} == {"de": "complete", "en": "invalid"}
    r = kit("report", "results", "-o", "report", cwd=sweep, env=dict([env]))
    assert r.returncode == 1 and "0.99" not in (sweep / "report" / "leaderboard.csv").read_text()
    assert (sweep / "report" / "leaderboard.csv").read_text() != real   # en is no longer counted


def test_a_cached_complete_verdict_does_not_outlive_its_log(sweep, tmp_path_factory):
    env = ("KIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    status_of(sweep, env)
    (sweep / EN).with_suffix(".mllog").unlink()
    assert {p["language"]: p["state"] for p in status_of(sweep, env)["pairs"]}["en"] == "invalid"


@pytest.mark.slow   # kit in subprocesses: 2.2 s
def test_a_cache_key_others_can_read_turns_the_cache_off(sweep, tmp_path_factory):
    settled()
    cache = tmp_path_factory.mktemp("cache")
    env = ("KIT_CACHE_DIR", str(cache))
    status_of(sweep, env)
    os.chmod(cache / "checkpoints" / ".key", 0o644)
    assert status_of(sweep, env)["from_cache"] == 0


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
@pytest.mark.parametrize("value,off", [("1", True), ("true", True), ("0", False), ("false", False), ("", False)])
def test_kit_no_cache_reads_as_people_write_it(sweep, tmp_path_factory, value, off):
    settled()
    env = [("KIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache"))), ("KIT_NO_CACHE", value)]
    status_of(sweep, *env)
    assert status_of(sweep, *env)["from_cache"] == (0 if off else 2)


def test_a_kit_no_cache_value_that_is_neither_is_refused(sweep):
    refused(kit("status", "results", cwd=sweep, env={"KIT_NO_CACHE": "sometimes"}), "KIT_NO_CACHE")


def test_an_lrb_file_is_shown_as_legacy_evidence(tmp_path):
    archive = Path(__file__).parents[1] / "fixtures" / "lrb" / "results" / "archive" / "historical-single-language"
    source = sorted(archive.glob("*.json"))[0]
    (tmp_path / "results" / "fr").mkdir(parents=True)
    (tmp_path / "results" / "fr" / source.name).write_bytes(source.read_bytes())
    r = kit("status", "results", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [pair] = json.loads(r.stdout)["data"]["pairs"]
    assert pair["state"] == "complete" and LEGACY_NOTICE in pair["notices"]
    r = kit("verify", "results", cwd=tmp_path)
    assert r.returncode == 0 and "legacy evidence" in r.stdout


def test_verify_and_check_say_what_a_pass_does_not_prove(sweep):
    r = kit("verify", "results", cwd=sweep)
    assert r.returncode == 0 and r.stdout.rstrip().endswith(NOT_PROVEN)
    r = kit("check", "results", "--languages", "de,en", cwd=sweep)
    assert r.stdout.rstrip().endswith(NOT_PROVEN), r.stdout
    r = kit("check", "results", "--languages", "de,en", "--json", cwd=sweep)
    assert json.loads(r.stdout)["data"]["not_proven"] == NOT_PROVEN


def test_kit_check_on_every_core_finds_what_each_rule_finds_and_holds_no_predictions(sweep, monkeypatch):
    from kit.config.project import load_project
    from kit.plan import select_pairs
    from kit.results import check, parallel

    # a log that fails the checker's rules and a checkpoint edited after its log: both pair rules find something
    logs = sorted((sweep / "results").rglob("*.mllog"))
    logs[0].write_text("".join(line for line in logs[0].read_text().splitlines(keepends=True) if "run_start" not in line))
    edited = sorted((sweep / "results").rglob("*.json"))[-1]
    edited.write_bytes(edited.read_bytes() + b"\n")   # the same JSON, not the bytes its job logged
    monkeypatch.setattr(parallel, "MIN_FILES", 2)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.chdir(sweep)
    project = load_project(sweep / "roster.toml", None)
    runs = project.roster.select(())
    inp, found = check.run_checks(sweep / "results", project.benchmark, runs, select_pairs(runs, project.benchmark, None),
                                  frozenset())
    assert all(keys.PREDICTIONS not in (st.data or {}) for st in inp.checkpoints.values())
    for rule in check.RULES:
        if rule.name in check.PAIR_RULES:
            assert found[rule.name] == rule.check(inp), rule.name
    assert found["mllog_compliant"] and found["log_matches_checkpoint"]


def test_reproduce_refuses_a_checkpoint_edited_since_its_job_logged_it(sweep):
    """An edited provenance (the hardware, the job, the image digest a rerun would look for) is caught by
    the log's sha256 before anything is rerun, as kit check catches it; verify by policy does not."""
    rewrite(sweep / EN, lambda d: d[keys.PROVENANCE].update(hardware={"gpu": "H100", "count": 8}))
    r = kit("reproduce", EN, cwd=sweep)
    assert r.returncode == 2 and "its job logged" in r.stderr and "not a sound checkpoint" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
