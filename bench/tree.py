"""A synthetic results tree of any size, made of valid kit checkpoints: a benchmark in the lrb layout
(one CSV of ITEMS sentences per language, a manifest with their digests, the default prompt), a
roster of RUNS pinned runs, and RESULTS/<language>/<run>.json for every pair, written with kit's own
checkpoint text (kit.results.store.dumps_checkpoint), metadata (kit.worker.record.pair_metadata) and
metrics (kit.results.metrics.compute_metrics), so `kit status --roster` counts every pair complete.

The release size is 85 languages x 50 runs x 300 items (about 280 MB). A tree is built once per size
and kit version under build/bench/ and reused while its stamp file is there.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import kit

GENERATOR_VERSION = 2   # 2: image digests of real shape (a run of 0s fell back from orjson)
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Tree:
    """Where a synthetic tree lives: the folder holding roster.toml, benchmark/ and results/."""

    root: Path
    languages: int
    runs: int
    items: int

    @property
    def roster(self) -> Path:
        """The roster file (its benchmark key points at benchmark/)."""
        return self.root / "roster.toml"

    @property
    def benchmark(self) -> Path:
        """The benchmark folder."""
        return self.root / "benchmark"

    @property
    def results(self) -> Path:
        """The results tree."""
        return self.root / "results"

    @property
    def files(self) -> int:
        """How many checkpoints the tree holds."""
        return self.languages * self.runs


def language_codes(count: int) -> list[str]:
    """`count` distinct language codes kit accepts (two letters, then three)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    two = [a + b for a in letters for b in letters]
    return (two + [a + b + c for a in letters for b in letters for c in letters])[:count]


def build_tree(base: Path, languages: int, runs: int, items: int = 300, progress=print) -> Tree:
    """The tree of this size under `base`, built unless a complete one (same size, kit version and
    generator) is already there."""
    tree = Tree(Path(base).resolve() / f"tree-{languages}x{runs}x{items}", languages, runs, items)
    stamp = tree.root / ".complete"
    want = f"{kit.__version__} {GENERATOR_VERSION}\n"
    if stamp.is_file() and stamp.read_text() == want:
        return tree
    if tree.root.exists():
        shutil.rmtree(tree.root)
    tree.root.mkdir(parents=True)
    progress(f"bench: writing a {languages} x {runs} tree of {items}-item checkpoints in {tree.root}")
    codes = language_codes(languages)
    _write_benchmark(tree.benchmark, codes, items)
    tree.roster.write_text(_roster_text(runs))
    _write_results(tree, codes)
    stamp.write_text(want)
    return tree


def _sentence(rng: random.Random, language: str) -> str:
    words = ["field", "forest", "river", "road", "village", "mayor", "festival", "harbour", "vineyard", "census"]
    return f"[{language}] " + " ".join(rng.choice(words) for _ in range(12)) + "."


