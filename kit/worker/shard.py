"""The worker's benchmark loop: run the pairs of one shard, one checkpoint per pair, for every
benchmark kind (the kind's runner, kit.worker.kinds, evaluates each pair).

Runs inside the image (or on the host for the `host` runtime). Groups pairs by run so
each model loads once, skips complete checkpoints, reports invalid ones and never
overwrites them without `force`; one broken pair does not lose the others."""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kit.config.dataset import Dataset
from kit.config.roster import Run
from kit.errors import CheckpointError, KitError, disk_error
from kit.files import write_bytes_atomic
from kit.plan import Pair, PlanFile, group_by_run
from kit.results import keys
from kit.results.keys import PairState
from kit.results.identity import PlanExpectations
from kit.results.status import PairStatus, pair_states
from kit.results.store import SUPERSEDED_DIR, SYSTEMS_DIR, checkpoint_path, dumps_checkpoint, mllog_path, set_aside
from kit.weights.snapshot import LoadDigests, digests_at_load, resolve_snapshot
from kit.worker import provenance
from kit.worker.claims import RUNNING_ELSEWHERE, Signature, claim, held_elsewhere, signature
from kit.worker.jobinfo import job_info
from kit.worker.kinds import worker_kind
from kit.worker.kinds.base import Engine, PairInput, PairRunner
from kit.worker.mllog import PairLog
from kit.worker.signing import sign_in_job
from kit.worker.record import pair_metadata
from kit.worker.signals import Terminated
from kit.worker.system import system_description, write_system_description
from kit.worker.writable import check_writable


@dataclass
class ShardReport:
    """What one worker invocation did, pair by pair."""

    assigned: list[Pair] = field(default_factory=list)
    written: list[Pair] = field(default_factory=list)
    skipped: list[Pair] = field(default_factory=list)
    invalid: list[tuple[Pair, list[str]]] = field(default_factory=list)
    failed: list[tuple[Pair, str]] = field(default_factory=list)
    elsewhere: list[tuple[Pair, str]] = field(default_factory=list)   # another kit process had it, and why
    todo: list[Pair] = field(default_factory=list)                   # the pairs this invocation set out to run
    terminated: str | None = None                                    # the signal that stopped it (SIGTERM)

    @property
    def ok(self) -> bool:
        """True when no pair failed or was kept invalid and no signal stopped the shard (a pair
        another kit process had is that process's to finish)."""
        return not self.invalid and not self.failed and not self.terminated

    @property
    def left(self) -> list[Pair]:
        """The pairs to run that were neither written, failed nor left to another process."""
        done = {*self.written, *(p for p, _ in self.failed), *(p for p, _ in self.elsewhere)}
        return [p for p in self.todo if p not in done]


Progress = Callable[[str], None]
# language -> a context manager yielding None while this process holds the pair, else why another has it
Claim = Callable[[str], AbstractContextManager[str | None]]


@dataclass(frozen=True)
class _Loaded:
    """A run's engine and the facts of its loading, shared by the run's pairs."""

    engine: Engine
    weights: LoadDigests
    seconds: float
    scratch: Path


def run_shard(
    *,
    runs: list[Run],
    pairs: list[Pair],
    benchmark: Dataset,
    results: Path,
    shard: tuple[int, int] = (0, 1),
    packed: list[list[Pair]] | None = None,
    force: bool = False,
    cache_dir: Path | None = None,
    progress: Progress = lambda msg: None,
) -> ShardReport:
    """Run this shard's pairs that lack a complete checkpoint (`packed`: the plan file's shards, when
    `kit run` packed them by cost); returns what happened."""
    runner: PairRunner = worker_kind(benchmark.kind, str(benchmark.root))
    report = ShardReport(assigned=PlanFile(list(pairs), packed).shard(*shard))
    todo = pairs_to_run(report, pair_states(results, report.assigned, PlanExpectations(benchmark, runs)), force, progress)
    report.todo = list(todo)
    progress(
        f"shard {shard[0]}/{shard[1]}: {len(report.assigned)} pairs assigned, {len(report.skipped)} complete, "
        f"{len(report.invalid)} invalid, {len(todo)} to run ({benchmark.describe()})"
    )
    if todo:   # a read-only or full folder, or a file where one must be: one line now, not after the model loads
        for folder in (results, results / SYSTEMS_DIR):
            check_writable(folder)
    planned = {p: signature(checkpoint_path(results, p.run, p.language)) for p in todo}
    try:
        _run_todo(report, runner, runs, benchmark, results, shard, cache_dir, planned, progress)
    except Terminated as exc:
        report.terminated = exc.name
        left = report.left
        progress(f"terminated by {exc.name}: {len(left)} pair(s) left"
                 + (f": {', '.join(str(p) for p in left)}" if left else ""))
    return report


