"""Walltimes read as the site's own scheduler reads them, so that a value means what its users
expect: "30:00" is 30 minutes to Slurm and 30 hours to OAR.

- slurm (sbatch --time): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
- oar (oarsub -l walltime=): H, H:M, H:M:S
- local: only the unambiguous forms below, or H:M:S / D-H:M:S
- every scheduler also takes units: 90m, 1h30m, 2d, 45s (d, h, m, s in that order)

Zero (which Slurm reads as "no limit") and more than MAX_WALLTIME_S are refused."""

from __future__ import annotations

import re

from kit.config.loading import invalid

# the longest walltime kit accepts: beyond any cluster's limit, and far from datetime's
MAX_WALLTIME_S = 366 * 24 * 3600
_UNITS = re.compile(r"^(?:(\d{1,18})d)?(?:(\d{1,18})h)?(?:(\d{1,18})m)?(?:(\d{1,18})s)?$")
_DIGITS = re.compile(r"^\d{1,18}$")   # longer is no walltime; bounded, so int() stays cheap
GRAMMAR = {
    "slurm": "Slurm's M, M:S, H:M:S or D-H[:M[:S]]",
    "oar": "OAR's H, H:M or H:M:S",
    "local": "H:M:S or D-H:M:S",
}
EXAMPLE = {"slurm": "'90' or '1:30:00'", "oar": "'1:30'", "local": "'1:30:00'"}


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
