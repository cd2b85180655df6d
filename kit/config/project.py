"""A project: the roster plus the benchmark it names (or that the caller names)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit.config.dataset import Dataset
from kit.config.kinds import load_benchmark
from kit.config.roster import Roster, load_roster
from kit.errors import ConfigError


@dataclass
class Project:
    """The loaded roster (maybe empty) and benchmark."""

    roster: Roster
    roster_path: Path | None
    benchmark: Dataset


def load_project(
    roster_path: Path | None,
    benchmark_path: Path | None,
    *,
    allow_unpinned: bool = False,
    roster_required: bool = True,
) -> Project:
    """Load the roster and its benchmark; --benchmark wins over the roster's `benchmark` key."""
    roster = Roster()
    roster_dir = Path.cwd()
    if roster_path is not None and (roster_required or Path(roster_path).exists()):
        roster, roster_dir = load_roster(Path(roster_path), allow_unpinned=allow_unpinned)
    else:
        roster_path = None
    if benchmark_path is None:
        if roster.benchmark is None:
            where = f"{roster_path}: " if roster_path else ""
            raise ConfigError(
                f"{where}no benchmark given",
                fix="pass --benchmark DIR or set benchmark = \"DIR\" at the top of roster.toml",
            )
        benchmark_path = roster_dir / roster.benchmark
    return Project(roster, Path(roster_path) if roster_path else None, load_benchmark(Path(benchmark_path)))
