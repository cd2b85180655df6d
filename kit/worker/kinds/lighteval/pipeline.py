"""One LightEval task through LightEval's own Pipeline, offline, with kit's model; what it
returns is turned into kit predictions (one per evaluation line, in file order).

LightEval 0.13 imports every built-in task module to build its registry. Some of them break a
compute node: `tiny_benchmarks` downloads a file from GitHub at import (no timeout; compute
nodes have no network), `ifeval` downloads NLTK data at import, and `mt_bench` calls a
huggingface_hub API that 1.x removed. The registry here imports each built-in module on its own,
leaves out those that would download unless what they fetch is already in place, and records any
module that fails instead of failing the run: a suite then loses only the tasks of those modules,
and says which.
"""

from __future__ import annotations

import importlib
import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kit.config.kinds.lighteval.suite import EvalSuite, SuiteTask
from kit.errors import ConfigError
from kit.results import keys

log = logging.getLogger(__name__)
NETWORK_AT_IMPORT = {"tiny_benchmarks": "tinyBenchmarks.pkl"}
# built-in modules that call nltk.download at import unless these NLTK resources are installed
NLTK_AT_IMPORT = {name: ("tokenizers/punkt", "tokenizers/punkt_tab") for name in ("ifeval", "ifbench")}  # ifbench imports ifeval


@dataclass
class TaskOutcome:
    """What LightEval produced for one task: kit predictions (file order), its own aggregate
    metrics, and the built-in task modules it could not import."""

    predictions: list[dict[str, Any]]
    lighteval_metrics: dict[str, float]
    skipped_modules: dict[str, str] = field(default_factory=dict)


def _load_modules(names: list[str], prefix: str, skipped: dict[str, str]) -> dict[str, Any]:
    from lighteval.tasks.registry import Registry

    configs: dict[str, Any] = {}
    for name in names:
        try:
            configs.update(Registry._extract_configs(importlib.import_module(f"{prefix}.{name}")))
        except Exception as exc:  # noqa: BLE001 - a broken built-in module must not sink the suite
            skipped[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return configs


def _nltk_has(resource: str) -> bool:
    try:
        import nltk

        nltk.data.find(resource)
        return True
    except (ImportError, LookupError):
        return False


@contextmanager
def offline_registry(skipped: dict[str, str]) -> Iterator[None]:
    """While active, LightEval builds its task registry module by module (see the module doc);
    `skipped` collects {module: reason} for those left out."""
    from lighteval.tasks.registry import Registry

    original = Registry.__dict__["load_all_task_configs"]

    def load_all_task_configs(custom_tasks: Any = None, load_multilingual: bool = False) -> dict[str, Any]:
        tasks_dir = Path(importlib.import_module("lighteval.tasks.registry").__file__).parent / "tasks"
        files = []
        for f in sorted(tasks_dir.glob("*.py")):
            if f.name == "__init__.py":
                continue
            needed = NETWORK_AT_IMPORT.get(f.stem)
            if needed and not (tasks_dir / needed).is_file():
                skipped[f.stem] = f"downloads {needed} at import; compute nodes have no network"
                continue
            files.append(f.stem)
        configs = _load_modules(files, "lighteval.tasks.tasks", skipped)
        subdirs = []
        for d in sorted(d.name for d in tasks_dir.iterdir() if d.is_dir() and (d / "main.py").exists()):
            missing = [r for r in NLTK_AT_IMPORT.get(d, ()) if not _nltk_has(r)]
            if missing:
                skipped[f"{d}.main"] = f"downloads NLTK {', '.join(missing)} at import; compute nodes have no network"
                continue
            subdirs.append(d)
        configs.update(_load_modules([f"{d}.main" for d in subdirs], "lighteval.tasks.tasks", skipped))
        if custom_tasks is not None:
            custom = Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))
            clash = sorted(set(custom) & set(configs))
            if clash:
                raise ConfigError(f"{custom_tasks}: custom task {clash[0]!r} has the name of a LightEval built-in task",
                                  fix="rename it in TASKS_TABLE and in the suite's task strings")
            configs.update(custom)
        return configs

    Registry.load_all_task_configs = staticmethod(load_all_task_configs)
    try:
        yield
    finally:
        Registry.load_all_task_configs = original