def _run_todo(report: ShardReport, runner: PairRunner, runs: list[Run], benchmark: Dataset, results: Path,
              shard: tuple[int, int], cache_dir: Path | None, planned: dict[Pair, Signature],
              progress: Progress) -> None:
    by_name = {r.name: r for r in runs}
    hardware = provenance.hardware_snapshot() if planned else {}
    described = False
    for run_name, languages in group_by_run(list(planned)).items():
        run = by_name[run_name]
        languages = _not_held(report, run_name, languages, results, progress)
        if not languages:
            continue
        with tempfile.TemporaryDirectory(prefix="kit-engine-") as scratch:
            try:
                loaded = _load(runner, run, benchmark, cache_dir, Path(scratch), progress)
            except KitError as exc:
                for lang in languages:
                    report.failed.append((Pair(run_name, lang), exc.one_line()))
                progress(f"cannot load {run_name}: {exc.one_line()}")
                continue
            try:
                if not described:
                    desc = system_description(job_info(), hardware, loaded.engine.versions(),
                                              provenance.image(provenance.Facts(), run.backend))
                    try:
                        progress(f"system description: {write_system_description(results, desc)}")
                    except OSError as exc:   # a full disk: the run's pairs fail, in one line each
                        for lang in languages:
                            report.failed.append((Pair(run_name, lang), f"cannot write the system description: {exc}"))
                        progress(f"cannot write the system description: {exc}")
                        continue
                    described = True

                def attempt(lang: str) -> None:
                    check_writable(checkpoint_path(results, run_name, lang).parent)
                    _run_pair(runner, run, lang, benchmark, results, loaded, shard, hardware, progress)

                run_each(report, run_name, languages, progress, attempt,
                         claim=lambda lang: claim(checkpoint_path(results, run_name, lang),
                                                  planned[Pair(run_name, lang)]))
            finally:
                loaded.engine.close()


def _not_held(report: ShardReport, run_name: str, languages: list[str], results: Path,
              progress: Progress) -> list[str]:
    """The languages whose claim no other process holds now (no model loads only to skip them all)."""
    free = []
    for lang in languages:
        pair = Pair(run_name, lang)
        if held_elsewhere(checkpoint_path(results, run_name, lang)):
            report.elsewhere.append((pair, RUNNING_ELSEWHERE))
            progress(f"{pair}: skipped: {RUNNING_ELSEWHERE}")
        else:
            free.append(lang)
    return free


def pairs_to_run(report: ShardReport, states: list[PairStatus], force: bool, progress: Progress) -> list[Pair]:
    """Sort pair states into the report (complete: skipped; invalid: kept unless `force`); the pairs to
    run (pending and stale ones, and invalid ones with `force`)."""
    todo: list[Pair] = []
    for st in states:
        if st.state == PairState.COMPLETE:
            report.skipped.append(st.pair)
        elif st.state == PairState.STALE:
            progress(f"stale checkpoint, rerun (the old one is kept in {SUPERSEDED_DIR}/): {st.path}: "
                     f"{'; '.join(st.reasons)}")
            todo.append(st.pair)
        elif st.state == PairState.INVALID and not force:
            report.invalid.append((st.pair, st.reasons))
            progress(f"invalid checkpoint kept (use --force to replace): {st.path}: {'; '.join(st.reasons)}")
        else:
            todo.append(st.pair)
    return todo


def run_each(report: ShardReport, run_name: str, languages: list[str], progress: Progress,
             run_pair: Callable[[str], None], claim: Claim | None = None) -> None:
    """run_pair(language) for each language of one loaded run, recording it as written or failed;
    one broken pair does not lose the others. With `claim`, a pair runs only while this process
    holds its claim; a pair another process has is recorded as elsewhere and skipped."""
    for lang in languages:
        pair = Pair(run_name, lang)
        try:
            with (claim or _no_claim)(lang) as other:
                if other:
                    report.elsewhere.append((pair, other))
                    progress(f"{pair}: skipped: {other}")
                    continue
                run_pair(lang)
            report.written.append(pair)
        except KitError as exc:
            report.failed.append((pair, exc.one_line()))
            progress(f"{pair}: failed: {exc.one_line()}")
        except OSError as exc:   # a full, read-only or missing disk: the one line with its fix (kit.errors)
            found = disk_error(exc)
            why = found.one_line() if found is not None else f"{type(exc).__name__}: {exc}"
            report.failed.append((pair, why))
            progress(f"{pair}: failed: {why}")
        except Exception as exc:  # noqa: BLE001 - one broken pair must not lose the others
            report.failed.append((pair, f"{type(exc).__name__}: {exc}"))
            progress(f"{pair}: failed: {type(exc).__name__}: {exc}")


