"""A synthetic results tree of any size, made of valid kit checkpoints: a benchmark in the lrb layout
(one CSV of ITEMS sentences per language, a manifest with their digests, the default prompt), a
roster of RUNS pinned runs, and RESULTS/<language>/<run>.json for every pair, written with kit's own
checkpoint text (kit.results.store.dumps_checkpoint), metadata (kit.worker.record.pair_metadata),
metrics (kit.results.metrics.compute_metrics), speed figures and provenance, beside the log the worker's
own writer makes with a job's events, so `kit status --roster` counts every pair complete and `kit check`
passes each log, as on a real sweep's tree.

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

GENERATOR_VERSION = 3   # 2: image digests of real shape (a run of 0s fell back from orjson); 3: a job's provenance, speed and log
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


# what a job on a GPU node of a site records about its machine, image and software (plausible values: a
# real job's provenance and log are this size and shape, so reading them costs what it costs in a sweep)
_HARDWARE = {"gpu_name": "NVIDIA A100-SXM4-80GB", "gpu_count": 1, "driver": "550.54.15", "cuda": "12.4",
             "cpu": "AMD EPYC 7513 32-Core Processor", "_unknown": {}}
_PACKAGES = {"python": "3.11.11", "torch": "2.6.0+cu124", "transformers": "5.17.0", "tokenizers": "0.22.1",
             "safetensors": "0.5.3", "huggingface_hub": "1.2.0", "accelerate": "1.6.0"}


def _image_env(backend: str) -> dict[str, str]:
    """The KIT_* variables the launcher passes a job running in the backend's SIF (kit.worker.jobinfo)."""
    digest = hashlib.sha256(backend.encode()).hexdigest()
    return {"KIT_RUNTIME": "apptainer", "KIT_IMAGE_DIGEST": f"sha256:{digest}",
            "KIT_IMAGE_ARTIFACT": f"kit-{backend}.sif", "KIT_IMAGE_SHA256": hashlib.sha256(digest.encode()).hexdigest(),
            "KIT_LOCK_SHA256": hashlib.sha256(f"lock {backend}".encode()).hexdigest(),
            "KIT_COMMIT": hashlib.sha1(b"kit bench").hexdigest()}


def _write_results(tree: Tree, codes: list[str]) -> None:
    """Every pair's checkpoint and log as a job writes them (kit.worker.shard): metadata, metrics, speed and
    provenance (kit.worker.provenance.build_provenance) in the checkpoint, and the :::MLLOG log through the
    worker's own writer (kit.worker.mllog.PairLog) with the same events, its run_stop naming the file's sha256."""
    from unittest import mock

    from kit.config.project import load_project
    from kit.results import keys
    from kit.results.answers import parse_verdict
    from kit.results.metrics import compute_metrics
    from kit.results.store import checkpoint_path, dumps_checkpoint, mllog_path
    from kit.worker.jobinfo import JobInfo
    from kit.worker.mllog import PairLog
    from kit.worker.provenance import build_provenance
    from kit.worker.record import pair_metadata, speed_block

    cwd = Path.cwd()
    os.chdir(tree.root)
    try:
        project = load_project(tree.roster, None)
    finally:
        os.chdir(cwd)
    dataset, rng = project.benchmark, random.Random(1)
    for lang in codes:
        data = dataset.load_language(lang)
        for number, run in enumerate(project.roster.run):
            prompt = dataset.prompt_for(run)
            preds = []
            for item in data.items:
                answer = item.label if rng.random() < 0.8 else rng.choice(("yes", "no", "unparsed"))
                raw = f"Answer: {answer}" if answer != keys.UNPARSED else "I cannot tell from this sentence."
                truncated = rng.random() < 0.02
                predicted, mode = parse_verdict(raw, truncated)   # what the worker records of that output
                preds.append({keys.ITEM_ID: item.item_id, keys.EXPECTED: item.label, keys.PREDICTED: predicted,
                              keys.RAW_OUTPUT: raw, keys.TRUNCATED: truncated, keys.PARSE_MODE: mode})
            batches = [round(rng.uniform(0.5, 20.0), 6) for _ in range(0, len(preds), run.batch_size)]
            speed = speed_block(round(rng.uniform(20, 90), 6), batches, len(preds), 3 * len(preds))
            job = JobInfo(site="lyon", scheduler="oar", job_id=str(2_400_000 + number), array_index=None,
                          node=f"gemini-{number % 8 + 1}.lyon.grid5000.fr", runtime="apptainer")
            with mock.patch.dict(os.environ, _image_env(run.backend)):
                prov = build_provenance(
                    backend=run.backend, model_id=run.model_id, revision=run.revision,
                    weight_files_sha256={f"model-0000{i}-of-00002.safetensors": hashlib.sha256(
                        f"{run.model_id} {i}".encode()).hexdigest() for i in (1, 2)},
                    weights_manifest_sha256=hashlib.sha256(run.model_id.encode()).hexdigest(), weights_hashed=False,
                    manifest_sha256=dataset.manifest_sha256, file_sha256=data.file_sha256, prompt_sha256=prompt.sha256,
                    shard="0/1", packages=_PACKAGES, job=job, hardware_facts=dict(_HARDWARE))
            metadata = pair_metadata(run=run, language=lang, benchmark_sha256=data.file_sha256,
                                     manifest_sha256=dataset.manifest_sha256, prompt_sha256=prompt.sha256,
                                     started_at="2026-12-01T00:00:00Z", source_commit=prov[keys.PROV_KIT_COMMIT],
                                     duration_seconds=speed["duration_seconds"])
            metrics = compute_metrics(preds)
            checkpoint = {keys.METADATA: metadata, keys.METRICS: metrics, keys.PREDICTIONS: preds,
                          keys.SPEED: speed, keys.PROVENANCE: prov}
            path = checkpoint_path(tree.results, run.name, lang)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = dumps_checkpoint(checkpoint).encode("utf-8")
            with PairLog(mllog_path(path)) as log:   # the worker's events, in its order
                c = log.constants
                log.event(c.SUBMISSION_BENCHMARK, "kit_lrb")
                log.event("kit_pair", {"run": run.name, "language": lang, "task": run.task})
                log.start(c.INIT_START)
                log.event("provenance", prov)
                log.end(c.INIT_STOP, metadata={"load_seconds": speed["load_seconds"]})
                log.start(c.RUN_START)
                for n, seconds in enumerate(batches):
                    log.event("batch_done", n, metadata={"batch_size": min(run.batch_size, len(preds) - n * run.batch_size),
                                                         "seconds": seconds})
                log.event(c.EVAL_ACCURACY, metrics[keys.ACCURACY],
                          metadata={keys.F1: metrics[keys.F1], keys.N_ITEMS: metrics[keys.N_ITEMS]})
                log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": path.name,
                                              "checkpoint_sha256": hashlib.sha256(text).hexdigest()})
            path.write_bytes(text)
