"""`kit run`, `kit status` and `kit pull` for OAR sites, through the CLI, with fake OAR commands
and a fake ssh that records any use (fast tier; the real OAR and sshd are in the e2e tier)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest_checkpoints import current_checkpoint, rewrite

from kit.config.kinds import load_benchmark
from kit.config.roster import load_roster

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "sites.toml"
TUESDAY_1830 = "2026-12-01T18:30"
REV = "a" * 40


def kit(*args: str, cwd: Path, env: dict, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def proj(tmp_path, fake_oar):
    """A tiny project: demo benchmark, a roster of two runs, a local-frontend OAR site, fakes on PATH."""
    from kit.demo.dataset import write_demo_benchmark

    bench = write_demo_benchmark(tmp_path / "bench")
    (tmp_path / "roster.toml").write_text(
        f'benchmark = "bench"\n\n[[run]]\nmodel = "org/model-a"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n\n'
        f'[[run]]\nmodel = "org/model-b"\nrevision = "{REV}"\nbackend = "transformers-5.17"\ntask = "score"\n')
    check = tmp_path / "usagepolicycheck"
    check.write_text('#!/bin/sh\necho "fake usagepolicycheck: allowance ok ($*)"\n')
    refuse = tmp_path / "usagepolicycheck-over"
    refuse.write_text('#!/bin/sh\necho "fake usagepolicycheck: daily allowance exceeded" >&2\nexit 1\n')
    for p in (check, refuse):
        p.chmod(0o755)
    stage_fake_weights(tmp_path / "hub", ["org/model-a", "org/model-b"])
    (tmp_path / "sites.toml").write_text(f'''
[site.ci]
scheduler = "oar"
runtime = "host"
python = "{sys.executable}"
root = "oar"
results = "results"
weights = "hub"
walltime = "1:00"
policy_checks = ["{check} -t"]

[site.ci-day]
scheduler = "oar"
runtime = "host"
root = "oar-day"
results = "results"
weights = "hub"
job_types = ["exotic"]
policy_checks = ["{check} -t"]

[site.ci-sirius]
scheduler = "oar"
runtime = "host"
root = "oar-sirius"
results = "results"
weights = "hub"
job_types = ["exotic"]
night_jobs = false
queue = "default"
policy_checks = ["{check} -t"]

[site.ci-over]
scheduler = "oar"
runtime = "host"
root = "oar-over"
results = "results"
weights = "hub"
policy_checks = ["{refuse}"]

[site.remote-ok]
scheduler = "oar"
runtime = "host"
frontend = "nancy.g5k"
python = "/home/jdoe/kit-venv/bin/python"
root = "/home/jdoe/kit"
results = "/home/jdoe/kit/results"

[site.remote-two]
scheduler = "oar"
runtime = "host"
frontend = "grenoble.g5k"
python = "/home/jdoe/kit-venv/bin/python"
root = "/home/jdoe/kit"
results = "/home/jdoe/kit/results"

[site.remote-rel]
scheduler = "oar"
runtime = "host"
frontend = "nancy.g5k"
python = "/home/jdoe/kit-venv/bin/python"
root = "kit"
results = "/home/jdoe/kit/results"
''')
    fake = fake_oar
    ssh_log = tmp_path / "ssh-calls"
    (fake.bin / "ssh").write_text(f'#!/bin/sh\necho "$@" >> {ssh_log}\nexit 255\n')
    (fake.bin / "ssh").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.bin}:{os.environ['PATH']}", "KIT_SSH_CONTROL_DIR": str(tmp_path / "cm")}
    env.pop("KIT_NOW", None)
    return tmp_path, env, fake, ssh_log, load_benchmark(bench)


def stage_fake_weights(hub: Path, models: list[str]) -> None:
    """Snapshots at REV with weights manifests, as `kit weights stage` leaves them (`kit run` checks them);
    the safetensors file holds no tensors, so the model's size stays unknown as before."""
    from kit.weights.manifest import build_manifest, local_sizes, snapshot_dir, write_manifest

    for model in models:
        snap = snapshot_dir(hub, model, REV)
        snap.mkdir(parents=True)
        (snap / "config.json").write_text("{}")
        (snap / "model.safetensors").write_bytes(b"\x02" + b"\x00" * 7 + b"{}")
        write_manifest(hub, build_manifest(snap, model, REV, local_sizes(snap)))


