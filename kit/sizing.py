"""How many GPUs a run's job asks for at a site, and whether the model fits there at all (pure).

One job runs on one node. An engine that shards (vLLM: tensor parallelism) gets the fewest GPUs
of that node that hold the model, among the counts vLLM accepts (tensor_parallel_fits). What
"hold" means is what vLLM checks when it starts: on each GPU, in the share it takes
(gpu_memory_utilization), its part of the weights, the KV cache of one sequence as long as the
run's context (max_model_len; vLLM refuses to start when that does not fit) and
VLLM_OVERHEAD_BYTES; when the snapshot does not give the KV cache's shape, weights times
MEMORY_MARGIN. Any other engine uses one GPU, which must hold the weights times MEMORY_MARGIN by
itself. A site states its per-GPU memory (`gpu_memory_gib`); an OAR GPU filter is made to ask for
the GPU memory the job needs when what it guarantees is less (kit.launch.jobsize.grown_filter). A
model too big for the site is refused before anything is submitted, with the fix."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kit.errors import ConfigError

# weights x 1.25 must fit: activations, the KV cache and the CUDA context need the rest (the rule for
# engines that grow their cache as they generate, and for vLLM when the KV cache's shape is unknown)
MEMORY_MARGIN = 1.25
# vLLM's memory on each GPU besides weights and KV cache: the CUDA context, the activations of its
# profiling batch (max_num_batched_tokens) and its CUDA graphs, which its profiling run measures and
# keeps out of the KV cache: a few GiB on any model (an estimate: vLLM measures it when it starts)
VLLM_OVERHEAD_BYTES = 3 << 30
# without any memory figure, the rule open-r1 sizes vLLM by: shard from 30B parameters on
TP_THRESHOLD_PARAMS = 30_000_000_000
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}
GIB = 1 << 30
MIB = 1 << 20
# "32B", "1.2B", "27b"; not "A3B" (an MoE's active parameters), "E4B" (effective), "x7B" (see _EXPERTS)
_NAME_SIZE = re.compile(r"(?<![\d.A-Za-z])(\d+(?:\.\d+)?)\s*[Bb](?![a-zA-Z\d])")
_EXPERTS = re.compile(r"(?<![\d.A-Za-z])(\d+)x(\d+(?:\.\d+)?)[Bb](?![a-zA-Z\d])")   # "8x7B": 8 experts of 7B


@dataclass(frozen=True)
class KvCache:
    """What a model's KV cache keeps per token: each full-attention layer a key and a value per KV head
    (MLA: one latent vector), a sliding-window layer the same for its last `window` tokens only."""

    full_layers: int
    kv_heads: int = 0
    head_dim: int = 0
    window_layers: int = 0
    window: int = 0
    latent: int = 0               # MLA: elements per token and layer, the same on every GPU
    dtype_bytes: int = 2

    def bytes_per_gpu(self, tokens: int, gpus: int) -> int:
        """Bytes on each of `gpus` tensor-parallel GPUs for one sequence of `tokens` tokens: the KV heads
        split over the GPUs, at least one on each (vLLM replicates KV heads past their count)."""
        per_layer = (self.latent if self.latent else 2 * max(1, self.kv_heads // gpus) * self.head_dim) \
            * self.dtype_bytes
        return per_layer * (self.full_layers * tokens + self.window_layers * min(self.window, tokens))


@dataclass(frozen=True)
class ModelSize:
    """What is known of a run's model: weights in GPU memory at the run's dtype, heads, the source, and
    (for vLLM's rule) the shape of its KV cache and the context length it must hold."""

    load_bytes: int | None
    params: int | None
    attention_heads: int | None
    kv_heads: int | None
    source: str
    kv: KvCache | None = None
    context: int | None = None       # tokens of one sequence: max_model_len
    context_source: str = ""


@dataclass(frozen=True)
class SiteGpus:
    """A site's GPUs as its config states them."""

    name: str
    gpus_per_node: int
    gpu_memory_gib: float | None    # per GPU; for a filtered OAR site, the largest its filter can give
    filter_mib: int | None          # the GPU memory an OAR site's filter guarantees (0: none); None: no filter


@dataclass(frozen=True)
class JobSize:
    """The GPUs one job asks for, the memory floor its OAR filter must ask for (None: leave the
    filter as written), and how this was decided (shown by the plan)."""

    gpus: int
    min_gpu_mib: int | None
    note: str
    checked: bool          # False when the model's size or the site's memory is unknown


def weight_bytes(params: int | None, stored_bytes: int | None, stored_dtype: str | None, quantized: bool,
                 run_dtype: str) -> int | None:
    """Bytes the weights take on the GPU at the run's dtype ("auto": as stored; bf16 when unknown)."""
    if quantized:
        return stored_bytes
    bytes_per = DTYPE_BYTES.get(run_dtype) or DTYPE_BYTES.get(str(stored_dtype), 2)
    if params is not None:
        return params * bytes_per
    if stored_bytes is not None:
        return stored_bytes * bytes_per // DTYPE_BYTES.get(str(stored_dtype), 2)
    return None


def params_from_name(model_id: str) -> int | None:
    """The total parameter count a model id states, an upper bound where it is read from parts
    ("Qwen3-32B" -> 32e9; "Qwen3-30B-A3B" -> 30e9, the total, not the 3B active; "Mixtral-8x7B" ->
    56e9, eight experts of 7B, attention counted eight times); the largest when it states several;
    None when it states none."""
    name = model_id.rsplit("/", 1)[-1]
    sizes = [float(n) * float(m) for n, m in _EXPERTS.findall(name)]
    sizes += [float(n) for n in _NAME_SIZE.findall(_EXPERTS.sub("", name))]
    return int(max(sizes) * 1e9) if sizes else None


def size_job(run: str, backend: str, shards: bool, model: ModelSize, site: SiteGpus,
             memory_fraction: float = 1.0) -> JobSize:
    """The job size of `run` at `site` (see the module doc); a ConfigError when it cannot fit. Of each
    GPU the engine takes `memory_fraction` (vLLM's gpu_memory_utilization, 0.9 unless the run says)."""
    if site.gpus_per_node == 0:
        return JobSize(0, None, "the site has no GPUs", True)
    capacity = (site.gpu_memory_gib * GIB if site.gpu_memory_gib
                else site.filter_mib * MIB if site.filter_mib else None)
    if model.load_bytes is None:
        gpus = _by_threshold(run, model, site) if shards else 1
        return JobSize(gpus, None, f"{gpus} GPU(s); the model's size is unknown ({model.source}): memory not checked",
                       False)
    if shards and model.kv is not None and model.context and capacity is not None:
        return _vllm_size(run, model, site, capacity, memory_fraction)
    need = model.load_bytes * MEMORY_MARGIN
    what = (f"{model.load_bytes / GIB:.1f} GiB of weights ({model.source}) x {MEMORY_MARGIN} = "
            f"{need / GIB:.1f} GiB" + (" (the KV cache's shape is unknown)" if shards else ""))
    if capacity is None:
        gpus = _by_threshold(run, model, site) if shards else 1
        return JobSize(gpus, None, f"{gpus} GPU(s) for {what}; site {site.name} states no gpu_memory_gib: "
                                   "memory not checked", False)
    if memory_fraction < 1:
        what += f", on {memory_fraction:.0%} of each GPU (gpu_memory_utilization)"
    usable = capacity * memory_fraction
    if not shards:
        if need > usable:
            raise ConfigError(
                f"run {run!r} needs {what} of GPU memory, more than one {usable / GIB:.0f} GiB GPU of site "
                f"{site.name!r}, and backend {backend!r} runs on one GPU",
                fix="run it at a site with bigger GPUs (gpu_memory_gib, or a bigger gpu_mem in its gpu_filter), "
                    "use a quantized variant, or use backend vllm, which shards over the GPUs of one node")
        return JobSize(1, _floor(need / memory_fraction, site), f"1 GPU for {what}", True)
    fewest = max(1, math.ceil(need / usable))
    if fewest > site.gpus_per_node:
        raise ConfigError(
            f"run {run!r} needs {what} of GPU memory: {fewest} GPUs of {usable / GIB:.0f} GiB, and a job of site "
            f"{site.name!r} spans one node of gpus_per_node = {site.gpus_per_node} GPU(s)",
            fix="run it at a site with more or bigger GPUs per node, or use a quantized variant")
    gpus = _dividing(run, model, fewest, site)
    return JobSize(gpus, _floor(need / gpus / memory_fraction, site), f"{_count(gpus)} for {what}", True)


def _vllm_size(run: str, model: ModelSize, site: SiteGpus, capacity: float, fraction: float) -> JobSize:
    """vLLM's own check: on each GPU, its share of the weights, the KV cache of one `context`-token
    sequence and VLLM_OVERHEAD_BYTES within `fraction` of the GPU; the fewest GPUs vLLM can shard over."""
    assert model.kv is not None and model.context and model.load_bytes is not None
    usable = capacity * fraction

    def per_gpu(g: int) -> float:
        return model.load_bytes / g + model.kv.bytes_per_gpu(model.context, g) + VLLM_OVERHEAD_BYTES

    kv_total = model.kv.bytes_per_gpu(model.context, 1)

    def what(g: int) -> str:
        return (f"{model.load_bytes / GIB:.1f} GiB of weights ({model.source}) + {kv_total / GIB:.1f} GiB of KV cache "
                f"for {model.context:,} tokens ({model.context_source}), over {g} GPU(s): {per_gpu(g) / GIB:.1f} GiB "
                f"per GPU with {VLLM_OVERHEAD_BYTES / GIB:.0f} GiB of vLLM overhead, on {fraction:.0%} of each "
                f"{capacity / GIB:.0f} GiB GPU (gpu_memory_utilization)")

    heads = model.attention_heads
    kv = model.kv_heads or heads
    counts = [g for g in range(1, site.gpus_per_node + 1)
              if g == 1 or (heads and kv and tensor_parallel_fits(heads, kv, g))]
    fitting = [g for g in counts if per_gpu(g) <= usable]
    if fitting:
        g = fitting[0]
        return JobSize(g, _floor(per_gpu(g) / fraction, site), f"{_count(g)} for {what(g)}", True)
    if not heads and per_gpu(site.gpus_per_node) <= usable:
        raise ConfigError(f"run {run!r} needs more than one GPU for {what(1)}, and its attention head count is unknown",
                          fix="stage the snapshot (its config.json has num_attention_heads) or set "
                              "options.attention_heads (and options.kv_heads)")
    largest = counts[-1]
    raise ConfigError(
        f"run {run!r} does not fit one node of site {site.name!r} (gpus_per_node = {site.gpus_per_node}): "
        f"{what(largest)}, more than {usable / GIB:.0f} GiB",
        fix="set options.max_model_len lower (the KV cache grows with it), run it at a site with more or bigger "
            "GPUs per node, or use a quantized variant")


def _count(gpus: int) -> str:
    return f"{gpus} GPU(s)" + (" (tensor parallel)" if gpus > 1 else "")


def tensor_parallel_fits(attention_heads: int, kv_heads: int, gpus: int) -> bool:
    """vLLM's rule for a tensor-parallel size: it divides the attention heads, and it divides the KV
    heads or is a multiple of them (then each KV head is replicated on gpus / kv_heads GPUs)."""
    if attention_heads % gpus:
        return False
    return kv_heads % gpus == 0 if gpus <= kv_heads else gpus % kv_heads == 0


_TP_RULE = ("vLLM's tensor parallelism needs a count that divides the attention heads, and divides the KV heads "
            "or is a multiple of them")


def _dividing(run: str, model: ModelSize, fewest: int, site: SiteGpus) -> int:
    """The smallest count from `fewest` up to the node's GPUs that vLLM can shard the model over."""
    if fewest == 1:
        return 1
    if not model.attention_heads:
        raise ConfigError(f"run {run!r} needs {fewest} GPUs, and its attention head count is unknown",
                          fix="stage the snapshot (its config.json has num_attention_heads) or set "
                              "options.attention_heads (and options.kv_heads)")
    kv = model.kv_heads or model.attention_heads
    for g in range(fewest, site.gpus_per_node + 1):
        if tensor_parallel_fits(model.attention_heads, kv, g):
            return g
    valid = [g for g in range(1, site.gpus_per_node + 1) if tensor_parallel_fits(model.attention_heads, kv, g)]
    raise ConfigError(
        f"run {run!r} needs at least {fewest} GPUs at site {site.name!r}, and no count from {fewest} up to its "
        f"gpus_per_node = {site.gpus_per_node} fits {model.attention_heads} attention heads and {kv} KV heads "
        f"({_TP_RULE}; the valid counts there: {', '.join(map(str, valid))})",
        fix="run it at a site with bigger GPUs or more GPUs per node, or use a quantized variant")


def _by_threshold(run: str, model: ModelSize, site: SiteGpus) -> int:
    """Without any memory figure: one GPU below TP_THRESHOLD_PARAMS; from there, the most GPUs of the
    node vLLM can shard the model over."""
    if model.params is None or model.params < TP_THRESHOLD_PARAMS:
        return 1
    if not model.attention_heads:
        raise ConfigError(f"run {run!r} has {model.params / 1e9:.0f}B parameters and its attention head count "
                          "is unknown", fix="stage the snapshot (its config.json has num_attention_heads) or set "
                                            "options.attention_heads (and options.kv_heads)")
    kv = model.kv_heads or model.attention_heads
    return max(g for g in range(1, site.gpus_per_node + 1) if tensor_parallel_fits(model.attention_heads, kv, g))


def _floor(per_gpu_bytes: float, site: SiteGpus) -> int | None:
    """The `gpu_mem>=` floor (MiB) the site's filter must get when it guarantees less than the job needs."""
    if site.filter_mib is None:
        return None
    need = math.ceil(per_gpu_bytes / MIB)
    return need if need > site.filter_mib else None