@contextmanager
def _no_claim(lang: str) -> Iterator[None]:
    yield None


def _load(runner: PairRunner, run: Run, benchmark: Dataset, cache_dir: Path | None, scratch: Path,
          progress: Progress) -> _Loaded:
    runner.check_run(run)
    t0 = time.perf_counter()
    snapshot = resolve_snapshot(run.model_id, run.revision, cache_dir)
    # the staged manifest is trusted after a size check; a full re-hash is `kit weights verify`
    digests = digests_at_load(snapshot, run.model_id, run.revision)
    engine = runner.open(run, benchmark, snapshot, scratch)
    seconds = time.perf_counter() - t0
    progress(f"loaded {run.name} ({run.backend}) from {snapshot} in {seconds:.1f}s; weights: {digests.note}")
    return _Loaded(engine, digests, seconds, scratch)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_pair(runner: PairRunner, run: Run, language: str, benchmark: Dataset, results: Path, loaded: _Loaded,
              shard: tuple[int, int], hardware: dict, progress: Progress) -> None:
    data = benchmark.load_language(language)
    prompt = benchmark.prompt_for(run)
    path = checkpoint_path(results, run.name, language)
    if path.exists() and not path.is_file() and not path.is_symlink():   # a link is replaced, never written through
        # before its log: a log must never record a checkpoint the job could not then write
        raise CheckpointError(f"{path}: the pair's checkpoint path holds a folder (or a device), not a file",
                              fix="move it out of RESULTS, then run the pair again")
    started = _now()
    prov = provenance.build_provenance(
        backend=run.backend, model_id=run.model_id, revision=run.revision,
        weight_files_sha256=loaded.weights.files, weights_manifest_sha256=loaded.weights.manifest_sha256,
        weights_hashed=loaded.weights.hashed,
        manifest_sha256=benchmark.manifest_sha256,
        file_sha256=data.file_sha256, prompt_sha256=prompt.sha256, shard=f"{shard[0]}/{shard[1]}",
        packages=loaded.engine.versions(), job=job_info(), hardware_facts=hardware,
    )
    set_aside(path)
    with PairLog(mllog_path(path)) as log:
        c = log.constants
        log.event(c.SUBMISSION_BENCHMARK, runner.results.mllog_benchmark)
        log.event("kit_pair", {"run": run.name, "language": language, "task": run.task,
                               **runner.pair_facts(run, language, benchmark)})
        log.start(c.INIT_START)
        log.event("provenance", prov)
        log.end(c.INIT_STOP, metadata={"load_seconds": round(loaded.seconds, 6)})
        log.start(c.RUN_START)
        try:
            out = runner.evaluate(PairInput(run, language, data, benchmark, loaded.engine, loaded.seconds, results,
                                            loaded.scratch), log)
        except BaseException:
            log.end(c.RUN_STOP, metadata={"status": "aborted"})
            raise
        metadata = pair_metadata(run=run, language=language, benchmark_sha256=data.file_sha256,
                                 manifest_sha256=benchmark.manifest_sha256, prompt_sha256=prompt.sha256,
                                 started_at=started, source_commit=prov[keys.PROV_KIT_COMMIT],
                                 duration_seconds=out.speed["duration_seconds"])
        metadata.update(out.metadata)
        ckpt = {keys.METADATA: metadata, keys.METRICS: out.metrics, keys.PREDICTIONS: out.predictions, keys.SPEED: out.speed,
                keys.PROVENANCE: prov, **out.sections}
        value, facts = out.headline
        log.event(c.EVAL_ACCURACY, value, metadata=facts)
        text = dumps_checkpoint(ckpt).encode("utf-8")
        log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": path.name,
                                      "checkpoint_sha256": hashlib.sha256(text).hexdigest()})
        # the log first: a kill between the two leaves a whole log and no checkpoint (the pair is
        # pending and reruns), never a checkpoint whose log lacks its run_stop
        log.commit()
        write_bytes_atomic(path, text)
    signed = sign_in_job(path, ckpt)
    progress(f"{run.name} [{language}]: {out.summary} in {out.speed['duration_seconds']:.1f}s -> {path}; {signed}")
