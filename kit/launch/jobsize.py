"""The GPUs each run's job asks for at each site (kit.sizing decides; this gathers its inputs): the
model's size from the roster (`params`, `options.attention_heads`, `options.kv_heads`), else from
the staged snapshot (the site's `weights` when it is on this machine, else the local Hugging Face
cache), else from the size its id states ("Qwen3-32B"); the shape of its KV cache from the
snapshot's config.json and the context it must hold from `options.max_model_len`, else the
config's max_position_embeddings (vLLM's default); the site's GPUs from sites.toml."""

from __future__ import annotations

import os
import re
from pathlib import Path

from kit.config.backends import shards
from kit.config.roster import Run
from kit.config.sites import FILTER_QUOTED, Site
from kit.launch.site import ResolvedSite
from kit.sizing import DTYPE_BYTES, JobSize, KvCache, ModelSize, SiteGpus, params_from_name, size_job, weight_bytes

VLLM_MEMORY_FRACTION = 0.9   # vLLM's default gpu_memory_utilization
from kit.weights.facts import ModelFacts, read_model_facts

# a whole number of MiB: `gpu_mem>=1e5` or `gpu_mem>=4.5` is not read as 1 or 4 (the filter is then kept
# whole and the floor added beside it)
_GPU_MEM = re.compile(r"\bgpu_mem\s*(>=|>)\s*(\d+)(?![\w.])")
_GPU_MEM_CAP = re.compile(r"\bgpu_mem\s*(<=|<|=)\s*(\d+)(?![\w.])")   # a term no larger GPU passes
# what makes a filter more than a plain conjunction of comparisons (OAR's -p is an SQL WHERE clause):
# then no single `gpu_mem>=N` in it holds for every resource it selects
_NOT_CONJUNCTION = re.compile(r"\b(?:or|not)\b|[()]", re.IGNORECASE)


def site_gpus(site: Site) -> SiteGpus:
    """A site's GPUs: per node, per-GPU memory, and the GPU memory (MiB) its OAR filter guarantees."""
    # an OAR site's empty filter guarantees no memory (0): the job's own floor is then asked for
    floor = filter_floor_mib(site.gpu_filter or "") if site.scheduler == "oar" else None
    return SiteGpus(site.name, site.gpus_per_node, site.gpu_memory_gib, floor)


def filter_floor_mib(gpu_filter: str) -> int:
    """The GPU memory (MiB) every resource an OAR filter selects has: from its `gpu_mem>=N` or
    `gpu_mem>N` terms when the filter is a plain conjunction (AND only), else 0 (no guarantee)."""
    terms = _floor_terms(gpu_filter)
    if terms is None:
        return 0
    return max((int(n) + (op == ">") for op, n in terms), default=0)


def grown_filter(site: Site, min_gpu_mib: int | None) -> str | None:
    """The site's GPU filter asking for `min_gpu_mib` MiB of GPU memory (as written when None): a
    conjunction's only `gpu_mem>=N` is raised in place; an empty one (an OAR site's "no filter") becomes
    `gpu_mem>=N`; any other becomes `(<filter>) AND gpu_mem>=N`, so that the floor holds for every
    resource it selects."""
    if min_gpu_mib is None:
        return site.gpu_filter
    if not site.gpu_filter:   # no filter guarantees no memory: an OAR job asks for it alone
        return f"gpu_mem>={min_gpu_mib}" if site.scheduler == "oar" else site.gpu_filter
    bare = conjunction_text(site.gpu_filter)
    caps = [int(mib) - (op == "<") for op, mib in _GPU_MEM_CAP.findall(bare)] if bare is not None else []
    if caps and min(caps) < min_gpu_mib:   # raised past its own cap, the filter would select no GPU at all
        from kit.errors import ConfigError

        raise ConfigError(f"site {site.name}: gpu_filter {site.gpu_filter!r} gives GPUs of at most {min(caps)} MiB, "
                          f"and the job needs {min_gpu_mib} MiB of GPU memory: no GPU it selects can run it",
                          fix="raise or drop the gpu_mem cap in gpu_filter, or run the model at a site with larger "
                              "GPUs")
    terms = _floor_terms(site.gpu_filter)
    if terms is not None and [op for op, _ in terms] == [">="] and _GPU_MEM.findall(site.gpu_filter) == terms:
        return _GPU_MEM.sub(f"gpu_mem>={min_gpu_mib}", site.gpu_filter, count=1)
    return f"({site.gpu_filter}) AND gpu_mem>={min_gpu_mib}"


