"""Snapshots of real models as sizing reads them: each model's config.json as published and
safetensors headers with every tensor's real name, dtype and shape (no tensor data: sizing reads
headers only). Shapes are those of the published checkpoints: Qwen3-32B (dense, bf16), its FP8
release (e4m3 weights in 128x128 blocks with float32 scales), Qwen3-235B-A22B (MoE: 128 experts
of 8 active) and gpt-oss-120b (MXFP4 experts: uint8 blocks of 32 four-bit values with uint8
scales; attention, router and embeddings in bf16; alternating sliding-window layers)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

Tensor = tuple[str, str, tuple[int, ...]]


def write_snapshot(folder: Path, config: dict, tensors: list[Tensor], shards: int = 4) -> Path:
    """config.json and `shards` header-only safetensors files holding `tensors`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    per = -(-len(tensors) // shards)
    for i in range(shards):
        header, offset = {}, 0
        for name, dtype, shape in tensors[i * per:(i + 1) * per]:
            n = 1
            for d in shape:
                n *= d
            size = n * {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}[dtype]
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
            offset += size
        data = json.dumps(header).encode()
        (folder / f"model-{i + 1:05d}-of-{shards:05d}.safetensors").write_bytes(struct.pack("<Q", len(data)) + data)
    return folder


def _qwen3_attention(p: str, hidden: int, heads: int, kv: int, head_dim: int, dtype: str) -> list[Tensor]:
    return [(f"{p}.self_attn.q_proj.weight", dtype, (heads * head_dim, hidden)),
            (f"{p}.self_attn.k_proj.weight", dtype, (kv * head_dim, hidden)),
            (f"{p}.self_attn.v_proj.weight", dtype, (kv * head_dim, hidden)),
            (f"{p}.self_attn.o_proj.weight", dtype, (hidden, heads * head_dim)),
            (f"{p}.self_attn.q_norm.weight", "BF16", (head_dim,)), (f"{p}.self_attn.k_norm.weight", "BF16", (head_dim,)),
            (f"{p}.input_layernorm.weight", "BF16", (hidden,)),
            (f"{p}.post_attention_layernorm.weight", "BF16", (hidden,))]


def _biased_attention(p: str, hidden: int, heads: int, kv: int, head_dim: int, o_bias: bool) -> list[Tensor]:
    """q, k and v projections with biases (Qwen2, gpt-oss), and o (with a bias in gpt-oss), in bf16."""
    out: list[Tensor] = []
    for name, rows in (("q_proj", heads * head_dim), ("k_proj", kv * head_dim), ("v_proj", kv * head_dim)):
        out += [(f"{p}.self_attn.{name}.weight", "BF16", (rows, hidden)), (f"{p}.self_attn.{name}.bias", "BF16", (rows,))]
    out.append((f"{p}.self_attn.o_proj.weight", "BF16", (hidden, heads * head_dim)))
    return out + ([(f"{p}.self_attn.o_proj.bias", "BF16", (hidden,))] if o_bias else [])


def _embeddings(vocab: int, hidden: int) -> list[Tensor]:
    return [("model.embed_tokens.weight", "BF16", (vocab, hidden)), ("model.norm.weight", "BF16", (hidden,)),
            ("lm_head.weight", "BF16", (vocab, hidden))]


QWEN3_32B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 5120,
             "intermediate_size": 25600, "num_hidden_layers": 64, "num_attention_heads": 64,
             "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960, "vocab_size": 151936,
             "torch_dtype": "bfloat16", "tie_word_embeddings": False, "sliding_window": None,
             "use_sliding_window": False}


