"""The worker against the bare loop: `kit shard` on the tiny Llama (random weights, CPU) over some
languages of the bench tree's benchmark (300 prompts each), and bench/anchors/bare_loop.py on the
same prompts, batches and decoding. Both are whole processes (start, imports, model load, every
prompt), so the ratio is what kit adds around the model: data and prompt digests, claims,
checkpoints, :::MLLOG logs, provenance. The two must give the same answers, prompt by prompt."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.measure import Sample, best_of

ANCHOR = Path(__file__).resolve().parent / "anchors" / "bare_loop.py"
BATCH, MAX_NEW = 16, 4


@dataclass(frozen=True)
class WorkerFigures:
    """Both timings, the prompts they ran and whether their answers agree."""

    kit: Sample
    bare: Sample
    pairs: int
    prompts: int
    identical: bool
    noise: float = 0.0   # the bare loop's spread between its runs, as a share of its best


def measure_worker(folder: Path, benchmark: Path, languages: list[str], repeat: int, env: dict[str, str]) -> WorkerFigures:
    """Build the tiny Llama once under `folder`, then time `kit shard` and the bare loop."""
    from kit.config.kinds.lrb.prompts import format_prompt
    from kit.config.project import load_project
    from kit.demo.backends import roster_text
    from kit.demo.model import build_tiny_llama
    from kit.results import keys

    hub = folder / "hub"
    repo, revision = build_tiny_llama(hub)
    roster = folder / "roster.toml"
    roster.write_text(roster_text([{"model": repo, "revision": revision, "backend": "transformers-5.17",
                                    "dtype": "float32", "batch_size": BATCH, "max_new_tokens": MAX_NEW,
                                    "languages": languages}], benchmark.resolve()))
    project = load_project(roster, None)
    run = project.roster.run[0]
    prompt = project.benchmark.prompt_for(run)
    prompts = [[lang, [format_prompt(prompt, item.sentence)
                       for item in project.benchmark.load_language(lang).items]] for lang in languages]
    (folder / "prompts.json").write_text(json.dumps(prompts), encoding="utf-8")
    results = folder / "results"
    snapshot = hub / f"models--{repo.replace('/', '--')}" / "snapshots" / revision
    answers = folder / "bare.json"
    kit_runs, bare_runs = [], []
    for _ in range(max(1, repeat)):   # in turn: a slow spell of a shared machine falls on both sides of the ratio
        kit_runs.append(best_of([sys.executable, "-m", "kit", "shard", "--roster", str(roster), "--results", str(results),
                                 "--cache-dir", str(hub)], folder, 1, env,
                                before=lambda: shutil.rmtree(results, ignore_errors=True)))
        bare_runs.append(best_of([sys.executable, str(ANCHOR), str(snapshot), str(folder / "prompts.json"), str(BATCH),
                                  str(MAX_NEW), str(answers)], folder, 1, env))
    kit, bare = min(kit_runs, key=lambda r: r.seconds), min(bare_runs, key=lambda r: r.seconds)
    spread = (max(r.seconds for r in bare_runs) - bare.seconds) / bare.seconds
    theirs = dict((lang, out) for lang, out in json.loads(answers.read_text(encoding="utf-8")))
    ours = {}
    for lang in languages:
        data = json.loads(next(results.glob(f"{lang}/*.json")).read_text(encoding="utf-8"))
        ours[lang] = [p[keys.RAW_OUTPUT] for p in data[keys.PREDICTIONS]]
    return WorkerFigures(kit, bare, len(languages), sum(len(p) for _, p in prompts), ours == theirs, spread)
