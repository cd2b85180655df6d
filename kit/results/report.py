"""`kit report`: a results folder turned into the report of its benchmark kind (an lrb
leaderboard: kit.results.kinds.lrb.report; LightEval scores: kit.results.kinds.lighteval.report).

Only complete checkpoints are counted; invalid files are listed with their reasons in the
summary. With the roster at hand, a checkpoint recorded for another revision, setting, prompt
or data file than the run has now is stale: listed, not counted, unless asked for
(--include-stale), and then marked stale in the summary. Checkpoints of different kinds, or measured on different terms (manifest, prompt within
a task, benchmark file within a language, decoding among generate runs), are refused rather than
reported together. The report is built beside OUT and swapped in whole (kit.outputs), so its CSVs,
pages and plots always come from one run of the report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kit.config.names import run_from_stem
from kit.errors import ConfigError
from kit.results import keys
from kit.results.keys import PairState
from kit.plan import Pair
from kit.results.checkpoint import CheckpointState, ValidateAll, validate_each_with_outcomes, without_predictions
from kit.results.identity import PlanExpectations
from kit.results.kinds import kind_name, result_kind
from kit.results.kinds.base import ResultKind
from kit.outputs import write_output
from kit.results.records import SEPARATE, STALE_INCLUDED, CheckpointRecord, groups, select_runs
from kit.results.store import file_language, iter_checkpoint_files
from kit.results.html_report import write_html_report
from kit.results.verdicts import default_verdict_dirs


# the files `kit report` wrote before its folder had an inventory (kit.outputs)
_LEGACY_REPORT_FILE = re.compile(r"(leaderboard|aggregates|by_language|lighteval_scores)\.csv|summary\.md|"
                                 r"(heatmap_f1|f1_by_language|verdict_agreement)\.png|index\.html|pages/[^/]+\.html")


def _legacy_report(files: set[str]) -> bool:
    """Whether `files` are a report an earlier kit wrote: its summary and a scores table, nothing else."""
    return ("summary.md" in files and bool(files & {"leaderboard.csv", "lighteval_scores.csv"})
            and all(_LEGACY_REPORT_FILE.fullmatch(f) for f in files))


@dataclass(frozen=True)
class ReportOutcome:
    """What `kit report` wrote, and the files it did not count (invalid) or counted only on request (stale)."""

    files: dict[str, Path]    # each written file by its role, e.g. "leaderboard"
    pairs: int                # pairs counted
    invalid: list[CheckpointRecord]
    stale: list[CheckpointRecord]
    stale_included: bool


def collect_checkpoints(results_dir: Path, expect: PlanExpectations | None = None,
                        validate_all: ValidateAll = validate_each_with_outcomes) -> list[CheckpointRecord]:
    """Every `RESULTS/<language>/<run>.json`, validated (against `expect` for the pairs it plans) by
    `validate_all` (kit.results.checkpoint.ValidateAll: one at a time, or a cache's), sorted by path;
    invalid and stale ones carry reasons. Records keep no predictions, only their truncated count and
    item outcomes (when `validate_all` kept them)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ConfigError(
            f"results folder {str(results_dir)!r} does not exist",
            fix="point at the folder holding <language>/<run>.json checkpoints (e.g. results/)",
        )
    paths = iter_checkpoint_files(results_dir)
    return [_record(results_dir, path, st)
            for path, st in zip(paths, validate_all([(path, _job(path, expect)) for path in paths]))]


def _job(path: Path, expect: PlanExpectations | None) -> dict:
    # validate_checkpoint always checks metadata.run against the file name and metadata.language
    # against the folder; ids, labels and identity only for a pair the roster plans.
    pair = Pair(run_from_stem(path.stem), path.parent.name)
    return {"expect": expect(pair) if expect is not None and expect.covers(pair) else None}


def _record(results_dir: Path, path: Path, st: CheckpointState) -> CheckpointRecord:
    st = without_predictions(st, outcomes=True)
    data = st.data if st.state in (PairState.COMPLETE, PairState.STALE) else None
    language = file_language(results_dir, path, (st.data or {}).get(keys.METADATA))
    return CheckpointRecord(path, language, st.state, tuple(st.reasons), tuple(st.notices), data,
                            truncated_count=st.truncated, outcomes=st.outcomes if data is not None else None)


def write_report(results_dir: Path, out_dir: Path, *, runs: list[str] | None = None,
                 expect: PlanExpectations | None = None, include_stale: bool = False,
                 verdicts: list[Path] | None = None,
                 validate_all: ValidateAll = validate_each_with_outcomes, own_output: bool = True) -> ReportOutcome:
    """Write the report of the checkpoints under RESULTS (of these runs; all when None) to OUT, by
    their benchmark kind; stale checkpoints (against `expect`) are counted only with `include_stale`,
    and then named as stale in the summary; then the HTML report (kit.results.html_report), with the
    reproduce verdicts in `verdicts` (None: the reproduce* folders beside RESULTS). Nothing is written when the input is refused (no
    complete checkpoint, an unknown run, kinds mixed, checkpoints that are not comparable,
    matplotlib missing). The files are read by `validate_all` (see collect_checkpoints). OUT is written
under the output contract (kit.outputs: built beside, swapped in, only kit's own earlier report
replaced) unless `own_output` is False: then OUT is a folder of another output being built."""
    found = collect_checkpoints(results_dir, expect, validate_all)
    stale = [r for r in found if r.state == PairState.STALE]
    if include_stale:
        found = [replace(r, state=PairState.COMPLETE, notices=(f"{STALE_INCLUDED}: {'; '.join(r.reasons)}", *r.notices))
                 if r.state == PairState.STALE else r for r in found]
    records = select_runs(found, runs)
    valid = [r for r in records if r.valid]
    if not valid:   # nothing to report: the folder is refused, as bad input (exit 2)
        raise ConfigError(
            f"no complete checkpoint under {str(results_dir)!r} ({len(records)} invalid or stale)",
            fix="run `kit status` to see why, or point at the folder holding <language>/<run>.json",
        )
    by_kind = groups(valid, lambda r: kind_name(r.data))
    if len(by_kind) > 1:
        (a_kind, a), (b_kind, b) = by_kind[0], by_kind[1]
        raise ConfigError(f"cannot report {a_kind} checkpoints ({a[0].name}) with {b_kind} ones ({b[0].name})",
                          fix=SEPARATE.format(a=a[0].run, b=b[0].run) + ", or keep each benchmark in its own results folder")
    kind = result_kind(by_kind[0][0], str(valid[0].path))
    verdict_dirs = default_verdict_dirs(results_dir) if verdicts is None else verdicts
    out_dir = Path(out_dir)
    if not own_output:   # a part of another output (a release's stage)
        files = _fill(records, kind, out_dir, verdict_dirs)
    else:
        with write_output(out_dir, "report", force_needed=False, legacy=_legacy_report) as out:
            files = _fill(records, kind, out.stage, verdict_dirs)
        files = {role: out_dir / path.relative_to(out.stage) for role, path in files.items()}
    return ReportOutcome(files, len(valid), [r for r in records if r.state == PairState.INVALID],
                         [r for r in stale if r.run in {x.run for x in records}], include_stale)


def _fill(records: list[CheckpointRecord], kind: ResultKind, folder: Path,
          verdict_dirs: Sequence[Path]) -> dict[str, Path]:
    """Write the kind's report files and the HTML report of `records` into `folder`; each file by role."""
    written = kind.write_report(records, folder)
    html = write_html_report(records, folder, kind, verdict_dirs)
    return {**written.files, "html": html.index}
