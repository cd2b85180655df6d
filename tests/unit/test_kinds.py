"""Benchmark kinds as one strategy: every registered kind has its three parts and they agree, a
benchmark folder and a checkpoint find their kind, and no module outside the kinds asks which kind
it holds. Also the import structure the layers promise (README.md, Layout)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kit.config.kinds import DEFAULT_KIND, KINDS, BenchmarkKind, get_kind, load_benchmark, register
from kit.demo.dataset import write_demo_benchmark
from kit.demo.evalsuite import write_demo_suite
from kit.errors import ConfigError
from kit.results import keys
from kit.results.kinds import RESULT_KINDS, kind_name, kind_of
from kit.results.kinds.base import ResultKind
from kit.worker.kinds import WORKER_KINDS
from kit.worker.kinds.base import PairRunner

KIT = Path(__file__).resolve().parents[2] / "kit"


# a writer of a small benchmark folder of each kind, for the data part's contract
EXAMPLES = {"lrb": write_demo_benchmark, "lighteval": write_demo_suite}


def test_every_kind_has_an_example_benchmark():
    assert set(EXAMPLES) == set(KINDS)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_its_parts_and_they_agree(name, tmp_path):
    results, worker = RESULT_KINDS.get(name), WORKER_KINDS.get(name)
    assert isinstance(results, ResultKind) and results.name == name
    assert isinstance(worker, PairRunner) and worker.results is results
    ruleset = KIT / "defaults" / results.ruleset
    assert ruleset.is_file()
    # the ruleset checks the benchmark name the worker logs for this kind
    assert results.mllog_benchmark in ruleset.read_text(encoding="utf-8")
    dataset = load_benchmark(EXAMPLES[name](tmp_path / name))   # found by its folder, loaded by its kind
    assert dataset.kind == name and dataset.languages
    first = dataset.languages[0]
    assert [item.item_id for item in dataset.load_language(first).items] == dataset.item_ids(first)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_finds_faults_and_recomputes_nothing_from_nothing(name):
    results = RESULT_KINDS.get(name)
    faults = results.prediction_faults(["not an object", {keys.ITEM_ID: ""}])
    flagged = {i for at in faults.values() for i in at}
    assert flagged == {0, 1}, faults
    assert results.metrics_differ({"x": 1.0}, {"x": 1.0}) == []


def test_a_kind_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        register(BenchmarkKind(DEFAULT_KIND, "again", "a:b"))
    assert set(KINDS) == {"lrb", "lighteval"}
    with pytest.raises(ValueError, match="already registered by kit.results.kinds.lrb.LrbKind"):
        RESULT_KINDS.register(DEFAULT_KIND)(RESULT_KINDS.get("lighteval"))


def test_an_unknown_kind_in_benchmark_toml_names_the_known_ones(tmp_path):
    (tmp_path / "benchmark.toml").write_text('kind = "helm"\nname = "x"\n')
    with pytest.raises(ConfigError) as err:
        load_benchmark(tmp_path)
    line = err.value.one_line()
    assert "benchmark.toml: kind" in line and "'helm'" in line and "lighteval, lrb" in line
    with pytest.raises(ConfigError, match="not one kit knows"):
        get_kind(["lrb"], "somewhere")


def test_a_checkpoint_names_its_kind_and_lrb_files_name_none():
    assert kind_of({keys.METADATA: {}}) is RESULT_KINDS.get("lrb")              # lrb's own files
    assert kind_of({keys.METADATA: {keys.BENCHMARK_KIND: "lighteval"}}) is RESULT_KINDS.get("lighteval")
    assert kind_of({keys.METADATA: {keys.BENCHMARK_KIND: "helm"}}) is None
    assert kind_name({keys.METADATA: {keys.BENCHMARK_KIND: "helm"}}) == "helm"
    assert kind_name({keys.METADATA: "not an object"}) == DEFAULT_KIND


# --- structure -----------------------------------------------------------------------------

def _modules() -> dict[str, Path]:
    out = {}
    for path in KIT.rglob("*.py"):
        name = ".".join(path.relative_to(KIT.parent).with_suffix("").parts).removesuffix(".__init__")
        out[name] = path
    return out


MODULES = _modules()


def _imports(module: str) -> set[str]:
    """Every kit module `module` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: _imports(m) for m in MODULES}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_modules_import_no_circle():
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    circles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(GRAPH[m]):
            if state.get(n) == 1:
                circles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [m])
    assert circles == [], circles


