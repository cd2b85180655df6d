"""lrb pairs inside the image: each item's prompt (the benchmark's template around its sentence)
goes through the run's backend in static batches, in input order; generated answers are parsed
into yes/no/unparsed verdicts, scores are thresholded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kit.config.backends import engine_for
from kit.config.kinds.lrb.benchmark import Benchmark
from kit.config.kinds.lrb.prompts import format_prompt
from kit.config.dataset import Dataset
from kit.config.roster import Run
from kit.results import keys
from kit.results.kinds.lrb import LRB as LRB_RESULTS
from kit.worker.backends.base import Backend, get_backend
from kit.worker.kinds import WORKER_KINDS
from kit.worker.kinds.base import Evaluated, PairInput, PairRunner
from kit.worker.record import generation_predictions, score_predictions, speed_block


def _chunks(seq: list, size: int) -> list[list]:
    return [seq[i:i + size] for i in range(0, len(seq), size)]


class LrbRunner(PairRunner):
    """lrb pairs through kit's backends (kit.worker.backends)."""

    results = LRB_RESULTS

    def open(self, run: Run, dataset: Dataset, snapshot: Path, scratch: Path) -> Backend:
        """The run's backend, loaded."""
        backend = get_backend(engine_for(run.backend))(run, snapshot)
        backend.load()
        return backend

    def evaluate(self, pair: PairInput, log: Any) -> Evaluated:
        """Static batches in input order through the backend; predictions, metrics and speed figures."""
        run, backend, items = pair.run, pair.engine, pair.data.items
        benchmark = pair.dataset
        if not isinstance(benchmark, Benchmark):
            raise TypeError(f"the lrb runner was given a {type(benchmark).__name__}, not an lrb Benchmark")
        prompt = benchmark.prompt_for(run)
        texts = [format_prompt(prompt, item.sentence) for item in items]
        item_ids = [item.item_id for item in items]
        expected = [item.label for item in items]
        batch_seconds: list[float] = []
        outputs: list = []
        for n, chunk in enumerate(_chunks(texts, run.batch_size)):
            t0 = time.perf_counter()
            out = backend.generate(chunk) if run.task == keys.TASK_GENERATE else backend.score(chunk)
            batch_seconds.append(time.perf_counter() - t0)
            outputs.extend(out)
            log.event("batch_done", n, metadata={"batch_size": len(chunk), "seconds": round(batch_seconds[-1], 6)})
        if run.task == keys.TASK_GENERATE:
            predictions = generation_predictions(item_ids, expected, outputs)
            generated = sum(o.generated_tokens for o in outputs)
        else:
            predictions = score_predictions(item_ids, expected, outputs, float(run.options.get("threshold", 0.5)))
            generated = 0
        speed = speed_block(pair.load_seconds, batch_seconds, len(item_ids), generated)
        speed.update(backend.speed_facts())  # engine-measured figures (e.g. vLLM throughput, peak GPU memory)
        m = self.results.metrics(predictions)
        return Evaluated(
            predictions=predictions, metrics=m, speed=speed,
            summary=f"f1={m[keys.F1]:.4f} accuracy={m[keys.ACCURACY]:.4f} unparsed={m[keys.UNPARSED_RATE]:.3f}",
            headline=(m[keys.ACCURACY], {keys.F1: m[keys.F1], keys.N_ITEMS: m[keys.N_ITEMS]}))


LRB = WORKER_KINDS.register("lrb")(LrbRunner())
