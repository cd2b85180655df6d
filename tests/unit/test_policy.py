"""The Grid'5000 usage-policy gates: the weekday 09:00/19:00 Europe/Paris window and the
frontend's policy checks (usagepolicycheck -t), before anything is submitted."""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timezone

import pytest

from kit.config.sites import Site
from kit.errors import ConfigError, SubmitError
from kit.launch.frontend import Frontend
from kit.launch.policy import (PARIS, check_day_window, describe, parse_now, policy_commands, run_policy_checks,
                               window_crossing)

H = 3600


def paris(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=PARIS)


def oar(**kw) -> Site:
    return Site.model_validate({"name": "lyon", "scheduler": "oar", **kw})


# 2026-12-01 is a Tuesday; 2026-12-04 a Friday; 2026-12-05/06 the weekend.
@pytest.mark.parametrize("start,hours,crossed", [
    ("2026-12-01T18:30", 1, "2026-12-01T19:00"),       # the case
    ("2026-12-01T18:30", 0.5, None),                    # ends exactly at 19:00: allowed
    ("2026-12-01T08:00", 2, "2026-12-01T09:00"),
    ("2026-12-01T09:00", 10, None),                     # the whole day window, boundaries excluded
    ("2026-12-01T19:00", 14, None),                     # the whole night
    ("2026-12-01T19:00", 14.5, "2026-12-02T09:00"),
    ("2026-12-04T18:30", 1, "2026-12-04T19:00"),        # Friday evening
    ("2026-12-05T10:00", 30, None),                     # weekend
    ("2026-12-06T20:00", 14, "2026-12-07T09:00"),       # Sunday night into Monday morning
    ("2026-12-01T12:00", 30, "2026-12-01T19:00"),       # the first boundary is the one named
])
def test_window_crossing(start, hours, crossed):
    got = window_crossing(paris(start), int(hours * H))
    assert got == (paris(crossed) if crossed else None)


@pytest.mark.parametrize("utc_start,crossed_utc", [
    ("2026-07-01T06:30+00:00", "2026-07-01T07:00+00:00"),   # summer: 09:00 CEST is 07:00 UTC
    ("2026-12-01T07:30+00:00", "2026-12-01T08:00+00:00"),   # winter: 09:00 CET is 08:00 UTC
    ("2026-10-26T07:30+00:00", "2026-10-26T08:00+00:00"),   # the Monday after the clocks went back
])
def test_boundaries_are_europe_paris_wall_time_across_daylight_saving(utc_start, crossed_utc):
    assert window_crossing(datetime.fromisoformat(utc_start), H) == datetime.fromisoformat(crossed_utc)


def test_a_weekday_1830_one_hour_non_night_job_is_refused_with_the_window_and_the_fixes():
    with pytest.raises(SubmitError) as err:
        check_day_window(oar(job_types=["exotic"]), H, paris("2026-12-01T18:30"))
    msg = err.value.one_line()
    assert "19:00" in msg and "Tue 2026-12-01 18:30" in msg and "Europe/Paris" in msg
    assert "--walltime 0:30" in msg and "night" in msg and "wait until 19:00" in msg
    assert err.value.exit_code == 1


@pytest.mark.parametrize("site", [{"job_types": ["besteffort"]}, {"job_types": [], "queue": "production"},
                                  {"job_types": ["exotic", "besteffort"], "queue": "default"}])
def test_besteffort_jobs_and_other_queues_have_no_day_window(site):
    """Grid'5000's weekday rule binds the default queue's jobs: a besteffort job may be killed at any
    time, and the production queue has rules of its own (its policy check says them)."""
    check_day_window(oar(**site), 4 * H, paris("2026-12-01T17:00"))


def test_the_fixes_named_are_ones_the_next_check_passes():
    """A 20 h day job fits no weekday window: neither waiting for the next boundary nor a night job of the
    same length is offered when it would be refused in turn; besteffort always is."""
    with pytest.raises(SubmitError) as err:
        check_day_window(oar(job_types=[]), 20 * H, paris("2026-12-01T10:00"))
    msg = err.value.one_line()
    assert "wait until" not in msg and "--job-type besteffort" in msg and "--job-type night" in msg
    with pytest.raises(SubmitError) as err:
        check_day_window(oar(job_types=[]), 72 * H, paris("2026-12-01T10:00"))
    assert "--job-type night" not in err.value.one_line()   # longer than the longest night window


def test_night_jobs_and_other_schedulers_have_no_day_window():
    check_day_window(oar(), 12 * H, paris("2026-12-01T18:30"))            # default job_types = ["night"]
    check_day_window(Site(name="s", scheduler="slurm"), 12 * H, paris("2026-12-01T18:30"))


