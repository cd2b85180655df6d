"""The Slurm scheduler's fast tier: state table, parsers, directives, and submit/poll/cancel
against faked sbatch/squeue/sacct/scancel at the subprocess boundary (the real cluster is
tests/integration and tests/e2e)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kit.config.sites import Site
from kit.errors import ConfigError, SubmitError
from kit.launch import frontend as frontend_mod
from kit.launch.cancel import jobs_to_cancel
from kit.launch.request import JobRequest
from kit.launch.schedulers import slurm_query
from kit.launch.schedulers.base import JobStatus
from kit.launch.schedulers.slurm import SlurmScheduler, gpu_option, slurm_time
from kit.plan import Pair
from kit.results.status import PairStatus

# Written out here, not derived from the table: changing a mapping must fail a test.
EXPECTED_STATES = {
    "PENDING": "pending", "CONFIGURING": "pending", "REQUEUED": "pending", "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending", "RESV_DEL_HOLD": "pending",
    "RUNNING": "running", "COMPLETING": "running", "STAGE_OUT": "running", "SIGNALING": "running",
    "RESIZING": "running", "SUSPENDED": "running", "STOPPED": "running",
    "COMPLETED": "completed",
    "FAILED": "failed", "BOOT_FAIL": "failed", "NODE_FAIL": "failed", "OUT_OF_MEMORY": "failed",
    "SPECIAL_EXIT": "failed",
    "TIMEOUT": "timeout", "DEADLINE": "timeout",
    "CANCELLED": "cancelled", "PREEMPTED": "cancelled", "REVOKED": "cancelled",
}


@pytest.mark.parametrize("name,state", sorted(EXPECTED_STATES.items()))
def test_each_slurm_state_normalizes(name, state):
    assert slurm_query.normalize(name) == state
    assert slurm_query.is_finished(name) == (state in ("completed", "failed", "timeout", "cancelled"))


def test_the_table_holds_exactly_the_24_documented_states():
    assert set(slurm_query.SLURM_STATES) == set(EXPECTED_STATES)


@pytest.mark.parametrize("raw,base", [
    ("CANCELLED by 0", "CANCELLED"), ("CANCELLED+", "CANCELLED"), ("OUT_OF_MEMORY", "OUT_OF_MEMORY"),
    (["RUNNING", "COMPLETING"], "RUNNING"), (["REQUEUED", "PENDING"], "REQUEUED"), ("running", "RUNNING"),
])
def test_base_state_reads_every_spelling(raw, base):
    assert slurm_query.base_state(raw) == base


def test_an_unknown_state_is_unknown_and_not_finished():
    assert slurm_query.normalize("WEIRD_NEW_STATE") == "unknown" and slurm_query.normalize("") == "unknown"
    assert not slurm_query.is_finished("WEIRD_NEW_STATE")


@pytest.mark.parametrize("out,job", [("12\n", "12"), ("12;kit-ci\n", "12"), ("sbatch: warning x\n31\n", "31"),
                                     ("556\nNOTE: job charged to project X\n", "556"), ("12\n13\n", None),
                                     ("", None), ("Submitted batch job 12\n", None)])
def test_parse_sbatch_id(out, job):
    assert slurm_query.parse_sbatch_id(out) == job


@pytest.mark.parametrize("text,ids", [("2-5", [2, 3, 4, 5]), ("2-3,5", [2, 3, 5]), ("0-6:2%1", [0, 2, 4, 6]),
                                      ("7", [7]), ("1-3%2", [1, 2, 3])])
def test_expand_task_string(text, ids):
    assert slurm_query.expand_task_string(text) == ids


# squeue --json of Slurm 22.05.8 on this project's dev cluster, trimmed to the fields kit reads.
SQUEUE_2205 = {"meta": {}, "errors": [], "jobs": [
    {"job_id": 13, "array_job_id": 12, "array_task_id": 0, "array_task_string": "", "job_state": "RUNNING",
     "state_reason": "None", "exit_code": 0},
    {"job_id": 14, "array_job_id": 12, "array_task_id": 1, "array_task_string": "", "job_state": "FAILED",
     "state_reason": "NonZeroExitCode", "exit_code": 768},
    {"job_id": 12, "array_job_id": 12, "array_task_id": None, "array_task_string": "2-3,5", "job_state": "PENDING",
     "state_reason": "Resources", "exit_code": 0},
    {"job_id": 20, "array_job_id": 0, "array_task_id": None, "array_task_string": "", "job_state": "CANCELLED",
     "state_reason": "None", "exit_code": 15},
    {"job_id": 21, "array_job_id": 0, "array_task_id": None, "array_task_string": "", "job_state": "TIMEOUT",
     "state_reason": "TimeLimit", "exit_code": 0},
]}
# the same kinds of record as Slurm 23+ prints them (numbers as {"set", "number"}, states as lists)
SQUEUE_23 = {"jobs": [
    {"job_id": 31, "array_job_id": {"set": True, "number": 30}, "array_task_id": {"set": True, "number": 1},
     "job_state": ["OUT_OF_MEMORY"], "state_reason": "OutOfMemory",
     "exit_code": {"status": ["FAILED"], "return_code": {"set": True, "number": 137}, "signal": {"id": {"set": False}}}},
    {"job_id": 32, "array_job_id": {"set": True, "number": 0}, "array_task_id": {"set": False, "number": 0},
     "job_state": ["COMPLETED"], "state_reason": "None",
     "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "number": 0}}},
]}


def test_parse_squeue_2205_maps_array_tasks_and_exit_codes():
    got = slurm_query.parse_squeue_json(json.dumps(SQUEUE_2205))
    assert set(got) == {"12_0", "12_1", "12_2", "12_3", "12_5", "20", "21"}
    assert got["12_0"].state == "running"
    assert got["12_1"].state == "failed" and got["12_1"].exit_code == 3 and "NonZeroExitCode" in got["12_1"].reason
    assert got["12_5"].state == "pending" and "Resources" in got["12_5"].reason
    assert got["20"].state == "cancelled" and "signal 15" in got["20"].reason
    assert got["21"].state == "timeout" and "TimeLimit" in got["21"].reason


def test_parse_squeue_23_shapes():
    got = slurm_query.parse_squeue_json(json.dumps(SQUEUE_23))
    assert got["30_1"].state == "failed" and got["30_1"].exit_code == 137 and "OUT_OF_MEMORY" in got["30_1"].reason
    assert got["32"].state == "completed" and got["32"].exit_code == 0


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"meta": {}}'])
def test_parse_squeue_refuses_what_is_not_a_squeue_answer(text):
    with pytest.raises(ValueError):
        slurm_query.parse_squeue_json(text)


# what squeue 22.05.8 prints, exit 0, when it cannot reach slurmctld (seen on the dev cluster with its
# controller stopped): an empty job list that is not "no jobs"
SQUEUE_CONTROLLER_DOWN = {"meta": {"Slurm": {"release": "22.05.8"}}, "jobs": [], "errors": [
    {"description": "Failed while looking for jobs", "error_number": -1, "error": "Unspecified error",
     "source": "slurm_load_jobs"}]}


def test_an_empty_job_list_with_errors_is_no_answer_not_no_jobs():
    with pytest.raises(ValueError, match=r"Failed while looking for jobs \(slurm_load_jobs\)"):
        slurm_query.parse_squeue_json(json.dumps(SQUEUE_CONTROLLER_DOWN))
    with pytest.raises(ValueError):
        slurm_query.parse_squeue_names(json.dumps(SQUEUE_CONTROLLER_DOWN))
    assert slurm_query.parse_squeue_json(json.dumps({**SQUEUE_CONTROLLER_DOWN, "errors": []})) == {}


def test_live_jobs_are_not_listed_as_none_when_squeue_could_not_ask(fake):
    fake(squeue=SQUEUE_CONTROLLER_DOWN, sacct_dbd=None, sacct_c="")
    with pytest.raises(SubmitError, match="gave no job list .*Failed while looking for jobs"):
        SlurmScheduler(site()).live_jobs()
    got = SlurmScheduler(site()).poll(["7"])
    assert got["7"].state == "unknown" and "Failed while looking for jobs" in got["7"].reason


@pytest.mark.parametrize("jobs", [[None], [1, 2]])
def test_a_job_entry_that_is_no_object_is_no_answer(jobs):
    with pytest.raises(ValueError, match="not an object"):
        slurm_query.parse_squeue_json(json.dumps({"jobs": jobs}))


def test_a_pending_array_of_millions_of_tasks_is_read_for_the_ids_asked_only():
    answer = json.dumps({"jobs": [{"job_id": 100, "array_job_id": 100, "array_task_id": {"set": False, "number": 0},
                                   "array_task_string": "0-99999999%4", "job_state": "PENDING", "name": "other"}]})
    got = slurm_query.parse_squeue_json(answer, wanted={"100_7", "100_123456789", "5"})
    assert set(got) == {"100_7"} and got["100_7"].state == "pending"
    assert slurm_query.parse_squeue_names(answer, "kit-") == {}   # someone else's array: never spelled out
    with pytest.raises(ValueError, match="more than"):
        slurm_query.parse_squeue_json(answer)


def test_parse_sacct_rows_steps_and_pending_records():
    text = ("2|COMPLETED|0:0\n4|FAILED|1:0\n4.batch|FAILED|1:0\n5|CANCELLED by 0|0:0\n3_0|COMPLETED|0:0\n"
            "3_1|TIMEOUT|0:15\n3_[2-3]|PENDING|0:0\n")
    got = slurm_query.parse_sacct(text)
    assert set(got) == {"2", "4", "5", "3_0", "3_1", "3_2", "3_3"}
    assert got["4"].state == "failed" and got["4"].exit_code == 1 and "exit code 1" in got["4"].reason
    assert got["5"].state == "cancelled"
    assert got["3_1"].state == "timeout" and "signal 15" in got["3_1"].reason
    assert got["3_3"].state == "pending"


# ----------------------------------------------------------------- directives


def site(**kw) -> Site:
    base = {"name": "c", "scheduler": "slurm", "runtime": "host", "gpus_per_node": 4}
    return Site(**{**base, **kw})


def request(**kw) -> JobRequest:
    return JobRequest(**{"name": "kit-c-vllm-abc", "gpus": 2, "walltime_s": 5400, "array_size": 1, **kw})


@pytest.mark.parametrize("seconds,text", [(60, "0:01:00"), (5400, "1:30:00"), (86399, "23:59:59"),
                                          (86400, "1-00:00:00"), (2 * 86400 + 3661, "2-01:01:01")])
def test_slurm_time(seconds, text):
    assert slurm_time(seconds) == text


@pytest.mark.parametrize("gres,gpus,option", [
    (None, 2, "--gres=gpu:2"), ("gpu:a100:{gpus}", 4, "--gres=gpu:a100:4"), ("--gpus={gpus}", 1, "--gpus=1"),
    ("--gpus-per-node=h100:{gpus}", 8, "--gpus-per-node=h100:8"), (None, 0, None),
])
def test_gpu_option(gres, gpus, option):
    assert gpu_option(site(gres=gres), gpus) == option


@pytest.mark.parametrize("gres", ["gpu:a100:2", "gpu:{gpus} --wrap=x", "gpu:{gpus};touch x", "--time={gpus}",
                                  "{gpus}", "--array={gpus}", "--gres=gpu:{gpus} --output=/x", "license:{gpus}",
                                  "gpu:{gpus}\n", "gpu:{gpus},gpu:a100:4"])
def test_bad_gres_templates_are_refused_as_the_site_is_read(gres, tmp_path):
    """Only a GPU request: another option in the template would pass the reserved-option rule."""
    from kit.config.sites import load_sites

    (tmp_path / "sites.toml").write_text(f"[site.c]\nscheduler = \"slurm\"\ngres = {json.dumps(gres)}\n")
    with pytest.raises(ConfigError) as err:
        load_sites(tmp_path / "sites.toml")
    line = err.value.one_line()
    assert "site.c.gres" in line and "not a GPU request" in line and "fix:" in line, line


def test_prelude_for_an_array_job():
    s = site(partition="gpu", account="proj@a100", qos="normal", cpus_per_task=8, mem_gb=64, forward_env=("WANDB_MODE",))
    lines = SlurmScheduler(s).prelude(request(array_size=3, cpus=8, mem_gb=64), "/lustre/kit/logs")
    assert lines == [
        "#SBATCH --job-name=kit-c-vllm-abc", "#SBATCH --partition=gpu", "#SBATCH --account=proj@a100",
        "#SBATCH --qos=normal", "#SBATCH --nodes=1", "#SBATCH --ntasks=1", "#SBATCH --gres=gpu:2",
        "#SBATCH --cpus-per-task=8", "#SBATCH --mem=64G", "#SBATCH --time=1:30:00", "#SBATCH --array=0-2",
        "#SBATCH --output=/lustre/kit/logs/%x-%A_%a.out", "#SBATCH --export=PATH,HOME,USER,LANG,TZ,WANDB_MODE",
    ]


def test_prelude_of_a_single_job_names_its_log_by_job_id():
    lines = SlurmScheduler(site()).prelude(request(), "/k/logs")
    assert "#SBATCH --output=/k/logs/%x-%j.out" in lines and not any("--array" in line for line in lines)


@pytest.mark.parametrize("key,value", [("partition", "gpu debug"), ("account", "a'b"), ("qos", "$(touch x)"),
                                       ("partition", "gpu\n#SBATCH --uid=0"), ("qos", "normal\n")])
def test_values_that_cannot_go_into_sbatch_lines_are_refused(key, value):
    # an account is refused where the site is read (a ValueError there), the others when the line is made
    with pytest.raises((ConfigError, ValueError)) as err:
        SlurmScheduler(site(**{key: value})).prelude(request(), "/k/logs")
    assert repr(value) in str(err.value)


def test_a_log_folder_with_spaces_is_refused():
    with pytest.raises(ConfigError, match="root"):
        SlurmScheduler(site()).prelude(request(), "/my kit/logs")


# ----------------------------------------------------------------- the subprocess boundary


class FakeSlurm:
    """Answers sbatch/squeue/sacct/scancel from a state dict, recording every command."""

    def __init__(self, squeue=None, sacct_dbd=None, sacct_c="", sbatch="41\n"):
        self.squeue, self.sacct_dbd, self.sacct_c, self.sbatch = squeue, sacct_dbd, sacct_c, sbatch
        self.calls: list[list[str]] = []

    def __call__(self, argv, **kw):
        cmd = list(argv)
        if cmd[:2] == ["env", "-i"]:
            cmd = cmd[2:]
            while cmd and "=" in cmd[0]:
                cmd.pop(0)
        self.calls.append(cmd)
        name = cmd[0]
        if name == "squeue":
            if isinstance(self.squeue, Exception):
                raise self.squeue
            return self._done(argv, json.dumps(self.squeue) if isinstance(self.squeue, dict) else (self.squeue or ""))
        if name == "sacct" and "-c" in cmd:
            return self._done(argv, self.sacct_c)
        if name == "sacct":
            if self.sacct_dbd is None:
                return self._done(argv, "", "Slurm accounting storage is disabled\n", 1)
            return self._done(argv, self.sacct_dbd)
        if name == "sbatch" and self.sbatch is None:
            return self._done(argv, "", "sbatch: error: Invalid partition name specified", 1)
        if name == "sbatch":
            return self._done(argv, self.sbatch)
        return self._done(argv, "")

    @staticmethod
    def _done(argv, out, err="", rc=0):
        return subprocess.CompletedProcess(argv, rc, out, err)


@pytest.fixture
def fake(monkeypatch):
    def install(**kw) -> FakeSlurm:
        f = FakeSlurm(**kw)
        monkeypatch.setattr(frontend_mod.subprocess, "run", f)
        return f
    return install


def test_poll_reads_squeue_first_then_sacct_for_the_rest(fake):
    f = fake(squeue=SQUEUE_2205, sacct_dbd="40_0|COMPLETED|0:0\n40_1|FAILED|2:0\n")
    got = SlurmScheduler(site()).poll(["12_0", "12_5", "40_0", "40_1"])
    assert got["12_0"].state == "running" and got["12_5"].state == "pending"
    assert got["40_0"].state == "completed" and got["40_1"].state == "failed" and got["40_1"].exit_code == 2
    sacct = [c for c in f.calls if c[0] == "sacct"]
    assert sacct == [["sacct", "--parsable2", "--noheader", "-X", "-j", "40_0,40_1", "-o", "JobID,State,ExitCode"]]


def test_poll_without_slurmdbd_asks_the_jobcomp_file_for_plain_ids_only(fake):
    f = fake(squeue={"jobs": []}, sacct_dbd=None, sacct_c="50|FAILED|1:0\n")
    got = SlurmScheduler(site()).poll(["50", "51_2"])
    assert got["50"].state == "failed" and got["50"].exit_code == 1
    assert got["51_2"].state == "unknown" and "slurmdbd" in got["51_2"].reason
    assert ["sacct", "-c", "--parsable2", "--noheader", "-j", "50", "-o", "JobID,State,ExitCode"] in f.calls


@pytest.mark.parametrize("squeue", ["{broken", FileNotFoundError(2, "No such file", "squeue")])
def test_a_broken_scheduler_answer_gives_unknown_with_the_reason(fake, squeue):
    fake(squeue=squeue, sacct_dbd=None, sacct_c="")
    got = SlurmScheduler(site()).poll(["7", "8_1"])
    assert {s.state for s in got.values()} == {"unknown"}
    assert "squeue --json" in got["7"].reason


def test_submit_records_one_id_per_array_task_and_creates_the_log_folder(fake, tmp_path):
    f = fake(sbatch="41;kit-ci\n")
    sub = SlurmScheduler(site()).submit(request(array_size=3), tmp_path / "job.sh", str(tmp_path / "logs"),
                                        {"PATH": "/usr/bin", "HOME": "/root"})
    assert sub.job_ids == ["41_0", "41_1", "41_2"]
    assert (tmp_path / "logs").is_dir()
    assert f.calls == [["sbatch", "--parsable", str(tmp_path / "job.sh")]]


def test_submit_of_a_single_job_records_its_plain_id(fake, tmp_path):
    fake(sbatch="42\n")
    assert SlurmScheduler(site()).submit(request(), tmp_path / "j.sh", str(tmp_path), {}).job_ids == ["42"]


@pytest.mark.parametrize("answer,needle", [(None, "Invalid partition"), ("Submitted batch job\n", "no single job id")])
def test_submit_failures_are_one_line_submit_errors(fake, tmp_path, answer, needle):
    fake(sbatch=answer)
    with pytest.raises(SubmitError, match=needle):
        SlurmScheduler(site()).submit(request(), tmp_path / "j.sh", str(tmp_path), {})


def test_submit_runs_sbatch_with_only_the_allow_listed_environment(fake, tmp_path, monkeypatch):
    seen = {}

    def spy(argv, **kw):
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, "43\n", "")

    monkeypatch.setattr(frontend_mod.subprocess, "run", spy)
    SlurmScheduler(site()).submit(request(), tmp_path / "j.sh", str(tmp_path), {"PATH": "/usr/bin", "HOME": "/h"})
    assert seen["argv"][:4] == ["env", "-i", "HOME=/h", "PATH=/usr/bin"] and seen["argv"][4] == "sbatch"


def test_cancel_runs_scancel_with_array_task_ids(fake):
    f = fake()
    s = SlurmScheduler(site())
    assert s.cancel_argv(["12_1", "13"]) == ["scancel", "12_1", "13"]
    s.cancel(["12_1", "13"])
    assert f.calls == [["scancel", "12_1", "13"]]


def test_jobs_to_cancel_keeps_only_live_jobs_that_own_pending_pairs():
    def st(lang, state, job):
        return PairStatus(Pair("org/m", lang), state, None, job=job)  # type: ignore[arg-type]
    plan = jobs_to_cancel("c", [st("de", "complete", None), st("en", "running", "9_0"), st("fr", "queued", "9_1"),
                                st("it", "running", "9_0"), st("ja", "failed", "8"), st("ko", "unclaimed", None)])
    assert plan.jobs == {"9_0": [Pair("org/m", "en"), Pair("org/m", "it")], "9_1": [Pair("org/m", "fr")]}
    assert plan.not_live == {"8": "failed"}


def test_the_requests_a_cluster_needs_become_sbatch_lines():
    s = site(exclusive=True, constraint="a100&ib", reservation="sweep_dec", requeue=False, mem_per_gpu_gb=64)
    lines = SlurmScheduler(s).prelude(request(gpus=2, mem_per_gpu_gb=s.mem_per_gpu_gb), "/k/logs")
    for line in ("#SBATCH --exclusive", "#SBATCH --constraint=a100&ib", "#SBATCH --reservation=sweep_dec",
                 "#SBATCH --no-requeue", "#SBATCH --mem-per-gpu=64G"):
        assert line in lines, line
    assert not any(line.startswith("#SBATCH --mem=") for line in lines)
    plain = SlurmScheduler(site()).prelude(request(gpus=0, mem_per_gpu_gb=64), "/k/logs")
    assert not any("--mem-per-gpu" in line or "requeue" in line or "exclusive" in line for line in plain)


@pytest.mark.parametrize("kw,words", [
    ({"mem_gb": 64, "mem_per_gpu_gb": 32}, "mem_gb and mem_per_gpu_gb"),
    ({"scheduler": "oar", "exclusive": True}, "Slurm sites only"),
    ({"constraint": "a100; rm -rf"}, "cannot go into an #SBATCH line"),
    ({"setup": ["module load apptainer\nrm -rf ~"]}, "line break"),
])
def test_requests_that_cannot_be_honoured_are_refused(kw, words):
    with pytest.raises(ValueError, match=words):   # as the site is read, naming the file and line there
        site(**kw)


def test_a_sized_constraint_that_cannot_go_into_an_sbatch_line_is_refused_when_rendered():
    with pytest.raises(ConfigError, match="cannot go into an #SBATCH line"):
        SlurmScheduler(site()).prelude(request(constraint="a100; rm -rf"), "/k/logs")


def test_a_pending_array_record_of_sacct_is_read_for_the_ids_asked_only():
    """sacct names a pending array by its task ranges, maybe millions: only the tasks asked for are looked
    up (it was spelled out task by task: minutes and a gigabyte for Slurm's largest array)."""
    got = slurm_query.parse_sacct("500_[1-99999999]|PENDING|0:0\n", wanted={"500_7", "500_0", "501_7", "5"})
    assert set(got) == {"500_7"} and got["500_7"].state == "pending"
    with pytest.raises(ValueError, match="more than"):
        slurm_query.parse_sacct("500_[1-99999999]|PENDING|0:0\n")


def test_a_recorded_job_id_that_now_names_another_job_is_never_kit_s(tmp_path):
    """squeue reports the id kit recorded under another name (ids reused, another cluster under the site's
    name): the pair's job is unknown, said so, and kit cancel leaves it alone."""
    from kit.launch.sitestatus import explain_missing
    from kit.launch.tracking import SubmissionRecord

    class Answering:
        def poll(self, job_ids):
            return {"500_1": JobStatus("500_1", "running", name="alice-finetune"),
                    "500_0": JobStatus("500_0", "running", name="kit-c-org-m-1a2b3c")}

    record = SubmissionRecord("c", "slurm", ["500_0", "500_1"], [0, 1], 2, [["org/m", "de"], ["org/m", "en"]],
                              "plan.json", "job.sh", ["sbatch"])
    statuses = [PairStatus(Pair("org/m", lang), "pending", tmp_path) for lang in ("de", "en")]
    done = explain_missing(statuses, [record], Answering())
    by = {s.pair.language: s for s in done}
    assert by["de"].state == "running" and by["en"].state == "unknown"
    assert "500_1 is now another job ('alice-finetune'), not the kit job" in by["en"].reasons[0]
    assert list(jobs_to_cancel("c", done).jobs) == ["500_0"]


def test_a_scheduler_that_cannot_be_asked_is_said_once_for_the_site_not_taken_for_no_jobs(fake):
    from kit.launch.sitestatus import NOT_ASKED, explain_missing, unread_reasons
    from kit.launch.tracking import SubmissionRecord

    fake(squeue={"jobs": [], "errors": [{"description": "Unable to contact slurm controller"}]}, sacct_dbd=None,
         sacct_c="")
    record = SubmissionRecord("c", "slurm", ["500"], [0], 1, [["org/m", "de"]], "plan.json", "job.sh", ["sbatch"])
    done = explain_missing([PairStatus(Pair("org/m", "de"), "pending", Path("x"))], [record], SlurmScheduler(site()))
    assert done[0].state == "unknown"
    (said,) = unread_reasons(done)
    assert said.startswith(NOT_ASKED) and "Unable to contact slurm controller" in said
