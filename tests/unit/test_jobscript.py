"""Job scripts: pure rendering, golden files, and hostile values that must stay inert."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from scripts_golden import HOSTILE, assert_golden

from kit.config.sites import Site
from kit.launch.jobscript import JobScript, allow_listed_env, render_job_script, render_site_setup
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import get_scheduler


def render_for(scheduler: str, runtime: str, argv: list[str]) -> str:
    site = Site(name="ci", scheduler=scheduler, runtime=runtime)
    sched = get_scheduler(scheduler)(site)
    request = JobRequest(name="kit-ci", gpus=1, walltime_s=3600, array_size=2)
    spec = JobScript(job_name="kit-ci", worker_argv=tuple(argv), shard_slots=(0, 1), shard_count=2,
                     env={"KIT_SITE": "ci", "HF_HUB_OFFLINE": "1"})
    return render_job_script(sched.job_script(spec, request, "/logs"))


@pytest.mark.parametrize("scheduler,runtime", [("local", "host")])
def test_golden(scheduler, runtime):
    text = render_for(scheduler, runtime, ["/venv/bin/python", "-m", "kit", "shard", "--results", "/r", "--pairs", "/p.json"])
    assert_golden(text, f"{scheduler}-{runtime}.sh")


def test_script_is_valid_bash():
    text = render_for("local", "host", ["true"])
    r = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)")
def test_script_passes_shellcheck(tmp_path):
    p = tmp_path / "job.sh"
    p.write_text(render_for("local", "host", ["/venv/bin/python", "-m", "kit", "shard", *HOSTILE]))
    r = subprocess.run(["shellcheck", "-S", "warning", str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_hostile_values_are_passed_literally_and_never_executed(tmp_path):
    argv = ["printf", "%s\\n", *HOSTILE]
    text = render_for("local", "host", argv).replace('export HF_HUB_OFFLINE=1', "export HF_HUB_OFFLINE=1\nexport HOSTILE=" + __import__("shlex").quote(HOSTILE[0]))
    script = tmp_path / "job.sh"
    script.write_text(text)
    r = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "KIT_ARRAY_INDEX": "1"})
    assert r.returncode == 0, r.stderr
    assert not list(tmp_path.glob("PWNED*"))
    expected = "\n".join(HOSTILE + ["--shard", "1/2"]) + "\n"
    assert r.stdout == expected


def test_array_index_without_a_slot_fails_cleanly(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(render_for("local", "host", ["true"]))
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "KIT_ARRAY_INDEX": "5"})
    assert r.returncode == 2 and "no shard slot" in r.stderr


def test_environment_is_allow_listed():
    source = {"PATH": "/bin", "HOME": "/h", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "HF_TOKEN": "hf_x", "CUDA_VISIBLE_DEVICES": "3", "MY_VAR": "1"}
    env = allow_listed_env(source, ["MY_VAR"])
    assert env == {"PATH": "/bin", "HOME": "/h", "MY_VAR": "1"}


def test_job_refuses_an_image_whose_sha256_is_not_the_recorded_one(tmp_path):
    import hashlib

    from kit.launch.runtimes.base import artifact_check_lines

    sif = tmp_path / "img with space.sif"
    sif.write_bytes(b"an image")
    script = "\n".join(["set -euo pipefail", *artifact_check_lines(str(sif)), "echo started"])
    good = hashlib.sha256(b"an image").hexdigest()
    ok = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": os.environ["PATH"], "KIT_IMAGE_SHA256": good})
    assert ok.returncode == 0 and ok.stdout.strip() == "started"
    bad = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": os.environ["PATH"], "KIT_IMAGE_SHA256": "0" * 64})
    assert bad.returncode == 2 and "is not the recorded" in bad.stderr and "started" not in bad.stdout
    sif.unlink()
    gone = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert gone.returncode == 2 and "not readable" in gone.stderr


# what Lmod's `module` does that `set -u` cannot take: it reads variables that are not set
LMOD_LIKE = 'module() { echo "module $* ${LMOD_NOT_SET_ANYWHERE}"; }\n'


def bash(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})


def test_site_setup_runs_without_set_u_and_gets_module_from_the_profile(tmp_path):
    profile = tmp_path / "profile"
    profile.write_text(LMOD_LIKE)
    # as the lines ran before, even with `module` defined: under set -u Lmod's function ends the job
    before = bash(f"set -euo pipefail\n. {profile}\nmodule load apptainer\necho reached")
    assert before.returncode != 0 and "unbound variable" in before.stderr and "reached" not in before.stdout
    profile.write_text(LMOD_LIKE + "false\n")    # and a profile whose last command fails
    lines = render_site_setup(["module load apptainer"], profile=str(profile))
    assert lines[1] == "set +u" and lines[-2:] == ["module load apptainer", "set -u"]
    r = bash("set -euo pipefail\n" + "\n".join(lines) + "\necho reached\necho ${STILL_UNSET}")
    assert r.stdout.splitlines() == ["module load apptainer ", "reached"], r.stderr
    assert r.returncode != 0 and "STILL_UNSET: unbound variable" in r.stderr   # set -u is back after the setup


def test_site_setup_survives_a_missing_profile_and_keeps_a_defined_module(tmp_path):
    missing = render_site_setup(["echo setup ran"], profile=str(tmp_path / "no-such-profile"))
    r = bash("set -euo pipefail\n" + "\n".join(missing))
    assert r.returncode == 0 and r.stdout == "setup ran\n", r.stderr
    profile = tmp_path / "profile"
    profile.write_text("echo profile sourced\n")
    defined = render_site_setup(["module list"], profile=str(profile))
    r = bash("set -euo pipefail\nmodule() { echo \"own module $*\"; }\n" + "\n".join(defined))
    assert r.returncode == 0 and r.stdout == "own module list\n", r.stderr   # the profile is not read again
    assert render_site_setup([]) == []


@pytest.mark.parametrize("value,what", [
    ("postgres://u:pwSECRET2@db/x", "a URL with a password"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "a Hugging Face token"),
    ("ghp_" + "a1" * 18, "a GitHub token"),
    ("xoxb-1234567890-abcdefghij", "a Slack token"),
    ("AKIAABCDEFGHIJKLMNOP", "an AWS access key id"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb\n", "a private key"),
])
def test_a_forwarded_value_that_holds_a_credential_is_refused_naming_the_variable_not_the_value(value, what):
    """forward_env values reach the job's environment (and an OAR job's script on the cluster's disk): one
    holding a credential is a ConfigError naming the variable and the kind of credential, never the value;
    the base allow-list and ordinary values pass."""
    from kit.errors import ConfigError

    source = {"PATH": "/bin", "MY_VAR": value, "OTHER": "https://example.org/data"}
    with pytest.raises(ConfigError) as err:
        allow_listed_env(source, ["OTHER", "MY_VAR"])
    line = err.value.one_line()
    assert "MY_VAR" in line and what in line and value.strip() not in line
    assert allow_listed_env(source, ["OTHER"]) == {"PATH": "/bin", "OTHER": "https://example.org/data"}


@pytest.mark.parametrize("name,secret", [
    ("GITHUB_PAT", True), ("SLACK_WEBHOOK_URL", True), ("NETRC", True), ("MY_APIKEY", True), ("DB_PASSWORD", True),
    ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("API_KEY", True), ("BASIC_AUTH", True),
    ("HF_HOME", False), ("KIT_SIGNING_KEY_PATH", False), ("AUTHOR_NAME", False), ("KEYBOARD", False),
    ("PATTERN", False), ("MY_VAR", False),
])
def test_a_secret_looking_forward_env_name_is_refused_when_the_sites_file_is_read(name, secret):
    from kit.credentials import secret_name

    assert secret_name(name) is secret
