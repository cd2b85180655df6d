"""Site usage policy, checked before anything is submitted.

Two gates, both before the first job of a run is submitted (to any site):

- the day window (OAR sites, Grid'5000 usage policy): a weekday job of the default queue that is
  neither of type `night` nor `besteffort` must not cross 09:00 or 19:00 Europe/Paris. kit assumes
  the job starts now and refuses, naming the boundary and the fixes the next check passes
  (--walltime, --job-type night, waiting, --job-type besteffort);
- the site's policy_checks (default for OAR sites: `usagepolicycheck -t`) run on the
  site's frontend; their output is shown, and a non-zero exit blocks the submission.

The clock is injectable for tests and rehearsals: `kit run --now 2026-12-01T18:30` (hidden)
or KIT_NOW; a time without an offset is Europe/Paris wall time. kit never resubmits by
itself after a refusal or a failure.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kit.config.sites import Site
from kit.errors import ConfigError, SubmitError
from kit.launch.frontend import Frontend
from kit.launch.jobscript import allow_listed_env

try:
    PARIS = ZoneInfo("Europe/Paris")
except ZoneInfoNotFoundError:  # no time zone database here (slim containers): refuse when it is needed
    PARIS = None
DAY_BOUNDARIES = (time(9, 0), time(19, 0))
NIGHT_TYPE = "night"
# the longest time a night job can hold: the weekend, Friday 19:00 to Monday 09:00 Europe/Paris
LONGEST_NIGHT_S = 62 * 3600


def _paris() -> ZoneInfo:
    if PARIS is None:
        raise ConfigError("no time zone database for Europe/Paris on this machine",
                          fix="install the tzdata package (apt-get install tzdata, or pip install tzdata)")
    return PARIS


def parse_now(text: str | None) -> datetime:
    """The submission time: `text` (ISO 8601; no offset means Europe/Paris), else the real clock."""
    if not text:
        return datetime.now(timezone.utc)
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(f"--now / KIT_NOW {text!r} is not an ISO 8601 time",
                          fix="write e.g. 2026-12-01T18:30 (Europe/Paris) or 2026-12-01T17:30+00:00") from None
    value = value if value.tzinfo else value.replace(tzinfo=_paris())
    try:
        value + timedelta(days=400)   # a year of walltime must fit in the calendar
    except OverflowError:
        raise ConfigError(f"--now / KIT_NOW {text!r} is too close to the end of the calendar for a job to run",
                          fix="give a real submission time, e.g. 2026-12-01T18:30") from None
    return value


def window_crossing(start: datetime, walltime_s: int) -> datetime | None:
    """The first weekday 09:00 or 19:00 Europe/Paris strictly inside (start, start + walltime), or None."""
    end, paris = start + timedelta(seconds=walltime_s), _paris()
    day = start.astimezone(paris).date()
    while datetime.combine(day, time(0), paris) <= end:
        if day.weekday() < 5:
            for boundary in DAY_BOUNDARIES:
                moment = datetime.combine(day, boundary, paris)
                if start < moment < end:
                    return moment
        day += timedelta(days=1)
    return None


# job types the day rule does not bind: a besteffort job may be killed at any time, so it may run across
# the boundaries (Grid'5000's usage policy binds the default queue's jobs)
BESTEFFORT_TYPE = "besteffort"
DEFAULT_QUEUE = "default"


def day_window_applies(site: Site) -> bool:
    """True for an OAR site whose jobs go to the default queue and are neither of type night nor
    besteffort: the jobs Grid'5000's weekday 09:00/19:00 rule binds (the production queue has its own
    rules, which its policy check says)."""
    return (site.scheduler == "oar" and NIGHT_TYPE not in site.job_types and BESTEFFORT_TYPE not in site.job_types
            and site.queue in (None, DEFAULT_QUEUE))


def check_day_window(site: Site, walltime_s: int, now: datetime) -> None:
    """Refuse a job that would cross a weekday 09:00 or 19:00 Europe/Paris boundary."""
    if not day_window_applies(site):
        return
    crossing = window_crossing(now, walltime_s)
    if crossing is None:
        return
    start = now.astimezone(_paris())
    fits = int((crossing - now).total_seconds() // 60)
    hm = f"{walltime_s // 3600}:{walltime_s % 3600 // 60:02d}"
    shorter = f"--walltime {fits // 60}:{fits % 60:02d} or less (ends by {crossing:%H:%M})" if fits >= 1 else None
    # only what the site accepts and the next check would pass: a night job fits the longest night window,
    # and waiting helps only when the job fits the window that begins at the boundary
    night = "--job-type night" if site.night_jobs and walltime_s <= LONGEST_NIGHT_S else None
    wait = f"wait until {crossing:%H:%M} Europe/Paris" if window_crossing(crossing, walltime_s) is None else None
    besteffort = f"--job-type {BESTEFFORT_TYPE} (which OAR may kill at any time)"
    fixes = [f for f in (shorter, night, wait, besteffort) if f]
    raise SubmitError(
        f"site {site.name}: a {hm} job submitted {start:%a %Y-%m-%d %H:%M} Europe/Paris (types: "
        f"{', '.join(site.job_types) or 'none'}) would cross {crossing:%H:%M} on {crossing:%a %Y-%m-%d}; "
        "Grid'5000 weekday jobs that are not of type night must not cross 09:00 or 19:00",
        fix=", ".join(fixes))


def policy_commands(site: Site) -> list[str]:
    """The site's policy checks (sites.toml policy_checks; OAR sites default to `usagepolicycheck -t`)."""
    return list(site.policy_checks)


