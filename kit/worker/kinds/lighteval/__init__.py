"""LightEval suite pairs inside the image: each (run, task) goes through LightEval's own Pipeline
(its prompt functions, its metrics) with kit's vLLM engine as the model. LightEval's own results
JSON and per-sample details are kept under RESULTS/logs/lighteval/<task>/<run>/."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Any

from kit.config.dataset import Dataset
from kit.config.kinds.lighteval.suite import EvalSuite
from kit.config.names import run_file_stem
from kit.config.roster import Run
from kit.errors import ConfigError, MissingExtraError
from kit.results import keys
from kit.results.kinds.lighteval import LIGHTEVAL as LIGHTEVAL_RESULTS
from kit.worker.kinds import WORKER_KINDS
from kit.worker.kinds.base import Engine, Evaluated, PairInput, PairRunner
from kit.worker.record import speed_block

LOGS = Path("logs") / "lighteval"
# kit's mean and LightEval's may differ in the last bits (fsum vs numpy); more is a bug.
AGREEMENT = 1e-9


def lighteval_log_dir(results: Path, run: str, task: str) -> Path:
    """Where LightEval's own files of one pair are kept."""
    return Path(results) / LOGS / task / run_file_stem(run)


def _suite(dataset: Dataset) -> EvalSuite:
    if not isinstance(dataset, EvalSuite):
        raise TypeError(f"the LightEval runner was given a {type(dataset).__name__}, not an EvalSuite")
    return dataset


class LightevalRunner(PairRunner):
    """LightEval suite tasks through LightEval's Pipeline and kit's vLLM engine."""

    results = LIGHTEVAL_RESULTS

    def check_run(self, run: Run) -> None:
        """Suites generate, in the vllm image."""
        if run.task != keys.TASK_GENERATE:
            raise ConfigError(f"run {run.name} has task {run.task!r}; LightEval suites generate",
                              fix="set task = \"generate\" on the run, or run it on an lrb benchmark")
        if run.backend != "vllm":
            raise ConfigError(f"run {run.name} uses backend {run.backend!r}; LightEval suites run in the vllm image",
                              fix="set backend = \"vllm\" on the run")

    def open(self, run: Run, dataset: Dataset, snapshot: Path, scratch: Path) -> Engine:
        """kit's LightevalModel on a vLLM engine, with the suite's sampling settings."""
        try:
            from kit.worker.kinds.lighteval.model import KitVllmModel
        except ImportError as exc:
            raise MissingExtraError("LightEval suites", exc.name or "lighteval", "lighteval") from None
        return KitVllmModel(run, snapshot, _suite(dataset).spec.generation, scratch)

    def pair_facts(self, run: Run, language: str, dataset: Dataset) -> dict[str, Any]:
        """The LightEval task string."""
        return {"lighteval": _suite(dataset).task(language).lighteval}

    def evaluate(self, pair: PairInput, log: Any) -> Evaluated:
        """The task through LightEval's Pipeline; kit's item metrics must agree with LightEval's own."""
        from kit.worker.kinds.lighteval.pipeline import evaluate_task

        suite, model, name = _suite(pair.dataset), pair.engine, pair.language
        task = suite.task(name)
        ids = [item.item_id for item in pair.data.items]
        out_dir = pair.scratch / "out" / name
        tokens0 = model.generated_tokens
        t0 = time.perf_counter()
        outcome = evaluate_task(model, suite, task, ids, out_dir)
        seconds = time.perf_counter() - t0
        # LightEval schedules the whole task itself: to kit it is one batch.
        log.event("batch_done", 0, metadata={"batch_size": len(ids), "seconds": round(seconds, 6)})
        metrics = self.results.metrics(outcome.predictions)
        _check_agreement(name, metrics, outcome.lighteval_metrics)
        speed = speed_block(pair.load_seconds, [seconds], len(ids), model.generated_tokens - tokens0)
        speed.update(model.engine.speed_facts())
        logs = _keep_lighteval_files(out_dir, lighteval_log_dir(pair.results, pair.run.name, name))
        gen = suite.spec.generation
        headline = {k: v for k, v in metrics.items() if k != keys.N_ITEMS}
        first = min(headline, default=keys.N_ITEMS)
        return Evaluated(
            predictions=outcome.predictions, metrics=metrics, speed=speed,
            summary=" ".join(f"{k}={v:.4f}" for k, v in sorted(headline.items())) + f" over {len(ids)} items",
            headline=(metrics[first], {"metric": first, keys.N_ITEMS: metrics[keys.N_ITEMS]}),
            metadata={keys.BENCHMARK_KIND: keys.KIND_LIGHTEVAL, keys.DECODING: "greedy" if gen.temperature == 0 else "sampling",
                      "suite": suite.name, "lighteval_task": task.lighteval, "temperature": gen.temperature,
                      "top_p": gen.top_p},
            sections={keys.LIGHTEVAL: {"metrics": outcome.lighteval_metrics, "skipped_modules": outcome.skipped_modules,
                                    "files": [str(p.relative_to(pair.results)) for p in logs]}})


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


LIGHTEVAL = WORKER_KINDS.register("lighteval")(LightevalRunner())
