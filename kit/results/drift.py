"""The drift table: `kit reproduce` verdicts gathered per run, language and pair of setups (engine and
its version, dtype, GPU model and driver, kit version), each with the share of items whose verdict
changed and the F1 change with its paired interval. A reproduction on the same setup is a row too
(its drift is the run-to-run noise); deliberate reruns (`kit reproduce --as`) measure engines and
dtypes, reruns brought back with `--against` measure hardware."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kit.results.tables import csv_text
from kit.results.verdicts import Verdict

DRIFT_CSV = "drift.csv"
DRIFT_COLUMNS = ("run", "language", "recorded_setup", "rerun_setup", "items", "changed", "changed_pct", "outputs_differ",
                 "f1_recorded", "f1_rerun", "f1_change", "f1_low", "f1_high", "mcnemar_p", "deliberate", "verdict",
                 "verdict_file")


def setup_label(setup: Mapping[str, Any]) -> str:
    """One line naming a setup: 'transformers-5.17 5.25.0 · float32 · CPU · kit 0.1.0' (the GPU model
    and its driver in place of CPU when the result ran on one)."""
    engine = " ".join(str(v) for v in (setup.get("backend"), setup.get("engine_version")) if v) or "unknown engine"
    device = str(setup.get("gpu") or "CPU")
    if setup.get("gpu") and setup.get("driver"):
        device += f" (driver {setup['driver']})"
    parts = [engine, str(setup.get("dtype") or "dtype ?"), device]
    if setup.get("kit"):
        parts.append(f"kit {setup['kit']}")
    return " · ".join(parts)


@dataclass(frozen=True)
class DriftRow:
    """One verdict as a row of the drift table."""

    run: str
    language: str
    recorded_setup: str
    rerun_setup: str
    items: int
    changed: int
    f1_recorded: float
    f1_rerun: float
    f1_change: float
    f1_low: float
    f1_high: float
    p_value: float | None
    deliberate: str
    verdict: Verdict

    @property
    def outputs_differ(self) -> int:
        """Items whose prediction or raw output (a score, an answer's text) differs, the verdict changed or not."""
        return len(self.verdict.differing)

    @property
    def changed_share(self) -> float:
        """The share of items whose verdict changed (0..1)."""
        return self.changed / self.items if self.items else 0.0

    @property
    def setups(self) -> tuple[str, str]:
        """(recorded setup, rerun setup): the pair the row belongs to."""
        return self.recorded_setup, self.rerun_setup


def drift_rows(verdicts: Iterable[Verdict]) -> list[DriftRow]:
    """The rows of the verdicts that carry a paired change (kit reproduce of a kind with one), sorted by
    pair of setups, run and language; verdicts without one (older kit, another kind) are left out."""
    rows = []
    for v in verdicts:
        paired = v.paired
        if paired is None or not v.setups.get("recorded") or not v.setups.get("rerun"):
            continue
        f1 = paired["f1"]
        p = paired.get("p_value")
        rows.append(DriftRow(v.run or v.stem, v.language, setup_label(v.setups["recorded"]), setup_label(v.setups["rerun"]),
                             int(paired["items"]), int(paired["changed"]), float(f1["b"]), float(f1["a"]),
                             float(f1["diff"]), float(f1["low"]), float(f1["high"]),
                             float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None,
                             ", ".join(f"{k} {val}" for k, val in sorted(v.deliberate.items())), v))
    return sorted(rows, key=lambda r: (r.setups, r.run, r.language, str(r.verdict.path)))


@dataclass(frozen=True)
class SetupPair:
    """All rows of one pair of setups, summed: items, changed items, the mean F1 change over its rows
    and its smallest and largest."""

    recorded_setup: str
    rerun_setup: str
    rows: tuple[DriftRow, ...]

    @property
    def items(self) -> int:
        """Items over all its rows."""
        return sum(r.items for r in self.rows)

    @property
    def changed(self) -> int:
        """Changed items over all its rows."""
        return sum(r.changed for r in self.rows)

    @property
    def mean_f1_change(self) -> float:
        """The mean of its rows' F1 changes."""
        return sum(r.f1_change for r in self.rows) / len(self.rows)


def setup_pairs(rows: Sequence[DriftRow]) -> list[SetupPair]:
    """The rows grouped by pair of setups, in the rows' order."""
    pairs: dict[tuple[str, str], list[DriftRow]] = {}
    for row in rows:
        pairs.setdefault(row.setups, []).append(row)
    return [SetupPair(a, b, tuple(members)) for (a, b), members in pairs.items()]


def drift_csv(rows: Sequence[DriftRow]) -> str:
    """drift.csv: one line per verdict (DRIFT_COLUMNS), numbers as measured, text cells never formulas."""
    return csv_text(DRIFT_COLUMNS, ({
        "run": r.run, "language": r.language, "recorded_setup": r.recorded_setup, "rerun_setup": r.rerun_setup,
        "items": r.items, "changed": r.changed, "changed_pct": f"{100 * r.changed_share:.2f}",
        "outputs_differ": r.outputs_differ,
        "f1_recorded": f"{r.f1_recorded:.6f}", "f1_rerun": f"{r.f1_rerun:.6f}", "f1_change": f"{r.f1_change:+.6f}",
        "f1_low": f"{r.f1_low:+.6f}", "f1_high": f"{r.f1_high:+.6f}",
        "mcnemar_p": "" if r.p_value is None else f"{r.p_value:.6g}", "deliberate": r.deliberate,
        "verdict": r.verdict.verdict, "verdict_file": r.verdict.path.name} for r in rows))