def conjunction_text(gpu_filter: str) -> str | None:
    """An OAR filter with its quoted values blanked, when it is a plain conjunction (AND of comparisons);
    None when it has OR, NOT or parentheses outside its quoted values."""
    bare = FILTER_QUOTED.sub("''", gpu_filter)
    return None if _NOT_CONJUNCTION.search(bare) else bare


def _floor_terms(gpu_filter: str) -> list[tuple[str, str]] | None:
    """The (operator, MiB) of each `gpu_mem>=N` / `gpu_mem>N` term of a plain conjunction; None for
    any other filter."""
    bare = conjunction_text(gpu_filter)
    return None if bare is None else _GPU_MEM.findall(bare)


def staged_snapshot(run: Run, site: ResolvedSite) -> Path | None:
    """The run's snapshot folder at its revision in the site's weights (when on this machine) or in the
    local Hugging Face cache; None when neither holds it."""
    if not run.revision:
        return None
    caches = []
    if site.config.weights and not site.is_remote:
        caches.append(site.paths.weights)
    hub = os.environ.get("HF_HUB_CACHE") or (Path(os.environ["HF_HOME"]) / "hub" if os.environ.get("HF_HOME") else
                                             Path.home() / ".cache" / "huggingface" / "hub")
    caches.append(Path(hub))
    for cache in caches:
        folder = Path(cache) / f"models--{run.model_id.replace('/', '--')}" / "snapshots" / run.revision
        if folder.is_dir():
            return folder
    return None


def model_size(run: Run, snapshot: Path | None) -> ModelSize:
    """What is known of the run's model size (see the module doc), at the run's dtype."""
    facts = read_model_facts(snapshot, run.options.get("gguf_file")) if snapshot else ModelFacts(source="not staged")
    heads = run.options.get("attention_heads") or facts.attention_heads
    kv = run.options.get("kv_heads") or facts.kv_heads or heads
    cache, context, context_source = _kv_cache(run, facts, kv)
    extra = {"kv": cache, "context": context, "context_source": context_source}
    if run.backend == "gguf" or facts.quantized:   # a quant loads its files' bytes, whatever its parameter count
        if facts.stored_bytes:
            return ModelSize(facts.stored_bytes, facts.params, heads, kv, f"staged snapshot, {facts.source}", **extra)
        return ModelSize(None, run.params, heads, kv, f"a quantized model whose snapshot is {facts.source}", **extra)
    if run.params:
        source, params, stored = "roster params", run.params, None
    elif facts.params or facts.stored_bytes:
        source, params, stored = f"staged snapshot, {facts.source}", facts.params, facts.stored_bytes
    else:
        guess = params_from_name(run.model_id)
        if guess is None:
            return ModelSize(None, None, heads, kv, f"no params in the roster, snapshot {facts.source}")
        source, params, stored = f"the size its id states ({guess / 1e9:g}B)", guess, None
    load = weight_bytes(params, stored, facts.stored_dtype, False, run.dtype)
    return ModelSize(load, params, heads, kv, source, **extra)


def _kv_cache(run: Run, facts: ModelFacts, kv_heads: int | None) -> tuple[KvCache | None, int | None, str]:
    """The KV cache's shape (None when config.json does not give it), the tokens of the one sequence it
    must hold and where that number comes from. The cache is kept in the activations' dtype: the run's
    (float32 takes 4 bytes), else the one the model stores (2 for a quantized model's bf16)."""
    option = run.options.get("max_model_len")
    context, source = ((int(option), "options.max_model_len") if option else
                       (facts.max_positions, "max_position_embeddings in config.json; options.max_model_len "
                                             "sizes for less") if facts.max_positions else (None, ""))
    if not facts.layers or not (facts.latent or (kv_heads and facts.head_dim)):
        return None, context, source
    dtype = DTYPE_BYTES.get(run.dtype) or DTYPE_BYTES.get(str(facts.stored_dtype), 2)
    cache = KvCache(facts.layers - facts.window_layers, int(kv_heads or 0), facts.head_dim or 0,
                    facts.window_layers, facts.window, facts.latent or 0, dtype)
    return cache, context, source


def job_size(run: Run, site: ResolvedSite) -> JobSize:
    """The job size of `run` at `site`; a ConfigError when the model cannot fit there."""
    return size_job(run.name, run.backend, shards(run.backend), model_size(run, staged_snapshot(run, site)),
                    site_gpus(site.config), memory_fraction(run))


def memory_fraction(run: Run) -> float:
    """The share of each GPU the run's engine takes: vLLM's gpu_memory_utilization (its default 0.9),
    all of it for the engines that load the model alone."""
    if not shards(run.backend):
        return 1.0
    return float(run.options.get("gpu_memory_utilization", VLLM_MEMORY_FRACTION))   # the roster checked it
