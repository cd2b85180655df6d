"""Convert a tiny Hugging Face Llama snapshot (build_tiny_llama's) to an F32 GGUF in its own hub-cache repo.

Written with the PyPI `gguf` package, numpy and safetensors only (no torch, no llama.cpp
converter): llama metadata, the byte-level BPE vocabulary as a `gpt2` tokenizer with the
`gpt-2` pre-tokenizer, the chat template, and every tensor in float32, with the q/k projections
permuted into llama.cpp's rotary layout. F32 keeps llama.cpp's greedy output token-for-token
equal to transformers' (F16 and Q8_0 differ on some prompts). The GGUF lands as
`hub_cache/models--<org>--<name>/snapshots/<content-hash revision>/<file_name>` with refs/main,
beside a kit-gguf.json naming the source repo and revision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.demo.model import publish_snapshot, repo_folder

GGUF_REPO = "kit-demo/tiny-llama-gguf"
GGUF_FILE = "tiny-llama-f32.gguf"
_NORMAL, _CONTROL = 1, 3  # gguf TokenType values
_LAYER = {  # HF name inside model.layers.N -> GGUF name inside blk.N
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def write_gguf(hub_cache: Path, source_repo: str = "kit-demo/tiny-llama", source_revision: str | None = None,
               repo_id: str = GGUF_REPO, file_name: str = GGUF_FILE) -> tuple[str, str]:
    """Write (once) the F32 GGUF of a Llama snapshot in the hub cache; returns (repo_id, revision).

    `source_revision` None takes the source repo's refs/main. The same source bytes always give
    the same GGUF bytes and so the same revision.
    """
    hub_cache = Path(hub_cache)
    source = repo_folder(hub_cache, source_repo)
    revision = source_revision or (source / "refs" / "main").read_text(encoding="utf-8").strip()
    snapshot = source / "snapshots" / revision

    def write(folder: Path) -> None:
        _write_file(snapshot, folder / file_name)
        origin = {"source_repo": source_repo, "source_revision": revision, "file": file_name, "outtype": "f32"}
        (folder / "kit-gguf.json").write_text(json.dumps(origin, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    return repo_id, publish_snapshot(hub_cache, repo_id, write)


def rotary_permute(weight: Any, heads: int) -> Any:
    """Reorder a q/k projection from Hugging Face's half-split rotary layout to GGML's interleaved one.

    Within each head, output row 2i takes HF row i and row 2i+1 takes HF row i + head_dim/2.
    """
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def _write_file(snapshot: Path, dest: Path) -> None:
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    config = json.loads((snapshot / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "llama":
        raise ValueError(f"{snapshot}: write_gguf converts Llama models only, not {config.get('model_type')!r}")
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    hidden = config["hidden_size"]
    rope = config.get("rope_parameters") or {}
    writer = gguf.GGUFWriter(str(dest), "llama")
    writer.add_name(snapshot.parent.parent.name.removeprefix("models--").replace("--", "/"))
    writer.add_file_type(0)  # ALL_F32
    writer.add_vocab_size(config["vocab_size"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(hidden)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(config.get("head_dim") or hidden // heads)
    writer.add_rope_freq_base(float(rope.get("rope_theta", config.get("rope_theta", 10000.0))))
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    _add_tokenizer(writer, snapshot, config)
    weights = load_file(str(snapshot / "model.safetensors"))
    f32 = lambda name: np.ascontiguousarray(weights[name], dtype=np.float32)  # noqa: E731
    writer.add_tensor("token_embd.weight", f32("model.embed_tokens.weight"))
    writer.add_tensor("output_norm.weight", f32("model.norm.weight"))
    writer.add_tensor("output.weight", f32("lm_head.weight" if "lm_head.weight" in weights else "model.embed_tokens.weight"))
    for layer in range(config["num_hidden_layers"]):
        for hf_name, gguf_name in _LAYER.items():
            tensor = f32(f"model.layers.{layer}.{hf_name}")
            if gguf_name == "attn_q.weight":
                tensor = rotary_permute(tensor, heads)
            elif gguf_name == "attn_k.weight":
                tensor = rotary_permute(tensor, kv_heads)
            writer.add_tensor(f"blk.{layer}.{gguf_name}", np.ascontiguousarray(tensor))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_tokenizer(writer: Any, snapshot: Path, config: dict[str, Any]) -> None:
    """The byte-level BPE vocabulary, merges, special ids, BOS rule and chat template."""
    data = json.loads((snapshot / "tokenizer.json").read_text(encoding="utf-8"))
    model = data["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"{snapshot}: write_gguf needs a BPE tokenizer, not {model.get('type')!r}")
    vocab: dict[str, int] = dict(model["vocab"])
    special = {t["content"]: t["id"] for t in data.get("added_tokens", []) if t.get("special")}
    vocab.update(special)
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _t, i in by_id] != list(range(len(by_id))) or len(by_id) != config["vocab_size"]:
        raise ValueError(f"{snapshot}: token ids are not 0..vocab_size-1")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list([t for t, _i in by_id])
    writer.add_token_types([_CONTROL if t in special else _NORMAL for t, _i in by_id])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])
    for key, add in (("bos_token_id", writer.add_bos_token_id), ("eos_token_id", writer.add_eos_token_id),
                     ("pad_token_id", writer.add_pad_token_id)):
        if isinstance(config.get(key), int):
            add(config[key])
    if model.get("unk_token") in vocab:
        writer.add_unk_token_id(vocab[model["unk_token"]])
    post = json.dumps(data.get("post_processor") or {})
    writer.add_add_bos_token(isinstance(config.get("bos_token_id"), int) and '"SpecialToken"' in post)
    writer.add_add_eos_token(False)
    template = snapshot / "chat_template.jinja"
    tok_config = json.loads((snapshot / "tokenizer_config.json").read_text(encoding="utf-8"))
    text = template.read_text(encoding="utf-8") if template.is_file() else tok_config.get("chat_template")
    if text:
        writer.add_chat_template(text)
