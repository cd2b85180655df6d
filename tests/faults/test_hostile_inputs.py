"""The fault suite (issue 12, items 3 to 5): hostile files and names, and configs that must be refused,
each through the CLI as a user meets it. Every case: one `kit: error:` line (or a FAIL line naming
the file), the documented exit code, no traceback, nothing written outside results, no source lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.demo.dataset import write_demo_benchmark
from kit.launch.schedulers.base import KNOWN_SCHEDULERS

REV = "0123456789abcdef0123456789abcdef01234567"
DEEP = "[" * 200_000 + "]" * 200_000
HUGE = "9" * 5000


def kit(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def refused(r: subprocess.CompletedProcess, *words: str, code: int = 2) -> None:
    """Exit `code`, one error line naming every word, no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, r.stderr
    for word in words:
        assert word in errors[0], (word, errors[0])


@pytest.fixture
def project(tmp_path) -> Path:
    """The demo benchmark, a roster of one run, a local site."""
    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "data"\n\n[[run]]\nmodel = "org/model-a"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n')
    (tmp_path / "sites.toml").write_text('[site.local]\nscheduler = "local"\nruntime = "host"\n')
    return tmp_path


def roster_with(project: Path, run_lines: str) -> None:
    (project / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nrevision = "{REV}"\n'
                                         f'backend = "transformers-5.17"\n{run_lines}\n')


# ------------------------------------------------------------------ hostile checkpoints


@pytest.mark.parametrize("body,why", [
    ('{"metadata": ' + DEEP + "}", "nested deeper than"),
    ('{"metadata": {}, "metrics": {"accuracy": ' + HUGE + '}, "predictions": []}', "integer of 5000 digits"),
    ('{"metadata": {}, "metrics": {"accuracy": 1' + "0" * 30 + '}, "predictions": []}', "more than 64 bits"),
])
def test_a_hostile_checkpoint_is_invalid_everywhere_and_crashes_nothing(project, body, why):
    path = project / "results" / "en" / "org__model-a.json"
    path.parent.mkdir(parents=True)
    path.write_text(body)
    r = kit("verify", str(path), cwd=project)
    assert r.returncode == 1 and "Traceback" not in r.stderr and f"FAIL  {path}: not valid JSON" in r.stdout
    assert why in r.stdout
    r = kit("status", "results", "--json", cwd=project)
    assert r.returncode == 0, r.stderr
    states = {(p["language"], p["state"]) for p in json.loads(r.stdout)["data"]["pairs"]}
    assert ("en", "invalid") in states
    r = kit("check", "results", cwd=project)
    assert r.returncode == 1 and "FAIL [checkpoints_valid]" in r.stdout and "Traceback" not in r.stderr
    refused(kit("report", "results", cwd=project), "no complete checkpoint")


@pytest.mark.parametrize("body,why", [(DEEP, "nested deeper than"), ('{"row_count": ' + HUGE + "}", "5000 digits")])
def test_a_hostile_manifest_is_bad_input(project, body, why):
    (project / "data" / "translations" / "manifest.json").write_text(body)
    refused(kit("plan", cwd=project), "manifest.json", why)


# ------------------------------------------------------------------ names


def test_two_runs_that_would_share_a_checkpoint_file_are_refused(project):
    (project / "roster.toml").write_text(
        f'benchmark = "data"\n\n[[run]]\nmodel = "a/b"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n\n'
        f'[[run]]\nmodel = "a__b"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n')
    refused(kit("plan", cwd=project), "'a/b'", "'a__b'", "a__b.json")


def test_a_model_id_too_long_for_a_file_name_is_refused(project):
    roster_with(project, f'model = "org/{"m" * 240}"')
    refused(kit("plan", cwd=project), "checkpoint file name of", "bytes")


# ------------------------------------------------------------------ links and the release tree


def test_the_mllog_never_writes_through_a_link(tmp_path):
    from kit.worker.mllog import PairLog

    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    log = tmp_path / "results" / "en" / "org__m.mllog"
    log.parent.mkdir(parents=True)
    log.symlink_to(outside)
    with PairLog(log) as pl:
        pl.event("kit_pair", {"run": "org/m"})
    assert outside.read_text() == "keep me\n"
    assert not log.is_symlink() and "kit_pair" in log.read_text()


@pytest.fixture
def site_tree(tmp_path) -> tuple[Path, Path]:
    """A site's results tree holding one checkpoint file (what collect refuses here does not depend
    on its content)."""
    outer = tmp_path / "outer"
    tree = outer / "siteA"
    (tree / "en").mkdir(parents=True)
    (tree / "en" / "org__model-a.json").write_text("{}")
    return outer, tree


def test_collect_refuses_links_in_a_site_tree(project, site_tree, tmp_path):
    outer, tree = site_tree
    secret = tmp_path / "system-secret.json"
    secret.write_text('{"secret": 1}\n')
    (tree / "systems").mkdir()
    (tree / "systems" / "node.json").symlink_to(secret)
    (tree / "en" / "org__model-a.mllog").symlink_to(secret)
    r = kit("collect", "--from", f"a={tree}", "-o", str(tmp_path / "release"), cwd=project)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"symlink: a: {tree}/systems/node.json" in r.stderr and "org__model-a.mllog is a link" in r.stderr
    assert not (tmp_path / "release").exists()


