"""`kit report`: a results folder turned into the report of its benchmark kind (an lrb
leaderboard: kit.results.kinds.lrb.report; LightEval scores: kit.results.kinds.lighteval.report).

Only complete checkpoints are counted; invalid files are listed with their reasons in the
summary. With the roster at hand, a checkpoint recorded for another revision, setting, prompt
or data file than the run has now is stale: listed, not counted, unless asked for
(--include-stale), and then marked stale in the summary. Checkpoints of different kinds, or measured on different terms (manifest, prompt within
a task, benchmark file within a language, decoding among generate runs), are refused rather than
reported together. The report is built beside OUT and swapped in whole (kit.outputs), so its CSVs,
pages and plots always come from one run of the report. Asked again with nothing it reads changed
(kit.results.report_memo), an intact earlier report is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kit.errors import ConfigError
from kit.results import keys
from kit.results.keys import PairState
from kit.plan import Pair
from kit.results.checkpoint import CheckpointState, ValidateAll, validate_each_with_outcomes, without_predictions
from kit.results.benchmark_rule import validate_held
from kit.results.identity import Expectation, PlanExpectations
from kit.results.kinds import kind_name, result_kind
from kit.results.kinds.base import ResultKind
from kit.outputs import check_output, plain_relative, unchanged_output, write_output
from kit.results.records import SEPARATE, STALE_INCLUDED, CheckpointRecord, ReportFiles, groups, select_runs
from kit.results.store import collection_of, left_out_note, file_language, iter_checkpoint_files
from kit.results.report_batches import BATCHES_DIR, link_batches, write_batches_index
from kit.results.html_report import write_html_report
from kit.results.plot_process import plot_process
from kit.results.report_memo import report_inputs
from kit.results.verdicts import default_verdict_dirs


@dataclass(frozen=True)
class ReportOutcome:
    """What `kit report` wrote, and the files it did not count (invalid) or counted only on request (stale)."""

    files: dict[str, Path]    # each written file by its role, e.g. "leaderboard"
    pairs: int                # pairs counted
    invalid: list[CheckpointRecord]
    stale: list[CheckpointRecord]
    stale_included: bool
    batches: dict[str, Path] = field(default_factory=dict)   # lrb's batch folder -> the HTML index of its report
    not_counted: str | None = None   # why files under RESULTS/archive/ were left out (kit.results.store.archive_note)
    unchanged: bool = False   # OUT already held this report (nothing it reads had changed): nothing was rewritten


def collect_checkpoints(results_dir: Path, expect: PlanExpectations | None = None,
                        validate_all: ValidateAll = validate_each_with_outcomes) -> list[CheckpointRecord]:
    """Every checkpoint of RESULTS (kit.results.store.iter_checkpoint_files: lrb's archive left out),
    validated by `validate_all` (kit.results.checkpoint.ValidateAll: one at a time, or a cache's): a
    planned pair against its run as it is now, every other file held to `expect`'s benchmark by the rule
    every command follows (kit.results.benchmark_rule); sorted by path; invalid and stale ones carry
    reasons. Records keep no predictions, only their truncated count and item outcomes (when
    `validate_all` kept them)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ConfigError(
            f"results folder {str(results_dir)!r} does not exist",
            fix="point at the folder holding <language>/<run>.json checkpoints (e.g. results/)",
        )
    paths = iter_checkpoint_files(results_dir)
    states = validate_held([(path, results_dir) for path in paths], validate_all, expect,
                           (lambda path: _planned(path, expect)) if expect is not None else None)
    return [_record(results_dir, path, st) for path, st in zip(paths, states)]


def _planned(path: Path, expect: PlanExpectations) -> Expectation | None:
    # validate_checkpoint always checks metadata.run against the file name and metadata.language
    # against the folder; a pair the roster plans is held to its run as well.
    pair = Pair(expect.run_of_stem(path.stem), path.parent.name)
    return expect(pair) if expect.covers(pair) else None


def _record(results_dir: Path, path: Path, st: CheckpointState) -> CheckpointRecord:
    st = without_predictions(st, outcomes=True)
    data = st.data if st.state in (PairState.COMPLETE, PairState.STALE) else None
    language = file_language(results_dir, path, (st.data or {}).get(keys.METADATA))
    return CheckpointRecord(path, language, st.state, tuple(st.reasons), tuple(st.notices), data,
                            truncated_count=st.truncated, outcomes=st.outcomes if data is not None else None,
                            collection=collection_of(results_dir, path, language),
                            compliance=st.compliance if data is not None else None)


def check_report_output(out_dir: Path) -> None:
    """A ConfigError unless OUT can take a report (absent, empty, or kit's own earlier report unchanged):
    asked before any work, by the report itself and by the commands that end in one (kit demo)."""
    check_output(out_dir, "report", force_needed=False)


def write_report(results_dir: Path, out_dir: Path, *, runs: list[str] | None = None,
                 expect: PlanExpectations | None = None, include_stale: bool = False,
                 verdicts: list[Path] | None = None,
                 validate_all: ValidateAll = validate_each_with_outcomes, own_output: bool = True,
                 earlier: Path | None = None, batches: bool = True) -> ReportOutcome:
    """Write the report of the checkpoints under RESULTS (of these runs; all when None) to OUT, by
    their benchmark kind; stale checkpoints (against `expect`) are counted only with `include_stale`,
    and then named as stale in the summary; then the HTML report (kit.results.html_report), with the
    reproduce verdicts in `verdicts` (None: the reproduce* folders beside RESULTS). Nothing is written when the input is refused (no
    complete checkpoint, an unknown run, kinds mixed, checkpoints that are not comparable,
    matplotlib missing). The files are read by `validate_all` (see collect_checkpoints). OUT is written
under the output contract (kit.outputs: built beside, swapped in, only kit's own earlier report
replaced) unless `own_output` is False: then OUT is a folder of another output being built, and `earlier`
the same folder of the output it replaces (kit.outputs.OutputFolder.same_as), if any. Without `batches`
only the tree's own collection is reported (a release's report: it holds no batch). The plots
are drawn in a process forked before the checkpoints are read (kit.results.plot_process)."""
    with plot_process():
        return _write_report(results_dir, out_dir, runs=runs, expect=expect, include_stale=include_stale,
                             verdicts=verdicts, validate_all=validate_all, own_output=own_output, earlier=earlier,
                             batches=batches)


def _write_report(results_dir: Path, out_dir: Path, *, runs: list[str] | None, expect: PlanExpectations | None,
                  include_stale: bool, verdicts: list[Path] | None, validate_all: ValidateAll,
                  own_output: bool, earlier: Path | None, batches: bool = True) -> ReportOutcome:
    if own_output:   # refused before thousands of checkpoints are read
        check_report_output(out_dir)
    found = collect_checkpoints(results_dir, expect, validate_all)
    if not batches:
        found = [r for r in found if not r.collection]
    stale = [r for r in found if r.state == PairState.STALE]
    if include_stale:
        found = [replace(r, state=PairState.COMPLETE, notices=(f"{STALE_INCLUDED}: {'; '.join(r.reasons)}", *r.notices))
                 if r.state == PairState.STALE else r for r in found]
    records = select_runs(found, runs)
    valid = [r for r in records if r.valid]
    if not valid:   # nothing to report: the folder is refused, as bad input (exit 2)
        archived = left_out_note(results_dir)
        raise ConfigError(
            f"no complete checkpoint under {str(results_dir)!r} ({len(records)} invalid or stale)"
            + (f"; {archived}" if archived else ""),
            fix="run `kit status` to see why, or point at the folder holding <language>/<run>.json",
        )
    collections = {name: members for name, members in groups(records, lambda r: r.collection)}
    kinds = {name: _kind_of(members) for name, members in collections.items() if any(r.valid for r in members)}
    verdict_dirs = default_verdict_dirs(results_dir) if verdicts is None else verdicts
    out_dir = Path(out_dir)
    kept = None
    if not own_output:   # a part of another output (a release's stage)
        files, batches = _fill_all(collections, kinds, out_dir, verdict_dirs, earlier)
    else:
        inputs = report_inputs(found, results_dir=results_dir, out_dir=out_dir, verdict_dirs=verdict_dirs,
                               options={"runs": runs, "include_stale": include_stale})
        kept = _kept_report(out_dir, inputs) if inputs is not None else None
        if kept is not None:
            files, batches = kept
        else:
            with write_output(out_dir, "report", force_needed=False) as out:
                # the report replaced is kit's own (write_output checked): its unchanged pages are linked in
                files, batches = _fill_all(collections, kinds, out.stage, verdict_dirs, out.earlier)
                if inputs is not None:
                    out.memo.update(inputs=inputs, roles=_relative(files, out.stage), batches=_relative(batches, out.stage))
            files = {role: out_dir / path.relative_to(out.stage) for role, path in files.items()}
            batches = {name: out_dir / path.relative_to(out.stage) for name, path in batches.items()}
    return ReportOutcome(files, len(valid), [r for r in records if r.state == PairState.INVALID],
                         [r for r in stale if r.run in {x.run for x in records}], include_stale,
                         batches=batches, not_counted=left_out_note(results_dir), unchanged=kept is not None)


def _relative(paths: dict[str, Path], folder: Path) -> dict[str, str]:
    return {name: path.relative_to(folder).as_posix() for name, path in paths.items()}


def _kept_report(out_dir: Path, inputs: str) -> tuple[dict[str, Path], dict[str, Path]] | None:
    """(files by role, each batch's HTML index) of the report already in OUT when it was made from
    `inputs` and is intact (kit.outputs.unchanged_output); None when it must be written."""
    memo = unchanged_output(out_dir, "report", inputs)
    if memo is None:
        return None
    found = []
    for part in (memo.get("roles"), memo.get("batches")):
        if not isinstance(part, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and plain_relative(v) and (out_dir / v).is_file()
                for k, v in part.items()):
            return None
        found.append({name: out_dir / rel for name, rel in part.items()})
    return found[0], found[1]


def _kind_of(records: list[CheckpointRecord]) -> ResultKind:
    """The one benchmark kind of a collection's complete checkpoints; a ConfigError when kinds are mixed."""
    valid = [r for r in records if r.valid]
    by_kind = groups(valid, lambda r: kind_name(r.data))
    if len(by_kind) > 1:
        (a_kind, a), (b_kind, b) = by_kind[0], by_kind[1]
        raise ConfigError(f"cannot report {a_kind} checkpoints ({a[0].name}) with {b_kind} ones ({b[0].name})",
                          fix=SEPARATE.format(a=a[0].run, b=b[0].run) + ", or keep each benchmark in its own results folder")
    return result_kind(by_kind[0][0], str(valid[0].path))


def _fill_all(collections: dict[str, list[CheckpointRecord]], kinds: dict[str, ResultKind], folder: Path,
              verdict_dirs: Sequence[Path], earlier: Path | None = None) -> tuple[dict[str, Path], dict[str, Path]]:
    """The report of the tree's own checkpoints in `folder`, and of each of lrb's batch folders in
    folder/batches/<batch>/, as lrb keeps a leaderboard per folder: (files by role, each batch's HTML
    index). Without a complete checkpoint of its own, the tree gets an index of its batches. `earlier`:
    the report `folder` replaces (its pages that come out the same are linked in)."""
    batches = {name: _fill(collections[name], kinds[name], folder / BATCHES_DIR / name, verdict_dirs,
                           None if earlier is None else earlier / BATCHES_DIR / name)["html"]
               for name in sorted(kinds) if name}
    if "" in kinds:
        files = _fill(collections[""], kinds[""], folder, verdict_dirs, earlier)
        if batches:
            link_batches(folder, batches)
        return files, batches
    return write_batches_index(folder, batches, collections.get("", [])), batches


def _fill(records: list[CheckpointRecord], kind: ResultKind, folder: Path,
          verdict_dirs: Sequence[Path], earlier: Path | None = None) -> dict[str, Path]:
    """Write the kind's report files and the HTML report of `records` into `folder`; each file by role."""
    written = _kind_files(records, kind, folder)
    html = write_html_report(records, folder, kind, verdict_dirs, earlier)
    return {**written.files, "html": html.index}


def _kind_files(records: list[CheckpointRecord], kind: ResultKind, folder: Path) -> ReportFiles:
    """The kind's own report files (tables, plots); a step of its own so the bench can measure it."""
    return kind.write_report(records, folder)
