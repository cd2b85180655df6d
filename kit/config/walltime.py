"""Walltimes read as the site's own scheduler reads them, so that a value means what its users
expect: "30:00" is 30 minutes to Slurm and 30 hours to OAR.

- slurm (sbatch --time): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
- oar (oarsub -l walltime=): H, H:M, H:M:S
- local: only the unambiguous forms below, or H:M:S / D-H:M:S
- every scheduler also takes units: 90m, 1h30m, 2d, 45s (d, h, m, s in that order)

Zero (which Slurm reads as "no limit") and more than MAX_WALLTIME_S are refused. A walltime under
SHORT_WALLTIME_S is taken, with a warning saying how it was read (short_walltime)."""

from __future__ import annotations

import re

from kit.config.loading import invalid

# the longest walltime kit accepts: beyond any cluster's limit, and far from datetime's
MAX_WALLTIME_S = 366 * 24 * 3600
_UNITS = re.compile(r"^(?:(\d{1,18})d)?(?:(\d{1,18})h)?(?:(\d{1,18})m)?(?:(\d{1,18})s)?\Z")
_DIGITS = re.compile(r"^\d{1,18}\Z")   # longer is no walltime; bounded, so int() stays cheap
GRAMMAR = {
    "slurm": "Slurm's M, M:S, H:M:S or D-H[:M[:S]]",
    "oar": "OAR's H, H:M or H:M:S",
    "local": "H:M:S or D-H:M:S",
}
EXAMPLE = {"slurm": "'90' or '1:30:00'", "oar": "'1:30'", "local": "'1:30:00'"}
# under this, a job is over before it has started its image and loaded a model
SHORT_WALLTIME_S = 10 * 60
_NAMES = {"slurm": "Slurm's", "oar": "OAR's", "local": "kit's local"}


def walltime_seconds(text: str, scheduler: str) -> int:
    """Seconds of a walltime written for `scheduler` (see the module doc); a ConfigError otherwise."""
    value = str(text).strip()
    seconds = _units(value)
    if seconds is None:
        seconds = _clock(value, scheduler)
    if seconds is None:
        raise invalid(f"walltime {text!r} is not {GRAMMAR.get(scheduler, GRAMMAR['local'])}, nor units like '1h30m'",
                      fix=f"write e.g. {EXAMPLE.get(scheduler, EXAMPLE['local'])} or '90m' for ninety minutes")
    if not 0 < seconds <= MAX_WALLTIME_S:
        raise invalid(f"walltime {text!r} is {'no time at all' if seconds == 0 else 'more than a year'}",
                      fix="write the job's real limit, e.g. '90m' for ninety minutes")
    return seconds


def _units(value: str) -> int | None:
    m = _UNITS.match(value)
    if not value or not m or not any(m.groups()):
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _clock(value: str, scheduler: str) -> int | None:
    days, dash, rest = value.rpartition("-")
    parts = rest.split(":")
    if dash and not _DIGITS.match(days):
        return None
    if not all(_DIGITS.match(p) for p in parts) or len(parts) > 3:
        return None
    nums = [int(p) for p in parts]
    if any(n >= 60 for n in nums[1:]):
        return None
    if dash:   # D-H, D-H:M, D-H:M:S on every scheduler that takes days
        if scheduler == "oar":
            return None
        h, m, s = (nums + [0, 0])[:3]
        return ((int(days) * 24 + h) * 60 + m) * 60 + s
    if scheduler == "slurm":
        h, m, s = nums if len(nums) == 3 else (0, *(nums + [0])[:2])
        return (h * 60 + m) * 60 + s
    if scheduler == "oar":
        h, m, s = (nums + [0, 0])[:3]
        return (h * 60 + m) * 60 + s
    if len(nums) == 3:
        h, m, s = nums
        return (h * 60 + m) * 60 + s
    return None


def short_walltime(text: str, scheduler: str) -> str | None:
    """One line saying how a walltime under SHORT_WALLTIME_S was read, and what gives hours; None for a
    longer one or one that does not parse (walltime_seconds refuses that)."""
    try:
        seconds = walltime_seconds(text, scheduler)
    except ValueError:
        return None
    if seconds >= SHORT_WALLTIME_S:
        return None
    value = str(text).strip()
    form = _form(value, scheduler)
    read = f" in {_NAMES.get(scheduler, _NAMES['local'])} grammar ({form})" if form else ""
    if scheduler == "slurm" and form in ("M", "M:S"):   # the same digits one clock field up: hours
        hours = value + (":00:00" if form == "M" else ":00")
        advice = f"; write {hours} for {duration_words(seconds * 60)}"
    else:
        advice = ": too short for a job to start its image and load a model; write e.g. '2h'"
    return f"walltime {text!r} is {duration_words(seconds)}{read}{advice}"


def duration_words(seconds: int) -> str:
    """7200 -> '2 hours', 90 -> '1 minute 30 seconds'."""
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n} {unit}{'s' if n != 1 else ''}"
             for n, unit in ((days, "day"), (hours, "hour"), (minutes, "minute"), (secs, "second")) if n]
    return " ".join(parts) or "0 seconds"


def _form(value: str, scheduler: str) -> str | None:
    """The clock form a walltime was read in ('M:S', 'H:M', 'D-H:M', ...); None for units like '90m'."""
    if _units(value) is not None:
        return None
    _days, dash, rest = value.rpartition("-")
    fields = len(rest.split(":"))
    if dash:
        return "D-" + ":".join("HMS"[:fields])
    if scheduler == "slurm":
        return ("M", "M:S", "H:M:S")[fields - 1]
    return ("H", "H:M", "H:M:S")[fields - 1]