def qwen3_32b(folder: Path, fp8: bool = False) -> Path:
    """Qwen/Qwen3-32B, or Qwen/Qwen3-32B-FP8 (its linear layers in F8_E4M3, a float32 scale per 128x128 block)."""
    c = QWEN3_32B
    tensors: list[Tensor] = []
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        attention = _qwen3_attention(p, c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
                                     c["head_dim"], "F8_E4M3" if fp8 else "BF16")
        mlp = [(f"{p}.mlp.{n}.weight", "F8_E4M3" if fp8 else "BF16", shape) for n, shape in (
            ("gate_proj", (c["intermediate_size"], c["hidden_size"])),
            ("up_proj", (c["intermediate_size"], c["hidden_size"])),
            ("down_proj", (c["hidden_size"], c["intermediate_size"])))]
        tensors += attention + mlp
        if fp8:
            tensors += [(name.replace(".weight", ".weight_scale_inv"), "F32",
                         (-(-shape[0] // 128), -(-shape[1] // 128)))
                        for name, dtype, shape in attention + mlp if dtype == "F8_E4M3"]
    tensors += _embeddings(c["vocab_size"], c["hidden_size"])
    config = dict(c)
    if fp8:
        config["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                         "weight_block_size": [128, 128]}
    return write_snapshot(folder, config, tensors)


QWEN3_235B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 4096,
              "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
              "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8,
              "max_position_embeddings": 40960, "vocab_size": 151936, "torch_dtype": "bfloat16",
              "tie_word_embeddings": False}


def qwen3_235b_a22b(folder: Path) -> Path:
    """Qwen/Qwen3-235B-A22B: 94 layers of 128 experts (each expert's gate, up and down projections)."""
    c = QWEN3_235B
    h, m = c["hidden_size"], c["moe_intermediate_size"]
    tensors: list[Tensor] = []
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        tensors += _qwen3_attention(p, h, c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], "BF16")
        tensors.append((f"{p}.mlp.gate.weight", "BF16", (c["num_experts"], h)))
        for e in range(c["num_experts"]):
            tensors += [(f"{p}.mlp.experts.{e}.gate_proj.weight", "BF16", (m, h)),
                        (f"{p}.mlp.experts.{e}.up_proj.weight", "BF16", (m, h)),
                        (f"{p}.mlp.experts.{e}.down_proj.weight", "BF16", (h, m))]
    tensors += _embeddings(c["vocab_size"], h)
    return write_snapshot(folder, c, tensors, shards=16)


GPT_OSS_120B = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
                "intermediate_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
                "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128, "experts_per_token": 4,
                "max_position_embeddings": 131072, "sliding_window": 128, "vocab_size": 201088,
                "layer_types": ["sliding_attention", "full_attention"] * 18, "torch_dtype": "bfloat16",
                "tie_word_embeddings": False,
                "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                    "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}


def gpt_oss_120b(folder: Path) -> Path:
    """openai/gpt-oss-120b: MXFP4 experts (4-bit values packed two to a byte in blocks of 32, a uint8
    scale per block), everything else in bf16."""
    c = GPT_OSS_120B
    h, i, e = c["hidden_size"], c["intermediate_size"], c["num_local_experts"]
    heads, kv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    tensors: list[Tensor] = []
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        tensors += [*_biased_attention(p, h, heads, kv, d, o_bias=True), (f"{p}.self_attn.sinks", "BF16", (heads,)),
                    (f"{p}.mlp.router.weight", "BF16", (e, h)), (f"{p}.mlp.router.bias", "BF16", (e,)),
                    (f"{p}.mlp.experts.gate_up_proj_blocks", "U8", (e, 2 * i, h // 32, 16)),
                    (f"{p}.mlp.experts.gate_up_proj_scales", "U8", (e, 2 * i, h // 32)),
                    (f"{p}.mlp.experts.gate_up_proj_bias", "BF16", (e, 2 * i)),
                    (f"{p}.mlp.experts.down_proj_blocks", "U8", (e, h, i // 32, 16)),
                    (f"{p}.mlp.experts.down_proj_scales", "U8", (e, h, i // 32)),
                    (f"{p}.mlp.experts.down_proj_bias", "BF16", (e, h)),
                    (f"{p}.input_layernorm.weight", "BF16", (h,)), (f"{p}.post_attention_layernorm.weight", "BF16", (h,))]
    tensors += [("model.embed_tokens.weight", "BF16", (c["vocab_size"], h)), ("model.norm.weight", "BF16", (h,)),
                ("lm_head.weight", "BF16", (c["vocab_size"], h))]
    return write_snapshot(folder, c, tensors, shards=15)


R1_DISTILL_QWEN_32B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
                       "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 40,
                       "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 152064,
                       "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 64,
                       "torch_dtype": "bfloat16", "tie_word_embeddings": False}


def r1_distill_qwen_32b(folder: Path) -> Path:
    """deepseek-ai/DeepSeek-R1-Distill-Qwen-32B (Qwen2: biases on q, k and v; no head_dim in its config)."""
    c = R1_DISTILL_QWEN_32B
    h, i, heads, kv = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d = h // heads
    tensors: list[Tensor] = []
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        tensors += [*_biased_attention(p, h, heads, kv, d, o_bias=False),
                    (f"{p}.mlp.gate_proj.weight", "BF16", (i, h)), (f"{p}.mlp.up_proj.weight", "BF16", (i, h)),
                    (f"{p}.mlp.down_proj.weight", "BF16", (h, i)),
                    (f"{p}.input_layernorm.weight", "BF16", (h,)), (f"{p}.post_attention_layernorm.weight", "BF16", (h,))]
    tensors += _embeddings(c["vocab_size"], h)
    return write_snapshot(folder, c, tensors, shards=8)