def run_policy_checks(site: Site, frontend: Frontend, show: Callable[[str], None]) -> None:
    """Run each check on the frontend, show its output, refuse on a non-zero exit."""
    env = allow_listed_env(os.environ, site.forward_env)
    for command in policy_commands(site):
        try:
            shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"site {site.name}: policy_checks entry {command!r} is not a command line ({exc})",
                              fix="quote it like a shell command, e.g. \"usagepolicycheck -t\"") from None
        show(f"policy [{site.name}] $ {command}")
        # a shell line, as the dry run shows it and people write it (&&, |, $VAR)
        res = frontend.run(["bash", "-c", command], env=env)
        for line in (res.stdout + res.stderr).splitlines():
            show(f"  {line}")
        if res.returncode != 0:
            missing = res.returncode == 127
            raise SubmitError(
                f"site {site.name}: policy check `{command}` on {frontend.where} "
                + ("was not found" if missing else f"exited {res.returncode}") + "; nothing was submitted",
                fix=("install it, or set policy_checks = [] for this site in sites.toml if it has no such rule"
                     if missing else "read its output above; wait, or reduce the request, then run kit again"))


def check_before_submit(plans: Iterable, now: datetime | None = None,
                        show: Callable[[str], None] = lambda line: None) -> None:
    """Every site's day window, then every site's policy checks; raises before anything is submitted."""
    plans = list(plans)
    now = now or parse_now(None)
    for sp in plans:
        check_day_window(sp.site, sp.request.walltime_s, now)
    done = set()
    for sp in plans:
        if sp.site.name not in done:
            done.add(sp.site.name)
            run_policy_checks(sp.site, sp.scheduler.frontend, show)


def day_window_refusals(plans: Iterable, now: datetime | None = None) -> list[str]:
    """What a submission now would be refused for by each job's day window (a dry run's finding),
    one line each; [] when every job may be submitted."""
    now = now or parse_now(None)
    found = []
    for sp in plans:
        try:
            check_day_window(sp.site, sp.request.walltime_s, now)
        except SubmitError as exc:
            found.append(f"site {sp.site.name}: {exc.one_line()}")
    return found


def describe(site: Site, walltime_s: int, now: datetime) -> list[str]:
    """What the gates would do, for --dry-run (no command runs)."""
    lines = [f"policy checks on {Frontend(site.frontend).where}: " + ("; ".join(policy_commands(site)) or "none")]
    if not day_window_applies(site):
        why = ("not an OAR site" if site.scheduler != "oar" else f"job type {NIGHT_TYPE}" if NIGHT_TYPE in site.job_types
               else f"job type {BESTEFFORT_TYPE}" if BESTEFFORT_TYPE in site.job_types else f"queue {site.queue}")
        return lines + [f"day window: {why}: no rule"]
    try:
        check_day_window(site, walltime_s, now)
        verdict = "not of type night, and fits between the boundaries"
    except SubmitError as exc:
        verdict = f"WOULD BE REFUSED: {exc.one_line()}"
    return lines + [f"day window ({now.astimezone(_paris()):%a %Y-%m-%d %H:%M} Europe/Paris): {verdict}"]
