"""`kit demo`: the embedded default sweep, end to end on this machine.

Creates once (cached under the user cache dir) a tiny Llama and a tiny reranker in Hugging
Face cache layout, fitted for a few seconds to the demo task (kit.demo.train), and a tiny three-language benchmark in the lrb
format; writes a roster and a `local` site; then plans, runs the shard through the
same launcher a cluster uses, shows status and writes the report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit.demo.backends import toml_value
from kit.errors import ConfigError
from kit.files import read_regular_file, write_text_atomic

DEMO_VERSION = "v2"  # v2: the tiny models are fitted to the demo task (kit.demo.train)


@dataclass
class DemoFiles:
    """Where the demo's inputs and outputs live."""

    workdir: Path
    cache: Path
    hub: Path
    benchmark: Path
    roster: Path
    sites: Path
    results: Path
    report: Path


def demo_cache_dir() -> Path:
    """The user cache folder for the demo's model and dataset (KIT_CACHE_DIR overrides)."""
    import os

    from platformdirs import user_cache_dir

    return Path(os.environ.get("KIT_CACHE_DIR") or user_cache_dir("kit")) / f"demo-{DEMO_VERSION}"


def roster_text(llm: tuple[str, str], reranker: tuple[str, str], benchmark: Path) -> str:
    """The demo roster: the tiny Llama generating, the tiny reranker scoring, on `benchmark`."""
    return f'''# kit demo roster: tiny local models, loaded offline from the hub cache layout.
benchmark = {toml_value(benchmark.as_posix())}

[[run]]
model = "{llm[0]}"
revision = "{llm[1]}"
backend = "transformers-5.17"
task = "generate"
dtype = "float32"
batch_size = 8
max_new_tokens = 8
params = 400_000

[[run]]
model = "{reranker[0]}"
revision = "{reranker[1]}"
backend = "transformers-5.17"
task = "score"
dtype = "float32"
batch_size = 8
max_new_tokens = 1
'''


def sites_text(hub: Path, runtime: str = "host") -> str:
    """The demo's one site: the local scheduler with the host runtime (or the docker runtime:
    the built transformers image from containers/images.lock.json)."""
    where = "in this Python environment" if runtime == "host" else f"in the {runtime} image of each backend"
    return f'''# kit demo site: run jobs here, {where}.
[site.local]
scheduler = "local"
runtime = "{runtime}"
root = "."
results = "results"
weights = {toml_value(hub.as_posix())}
gpus_per_node = 0
walltime = "30m"
'''


DEMO_MARK = "# kit demo "   # the first line of each file the demo writes in its workdir


def _check_demo_file(path: Path) -> None:
    """A ConfigError when `path` exists and is not a file an earlier `kit demo` wrote: the demo never
    overwrites a user's own roster or sites file."""
    if not path.exists() and not path.is_symlink():
        return
    try:
        first = read_regular_file(path, "a demo file", 1 << 20).decode("utf-8", "replace").split("\n", 1)[0]
    except (ConfigError, OSError):
        first = ""
    if path.is_symlink() or not first.startswith(DEMO_MARK):
        raise ConfigError(f"{path}: exists and was not written by kit demo, so it is not replaced",
                          fix="choose another --workdir for the demo (default: kit-demo)")


def prepare_demo(workdir: Path, progress=lambda msg: None, runtime: str = "host") -> DemoFiles:
    """Build (or reuse) the cached assets and write the demo's roster and sites files."""
    from kit.demo.dataset import write_demo_benchmark
    from kit.demo.model import build_tiny_classifier, build_tiny_llama

    from kit.results.report import check_report_output

    workdir = Path(workdir).resolve()
    for name in ("roster.toml", "sites.toml"):
        _check_demo_file(workdir / name)
    check_report_output(workdir / "results" / "report")   # refused now, not after the sweep ran
    cache = demo_cache_dir()
    hub = cache / "hub"
    progress(f"demo assets in {cache}")
    benchmark = write_demo_benchmark(cache / "data")
    progress("tiny models: built and fitted to the demo task once (a few seconds), then cached")
    llm = build_tiny_llama(hub, trained=True)
    reranker = build_tiny_classifier(hub, trained=True)
    progress(f"tiny models: {llm[0]}@{llm[1][:12]}, {reranker[0]}@{reranker[1][:12]}")
    files = DemoFiles(workdir, cache, hub, benchmark, workdir / "roster.toml", workdir / "sites.toml",
                      workdir / "results", workdir / "results" / "report")
    write_text_atomic(files.roster, roster_text(llm, reranker, benchmark))
    write_text_atomic(files.sites, sites_text(hub, runtime))
    return files
