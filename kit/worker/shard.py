"""The worker's benchmark loop: run the pairs of one shard, one checkpoint per pair.

Runs inside the image (or on the host for the `host` runtime). Groups pairs by run so
each model loads once, skips complete checkpoints, reports invalid ones and never
overwrites them without `force`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kit.config.backends import engine_for
from kit.config.benchmark import Benchmark
from kit.config.roster import Run
from kit.errors import KitError
from kit.plan import Pair, group_by_run, shard_pairs
from kit.results import keys as K
from kit.results.status import PairStatus, pair_states
from kit.results.store import checkpoint_path, write_checkpoint
from kit.worker import provenance as P
from kit.worker.backends.base import Backend, get_backend
from kit.worker.jobinfo import job_info
from kit.worker.mllog import BENCHMARK_NAME, PairLog, mllog_path
from kit.worker.record import build_checkpoint, generation_predictions, score_predictions, speed_block
from kit.worker.snapshot import resolve_snapshot, weight_files_sha256
from kit.worker.system import system_description, write_system_description


@dataclass
class ShardReport:
    """What one worker invocation did, pair by pair."""

    assigned: list[Pair] = field(default_factory=list)
    written: list[Pair] = field(default_factory=list)
    skipped: list[Pair] = field(default_factory=list)
    invalid: list[tuple[Pair, list[str]]] = field(default_factory=list)
    failed: list[tuple[Pair, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every assigned pair now has a complete checkpoint."""
        return not self.invalid and not self.failed


Progress = Callable[[str], None]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chunks(seq: list, size: int) -> list[list]:
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def run_shard(
    *,
    runs: list[Run],
    pairs: list[Pair],
    benchmark: Benchmark,
    results: Path,
    shard: tuple[int, int] = (0, 1),
    force: bool = False,
    cache_dir: Path | None = None,
    progress: Progress = lambda msg: None,
) -> ShardReport:
    """Run this shard's pairs that lack a complete checkpoint; returns what happened.
    A LightEval suite (kit.config.evalsuite) goes to kit.worker.lighteval.shard."""
    if getattr(benchmark, "kind", K.KIND_LRB) == K.KIND_LIGHTEVAL:
        from kit.worker.lighteval.shard import run_suite_shard

        return run_suite_shard(runs=runs, pairs=pairs, suite=benchmark, results=results, shard=shard,  # type: ignore[arg-type]
                               force=force, cache_dir=cache_dir, progress=progress)
    report = ShardReport(assigned=shard_pairs(pairs, *shard))
    todo = pairs_to_run(report, pair_states(results, report.assigned, benchmark.item_ids), force, progress)
    progress(
        f"shard {shard[0]}/{shard[1]}: {len(report.assigned)} pairs assigned, {len(report.skipped)} complete, "
        f"{len(report.invalid)} invalid, {len(todo)} to run"
    )
    by_name = {r.name: r for r in runs}
    hardware = P.hardware_snapshot() if todo else {}
    described = False
    for run_name, languages in group_by_run(todo).items():
        run = by_name[run_name]
        try:
            backend, snapshot_digests, load_seconds = _load(run, cache_dir, progress)
        except KitError as exc:
            for lang in languages:
                report.failed.append((Pair(run_name, lang), exc.one_line()))
            progress(f"cannot load {run_name}: {exc.one_line()}")
            continue
        if not described:
            facts = P.Facts()
            desc = system_description(job_info(), hardware, backend.versions(), P.image(facts, run.backend))
            progress(f"system description: {write_system_description(results, desc)}")
            described = True
        try:
            run_each(report, run_name, languages, progress, lambda lang: _run_pair(
                run, lang, benchmark, results, backend, snapshot_digests, load_seconds, shard, hardware, progress))
        finally:
            backend.close()
    return report


def pairs_to_run(report: ShardReport, states: list[PairStatus], force: bool, progress: Progress) -> list[Pair]:
    """Sort pair states into the report (complete: skipped; invalid: kept unless `force`); the pairs to run."""
    todo: list[Pair] = []
    for st in states:
        if st.state == K.COMPLETE:
            report.skipped.append(st.pair)
        elif st.state == K.INVALID and not force:
            report.invalid.append((st.pair, st.reasons))
            progress(f"invalid checkpoint kept (use --force to replace): {st.path}: {'; '.join(st.reasons)}")
        else:
            todo.append(st.pair)
    return todo


