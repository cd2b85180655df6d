"""Walltimes as each scheduler reads them (kit/config/walltime.py)."""

from __future__ import annotations

import pytest

from kit.config.walltime import walltime_seconds
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