def write_checkpoint(results: Path, run: str, language: str, bench) -> Path:
    """The checkpoint a job would write today for this roster run (results/ sits beside roster.toml)."""
    roster, _ = load_roster(results.parent / "roster.toml")
    return current_checkpoint(results, next(r for r in roster.run if r.name == run), language, bench)


# ---------------------------------------------------------------- dry runs, multi-site


@pytest.fixture
def lock_cwd(proj):
    """A working folder with an images lock, so the apptainer sites of examples/sites.toml render."""
    root = proj[0]
    lock = root / "containers" / "images.lock.json"
    lock.parent.mkdir()
    lock.write_text(json.dumps({"kit_images_lock_version": 1, "images": {"transformers-5.17": {
        "backend": "transformers-5.17", "tag": "kit/t:1", "image_id": "sha256:" + "1" * 64, "dockerfile_sha256": "d",
        "lock_sha256": "l", "base": "b", "kit_version": "0", "built_at": "2026-11-29T00:00:00Z",
        "artifacts": {"sif": {"file": "kit-transformers-5.17-1.sif", "sha256": "s"}}}}}))
    return root


def test_multi_site_dry_run_prints_every_sites_command_and_makes_no_ssh_connection(proj, lock_cwd):
    root, env, fake, ssh_log, _ = proj
    r = kit("run", "--sites", "nancy,grenoble", "--model", "org/model-a", "--dry-run", "--sites-file", str(EXAMPLES),
            "--roster", "roster.toml", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert not ssh_log.exists(), ssh_log.read_text()
    assert not fake.calls()
    out = r.stdout
    assert "shard slots [0, 1] of 3 (slots by site weight)" in out and "shard slots [2] of 3 (slots by site weight)" in out
    assert "# site nancy: transformers-5.17, 1 GPU(s)" in out
    lines = [line for line in out.splitlines() if line.startswith("oarsub ")]
    assert len(lines) == 2
    assert "--array 2" in lines[0] and "-t night" in lines[0] and "--array" not in lines[1]
    assert "host=1/gpu=1,walltime=1:00" in lines[1]
    assert "-O /home/jdoe/kit/logs/OAR.%jobid%.stdout" in lines[0]
    assert "usagepolicycheck -t" in out and "/home/jdoe/kit/inputs/benchmark-" in out


def test_a_site_named_in_sites_that_gets_no_shard_is_said(proj, lock_cwd):
    """Three pairs fill nancy's two slots and grenoble's one: lyon, named too, gets no job, and kit says so."""
    root, env, *_ = proj
    r = kit("run", "--sites", "nancy,grenoble,lyon", "--model", "org/model-a", "--dry-run", "--sites-file",
            str(EXAMPLES), "--roster", "roster.toml", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert "site lyon gets no job: 3 pending pair(s) fill fewer shards than the sites' weights give slots" in r.stderr
    assert "# site lyon" not in r.stdout and "# site grenoble" in r.stdout


def test_lyon_dry_run_prints_the_oarsub_line_a_grid5000_user_would_write(proj, lock_cwd):
    root, env, _, ssh_log, _ = proj
    r = kit("run", "--site", "lyon", "--model", "org/model-a", "--array", "3", "--dry-run", "--sites-file",
            str(EXAMPLES), "--roster", "roster.toml", cwd=root, env={**env, "KIT_NOW": TUESDAY_1830})
    assert r.returncode == 1, r.stderr   # the dry run found that the day window would refuse it now
    line = next(x for x in r.stdout.splitlines() if x.startswith("oarsub "))
    assert line.startswith("oarsub -n kit-lyon-model-a-")   # the job name says what it runs
    assert (" -t exotic -q default -p \"cluster='sirius' AND gpu_compute_capability_major>=7 AND gpu_mem>=23040\" "
            "-l host=1/gpu=1,walltime=2:00 --checkpoint 60 --signal 15 --array 3 -d /home/jdoe/kit/jobs "
            "-O /home/jdoe/kit/logs/OAR.%jobid%.stdout -E /home/jdoe/kit/logs/OAR.%jobid%.stderr 'bash /home/jdoe/kit/jobs/kit-lyon-") in line
    assert "WOULD BE REFUSED" in r.stdout and "19:00" in r.stdout   # exotic, not night: the day window applies
    assert not ssh_log.exists()
    data = json.loads(kit("run", "--site", "lyon", "--model", "org/model-a", "--array", "3", "--dry-run", "--json",
                          "--sites-file", str(EXAMPLES), "--roster", "roster.toml", cwd=root,
                          env={**env, "KIT_NOW": TUESDAY_1830}).stdout)
    assert data["status"] == "failed" and "19:00" in data["data"]["would_be_refused"][0]
    job = data["data"]["jobs"][0]
    assert job["sizing"]["gpus"][0]["run"] == "org/model-a" and job["sizing"]["gpus"][0]["basis"]
    assert isinstance(data["data"]["warnings"], list)


def test_a_relative_path_on_a_remote_site_is_bad_input(proj):
    root, env, _, ssh_log, _ = proj
    r = kit("run", "--site", "remote-rel", "--model", "org/model-a", "--dry-run", cwd=root, env=env)
    assert r.returncode == 2
    assert "root = 'kit' is relative" in r.stderr and "absolute" in r.stderr
    assert not ssh_log.exists()


def test_a_bad_walltime_is_bad_input(proj):
    root, env, *_ = proj
    r = kit("run", "--site", "ci", "--walltime", "90 minutes", "--dry-run", cwd=root, env=env)
    assert r.returncode == 2 and "--walltime" in r.stderr


# ---------------------------------------------------------------- the policy gate


def test_a_weekday_1830_one_hour_non_night_job_is_refused_and_nothing_is_written(proj):
    root, env, fake, *_ = proj
    r = kit("run", "--site", "ci-day", "--model", "org/model-a", "--walltime", "1:00", cwd=root,
            env={**env, "KIT_NOW": TUESDAY_1830})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "would cross 19:00" in r.stderr and "--walltime 0:30" in r.stderr and "wait until 19:00" in r.stderr
    assert not fake.calls("oarsub") and not (root / "oar-day").exists() and not (root / ".kit").exists()


def test_the_same_job_fits_with_a_shorter_walltime_or_as_a_night_job(proj):
    root, env, fake, *_ = proj
    for extra in (["--walltime", "0:30"], ["--job-type", "night"]):
        r = kit("run", "--site", "ci-day", "--model", "org/model-a", "--walltime", "1:00", *extra[-2:], "--resubmit",
                cwd=root,
                env={**env, "KIT_NOW": TUESDAY_1830})
        assert r.returncode == 0, r.stderr
    subs = fake.calls("oarsub")
    assert "-t" not in subs[0]["argv"] or subs[0]["argv"][subs[0]["argv"].index("-t") + 1] == "exotic"
    # --job-type night says when; the site's exotic (which hardware) stays
    assert [subs[1]["argv"][i + 1] for i, a in enumerate(subs[1]["argv"]) if a == "-t"] == ["exotic", "night"]


def test_a_site_without_night_jobs_is_never_offered_or_given_one(proj):
    root, env, fake, *_ = proj
    r = kit("run", "--site", "ci-sirius", "--model", "org/model-a", "--walltime", "1:00", cwd=root,
            env={**env, "KIT_NOW": TUESDAY_1830})
    assert r.returncode == 1 and "--walltime 0:30" in r.stderr and "--job-type night" not in r.stderr, r.stderr
    r = kit("run", "--site", "ci-sirius", "--model", "org/model-a", "--job-type", "night", cwd=root, env=env)
    assert r.returncode == 2 and "takes no job type night" in r.stderr and not fake.calls("oarsub")


def test_job_types_given_together_become_one_t_each(proj):
    root, env, fake, *_ = proj
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--job-type", "night besteffort", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    argv = fake.calls("oarsub")[0]["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-t"] == ["night", "besteffort"]
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--job-type", "night;rm", cwd=root, env=env)
    assert r.returncode == 2 and "not an OAR job type" in r.stderr


def test_job_type_keeps_the_types_a_site_requires(proj):
    root, env, fake, *_ = proj
    # sirius needs -t exotic; --job-type besteffort says when the job may run, not which hardware
    r = kit("run", "--site", "ci-sirius", "--model", "org/model-a", "--job-type", "besteffort", cwd=root,
            env={**env, "KIT_NOW": "2026-12-05T12:00"})
    assert r.returncode == 0, r.stderr
    argv = fake.calls("oarsub")[0]["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-t"] == ["exotic", "besteffort"]


def test_a_deploy_job_is_refused_before_anything_is_submitted(proj):
    root, env, fake, *_ = proj
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--job-type", "deploy", cwd=root, env=env)
    assert r.returncode == 2 and not fake.calls("oarsub"), r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("kit: error: --job-type: job type 'deploy'") and "kadeploy" in line and "fix:" in line


def test_a_failing_policy_check_blocks_the_submission_and_its_output_is_shown(proj):
    root, env, fake, *_ = proj
    r = kit("run", "--site", "ci-over", "--model", "org/model-a", cwd=root, env=env)
    assert r.returncode == 1
    assert "daily allowance exceeded" in r.stderr and "nothing was submitted" in r.stderr
    assert not fake.calls("oarsub") and not (root / "oar-over").exists()


# ---------------------------------------------------------------- submit, then status per pair


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_run_submits_an_array_and_status_explains_every_pair_by_its_array_job(proj):
    root, env, fake, _, bench = proj
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--array", "3", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert "3 task(s) of 3 shards (--array 3)" in r.stdout and "job ids 100, 101, 102" in r.stdout and "fake usagepolicycheck: allowance ok (-t)" in r.stderr
    assert len(fake.calls("oarsub")) == 1
    script = next((root / "oar" / "jobs").glob("*.sh")).read_text()
    assert "KIT_ARRAY_POS=$(( ${OAR_ARRAY_INDEX:-1} - 1 ))" in script
    # de -> shard 0 -> job 100 (done), en -> 101, fr -> 102; model-b was never submitted
    write_checkpoint(root / "results", "org/model-a", "de", bench)
    cases = {"101": ({"state": "Running"}, "running"),
             "102": ({"state": "Error", "events": [{"type": "WALLTIME", "description": "sarko"}]}, "timeout")}
    for job, (info, want) in [*cases.items(), ("101", ({"state": "Hold"}, "queued")),
                              ("101", ({"state": "Terminated", "exit_code": 768}, "failed")),
                              # the recorded id now names another user's job: never shown as kit's
                              ("101", ({"state": "Running", "name": "alice-finetune", "owner": "alice"}, "unknown")),
                              ("101", ({"state": "Error", "events": [{"type": "FRAG_JOB_REQUEST",
                                                                      "description": "User kit requested"}]}, "cancelled"))]:
        fake.state = {**fake.state, "jobs": {**fake.state.get("jobs", {}), job: info}}
        s = kit("status", "--site", "ci", "--json", cwd=root, env=env)
        assert s.returncode == 0, s.stderr
        data = json.loads(s.stdout)["data"]
        by = {(p["run"], p["language"]): p for p in data["pairs"]}
        assert by[("org/model-a", "de")]["state"] == "complete" and by[("org/model-a", "de")]["job"] == "100"
        pair = by[("org/model-a", "en" if job == "101" else "fr")]
        assert (pair["state"], pair["job"]) == (want, job), pair
        assert by[("org/model-b", "de")]["state"] == "unclaimed"
    assert "exited 3" in json.dumps(data) or "oardel" in json.dumps(data)
    table = kit("status", "--site", "ci", cwd=root, env=env).stdout
    assert "6 pairs: 1 cancelled, 1 complete, 1 timeout, 3 unclaimed" in table and "[ci]" in table


@pytest.mark.slow   # seconds of subprocesses or of waiting out the cache's racy window: kept out of the 5-minute fast tier
def test_a_second_run_never_submits_pairs_a_live_job_owns(proj):
    root, env, fake, *_ = proj
    assert kit("run", "--site", "ci", "--model", "org/model-a", "--array", "3", cwd=root, env=env).returncode == 0
    (root / ".kit").rename(root / ".kit-elsewhere")   # as if the first run was made from another machine
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--json", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["pending"] == 0 and data["submitted"] == [] and len(fake.calls("oarsub")) == 1
    # each array task owns its own shard (the sidecar beside the job script says which)
    assert {(o["language"], o["job"], o["state"]) for o in data["owned"]} == {
        ("de", "ci:100", "pending"), ("en", "ci:101", "pending"), ("fr", "ci:102", "pending")}
    r = kit("run", "--site", "ci", "--model", "org/model-a", cwd=root, env=env)
    assert "3 pairs owned by your live job(s) ci:100, ci:101, ci:102: not submitted again" in r.stdout
    jobs = fake.state["jobs"]
    fake.state = {**fake.state, "jobs": {**jobs, "100": {**jobs["100"], "state": "Error"}}}   # task 1 gone
    again = json.loads(kit("run", "--site", "ci", "--model", "org/model-a", "--json", "--dry-run", cwd=root,
                           env=env).stdout)["data"]
    assert again["pending"] == 1 and [j["pairs"] for j in again["jobs"]] == [1]   # de only: the others still run
    status = json.loads(kit("status", "--site", "ci", "--json", cwd=root, env=env).stdout)["data"]["pairs"]
    # en and fr: their tasks are queued (known from the scheduler); de: its task is gone, nothing owns it
    assert {p["language"]: p["state"] for p in status if p["run"] == "org/model-a"} == {
        "de": "unclaimed", "en": "queued", "fr": "queued"}
    fake.state = {**fake.state, "jobs": {j: {**info, "state": "Running"} for j, info in fake.state["jobs"].items()}}
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--resubmit", cwd=root, env=env)
    assert r.returncode == 0 and len(fake.calls("oarsub")) == 2


def test_a_refused_submission_is_not_retried(proj):
    root, env, fake, *_ = proj
    fake.state = {"oarsub": {"rc": 8, "stdout": "OAR_JOB_ID=-5\n", "stderr": "There are not enough resources\n"}}
    r = kit("run", "--site", "ci", "--model", "org/model-a", cwd=root, env=env)
    assert r.returncode == 1 and "not enough resources" in r.stderr and "gpu_filter" in r.stderr
    assert len(fake.calls("oarsub")) == 1


def test_a_rerun_plans_only_the_pairs_without_a_complete_checkpoint(proj):
    root, env, fake, _, bench = proj
    for lang in ("de", "fr"):
        write_checkpoint(root / "results", "org/model-a", lang, bench)
    r = kit("run", "--site", "ci", "--model", "org/model-a", "--array", "3", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert "3 pairs, 2 complete, 1 pending" in r.stdout and "(--array 3 capped at one per pair)" in r.stdout
    argv = fake.calls("oarsub")[0]["argv"]
    assert "--array" not in argv   # one pending pair: one job, never an empty array task


# ---------------------------------------------------------------- pull


def test_pull_copies_only_new_files_and_reports_invalid_checkpoints(proj):
    root, env, _, _, bench = proj
    results = root / "results"
    write_checkpoint(results, "org/model-a", "de", bench)
    bad = write_checkpoint(results, "org/model-a", "en", bench)
    rewrite(bad, lambda d: d["predictions"][0].update(predicted="unparsed"))   # metrics no longer recompute
    r = kit("pull", "--site", "ci", "--to", "here", "--json", cwd=root, env=env)
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["counts"] == {"complete": 1, "invalid": 1}
    assert data["invalid"][0]["language"] == "en" and "metrics" in " ".join(data["invalid"][0]["reasons"])
    assert sorted(data["copied"]) == ["de/org__model-a.json", "de/org__model-a.mllog", "en/org__model-a.json",
                                      "en/org__model-a.mllog"]   # each checkpoint with its log
    bad.unlink()
    (root / "here" / "en" / "org__model-a.json").unlink()
    r = kit("pull", "--site", "ci", "--to", "here", cwd=root, env=env)
    assert r.returncode == 0 and "0 copied" in r.stdout and "1 checkpoints: 1 complete" in r.stdout


def test_status_of_an_unreachable_frontend_says_unknown_and_why_instead_of_crashing(proj):
    root, env, _, ssh_log, _ = proj
    r = kit("status", "--site", "remote-ok", "--site", "ci", "--model", "org/model-a", "--json", cwd=root, env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr   # not "ok": a site could not be read
    body = json.loads(r.stdout)
    pairs = body["data"]["pairs"]
    assert {p["state"] for p in pairs} == {"unknown"}
    assert "[remote-ok] checkpoints not read: cannot reach frontend 'nancy.g5k'" in pairs[0]["reasons"][0]
    assert body["status"] == "error" and body["errors"] == [pairs[0]["reasons"][0]]
    assert "nancy.g5k" in ssh_log.read_text()
    r = kit("status", "--site", "remote-ok", "--model", "org/model-a", cwd=root, env=env)
    assert r.returncode == 1 and "kit: [remote-ok] checkpoints not read: cannot reach" in r.stderr
    # two unreachable sites: each is named, not only the first
    body = json.loads(kit("status", "--site", "remote-ok", "--site", "remote-two", "--model", "org/model-a", "--json",
                          cwd=root, env=env).stdout)
    assert body["status"] == "error" and len(body["errors"]) == 2, body["errors"]
    assert "nancy.g5k" in body["errors"][0] and "grenoble.g5k" in body["errors"][1]


def test_cancel_at_an_unreachable_frontend_says_so_rather_than_nothing_to_cancel(proj):
    root, env, *_ = proj
    r = kit("cancel", "--site", "remote-ok", "--model", "org/model-a", "--dry-run", "--json", cwd=root, env=env)
    body = json.loads(r.stdout)
    assert r.returncode == 1 and body["status"] == "error", (r.stdout, r.stderr)
    assert "nancy.g5k" in body["errors"][0] and body["data"]["jobs"] == {}
    text = kit("cancel", "--site", "remote-ok", "--model", "org/model-a", "--dry-run", cwd=root, env=env)
    assert "nothing to cancel" not in text.stdout and "could not all be known" in text.stdout
    assert "kit: site remote-ok: checkpoints not read: cannot reach frontend 'nancy.g5k'" in text.stderr


def test_run_to_an_unreachable_frontend_fails_before_submitting_anything(proj):
    root, env, fake, ssh_log, _ = proj
    r = kit("run", "--site", "remote-ok", "--model", "org/model-a", cwd=root, env=env)
    assert r.returncode == 1
    assert "cannot reach frontend 'nancy.g5k'" in r.stderr and "ssh nancy.g5k true" in r.stderr
    assert not fake.calls()


def test_kit_cancel_oardels_only_the_live_array_jobs_that_own_pending_pairs(proj):
    root, env, fake, *_ = proj
    assert kit("run", "--site", "ci", "--model", "org/model-a", "--array", "3", cwd=root, env=env).returncode == 0
    fake.state = {**fake.state, "jobs": {"100": {"state": "Running"}, "101": {"state": "Waiting"},
                                         "102": {"state": "Terminated", "exit_code": 768}}}
    r = kit("cancel", "--site", "ci", "--model", "org/model-a", "--dry-run", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert "oardel 100 101" in r.stdout and not fake.calls("oardel")
    r = kit("cancel", "--site", "ci", "--model", "org/model-a", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    # the running job is asked to stop (SIGTERM: its worker ends the pair cleanly) before the rest is deleted
    assert [c["argv"] for c in fake.calls("oardel")] == [["--signal", "SIGTERM", "100"], ["101"]]