def _write_benchmark(folder: Path, codes: list[str], items: int) -> None:
    from kit.config.kinds.lrb.benchmark import CSV_COLUMNS, DEFAULT_GENERATE_PROMPT
    from kit.config.dataset import whole_set_sha256

    source_ids = [hashlib.sha256(f"bench-{i}".encode()).hexdigest()[:16] for i in range(items)]
    rng = random.Random(0)
    labels = [rng.choice(("yes", "no")) for _ in range(items)]
    digests, files = {}, {}
    for lang in codes:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for i in range(items):
            writer.writerow([_sentence(rng, lang), labels[i], f"place {i}", "831f18fffffffff", "52.000000",
                             "13.000000", "kit-bench", "europe", "", source_ids[i], lang])
        data = out.getvalue().encode("utf-8")
        path = folder / "translations" / lang / f"v3-final-{lang}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digests[lang] = hashlib.sha256(data).hexdigest()
        files[lang] = {"path": f"{lang}/v3-final-{lang}.csv", "rows": items, "sha256": digests[lang]}
    manifest = {"dataset": "kit/bench", "revision": "0" * 40, "split": "train", "languages": codes,
                "row_count": items, "source_item_ids": source_ids, "files": files,
                "whole_set_sha256": whole_set_sha256(digests)}
    (folder / "translations" / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (folder / "prompt_generate.txt").write_bytes(DEFAULT_GENERATE_PROMPT.read_bytes())
    (folder / "benchmark.toml").write_text('name = "kit-bench"\nmanifest = "translations/manifest.json"\n\n'
                                          '[prompts]\ngenerate = "prompt_generate.txt"\n')


def _roster_text(runs: int) -> str:
    lines = ['benchmark = "benchmark"\n']
    for i in range(runs):
        revision = hashlib.sha1(f"run-{i}".encode()).hexdigest()
        lines.append(f'[[run]]\nmodel = "bench-org/model-{i:03d}"\nrevision = "{revision}"\n'
                     'backend = "transformers-5.17"\ntask = "generate"\ndtype = "bfloat16"\n'
                     f"batch_size = 16\nmax_new_tokens = 8\nparams = {(i + 1) * 100_000_000}\n")
    return "\n".join(lines)


def _write_results(tree: Tree, codes: list[str]) -> None:
    from kit.config.project import load_project
    from kit.results import keys
    from kit.results.answers import parse_verdict
    from kit.results.metrics import compute_metrics
    from kit.results.store import checkpoint_path, dumps_checkpoint
    from kit.worker.record import pair_metadata

    cwd = Path.cwd()
    os.chdir(tree.root)
    try:
        project = load_project(tree.roster, None)
    finally:
        os.chdir(cwd)
    dataset, rng = project.benchmark, random.Random(1)
    for lang in codes:
        data = dataset.load_language(lang)
        for run in project.roster.run:
            prompt = dataset.prompt_for(run)
            preds = []
            for item in data.items:
                answer = item.label if rng.random() < 0.8 else rng.choice(("yes", "no", "unparsed"))
                raw = f"Answer: {answer}" if answer != keys.UNPARSED else "I cannot tell from this sentence."
                truncated = rng.random() < 0.02
                predicted, mode = parse_verdict(raw, truncated)   # what the worker records of that output
                preds.append({keys.ITEM_ID: item.item_id, keys.EXPECTED: item.label, keys.PREDICTED: predicted,
                              keys.RAW_OUTPUT: raw, keys.TRUNCATED: truncated, keys.PARSE_MODE: mode})
            metadata = pair_metadata(run=run, language=lang, benchmark_sha256=data.file_sha256,
                                     manifest_sha256=dataset.manifest_sha256, prompt_sha256=prompt.sha256,
                                     started_at="2026-12-01T00:00:00Z", source_commit=None,
                                     duration_seconds=round(rng.uniform(20, 400), 3))
            provenance = {"kit_version": kit.__version__,
                          "image": {"backend": run.backend, "digest": "sha256:" + hashlib.sha256(run.backend.encode()).hexdigest()},
                          "model": {"id": run.model_id, "revision": run.revision},
                          "data": {"manifest_sha256": dataset.manifest_sha256, "file_sha256": data.file_sha256,
                                   "prompt_sha256": prompt.sha256}}
            checkpoint = {keys.METADATA: metadata, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds,
                          keys.PROVENANCE: provenance}
            path = checkpoint_path(tree.results, run.name, lang)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = dumps_checkpoint(checkpoint)
            path.write_text(text, encoding="utf-8")
            # the log a job writes beside it (a kit checkpoint is evidence only with its log)
            stop = {"key": "run_stop", "metadata": {"status": "success", "checkpoint_sha256":
                                                    hashlib.sha256(text.encode("utf-8")).hexdigest()}}
            path.with_suffix(".mllog").write_text(f":::MLLOG {json.dumps(stop)}\n", encoding="utf-8")
