"""The benchmark kinds: their names are known here, and each has one part per layer, in that layer's
kinds package under the kind's name:

- its data (this layer, kit.config.kinds.<name>): a loader of the benchmark folder, returning a
  kit.config.dataset.Dataset;
- its results (kit.results.kinds.<name>, registered in kit.results.kinds.RESULT_KINDS): checkpoint
  checks, metrics, reports, the reproduce comparison;
- its worker (kit.worker.kinds.<name>, registered in kit.worker.kinds.WORKER_KINDS): how a pair
  runs through an engine inside the image.

Each layer looks its own part up (kit.registry, imported when first asked for), so nothing here
names a module of a higher layer; a kind whose engine is not installed still loads its data and
checks its checkpoints. The contract test (tests/unit/test_kinds.py) runs over every kind named here.

    benchmark.toml:  kind = "lighteval"     (absent, or no benchmark.toml at all: "lrb")
    checkpoint:      metadata.benchmark_kind (absent: "lrb", as in lrb's own files)
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.config.dataset import Dataset
from kit.config.loading import read_toml
from kit.errors import ConfigError

DEFAULT_KIND = "lrb"
CONFIG_FILE = "benchmark.toml"


@dataclass(frozen=True)
class BenchmarkKind:
    """One benchmark kind's data part: its name, what it is, and its folder loader as
    "module:attribute" under kit.config.kinds.<name>. Its results and worker parts register
    themselves under the same name in kit.results.kinds and kit.worker.kinds (kit.registry)."""

    name: str
    summary: str
    dataset: str

    def load(self, root: Path, config: Path | None) -> Dataset:
        """The kind's dataset in folder `root` (`config`: its benchmark.toml, if any)."""
        return _attribute(self.dataset)(root, config)


KINDS: dict[str, BenchmarkKind] = {}


def register(kind: BenchmarkKind) -> BenchmarkKind:
    """Add a kind to the registry (once per name)."""
    if kind.name in KINDS:
        raise ValueError(f"benchmark kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


register(BenchmarkKind(
    "lrb", "the land-use relevance format: a manifest, one CSV per language, yes/no answers, prompt files",
    dataset="kit.config.kinds.lrb.benchmark:load_lrb"))
register(BenchmarkKind(
    "lighteval", "a LightEval suite (Open-R1's evaluation): task strings, a custom-tasks module, JSONL data",
    dataset="kit.config.kinds.lighteval.suite:load_suite"))


def get_kind(name: object, where: str) -> BenchmarkKind:
    """The registered kind `name`; anything else is a ConfigError naming `where` and the known kinds."""
    if isinstance(name, str) and name in KINDS:
        return KINDS[name]
    raise ConfigError(f"{where}: benchmark kind {name!r} is not one kit knows",
                      fix=f"use one of {', '.join(sorted(KINDS))}")


def load_benchmark(path: Path) -> Dataset:
    """Load the benchmark in folder `path`, of the kind its benchmark.toml names (lrb without one)."""
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(
            f"{root}: benchmark folder not found",
            fix="pass the folder that holds benchmark.toml or translations/manifest.json (kit demo writes one)",
        )
    config = root / CONFIG_FILE
    if not config.is_file():
        return KINDS[DEFAULT_KIND].load(root, None)
    kind = get_kind(read_toml(config, "benchmark").get("kind", DEFAULT_KIND), f"{config}: kind")
    return kind.load(root, config)


@functools.cache   # thousands of pairs ask for the same part: import and look it up once
def _attribute(dotted: str) -> Any:
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)
