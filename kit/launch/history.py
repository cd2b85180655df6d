"""What earlier checkpoints measured: each run's inference seconds per language and its model
load, read from every chosen site's results tree (a remote site's local mirror), for
`kit run --walltime auto` (kit.costs)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kit import safejson
from kit.costs import PairTime
from kit.errors import KitError
from kit.launch.site import ResolvedSite
from kit.results import keys
from kit.results.store import checkpoint_path


def measured_times(sites: Iterable[ResolvedSite], runs: Iterable[str], languages: Iterable[str]) -> list[PairTime]:
    """One PairTime per checkpoint of these runs and languages that recorded its time (complete or
    stale: an older revision or setting runs at about the same speed); unreadable files are skipped."""
    found: dict[tuple[str, str], PairTime] = {}
    folders = [site.checkpoints for site in sites]
    for run in sorted(set(runs)):
        for language in sorted(set(languages)):
            for folder in folders:
                t = _pair_time(checkpoint_path(folder, run, language), run, language)
                if t is not None and (run, language) not in found:
                    found[run, language] = t
    return list(found.values())


def _pair_time(path: Path, run: str, language: str) -> PairTime | None:
    """The time a checkpoint recorded, when it is this pair's and says one."""
    try:
        data = safejson.loads(path.read_text(encoding="utf-8"))
        meta, speed = data.get(keys.METADATA) or {}, data.get(keys.SPEED) or {}
        if meta.get(keys.RUN, meta.get(keys.MODEL_ID)) != run or meta.get(keys.LANGUAGE) != language:
            return None
        seconds = float(speed.get(keys.DURATION_SECONDS) or meta.get(keys.DURATION_SECONDS) or 0)
        load = float(speed.get("load_seconds") or 0)
    except (OSError, ValueError, TypeError, AttributeError, KitError):
        return None
    return PairTime(run, language, seconds, load) if seconds > 0 else None
