"""GPU check (issue 19): kit's transformers engine in bf16 on CUDA with a model of a real architecture
(Qwen3-4B's configuration, seeded random weights), through `kit shard` on one language of 300 rows;
prints items/s, generated tokens/s and peak GPU memory from the checkpoint's speed block, beside the
seed's per-language GPU seconds (bench/packing.py's table) for scale.

Random weights never say yes or no, so every answer runs to max_new_tokens: the figures are of the
engine at that size (prefill of 300 prompts, decode of max_new_tokens each), not of a trained model.

    PYTHONPATH=. python3 bench/gpu/real_arch.py --out real-arch.json              (a GPU machine)
    PYTHONPATH=. python3 bench/gpu/real_arch.py --scale tiny --out dry.json       (the CPU dry run)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Qwen3-4B's config.json (Qwen/Qwen3-4B): what sets its compute and memory
QWEN3_4B = {"hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
            "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": True}
# the same shape scaled down for the CPU dry run (same code path, seconds on a laptop)
TINY = {**QWEN3_4B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 2048}


def main(argv: list[str] | None = None) -> int:
    """Build the model and a 300-row language, run `kit shard`, print and save the figures; 1 on failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=["qwen3-4b", "tiny"], default="qwen3-4b")
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--require-cuda", action="store_true", help="fail unless the pair ran on a CUDA device")
    parser.add_argument("--work", type=Path, default=None, help="folder for the model and the tree (default: a temporary one)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from bench.packing import SEED_TABLE
    from bench.tree import build_tree, language_codes
    from kit.demo.backends import roster_text
    from kit.demo.model import build_random_causal_lm

    work = args.work or Path(tempfile.mkdtemp(prefix="kit-real-arch-"))
    tree = build_tree(work / "tree", 1, 1, items=args.rows, progress=lambda msg: print(msg, file=sys.stderr))
    language = language_codes(1)[0]
    hub = work / "hub"
    config = QWEN3_4B if args.scale == "qwen3-4b" else TINY
    repo, revision = build_random_causal_lm(hub, f"kit-bench/random-{args.scale}", "qwen3", config)
    roster = work / "roster.toml"
    roster.write_text(roster_text([{"model": repo, "revision": revision, "backend": "transformers-5.17",
                                    "dtype": "bfloat16", "batch_size": args.batch_size,
                                    "max_new_tokens": args.max_new_tokens, "languages": [language]}],
                                  tree.benchmark.resolve()))
    results = work / "results"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "kit", "shard", "--roster", str(roster), "--results", str(results),
                           "--cache-dir", str(hub)], env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-3000:])
    files = sorted(results.glob(f"{language}/*.json"))
    if proc.returncode != 0 or not files:
        print(f"real_arch: kit shard exited {proc.returncode} and wrote {len(files)} checkpoints", file=sys.stderr)
        return 1
    checkpoint = json.loads(files[0].read_text(encoding="utf-8"))
    speed, system = checkpoint.get("speed") or {}, (checkpoint.get("metadata") or {}).get("system") or {}
    seconds = speed.get("duration_seconds")
    facts = {
        "model": f"qwen3 ({args.scale}), random weights, bf16", "params": _params(config), "rows": args.rows,
        "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "speed": speed, "system": system,
        "items_per_second": speed.get("sentences_per_second"),
        "seed_per_language_gpu_seconds": {run: {"median": median, "max": most} for run, _, median, most in SEED_TABLE},
    }
    args.out.write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    gpu = speed.get("peak_gpu_memory_bytes")
    print(f"{facts['model']}, {facts['params'] / 1e9:.2f} B parameters, {args.rows} rows: "
          f"{seconds} s, {facts['items_per_second']} items/s, {speed.get('output_tokens_per_second')} generated "
          f"tokens/s, peak GPU memory {f'{gpu / 2**30:.2f} GiB' if gpu else 'none (not on a GPU)'}")
    for run, _, median, most in SEED_TABLE:
        print(f"  seed, {run}: median {median} s, max {most} s per language")
    if args.require_cuda and not gpu:
        print("real_arch: --require-cuda, and the pair did not run on a CUDA device", file=sys.stderr)
        return 1
    return 0


def _params(config: dict) -> int:
    """Parameters of a Qwen3 decoder of this configuration (tied embeddings counted once)."""
    h, i, layers, v = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"], config["vocab_size"]
    q = config["num_attention_heads"] * config["head_dim"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    attention = h * q + 2 * h * kv + q * h + 2 * config["head_dim"]   # q, k, v, o and the q/k norms
    per_layer = attention + 3 * h * i + 2 * h                          # the MLP and two RMS norms
    return v * h * (1 if config.get("tie_word_embeddings") else 2) + layers * per_layer + h


if __name__ == "__main__":
    sys.exit(main())
