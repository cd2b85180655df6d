"""The OAR scheduler against fake oarsub/oarstat/oardel at the subprocess boundary (fast tier).

The fakes are executables on PATH driven by a JSON state file; they record every call.
The real OAR 2.5.9 runs the same code in tests/integration/test_oar_integration.py."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from scripts_golden import GOLDEN, HOSTILE, assert_golden

from kit.config.sites import Site
from kit.errors import SubmitError
from kit.launch.jobscript import JobScript, readable_join, render_job_script
from kit.launch.request import JobRequest
from kit.launch.schedulers.base import JobState
from kit.launch.schedulers.oar import OarScheduler, oar_walltime


def site(**kw) -> Site:
    return Site.model_validate({"name": "ci", "scheduler": "oar", "runtime": "host", **kw})


def request(**kw) -> JobRequest:
    return JobRequest(**{"name": "kit-ci-x", "gpus": 1, "walltime_s": 3600, "array_size": 3, **kw})


def argv_for(s: Site, req: JobRequest, script: str = "/k/jobs/kit-ci.sh", logs: str = "/k/logs") -> list[str]:
    return OarScheduler(s).submit_argv(req, Path(script), logs)


# ---------------------------------------------------------------- the command line


def test_grid5000_defaults_give_the_command_a_user_would_type():
    argv = argv_for(site(), request())
    assert argv == ["oarsub", "-n", "kit-ci-x", "-t", "night",
                    "-p", "gpu_compute_capability_major>=7 AND gpu_mem>=23040",
                    "-l", "host=1/gpu=1,walltime=1:00", "--checkpoint", "60", "--signal", "15", "--array", "3",
                    "-d", "/k/jobs",
                    "-O", "/k/logs/OAR.%jobid%.stdout", "-E", "/k/logs/OAR.%jobid%.stderr", "bash /k/jobs/kit-ci.sh"]


def test_lyon_a100_uses_exotic_and_the_default_queue_golden():
    s = site(name="lyon", job_types=["exotic"], queue="default", account="proj",
             gpu_filter="cluster='sirius' AND gpu_compute_capability_major>=7 AND gpu_mem>=23040")
    text = "#!/bin/bash\n" + readable_join(argv_for(s, request(gpus=2, walltime_s=5400, array_size=85),
                                                 "/home/jdoe/kit/jobs/kit-lyon.sh", "/home/jdoe/kit/logs")) + "\n"
    assert_golden(text, "oar-submit-lyon.sh")
    assert shlex.split(text)[-1] == "bash /home/jdoe/kit/jobs/kit-lyon.sh"


@pytest.mark.parametrize("argv", [HOSTILE, ["a='b'", "cluster='x' AND y>=1", "it's $HOME", "'", ""]])
def test_the_readable_command_line_means_the_same_argv_to_bash(argv, tmp_path):
    line = readable_join(["printf", "%s\\0", *argv])
    assert shlex.split(line) == ["printf", "%s\\0", *argv]
    out = subprocess.run(["bash", "-c", line], capture_output=True, cwd=tmp_path).stdout
    assert out.decode().split("\0")[:-1] == argv and not list(tmp_path.glob("PWNED*"))


def test_one_job_has_no_array_option_and_no_gpu_means_a_core():
    argv = argv_for(site(job_types=[], gpu_filter=None), request(gpus=0, array_size=1, walltime_s=90))
    assert "--array" not in argv and "-t" not in argv and "-p" not in argv
    assert "--checkpoint" not in argv   # under 10 minutes OAR's checkpoint check may not come round in time
    assert argv[argv.index("-l") + 1] == "host=1/core=1,walltime=0:01:30"


@pytest.mark.parametrize("seconds,text", [(3600, "1:00"), (5400, "1:30"), (36000, "10:00"), (61, "0:01:01")])
def test_walltime_is_written_h_mm(seconds, text):
    assert oar_walltime(seconds) == text


def test_hostile_values_reach_oarsub_literally_and_its_command_stays_one_word(fake_oar, tmp_path):
    folder = tmp_path / "we ird$(touch PWNED)"
    folder.mkdir()
    script = folder / "job `x`.sh"
    script.write_text("#!/bin/bash\nprintf '%s\\n' \"$0\"\n")
    # a well-formed filter whose quoted value a shell would expand; a malformed one, hostile job types,
    # queues and projects never get this far (next tests)
    s = site(gpu_filter=f"cluster='{HOSTILE[0]} {HOSTILE[1]} it''s' AND gpu_mem>=1")
    req = request(name=HOSTILE[3], array_size=1)
    OarScheduler(s).submit(req, script, str(folder / "logs"), {"PATH": os.environ["PATH"]})
    got = fake_oar.calls("oarsub")[0]["argv"]
    assert got == argv_for(s, req, str(script), str(folder / "logs"))[1:]
    # what OAR's shell does with the last argument: runs bash on that exact file
    out = subprocess.run(["bash", "-c", got[-1]], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == str(script)
    assert not list(tmp_path.rglob("PWNED*"))
    assert (folder / "logs").is_dir()


@pytest.mark.parametrize("gpu_filter,fault", [
    ("a'b\"c", "quote that is not closed"), ("(gpu_mem>=90000", "unbalanced parentheses"),
    ("gpu_mem>=1) OR (x=1", "unbalanced parentheses"), ("x=1; DELETE FROM jobs", "';' outside a quoted value"),
    ("gpu_mem>=1\nAND x=2", "line break"),
    ('gpu_model="A100"', "double quotes, which SQL reads as a column name"),   # PostgreSQL, as Grid'5000's OAR
    ("gpu_mem>=8000 -- old cards out", "SQL comment"), ("cluster='a' /* x */", "SQL comment"),   # would hide kit's terms
])
def test_a_filter_oar_could_not_parse_is_refused_where_the_site_is_read(gpu_filter, fault):
    """OAR's -p is an SQL WHERE clause: an unclosed quote, unbalanced parentheses, a ';' or a line break
    outside a quoted value is refused naming gpu_filter, before any oarsub; quoted values may hold any of
    them, and a blank filter is no filter."""
    with pytest.raises(ValueError, match=f"gpu_filter .* {fault}"):
        site(gpu_filter=gpu_filter)
    assert site(gpu_filter="cluster='a;b(' AND gpu_model='it''s'").gpu_filter == "cluster='a;b(' AND gpu_model='it''s'"
    assert site(gpu_filter="cluster='a--b/*'").gpu_filter == "cluster='a--b/*'"
    assert site(gpu_filter="   ").gpu_filter == ""


@pytest.mark.parametrize("key", ["queue", "account"])
def test_a_queue_or_project_that_is_not_one_oar_name_is_refused(key):
    """oarsub -q / --project take one name: a value that quoting would keep whole but OAR would never
    know (spaces, ;, quotes, $(...)) is refused where the site is read, naming the key."""
    assert getattr(site(**{key: "my-project_2.b"}), key) == "my-project_2.b"
    for hostile in (*HOSTILE[:3], HOSTILE[5], HOSTILE[6], ""):
        with pytest.raises(ValueError, match=f"{key} .* is not a name the scheduler knows"):
            site(**{key: hostile})


def test_job_types_are_oar_type_names_one_per_entry():
    assert site(job_types=["night exotic", "besteffort,night"]).job_types == ("night", "exotic", "besteffort")
    for hostile in HOSTILE[:2]:
        with pytest.raises(ValueError, match="is not an OAR job type"):
            site(job_types=[hostile])
    with pytest.raises(ValueError, match="night_jobs = false"):
        site(job_types=["night"], night_jobs=False)
    assert site(night_jobs=False, job_types=["exotic"]).job_types == ("exotic",)
    with pytest.raises(ValueError, match="OAR's job types are lower-case"):
        site(job_types=["NIGHT"])
    for elsewhere in ("deploy", "noop", "cosystem"):   # OAR runs no script on the reserved node
        with pytest.raises(ValueError, match=f"job type '{elsewhere}' runs the job's script .*, not on the GPU node"):
            site(job_types=["exotic", elsewhere])


@pytest.mark.parametrize("key,value,said", [
    ("gpus_per_node", True, "valid integer"), ("gpus_per_node", "2", "valid integer"), ("weight", 1.5, "valid integer"),
    ("mem_gb", 10**12, "less than or equal to 65536"), ("cpus_per_task", 100000, "less than or equal to 4096"),
    ("mem_per_gpu_gb", 5000, "less than or equal to 4096"), ("weight", 10**6, "less than or equal to 1000"),
])
def test_a_site_s_counts_are_whole_numbers_a_node_could_have(key, value, said):
    """A boolean or a text is no GPU count, and a memory or core count no node has is a typo: both refused
    where the site is read, as gpus_per_node's and gpu_memory_gib's bounds are."""
    with pytest.raises(ValueError, match=said):
        site(**{key: value})


@pytest.mark.parametrize("night_jobs,types", [(True, ("night",)), (False, ()), ("false", ()), ("no", ()), ("true", ("night",))])
def test_the_default_job_types_follow_night_jobs_as_validated(night_jobs, types):
    """Grid'5000's default job type (night) is given from night_jobs as read ("false" is false), never
    beside a refusal of night for a site that turned night jobs off."""
    assert site(night_jobs=night_jobs).job_types == types


def test_a_cpu_only_site_gets_no_gpu_filter_by_default():
    assert site().gpu_filter == "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
    assert site(gpus_per_node=0).gpu_filter is None
    assert site(gpus_per_node=0, gpu_filter="cluster='x'").gpu_filter == "cluster='x'"   # the site's own, kept


def test_oarsub_runs_in_a_clean_allow_listed_environment(fake_oar, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    sub = OarScheduler(site()).submit(request(), Path("/k/jobs/x.sh"), "/tmp/kit-test-logs-unused",
                                      {"PATH": os.environ["PATH"], "HOME": "/h"})
    assert sub.job_ids == ["100", "101", "102"]
    env = fake_oar.calls("oarsub")[0]["env"]
    assert "AWS_SECRET_ACCESS_KEY" not in env and "HOME" in env


# ---------------------------------------------------------------- the job script


def render(s: Site, argv: list[str]) -> str:
    spec = JobScript(job_name="kit-ci", worker_argv=tuple(argv), shard_slots=(4, 5, 6), shard_count=8,
                     env={"KIT_SITE": "ci", "HF_HUB_OFFLINE": "1"})
    return render_job_script(OarScheduler(s).job_script(spec, request(), "/logs"))


@pytest.mark.parametrize("runtime,argv", [
    ("host", ["/venv/bin/python", "-m", "kit", "shard", "--results", "/r", "--pairs", "/p.json"]),
    ("apptainer", ["apptainer", "exec", "--nv", "--containall", "--cleanenv", "/img.sif", "kit", "shard"]),
])
def test_golden_job_scripts(runtime, argv):
    text = render(site(runtime=runtime), argv)
    assert_golden(text, f"oar-{runtime}.sh")


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)")
def test_oar_script_with_hostile_values_passes_shellcheck(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(render(site(runtime="host"), ["/venv/bin/python", "-m", "kit", "shard", *HOSTILE]))
    r = subprocess.run(["shellcheck", "-S", "warning", str(path), *GOLDEN.glob("oar-*.sh")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("index,shard", [("1", 4), ("2", 5), ("3", 6), (None, 4)])
def test_oar_array_index_1_based_maps_to_slot_index_minus_1(tmp_path, index, shard):
    script = tmp_path / "job.sh"
    script.write_text(render(site(), ["printf", "%s\\n"]))
    env = {"PATH": os.environ["PATH"]} | ({"OAR_ARRAY_INDEX": index, "OAR_JOB_ID": "77"} if index else {})
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["--shard", f"{shard}/8"]


def test_an_array_index_past_the_slots_fails_cleanly(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(render(site(), ["true"]))
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "OAR_ARRAY_INDEX": "4"})
    assert r.returncode == 2 and "no shard slot" in r.stderr


def test_forwarded_values_are_written_into_the_script_because_oar_passes_no_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_SETTING", HOSTILE[0])
    text = render(site(forward_env=["MY_SETTING"]), ["sh", "-c", 'printf "%s" "$MY_SETTING"'])
    script = tmp_path / "job.sh"
    script.write_text(text)
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": os.environ["PATH"], "OAR_ARRAY_INDEX": "1"})
    assert r.stdout.startswith(HOSTILE[0]) and not list(tmp_path.glob("PWNED*"))


# ---------------------------------------------------------------- submit, poll, cancel


def test_a_refusal_is_one_clear_error_and_oarsub_runs_once(fake_oar):
    fake_oar.state = {"oarsub": {"rc": 8, "stdout": "[ADMISSION RULE] Modify resource description\nOAR_JOB_ID=-5\n",
                                 "stderr": "There are not enough resources for your request\n"
                                           "[ERROR] Oarsub failed, please verify your request syntax.\n"}}
    with pytest.raises(SubmitError) as err:
        OarScheduler(site(gpu_filter="gpu_mem>=999999")).submit(request(), Path("/k/j.sh"), "/tmp/kit-l",
                                                                {"PATH": os.environ["PATH"]})
    msg = err.value.one_line()
    assert "not enough resources" in msg and "gpu_mem>=999999" in msg and "gpu_filter" in msg
    assert "\n" not in msg
    assert len(fake_oar.calls("oarsub")) == 1


def test_an_unknown_job_type_names_the_setting_to_change(fake_oar):
    fake_oar.state = {"oarsub": {"rc": 254, "stderr": "[ADMISSION RULE] Error: unknown job type: night\n"}}
    with pytest.raises(SubmitError) as err:
        OarScheduler(site()).submit(request(), Path("/k/j.sh"), "/tmp/kit-l", {"PATH": os.environ["PATH"]})
    assert "job_types" in err.value.one_line() and "exotic" in err.value.one_line()


def test_poll_asks_oarstat_once_for_all_ids_and_normalizes(fake_oar):
    fake_oar.state = {"jobs": {"5": {"state": "Terminated", "exit_code": 0},
                               "6": {"state": "Terminated", "exit_code": 768},
                               "7": {"state": "Running", "exit_code": None}}}
    got = OarScheduler(site()).poll(["5", "6", "7", "8"])
    assert {j: s.state for j, s in got.items()} == {"5": JobState.COMPLETED, "6": JobState.FAILED, "7": JobState.RUNNING, "8": JobState.UNKNOWN}
    assert got["6"].exit_code == 3
    assert len(fake_oar.calls("oarstat")) == 1
    assert fake_oar.calls("oarstat")[0]["argv"] == ["-f", "-J", "-j", "5", "-j", "6", "-j", "7", "-j", "8"]


def test_poll_when_oarstat_prints_nothing_says_unknown_with_a_reason(fake_oar):
    got = OarScheduler(site()).poll(["41"])
    assert got["41"].state == JobState.UNKNOWN and "oarstat" in got["41"].reason


def test_poll_when_oarstat_fails_says_why(fake_oar):
    fake_oar.state = {"oarstat": {"rc": 1, "stderr": "database unreachable\n"}}
    assert "database unreachable" in OarScheduler(site()).poll(["41"])["41"].reason


def test_cancel_is_oardel_of_the_ids(fake_oar):
    assert OarScheduler(site()).cancel_argv(["5", "6"]) == ["oardel", "5", "6"]
    OarScheduler(site()).cancel(["5", "6"])
    assert fake_oar.calls("oardel")[0]["argv"] == ["5", "6"]
