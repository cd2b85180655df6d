"""Walltimes as each scheduler reads them (kit/config/walltime.py)."""

from __future__ import annotations

import pytest

from kit.config.walltime import short_walltime, walltime_seconds
from kit.config.loading import invalid_line

H, M = 3600, 60


@pytest.mark.parametrize("scheduler,text,seconds", [
    ("slurm", "30", 30 * M), ("slurm", "30:00", 30 * M), ("slurm", "90", 90 * M), ("slurm", "1:30:00", H + 30 * M),
    ("slurm", "2-0", 48 * H), ("slurm", "1-12:30", 36 * H + 30 * M), ("slurm", "0-0:0:45", 45),
    ("oar", "30:00", 30 * H), ("oar", "2", 2 * H), ("oar", "1:30", H + 30 * M), ("oar", "0:10:30", 10 * M + 30),
    ("local", "0:30:00", 30 * M), ("local", "1-00:00:00", 24 * H),
    ("slurm", "90m", 90 * M), ("oar", "1h30m", H + 30 * M), ("local", "2d", 48 * H), ("oar", "45s", 45),
])
def test_each_scheduler_reads_its_own_grammar(scheduler, text, seconds):
    assert walltime_seconds(text, scheduler) == seconds


@pytest.mark.parametrize("scheduler,text,why", [
    ("local", "0:30", "H:M:S or D-H:M:S"),          # ambiguous without a scheduler's grammar
    ("oar", "1-00:00", "OAR's H, H:M or H:M:S"),     # OAR has no days
    ("slurm", "1:2:3:4", "Slurm's"), ("slurm", "1:75", "Slurm's"), ("oar", "90 minutes", "OAR's"),
    ("slurm", "0", "no time at all"), ("oar", "0:00", "no time at all"), ("slurm", "0m", "no time at all"),
    ("oar", "9000:00", "more than a year"), ("slurm", "9" * 30, "Slurm's"), ("oar", "9" * 5000 + "h", "OAR's"),
    ("slurm", "", "Slurm's"), ("slurm", "1h 30m", "Slurm's"),
])
def test_what_a_scheduler_would_not_read_or_reads_as_no_limit_is_refused(scheduler, text, why):
    with pytest.raises(ValueError) as exc:
        walltime_seconds(text, scheduler)
    message, _, fix = invalid_line(exc.value).partition("; fix: ")
    assert why in message and fix


@pytest.mark.parametrize("scheduler,text,note", [
    ("slurm", "2:00", "walltime '2:00' is 2 minutes in Slurm's grammar (M:S); write 2:00:00 for 2 hours"),
    ("slurm", "5", "walltime '5' is 5 minutes in Slurm's grammar (M); write 5:00:00 for 5 hours"),
    ("slurm", "9:59", "walltime '9:59' is 9 minutes 59 seconds in Slurm's grammar (M:S); "
                      "write 9:59:00 for 9 hours 59 minutes"),
    ("oar", "0:05", "walltime '0:05' is 5 minutes in OAR's grammar (H:M): too short"),
    ("local", "0:01:30", "walltime '0:01:30' is 1 minute 30 seconds in kit's local grammar (H:M:S): too short"),
    ("oar", "5m", "walltime '5m' is 5 minutes: too short"),
])
def test_a_walltime_under_ten_minutes_is_said_as_it_was_read(scheduler, text, note):
    assert short_walltime(text, scheduler).startswith(note)
    assert walltime_seconds(text, scheduler) < 600   # taken, not refused: a warning only


@pytest.mark.parametrize("scheduler,text", [("slurm", "10"), ("slurm", "2:00:00"), ("oar", "2:00"), ("oar", "0:10"),
                                            ("local", "1h"), ("slurm", "not a walltime")])
def test_ten_minutes_or_more_or_an_unreadable_walltime_gives_no_note(scheduler, text):
    assert short_walltime(text, scheduler) is None


def test_a_night_job_longer_than_the_weekend_is_refused_and_one_that_fits_is_not() -> None:
    from kit.config.sites import Site
    from kit.errors import ConfigError
    from kit.launch.run import walltime_warnings

    night = Site(name="nancy", scheduler="oar")                      # OAR sites submit night jobs by default
    day = Site(name="lyon", scheduler="oar", job_types=("exotic",))
    with pytest.raises(ConfigError) as exc:
        walltime_warnings([night, day], "72:00")
    assert exc.value.message == (
        "site nancy (--walltime): walltime '72:00' is 3 days, longer than the longest night window (the "
        "weekend, Friday 19:00 to Monday 09:00, 2 days 14 hours): a night job this long never starts")
    assert "--walltime auto" in exc.value.fix
    assert walltime_warnings([day], "72:00") == [] and walltime_warnings([night], "62:00") == []
    assert walltime_warnings([Site(name="s", scheduler="slurm")], "3-00:00:00") == []
