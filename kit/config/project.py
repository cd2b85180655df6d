"""A project: the roster plus the benchmark it names (or that the caller names)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kit.config.dataset import Dataset
from kit.config.kinds import load_benchmark
from kit.config.loading import path_from, read_toml
from kit.errors import ConfigError

if TYPE_CHECKING:   # the roster's pydantic models load with the roster (roster_benchmark needs none)
    from kit.config.roster import Roster


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
    from kit.config.roster import Roster, load_roster

    roster = Roster()
    roster_dir = Path.cwd()
    if roster_path is not None and (roster_required or Path(roster_path).exists()):
        roster, roster_dir = load_roster(Path(roster_path), allow_unpinned=allow_unpinned)
    else:
        roster_path = None
    if benchmark_path is None:
        if roster.benchmark is None:
            where = f"{roster_path}: " if roster_path else ""
            what = "no benchmark given" if roster_path else "no roster.toml here and no --benchmark given"
            raise ConfigError(
                f"{where}{what}",
                fix="pass --benchmark DIR (or --roster FILE), or set benchmark = \"DIR\" at the top of roster.toml",
            )
        benchmark_path = path_from(roster_dir, roster.benchmark)
    return Project(roster, Path(roster_path) if roster_path else None,
                   load_benchmark(Path(benchmark_path).expanduser()))


def roster_benchmark(roster_path: Path) -> Dataset | None:
    """The benchmark a roster file names (relative to its folder), read without validating its runs;
    None when it names none."""
    roster_path = Path(roster_path)
    value = read_toml(roster_path, "roster").get("benchmark")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{roster_path}: benchmark: not a folder path (got {value!r})",
                          fix='write benchmark = "DIR", relative to the roster file')
    return load_benchmark(path_from(roster_path.resolve().parent, value))
