"""The worker loop for a LightEval suite: the (run, task) pairs of one shard, one checkpoint each.

Same contract as kit.worker.shard for lrb benchmarks: each model loads once, complete checkpoints
are skipped, invalid ones are kept unless `force`, a broken pair does not lose the others, and
every checkpoint carries the full provenance. LightEval's own results JSON and per-sample details
are kept beside the pair's MLPerf log, under RESULTS/logs/lighteval/<task>/<run>/.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kit.config.evalsuite import EvalSuite
from kit.config.roster import Run
from kit.errors import ConfigError, KitError, MissingExtraError
from kit.plan import Pair, group_by_run, shard_pairs
from kit.results import keys as K
from kit.results.status import pair_states
from kit.results.store import checkpoint_path, run_file_stem, write_checkpoint
from kit.results.suite_metrics import suite_metrics
from kit.worker import provenance as P
from kit.worker.jobinfo import job_info
from kit.worker.mllog import PairLog, mllog_path
from kit.worker.record import pair_metadata, speed_block
from kit.worker.shard import Progress, ShardReport, _now, pairs_to_run, run_each
from kit.worker.snapshot import resolve_snapshot, weight_files_sha256
from kit.worker.system import system_description, write_system_description

BENCHMARK_NAME = "kit_lighteval"  # kit/defaults/mllog_ruleset_lighteval.yaml checks it
LOGS = Path("logs") / "lighteval"
# kit's mean and LightEval's may differ in the last bits (fsum vs numpy); more is a bug.
AGREEMENT = 1e-9


def lighteval_log_dir(results: Path, run: str, task: str) -> Path:
    """Where LightEval's own files of one pair are kept."""
    return Path(results) / LOGS / task / run_file_stem(run)


def run_suite_shard(
    *,
    runs: list[Run],
    pairs: list[Pair],
    suite: EvalSuite,
    results: Path,
    shard: tuple[int, int] = (0, 1),
    force: bool = False,
    cache_dir: Path | None = None,
    progress: Progress = lambda msg: None,
) -> ShardReport:
    """Run this shard's (run, task) pairs that lack a complete checkpoint; returns what happened."""
    report = ShardReport(assigned=shard_pairs(pairs, *shard))
    todo = pairs_to_run(report, pair_states(results, report.assigned, suite.item_ids), force, progress)
    progress(f"shard {shard[0]}/{shard[1]}: {len(report.assigned)} pairs assigned, {len(report.skipped)} complete, "
             f"{len(report.invalid)} invalid, {len(todo)} to run (LightEval suite {suite.name})")
    by_name = {r.name: r for r in runs}
    hardware = P.hardware_snapshot() if todo else {}
    described = False
    for run_name, tasks in group_by_run(todo).items():
        run = by_name[run_name]
        with tempfile.TemporaryDirectory(prefix="kit-lighteval-") as scratch:
            try:
                model, digests, load_seconds = _load(run, suite, cache_dir, Path(scratch), progress)
            except KitError as exc:
                for task in tasks:
                    report.failed.append((Pair(run_name, task), exc.one_line()))
                progress(f"cannot load {run_name}: {exc.one_line()}")
                continue
            try:
                if not described:
                    desc = system_description(job_info(), hardware, model.versions(), P.image(P.Facts(), run.backend))
                    progress(f"system description: {write_system_description(results, desc)}")
                    described = True
                run_each(report, run_name, tasks, progress, lambda task: _run_pair(
                    run, task, suite, results, model, digests, load_seconds, shard, hardware, Path(scratch), progress))
            finally:
                model.cleanup()
    return report


def _load(run: Run, suite: EvalSuite, cache_dir: Path | None, scratch: Path, progress: Progress) -> tuple[Any, dict[str, str], float]:
    if run.task != K.TASK_GENERATE:
        raise ConfigError(f"run {run.name} has task {run.task!r}; LightEval suites generate",
                          fix="set task = \"generate\" on the run, or run it on an lrb benchmark")
    if run.backend != "vllm":
        raise ConfigError(f"run {run.name} uses backend {run.backend!r}; LightEval suites run in the vllm image",
                          fix="set backend = \"vllm\" on the run")
    try:
        from kit.worker.lighteval.model import KitVllmModel
    except ImportError as exc:
        raise MissingExtraError("LightEval suites", exc.name or "lighteval", "lighteval") from None
    t0 = time.perf_counter()
    snapshot = resolve_snapshot(run.model_id, run.revision, cache_dir)
    digests = weight_files_sha256(snapshot)
    model = KitVllmModel(run, snapshot, suite.spec.generation, scratch)
    seconds = time.perf_counter() - t0
    progress(f"loaded {run.name} (vllm, for LightEval) from {snapshot} in {seconds:.1f}s")
    return model, digests, seconds