@pytest.mark.parametrize("output", ["outer", "outer/siteA", "outer/siteA/release"])
def test_collect_never_writes_over_or_inside_a_site_tree(project, site_tree, output):
    outer, tree = site_tree
    before = sorted(p.relative_to(outer) for p in outer.rglob("*"))
    from kit.errors import ConfigError
    from kit.results.collect import CollectPlan, install_collect

    plan = CollectPlan(sources=[tree.resolve()])
    with pytest.raises(ConfigError, match="overlaps the input"):
        install_collect(plan, outer.parent / output, force=True)
    assert sorted(p.relative_to(outer) for p in outer.rglob("*")) == before


# ------------------------------------------------------------------ sites


@pytest.mark.parametrize("scheduler", KNOWN_SCHEDULERS)
def test_a_secret_in_forward_env_is_refused_at_every_site(project, scheduler):
    (project / "sites.toml").write_text(f'[site.s]\nscheduler = "{scheduler}"\nforward_env = ["HF_TOKEN"]\n')
    refused(kit("run", "--site", "s", "--dry-run", cwd=project), "sites.toml", "HF_TOKEN", "looks like a secret")


@pytest.mark.parametrize("value", ["-oProxyCommand=touch PWNED", "host name", ""])
def test_a_frontend_that_is_not_a_host_is_refused(project, value):
    (project / "sites.toml").write_text(f'[site.s]\nscheduler = "slurm"\nfrontend = {json.dumps(value)}\n')
    refused(kit("run", "--site", "s", "--dry-run", cwd=project), "frontend", "not an ssh host")
    assert not list(project.rglob("PWNED"))


@pytest.mark.parametrize("walltime,why", [("0:00", "no time at all"), ("9999999999999:00", "more than a year")])
def test_a_walltime_outside_any_cluster_is_refused(project, walltime, why):
    (project / "sites.toml").write_text(f'[site.s]\nscheduler = "oar"\nwalltime = "{walltime}"\n')
    refused(kit("run", "--site", "s", "--dry-run", cwd=project), "walltime", why)


def test_a_clock_at_the_end_of_the_calendar_is_refused(project):
    (project / "sites.toml").write_text('[site.s]\nscheduler = "oar"\nfrontend = "nancy.g5k"\n')
    refused(kit("run", "--site", "s", "--dry-run", cwd=project, env={"KIT_NOW": "9999-12-31T23:00"}),
            "KIT_NOW", "end of the calendar")


# ------------------------------------------------------------------ rosters


@pytest.mark.parametrize("line,key", [
    ('model = "org/m"\ntrust_remote_code = "yes"', "trust_remote_code"),
    ('model = "org/m"\nbatch_size = "8"', "batch_size"),
    ('model = "org/m"\nlanguages = []', "languages"),
    ('model = "org/m"\nseed = 1180591620717411303424', "seed"),
    ('model = "org/m"\noptions = { attention_heads = "many" }', "attention_heads"),
])
def test_a_roster_value_of_the_wrong_kind_is_refused_not_coerced(project, line, key):
    roster_with(project, line)
    refused(kit("plan", cwd=project), "roster.toml", key)


def test_a_roster_without_runs_is_refused(project):
    (project / "roster.toml").write_text('benchmark = "data"\n')
    refused(kit("status", "results", cwd=project), "roster.toml", "no [[run]]")


def test_check_with_nothing_planned_is_not_a_pass(project):
    roster_with(project, 'model = "org/m"\nlanguages = ["en"]')
    (project / "results").mkdir()
    r = kit("check", "results", "--languages", "fr", cwd=project)   # the run covers no selected language
    # bad input, said as such (kit.plan.select_pairs): never a PASS of nothing
    refused(r, "none of the selected runs covers fr: they run en")
    assert "PASS" not in r.stdout


def test_a_results_path_that_is_a_file_is_refused_before_anything_is_said(project):
    for args in (("plan", "--results", "roster.toml"), ("shard", "--results", "roster.toml")):
        r = kit(*args, cwd=project)
        refused(r, "roster.toml: is not a folder of results")
        assert r.stdout == "", r.stdout


def test_keys_init_writes_no_half_pair_where_a_folder_stands_in_the_public_key_s_place(project, tmp_path):
    keys = tmp_path / "keys"
    (keys / "ed25519.pub.json").mkdir(parents=True)
    refused(kit("keys", "init", "--dir", str(keys), cwd=project), "ed25519.pub.json: something other than a key file")
    assert sorted(p.name for p in keys.iterdir()) == ["ed25519.pub.json"]
    refused(kit("keys", "export", "--dir", str(tmp_path / "none"), cwd=project), "no signing key there",
            f"kit keys init --dir {tmp_path / 'none'}")