def run_each(report: ShardReport, run_name: str, languages: list[str], progress: Progress,
             run_pair: Callable[[str], None]) -> None:
    """run_pair(language) for each language of one loaded run, recording it as written or failed;
    one broken pair does not lose the others."""
    for lang in languages:
        pair = Pair(run_name, lang)
        try:
            run_pair(lang)
            report.written.append(pair)
        except KitError as exc:
            report.failed.append((pair, exc.one_line()))
            progress(f"{pair}: failed: {exc.one_line()}")
        except Exception as exc:  # noqa: BLE001 - one broken pair must not lose the others
            report.failed.append((pair, f"{type(exc).__name__}: {exc}"))
            progress(f"{pair}: failed: {type(exc).__name__}: {exc}")


def _load(run: Run, cache_dir: Path | None, progress: Progress) -> tuple[Backend, dict[str, str], float]:
    t0 = time.perf_counter()
    snapshot = resolve_snapshot(run.model_id, run.revision, cache_dir)
    digests = weight_files_sha256(snapshot)
    backend = get_backend(engine_for(run.backend))(run, snapshot)
    backend.load()
    seconds = time.perf_counter() - t0
    progress(f"loaded {run.name} ({run.backend}) from {snapshot} in {seconds:.1f}s")
    return backend, digests, seconds


def _run_pair(
    run: Run, language: str, benchmark: Benchmark, results: Path, backend: Backend,
    weight_digests: dict[str, str], load_seconds: float, shard: tuple[int, int],
    hardware: dict, progress: Progress,
) -> None:
    data = benchmark.load_language(language)
    prompt = benchmark.prompt(run.task)
    texts = [benchmark.format_prompt(run.task, item.sentence) for item in data.items]
    item_ids = [item.item_id for item in data.items]
    expected = [item.label for item in data.items]
    path = checkpoint_path(results, run.name, language)
    started = _now()
    job = job_info()
    packages = backend.versions()
    prov = P.build_provenance(
        backend=run.backend, model_id=run.model_id, revision=run.revision,
        weight_files_sha256=weight_digests, manifest_sha256=benchmark.manifest_sha256,
        file_sha256=data.file_sha256, prompt_sha256=prompt.sha256, shard=f"{shard[0]}/{shard[1]}",
        packages=packages, job=job, hardware_facts=hardware,
    )
    with PairLog(mllog_path(path)) as log:
        c = log.constants
        log.event(c.SUBMISSION_BENCHMARK, BENCHMARK_NAME)
        log.event("kit_pair", {"run": run.name, "language": language, "task": run.task})
        log.start(c.INIT_START)
        log.event("provenance", prov)
        log.end(c.INIT_STOP, metadata={"load_seconds": round(load_seconds, 6)})
        log.start(c.RUN_START)
        try:
            predictions, speed = _evaluate(run, backend, texts, item_ids, expected, load_seconds, log)
        except BaseException:
            log.end(c.RUN_STOP, metadata={"status": "aborted"})
            raise
        ckpt = build_checkpoint(
            run=run, language=language, predictions=predictions, speed=speed, provenance=prov,
            benchmark_sha256=data.file_sha256, manifest_sha256=benchmark.manifest_sha256,
            prompt_sha256=prompt.sha256, started_at=started, source_commit=prov["kit_commit"],
        )
        m = ckpt[K.METRICS]
        log.event(c.EVAL_ACCURACY, m[K.ACCURACY], metadata={K.F1: m[K.F1], K.N_ITEMS: m[K.N_ITEMS]})
        write_checkpoint(path, ckpt)
        log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": path.name})
    progress(f"{run.name} [{language}]: f1={m[K.F1]:.4f} accuracy={m[K.ACCURACY]:.4f} "
             f"unparsed={m[K.UNPARSED_RATE]:.3f} in {speed['duration_seconds']:.1f}s -> {path}")


def _evaluate(
    run: Run, backend: Backend, texts: list[str], item_ids: list[str], expected: list[str],
    load_seconds: float, log: PairLog,
) -> tuple[list[dict], dict]:
    """Static batches in input order through the backend; predictions and speed figures."""
    batch_seconds: list[float] = []
    outputs: list = []
    for n, chunk in enumerate(_chunks(texts, run.batch_size)):
        t0 = time.perf_counter()
        out = backend.generate(chunk) if run.task == K.TASK_GENERATE else backend.score(chunk)
        batch_seconds.append(time.perf_counter() - t0)
        outputs.extend(out)
        log.event("batch_done", n, metadata={"batch_size": len(chunk), "seconds": round(batch_seconds[-1], 6)})
    if run.task == K.TASK_GENERATE:
        predictions = generation_predictions(item_ids, expected, outputs)
        generated = sum(o.generated_tokens for o in outputs)
    else:
        predictions = score_predictions(item_ids, expected, outputs, float(run.options.get("threshold", 0.5)))
        generated = 0
    speed = speed_block(load_seconds, batch_seconds, len(item_ids), generated)
    speed.update(backend.speed_facts())  # engine-measured figures (e.g. vLLM throughput, peak GPU memory)
    return predictions, speed
