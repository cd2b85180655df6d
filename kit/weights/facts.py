"""What a staged snapshot says about a model's size, read without loading it: the parameter count
and stored bytes from the safetensors headers (or the one GGUF file: its size), the attention and KV
head counts, the stored dtype and the shape of its KV cache (layers, head size, sliding-window
layers, an MLA latent, the longest context) from config.json. Used to size jobs before they are
submitted."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# bytes per element of each safetensors dtype (the format's dtype names)
_SAFETENSORS_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
                      "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1}
_MAX_HEADER = 100 * 1024 * 1024   # the format caps the JSON header at 100 MB


@dataclass(frozen=True)
class ModelFacts:
    """A model's size and shape as its snapshot records them; None where the snapshot does not say."""

    params: int | None = None            # parameters (elements of every weight tensor)
    stored_bytes: int | None = None      # bytes of the weight files as stored (a GGUF file: its size)
    attention_heads: int | None = None
    kv_heads: int | None = None
    stored_dtype: str | None = None      # config.json torch_dtype, e.g. "bfloat16"
    quantized: bool = False              # a GGUF file or a quantization_config: stored bytes are what loads
    source: str = ""                     # where the facts came from, for messages
    layers: int | None = None            # num_hidden_layers
    head_dim: int | None = None          # head_dim, else hidden_size / num_attention_heads
    window_layers: int = 0               # layers of sliding-window attention (config.json layer_types)
    window: int = 0                      # their window (sliding_window)
    latent: int | None = None            # MLA: kv_lora_rank + qk_rope_head_dim, per token and layer
    max_positions: int | None = None     # max_position_embeddings: vLLM's default max_model_len


def read_model_facts(snapshot: Path, gguf_file: str | None = None) -> ModelFacts:
    """The facts of the snapshot folder (a GGUF run names its file; otherwise safetensors are read)."""
    snapshot = Path(snapshot)
    config = _config(snapshot)
    heads = _first(config, "num_attention_heads", "n_head", "num_heads")
    kv = _first(config, "num_key_value_heads", "num_kv_heads", "n_head_kv") or heads
    dtype = _first(config, "torch_dtype", "dtype")
    quantized = "quantization_config" in config
    shape = {**kv_cache_shape(config, heads), "attention_heads": heads, "kv_heads": kv,
             "stored_dtype": str(dtype) if dtype else None}
    ggufs = sorted(snapshot.rglob("*.gguf"))
    if gguf_file is not None or (ggufs and not list(snapshot.rglob("*.safetensors"))):
        chosen = snapshot / gguf_file if gguf_file else ggufs[0]
        size = chosen.stat().st_size if chosen.is_file() else None
        return ModelFacts(None, size, quantized=True, source=f"{chosen.name} size", **shape)
    params = stored = 0
    files = sorted(snapshot.rglob("*.safetensors"))
    for path in files:
        counted = _safetensors_counts(path)
        if counted is None:
            return ModelFacts(quantized=quantized, source=f"{path.name}: unreadable safetensors header", **shape)
        params, stored = params + counted[0], stored + counted[1]
    if not files:
        return ModelFacts(quantized=quantized, source="no safetensors files", **shape)
    return ModelFacts(params, stored, quantized=quantized, source=f"{len(files)} safetensors headers", **shape)


def kv_cache_shape(config: dict[str, Any], heads: Any) -> dict[str, Any]:
    """The KV cache's shape as config.json gives it: layers, head size, the layers that attend to a
    sliding window only (`layer_types`, as Gemma 3 and gpt-oss write it; a `sliding_window` without
    them counts as full attention, the upper bound), an MLA latent (DeepSeek: kv_lora_rank plus
    qk_rope_head_dim) and max_position_embeddings; a value that is not a positive integer is None."""
    def count(name: str) -> int | None:
        value = config.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    layers = count("num_hidden_layers") or count("n_layer") or count("num_layers")
    head_dim = count("head_dim")
    hidden = count("hidden_size")
    if head_dim is None and hidden and isinstance(heads, int) and heads > 0 and hidden % heads == 0:
        head_dim = hidden // heads
    types = config.get("layer_types")
    window = count("sliding_window") or 0
    window_layers = 0
    if isinstance(types, list) and window and len(types) == layers:
        window_layers = sum(1 for t in types if t in ("sliding_attention", "sliding"))
    latent = None
    if count("kv_lora_rank"):
        latent = count("kv_lora_rank") + (count("qk_rope_head_dim") or 0)
    return {"layers": layers, "head_dim": head_dim, "window_layers": window_layers,
            "window": window if window_layers else 0, "latent": latent,
            "max_positions": count("max_position_embeddings")}


def _config(snapshot: Path) -> dict[str, Any]:
    try:
        data = json.loads((snapshot / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    # multimodal configs keep the language model's shape in text_config
    text = data.get("text_config")
    return {**text, **{k: v for k, v in data.items() if k not in text}} if isinstance(text, dict) else data


def _first(config: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = config.get(name)
        if value is not None and not isinstance(value, bool):
            return value
    return None


def _safetensors_counts(path: Path) -> tuple[int, int] | None:
    """(elements, bytes) of every tensor in a safetensors file, from its header alone (an 8-byte
    little-endian length, then that many bytes of JSON: name -> dtype, shape, data_offsets)."""
    try:
        with open(path, "rb") as fh:
            (length,) = struct.unpack("<Q", fh.read(8))
            if length > _MAX_HEADER:
                return None
            header = json.loads(fh.read(length))
    except (OSError, ValueError, struct.error):
        return None
    elements = size = 0
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        count = 1
        for dim in info.get("shape", []):
            count *= int(dim)
        elements += count
        size += count * _SAFETENSORS_BYTES.get(str(info.get("dtype")), 2)
    return elements, size
