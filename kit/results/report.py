"""`kit report`: a results folder turned into the report of its benchmark kind (an lrb
leaderboard: kit.results.lrb_report; LightEval scores: kit.results.suite_report).

Only complete checkpoints are counted; invalid files are listed with their reasons in the
summary. Checkpoints of different kinds, or measured on different terms (manifest, prompt within
a task, benchmark file within a language, decoding among generate runs), are refused rather than
reported together. Every file is written atomically (temporary file in OUT, fsync, rename).
"""

from __future__ import annotations

from pathlib import Path

from kit.config.kinds import get_kind
from kit.errors import CheckpointError, ConfigError
from kit.results import keys
from kit.results.checkpoint import validate_checkpoint
from kit.results.kinds import kind_name
from kit.results.records import SEPARATE, CheckpointRecord, ReportFiles, groups, select_runs
from kit.results.store import iter_checkpoint_files


def collect_checkpoints(results_dir: Path) -> list[CheckpointRecord]:
    """Every `RESULTS/<language>/<run>.json`, validated, sorted by path; invalid ones carry reasons."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ConfigError(
            f"results folder {str(results_dir)!r} does not exist",
            fix="point at the folder holding <language>/<run>.json checkpoints (e.g. results/)",
        )
    return [_validate(path) for path in iter_checkpoint_files(results_dir)]


def _validate(path: Path) -> CheckpointRecord:
    # validate_checkpoint always checks metadata.run against the file name and
    # metadata.language against the folder; the benchmark's item ids are not known here.
    st = validate_checkpoint(path)
    data = st.data if st.state == keys.COMPLETE else None
    return CheckpointRecord(path, path.parent.name, st.state, tuple(st.reasons), tuple(st.notices), data)


def write_report(results_dir: Path, out_dir: Path, *, runs: list[str] | None = None) -> ReportFiles:
    """Write the report of the checkpoints under RESULTS (of these runs; all when None) to OUT, by
    their benchmark kind. Nothing is written when the input is refused (no complete checkpoint, an
    unknown run, kinds mixed, checkpoints that are not comparable, matplotlib missing)."""
    records = select_runs(collect_checkpoints(results_dir), runs)
    valid = [r for r in records if r.valid]
    if not valid:
        raise CheckpointError(
            f"no complete checkpoint under {str(results_dir)!r} ({len(records)} invalid)",
            fix="run `kit status` to see why, or point at the folder holding <language>/<run>.json",
        )
    by_kind = groups(valid, lambda r: kind_name(r.data))
    if len(by_kind) > 1:
        (a_kind, a), (b_kind, b) = by_kind[0], by_kind[1]
        raise ConfigError(f"cannot report {a_kind} checkpoints ({a[0].name}) with {b_kind} ones ({b[0].name})",
                          fix=SEPARATE.format(a=a[0].run, b=b[0].run) + ", or keep each benchmark in its own results folder")
    kind = get_kind(by_kind[0][0], str(valid[0].path)).results_part()
    return kind.write_report(records, Path(out_dir))