# The layers from the bottom up (docs/architecture.md, Layers): a module imports only from its own
# package or from a lower layer, at the top or inside a function; two packages of one layer never
# import each other. Every top-level package and module of kit is in exactly one layer.
LAYERS = (
    {"", "errors"},                                              # kit's version and its one error family
    {"files", "safejson", "registry", "sizing", "gpus", "credentials", "settings"},   # foundation: standard library only
    {"outputs", "signing"},                                      # the output contract; keys and signatures
    {"config"},                                                  # configs: parse and validate
    {"plan"},                                                    # pure planning
    {"weights", "images", "costs"},                              # artifacts: snapshots, images; cost model
    {"results"},                                                 # the results tree and its contracts
    {"worker", "repro", "launch", "demo"},                       # in-container worker; launcher; rerun; demo
    {"cli"},                                                     # the thin face
    {"__main__"},                                                # python -m kit
)
LEVEL = {package: level for level, packages in enumerate(LAYERS) for package in packages}


def test_every_package_is_in_one_layer():
    packages = {_layer(m) for m in MODULES}
    assert packages - set(LEVEL) == set(), "place each new package in LAYERS (and docs/architecture.md)"
    assert sum(len(layer) for layer in LAYERS) == len(LEVEL)


def test_no_module_imports_up_or_across_the_layers():
    wrong = sorted(f"{m} -> {n}" for m, deps in GRAPH.items() for n in deps
                   if _layer(m) != _layer(n) and LEVEL[_layer(n)] >= LEVEL[_layer(m)])
    assert wrong == []


# the only modules that may name a particular kind: the key constants, and the kinds' own packages
# (one per layer: kit.config.kinds, kit.results.kinds, kit.worker.kinds, each with a part per kind)
KIND_PACKAGES = ("kit.config.kinds", "kit.results.kinds", "kit.worker.kinds")


def _kind_module(module: str) -> bool:
    return module == "kit.results.keys" or any(module == p or module.startswith(p + ".") for p in KIND_PACKAGES)


def test_no_module_outside_the_kinds_asks_which_kind_it_holds():
    named = []
    for module, path in MODULES.items():
        if _kind_module(module):
            continue
        text = path.read_text(encoding="utf-8")
        for word in ("KIND_LRB", "KIND_LIGHTEVAL", "BENCHMARK_KIND", '== "lighteval"', "== 'lighteval'",
                     'getattr(benchmark, "kind"'):
            if word in text:
                named.append(f"{module}: {word}")
    assert named == []


def test_each_kind_has_its_part_in_each_layers_kinds_package():
    for name, kind in KINDS.items():
        module = kind.dataset.split(":")[0]
        assert module.startswith(f"kit.config.kinds.{name}."), (name, kind.dataset)
        results, worker = RESULT_KINDS.get(name), WORKER_KINDS.get(name)   # each registered by its own package
        assert isinstance(results, ResultKind) and type(results).__module__ == f"kit.results.kinds.{name}"
        assert isinstance(worker, PairRunner) and type(worker).__module__ == f"kit.worker.kinds.{name}"
        assert results.name == worker.name == name


def test_the_worker_imports_nothing_an_image_does_not_need():
    # what runs in an image (kit/worker) never reaches the launcher, the image builder, repro, the demo or the CLI
    barred = {"launch", "images", "repro", "demo", "cli"}
    wrong = sorted(f"{m} -> {n}" for m, deps in GRAPH.items() if _layer(m) == "worker" for n in deps
                   if _layer(n) in barred)
    assert wrong == []