def evaluate_task(model: Any, suite: EvalSuite, task: SuiteTask, ids: list[str], out_dir: Path) -> TaskOutcome:
    """Run `task` through LightEval's Pipeline with `model`; LightEval's results and details files
    are saved under `out_dir`. `ids` are the task's item ids in file order (from the suite)."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    skipped: dict[str, str] = {}
    tracker = EvaluationTracker(output_dir=str(out_dir), save_details=True)
    params = PipelineParameters(launcher_type=ParallelismManager.CUSTOM,
                                custom_tasks_directory=str(suite.custom_tasks.path), max_samples=None)
    with offline_registry(skipped):
        try:
            pipeline = Pipeline(tasks=task.lighteval, pipeline_parameters=params, evaluation_tracker=tracker,
                                model=model)
        except ValueError as exc:
            if "Cannot find task" not in str(exc):
                raise
            reason = f"; built-in modules left out: {', '.join(sorted(skipped))}" if skipped else ""
            raise ConfigError(f"{suite.config_path}: LightEval has no task {task.lighteval!r}{reason}",
                              fix="check the task string and the custom tasks module's TASKS_TABLE") from None
    pipeline.evaluate()
    details = pipeline.get_details()
    results = pipeline.get_results()
    pipeline.save_and_push_results()
    if len(details) != 1:
        raise ConfigError(f"LightEval task string {task.lighteval!r} expanded to {len(details)} tasks ({', '.join(sorted(details))})",
                          fix="give each LightEval task its own [[task]] entry, so each gets its own checkpoint")
    (full_name,) = details
    predictions = _predictions(details[full_name], ids, task, getattr(model, "finish_reasons", {}))
    return TaskOutcome(predictions, _task_metrics(results, full_name), skipped)


def _task_metrics(results: dict[str, Any], full_name: str) -> dict[str, float]:
    # get_results() writes task names with ":" where the details use "|".
    block = results.get("results", {}).get(full_name.replace("|", ":"), {})
    return {k: float(v) for k, v in block.items() if not k.endswith("_stderr") and isinstance(v, (int, float))}


def _predictions(details: list[Any], ids: list[str], task: SuiteTask, finish: dict[str, list[str]]) -> list[dict[str, Any]]:
    """kit predictions from LightEval's per-sample details, in file order. LightEval numbers its
    docs by their index in the evaluation split (Doc.id), so index n is the file's n-th line."""
    by_index: dict[int, dict[str, Any]] = {}
    for detail in details:
        doc, response, metric = detail.doc, detail.model_response, detail.metric
        index = int(doc.id)
        if not 0 <= index < len(ids) or index in by_index:
            raise ConfigError(f"task {task.name}: LightEval doc {doc.id!r} does not match a line of {task.data} ({len(ids)} lines)",
                              fix="the task must read exactly that file as its evaluation split")
        values = {}
        for name, value in metric.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
                raise ConfigError(f"task {task.name}: metric {name!r} of item {ids[index]!r} is {value!r}, not a number",
                                  fix="kit records sample-level numeric metrics; drop corpus-level ones from the task")
            values[name] = float(value)
        golds = [doc.choices[i] for i in (doc.gold_index if isinstance(doc.gold_index, list) else [doc.gold_index])]
        texts = list(response.text)
        pred = {
            keys.ITEM_ID: ids[index], keys.EXPECTED: golds[0] if len(golds) == 1 else golds,
            keys.RAW_OUTPUT: texts[0] if texts else "",
            keys.TRUNCATED: any(r == "length" for r in finish.get(str(doc.id), [])), keys.ITEM_METRICS: values,
        }
        if len(texts) > 1:
            pred[keys.OUTPUTS] = texts
        by_index[index] = pred
    if len(by_index) != len(ids):
        first = next(n for n in range(len(ids)) if n not in by_index)
        raise ConfigError(f"task {task.name}: LightEval evaluated {len(by_index)} of the {len(ids)} lines of {task.data} "
                          f"(first left out: {ids[first]!r})",
                          fix="the prompt function must return a Doc for every line (kit scores whole tasks only)")
    return [by_index[n] for n in range(len(ids))]