def test_describe_tells_a_dry_run_what_would_happen_without_running_anything():
    lines = describe(oar(job_types=[], frontend="lyon.g5k"), H, paris("2026-12-01T18:30"))
    assert "usagepolicycheck -t" in lines[0] and "lyon.g5k" in lines[0]
    assert "WOULD BE REFUSED" in lines[1]
    assert describe(oar(), H, paris("2026-12-01T18:30"))[1] == "day window: job type night: no rule"
    assert describe(oar(job_types=["besteffort"]), H, paris("2026-12-01T18:30"))[1].endswith("besteffort: no rule")
    assert describe(oar(job_types=[], queue="production"), H, paris("2026-12-01T18:30"))[1] == \
        "day window: queue production: no rule"
    assert "fits" in describe(oar(job_types=[]), H, paris("2026-12-01T10:00"))[1]


def test_now_without_an_offset_is_paris_time_and_with_one_is_kept():
    assert parse_now("2026-12-01T18:30") == paris("2026-12-01T18:30")
    assert parse_now("2026-12-01T17:30+00:00") == paris("2026-12-01T18:30")
    assert parse_now(None).tzinfo is not None
    assert abs((parse_now(None) - datetime.now(timezone.utc)).total_seconds()) < 5


def test_a_bad_now_is_bad_input():
    with pytest.raises(ConfigError) as err:
        parse_now("tomorrow at six")
    assert err.value.exit_code == 2 and "2026-12-01T18:30" in err.value.one_line()


def test_policy_checks_default_to_usagepolicycheck_on_oar_sites_only():
    assert policy_commands(oar()) == ["usagepolicycheck -t"]
    assert policy_commands(oar(policy_checks=[])) == []
    assert policy_commands(oar(policy_checks=["/opt/check -x"])) == ["/opt/check -x"]
    assert policy_commands(Site(name="w", scheduler="local")) == []


@pytest.fixture
def checks(tmp_path):
    ok = tmp_path / "ok check"
    ok.write_text('#!/bin/sh\necho "usage: 12% of the daily allowance ($1)"\n')
    bad = tmp_path / "bad"
    bad.write_text('#!/bin/sh\necho "over the limit: cluster grue, 2h of day time used" >&2\nexit 3\n')
    for p in (ok, bad):
        p.chmod(0o755)
    return ok, bad


def test_a_passing_check_shows_its_output(checks):
    shown = []
    run_policy_checks(oar(policy_checks=[f"'{checks[0]}' -t"]), Frontend("local"), shown.append)
    assert any("12% of the daily allowance (-t)" in line for line in shown)


def test_a_check_is_a_shell_line_as_the_dry_run_shows_it(tmp_path):
    shown = []
    run_policy_checks(oar(policy_checks=["test -d / && echo both ran", "v=expanded; echo \"$v\" | tr a-z A-Z"]),
                      Frontend("local"), shown.append)
    assert "  both ran" in shown and "  EXPANDED" in shown, shown


def test_a_failing_check_blocks_and_says_nothing_was_submitted(checks):
    shown = []
    with pytest.raises(SubmitError) as err:
        run_policy_checks(oar(policy_checks=[shlex.quote(str(checks[0])), str(checks[1])]), Frontend("local"),
                          shown.append)
    assert "exited 3" in err.value.one_line() and "nothing was submitted" in err.value.one_line()
    assert any("over the limit" in line for line in shown)


def test_a_missing_check_command_is_a_clear_error(tmp_path):
    with pytest.raises(SubmitError) as err:
        run_policy_checks(oar(policy_checks=[str(tmp_path / "usagepolicycheck") + " -t"]), Frontend("local"),
                          lambda line: None)
    assert "usagepolicycheck" in err.value.one_line()


def test_checks_run_with_the_allow_listed_environment_only(tmp_path, monkeypatch):
    spy = tmp_path / "spy"
    spy.write_text('#!/bin/sh\nenv\n')
    spy.chmod(0o755)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    shown = []
    run_policy_checks(oar(policy_checks=[str(spy)]), Frontend("local"), shown.append)
    assert not any("s3cr3t" in line for line in shown)
    assert any(line.strip().startswith("PATH=") for line in shown) == ("PATH" in os.environ)


def test_an_unparsable_policy_check_is_bad_input():
    with pytest.raises(ConfigError) as err:
        run_policy_checks(oar(policy_checks=["usagepolicycheck 'oops"]), Frontend("local"), lambda line: None)
    assert "policy_checks" in err.value.one_line() and err.value.exit_code == 2
