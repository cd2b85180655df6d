"""OAR's job states, exit codes and command output, normalized by pure functions (one test per state)."""

from __future__ import annotations

import pytest

from kit.launch.schedulers.base import JobState
from kit.launch.schedulers.oar import OAR_STATES, exit_status, is_finished, job_status, parse_job_ids, parse_oarstat

# every name of the jobs.state ENUM of OAR 2.5 (mysql_structure.sql), with what kit makes of it
EXPECTED = {
    "Waiting": JobState.PENDING, "Hold": JobState.PENDING, "toLaunch": JobState.PENDING, "toAckReservation": JobState.PENDING,
    "Suspended": JobState.RUNNING,   # it holds its nodes, as Slurm's SUSPENDED (running) does
    "Launching": JobState.RUNNING, "Running": JobState.RUNNING, "Resuming": JobState.RUNNING, "Finishing": JobState.RUNNING,
    "Terminated": JobState.COMPLETED, "Error": JobState.FAILED, "toError": JobState.FAILED,
}


def test_the_table_names_every_oar_state_and_only_those():
    assert set(OAR_STATES) == set(EXPECTED)


@pytest.mark.parametrize("state", sorted(EXPECTED))
def test_each_oar_state_normalizes(state):
    st = job_status("7", {"state": state, "exit_code": 0 if state == "Terminated" else None, "events": []})
    assert st.state == EXPECTED[state]
    assert st.job_id == "7"
    assert is_finished(state) == (state in ("Terminated", "Error", "toError"))


def test_hold_says_held_and_is_queued_not_failed():
    st = job_status("3", {"state": "Hold", "exit_code": None})
    assert st.state == JobState.PENDING and "Hold" in st.reason


@pytest.mark.parametrize("raw,code", [(0, 0), (256, 1), (768, 3), ("768 (3,0,0)", 3), (9, 137), (15, 143),
                                      (None, None), ("", None), ("n/a", None)])
def test_exit_code_is_a_raw_wait_status(raw, code):
    assert exit_status(raw) == code


def test_terminated_with_a_non_zero_exit_is_failed_with_the_real_code():
    st = job_status("8", {"state": "Terminated", "exit_code": 768, "events": []})
    assert (st.state, st.exit_code) == (JobState.FAILED, 3)
    assert "exited 3" in st.reason


def test_a_worker_stopped_by_the_checkpoint_signal_before_the_walltime_is_timeout():
    # events of a real job submitted with --checkpoint 40 --signal 15 (OAR 2.5.9, scripts/dev/oar.sh)
    events = [{"type": "CHECKPOINT", "description": "User oar (sarko) requested a checkpoint on the job 104"},
              {"type": "CHECKPOINT_SUCCESSFULL", "description": "[sarko] The job 104 was notified to checkpoint itself"},
              {"type": "SWITCH_INTO_TERMINATE_STATE", "description": "[bipbip 104] Ask to change the job state"}]
    st = job_status("104", {"state": "Terminated", "exit_code": 143 << 8, "events": events})
    assert (st.state, st.exit_code) == (JobState.TIMEOUT, 143) and "before the walltime" in st.reason


def test_a_worker_stopped_by_oardel_signal_sigterm_is_cancelled():
    events = [{"type": "SIGNAL_SIGTERM", "description": "User kit requested the signal SIGTERM on the job 105"},
              {"type": "SIG_SUCCESS", "description": "The job 105 was notified to signal itself with SIGTERM"}]
    st = job_status("105", {"state": "Terminated", "exit_code": 143 << 8, "events": events})
    assert (st.state, st.exit_code) == (JobState.CANCELLED, 143) and "SIGTERM" in st.reason


def test_error_after_the_walltime_is_timeout_even_though_sarko_also_frags_it():
    events = [{"type": "FRAG_JOB_REQUEST", "description": "User root requested to frag the job 9"},
              {"type": "WALLTIME", "description": "[sarko] Job [9] from 1 with 10; current time=30 (Elapsed)"},
              {"type": "SWITCH_INTO_ERROR_STATE", "description": "[bipbip 9] Ask to change the job state"}]
    st = job_status("9", {"state": "Error", "exit_code": None, "events": events})
    assert st.state == JobState.TIMEOUT and "walltime" in st.reason


def test_error_after_oardel_is_cancelled_and_says_who_deleted_it():
    """A plain oardel is a cancel by a user, as Slurm's scancel is read (CANCELLED by N)."""
    events = [{"type": "FRAG_JOB_REQUEST", "description": "User kit requested to frag the job 10"},
              {"type": "SEND_KILL_JOB", "description": "[Leon] Send the kill signal to oarexec"}]
    st = job_status("10", {"state": "Error", "exit_code": None, "events": events})
    assert st.state == JobState.CANCELLED
    assert "oardel" in st.reason and "User kit" in st.reason


def test_other_errors_show_oars_own_explanation():
    events = [{"type": "SWITCH_INTO_ERROR_STATE", "description": "[bipbip 11] Ask to change the job state"},
              {"type": "OUTPUT_FILES", "description": "[bipbip 11] Cannot create .stdout and .stderr files"}]
    st = job_status("11", {"state": "Error", "events": events})
    assert st.state == JobState.FAILED and "Cannot create .stdout" in st.reason


def test_an_unknown_state_name_is_unknown_not_a_guess():
    st = job_status("12", {"state": "Frobnicating"})
    assert st.state == JobState.UNKNOWN and "Frobnicating" in st.reason


OARSUB_ARRAY = """[ADMISSION RULE] Modify resource description with type constraints
OAR_JOB_ID=6
OAR_JOB_ID=7
OAR_JOB_ID=8
OAR_ARRAY_ID=6
"""
OARSUB_JSON = """[ADMISSION RULE] Modify resource description with type constraints
OAR_JOB_ID=11

##########
{
   "job_id" : 11
}

##########
"""


def test_job_ids_come_from_oar_job_id_lines_in_array_order():
    assert parse_job_ids(OARSUB_ARRAY) == ["6", "7", "8"]
    assert parse_job_ids(OARSUB_JSON) == ["11"]


def test_a_refused_submission_has_no_job_id():
    assert parse_job_ids("OAR_JOB_ID=-5\n") == []
    assert parse_job_ids("") == []


def test_oarstat_printing_nothing_means_no_job():
    assert parse_oarstat("") == {}
    assert parse_oarstat("\n  \n") == {}


def test_oarstat_json_documents_are_read_one_after_another():
    text = '{"6": {"state": "Terminated", "exit_code": 0}}\n{\n "7": {"state": "Running"}\n}\n'
    assert {k: v["state"] for k, v in parse_oarstat(text).items()} == {"6": "Terminated", "7": "Running"}


def test_oarstat_garbage_is_an_error_the_poller_reports():
    with pytest.raises(ValueError):
        parse_oarstat("Deleting the job = 10 ...REGISTERED.")
