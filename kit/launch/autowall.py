"""`kit run --walltime auto`: one group of pending pairs (one backend, one GPU count) becomes jobs
sized by predicted cost (kit.costs): shards packed longest first, the fewest that fit the site's
walltime (and, for an OAR day job, the time left before 09:00 or 19:00), and a walltime that holds
the longest shard. A run nothing was measured for gets a calibration job of one pair at the site's
walltime; its other pairs wait for the next `kit run --walltime auto`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from kit.config.sites import Site
from kit.config.walltime import walltime_seconds
from kit.costs import PairTime, fewest_shards, job_walltime, predict, shard_loads
from kit.plan import Pair

AUTO = "auto"


@dataclass(frozen=True)
class SizedGroup:
    """Pairs that go in one job: the shard count, the packed shards (None: by index), the walltime
    (None: the site's) and what the dry run says about it."""

    pairs: list[Pair]
    count: int
    shards: list[list[Pair]] | None
    walltime_s: int | None
    note: str


@dataclass
class AutoPlan:
    """The jobs of one group under --walltime auto, and the pairs held back for a calibration job."""

    groups: list[SizedGroup] = field(default_factory=list)
    held: list[Pair] = field(default_factory=list)


def site_cap(site: Site, now: datetime) -> int:
    """The longest walltime a job may get at the site now: its configured walltime, cut at the next
    weekday 09:00 or 19:00 Europe/Paris for an OAR job that is not of type night."""
    from kit.launch.policy import day_window_applies, window_crossing

    cap = walltime_seconds(site.walltime, site.scheduler)
    if day_window_applies(site):
        crossing = window_crossing(now, cap)
        if crossing is not None:
            cap = max(60, int((crossing - now).total_seconds()) // 60 * 60)
    return cap


def auto_size(pairs: Sequence[Pair], history: Sequence[PairTime], sites: Sequence[Site], now: datetime,
              most: int | None) -> AutoPlan:
    """Split one group's pending pairs into cost-packed jobs and calibration jobs (see the module)."""
    prediction = predict(pairs, history)
    out = AutoPlan()
    calibrate: dict[str, Pair] = {}
    for pair in prediction.unmeasured:
        if pair.run in calibrate:
            out.held.append(pair)
        else:
            calibrate[pair.run] = pair
    if calibrate:
        chosen = sorted(calibrate.values())
        out.groups.append(SizedGroup(chosen, len(chosen), None, None,
                                     f"calibration: no earlier checkpoint of {', '.join(sorted(calibrate))} says how "
                                     "long a pair takes; one pair each at the site's walltime, then run "
                                     "`kit run --walltime auto` again for the rest"))
    costs = prediction.seconds
    if costs:
        cap = min(site_cap(site, now) for site in sites)
        loads_of = prediction.load_seconds
        _, shards = fewest_shards(costs, cap, loads_of, most=most)
        shards = [shard for shard in shards if shard]   # an empty shard would only burn an array task
        count = len(shards)
        loads = shard_loads(shards, costs, loads_of)
        walltime = job_walltime(shards, costs, loads_of)
        note = (f"walltime auto: {len(costs)} pairs predicted at {sum(costs.values()) / 3600:.2f} GPU-hours from "
                f"{len(history)} measured pairs, packed into {count} shards (longest {max(loads) / 60:.0f} min, "
                f"shortest {min(loads) / 60:.0f} min), walltime {walltime // 60} min")
        if walltime > cap:
            note += f": more than the {cap // 60} min allowed now, as one pair alone is predicted longer"
        out.groups.append(SizedGroup(sorted(costs), count, shards, walltime, note))
    return out
