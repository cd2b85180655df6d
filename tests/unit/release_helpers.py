"""A small finished sweep for the release and publish tests: kit's demo benchmark, the demo roster with
fixed revisions, and a checkpoint per pair as a kit job writes it (no model runs)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conftest_checkpoints import current_checkpoint

from kit.config.project import load_project
from kit.demo.dataset import LANGUAGES, write_demo_benchmark
from kit.demo.run import roster_text

LLM, RERANKER = ("kit-demo/tiny-llama", "a" * 40), ("kit-demo/tiny-reranker", "b" * 40)


def flip(label: str) -> str:
    """The other label."""
    return "no" if label == "yes" else "yes"


def demo_sweep(root: Path, runs: tuple[tuple[str, str], ...] = (LLM,)) -> SimpleNamespace:
    """root/data (benchmark), root/roster.toml, root/results with every planned pair complete; the
    German answers of the first run are all wrong, so scores differ by language."""
    bench = write_demo_benchmark(root / "data")
    text = roster_text(LLM, RERANKER, bench)
    if RERANKER not in runs:
        text = text[: text.index("[[run]]", text.index("[[run]]") + 1)]
    roster = root / "roster.toml"
    roster.write_text(text, encoding="utf-8")
    project = load_project(roster, None)
    results = root / "results"
    for run in project.roster.run:
        for lang in LANGUAGES:
            wrong = lang == "de" and run.name == LLM[0]
            current_checkpoint(results, run, lang, project.benchmark, predicted=flip if wrong else (lambda e: e))
    return SimpleNamespace(root=root, bench=bench, roster=roster, results=results, project=project)