def _run_pair(
    run: Run, task_name: str, suite: EvalSuite, results: Path, model: Any, weight_digests: dict[str, str],
    load_seconds: float, shard: tuple[int, int], hardware: dict, scratch: Path, progress: Progress,
) -> None:
    from kit.worker.lighteval.pipeline import evaluate_task

    task = suite.task(task_name)
    data = suite.load_language(task_name)
    ids = [item.item_id for item in data.items]
    path = checkpoint_path(results, run.name, task_name)
    started = _now()
    prov = P.build_provenance(
        backend=run.backend, model_id=run.model_id, revision=run.revision, weight_files_sha256=weight_digests,
        manifest_sha256=suite.manifest_sha256, file_sha256=data.file_sha256, prompt_sha256=suite.custom_tasks.sha256,
        shard=f"{shard[0]}/{shard[1]}", packages=model.versions(), job=job_info(), hardware_facts=hardware,
    )
    out_dir = scratch / "out" / task_name
    tokens0 = model.generated_tokens
    with PairLog(mllog_path(path)) as log:
        c = log.constants
        log.event(c.SUBMISSION_BENCHMARK, BENCHMARK_NAME)
        log.event("kit_pair", {"run": run.name, "language": task_name, "task": run.task, "lighteval": task.lighteval})
        log.start(c.INIT_START)
        log.event("provenance", prov)
        log.end(c.INIT_STOP, metadata={"load_seconds": round(load_seconds, 6)})
        log.start(c.RUN_START)
        t0 = time.perf_counter()
        try:
            outcome = evaluate_task(model, suite, task, ids, out_dir)
        except BaseException:
            log.end(c.RUN_STOP, metadata={"status": "aborted"})
            raise
        seconds = time.perf_counter() - t0
        # LightEval schedules the whole task itself: to kit it is one batch.
        log.event("batch_done", 0, metadata={"batch_size": len(ids), "seconds": round(seconds, 6)})
        metrics = suite_metrics(outcome.predictions)
        _check_agreement(task_name, metrics, outcome.lighteval_metrics)
        speed = speed_block(load_seconds, [seconds], len(ids), model.generated_tokens - tokens0)
        speed.update(model.engine.speed_facts())
        logs = _keep_lighteval_files(out_dir, lighteval_log_dir(results, run.name, task_name))
        metadata = pair_metadata(run=run, language=task_name, benchmark_sha256=data.file_sha256,
                                 manifest_sha256=suite.manifest_sha256, prompt_sha256=suite.custom_tasks.sha256,
                                 started_at=started, source_commit=prov["kit_commit"],
                                 duration_seconds=speed["duration_seconds"])
        gen = suite.spec.generation
        metadata.update({K.BENCHMARK_KIND: K.KIND_LIGHTEVAL, K.DECODING: "greedy" if gen.temperature == 0 else "sampling",
                         "suite": suite.name, "lighteval_task": task.lighteval,
                         "temperature": gen.temperature, "top_p": gen.top_p})
        ckpt = {
            K.METADATA: metadata, K.METRICS: metrics, K.PREDICTIONS: outcome.predictions, K.SPEED: speed,
            K.PROVENANCE: prov,
            K.LIGHTEVAL: {"metrics": outcome.lighteval_metrics, "skipped_modules": outcome.skipped_modules,
                          "files": [str(p.relative_to(results)) for p in logs]},
        }
        headline = {k: v for k, v in metrics.items() if k != K.N_ITEMS}
        first = next(iter(sorted(headline)), None)
        if first is not None:
            log.event(c.EVAL_ACCURACY, headline[first], metadata={"metric": first, K.N_ITEMS: metrics[K.N_ITEMS]})
        write_checkpoint(path, ckpt)
        log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": path.name})
    shown = " ".join(f"{k}={v:.4f}" for k, v in sorted(headline.items()))
    progress(f"{run.name} [{task_name}]: {shown} over {len(ids)} items in {seconds:.1f}s -> {path}")


def _check_agreement(task: str, kit: dict[str, Any], lighteval: dict[str, float]) -> None:
    """Refuse the pair when kit's recomputed means and LightEval's aggregates disagree."""
    for name, value in lighteval.items():
        if name in kit and not math.isclose(kit[name], value, rel_tol=0.0, abs_tol=AGREEMENT):
            raise ConfigError(f"task {task}: LightEval reports {name}={value!r} but the mean of its per-item values is {kit[name]!r}",
                              fix="the metric is not a plain mean of sample values; kit records only such metrics")


def _keep_lighteval_files(out_dir: Path, keep: Path) -> list[Path]:
    """Move LightEval's results JSON and details parquet into `keep` (replacing an older set)."""
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    if keep.exists():
        shutil.rmtree(keep)
    keep.mkdir(parents=True)
    kept = []
    for f in files:
        # LightEval names details "details_<task>|<fewshot>_<date>.parquet": '|' is not portable.
        target = keep / f.name.replace("|", "_")
        shutil.move(str(f), target)
        kept.append(target)
    return kept
