"""GPU check of the transformers engine: greedy generation on a tiny local Llama with CUDA,
recording throughput and peak GPU memory; falls back to CPU (memory then null, with the reason)
when no CUDA device is visible.

Needs only torch, transformers, tokenizers and this repository on PYTHONPATH (no network, no
pydantic, no Docker): the model is built locally with random weights into a temporary hub cache.

    PYTHONPATH=. python3 bench/gpu/transformers_cuda.py --out bench.json
    PYTHONPATH=. python3 bench/gpu/transformers_cuda.py --hidden 1024 --heads 16 --layers 8 --prompts 256
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROMPTS = (
    "Does this sentence describe land use? A dense forest covers the hills.",
    "Cette phrase décrit-elle l'occupation du sol ? Des champs de blé entourent la ville.",
    "Beschreibt dieser Satz die Landnutzung? Der Bürgermeister wurde 1998 gewählt.",
    "The river flows past a wetland, a lake and a small harbour.",
)


@dataclass(frozen=True)
class BenchRun:
    """The roster settings the transformers engine reads (a stand-in for kit.config.roster.Run)."""

    model: str
    revision: str
    batch_size: int
    max_new_tokens: int
    dtype: str = "auto"
    task: str = "generate"
    seed: int = 0
    trust_remote_code: bool = False
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The run name, as Run.name."""
        return self.model


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line settings of the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=None, help="write the result JSON here too")
    p.add_argument("--prompts", type=int, default=64, help="number of prompts (cycled from a fixed list)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "float16", "bfloat16"))
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--require-cuda", action="store_true", help="exit 3 instead of falling back to CPU")
    return p.parse_args(argv)


def run_bench(args: argparse.Namespace, hub: Path) -> dict[str, Any]:
    """Build the model, load it with the transformers engine, time the generation; the result dict."""
    import torch

    from kit.demo.model import build_tiny_llama, repo_folder
    from kit.worker.backends.transformers import TransformersBackend

    repo_id, revision = build_tiny_llama(hub, hidden=args.hidden, heads=args.heads,
                                         kv_heads=max(1, args.heads // 2), layers=args.layers)
    snapshot = repo_folder(hub, repo_id) / "snapshots" / revision
    run = BenchRun(repo_id, revision, args.batch_size, args.max_new_tokens, args.dtype)
    t0 = time.perf_counter()
    backend = TransformersBackend(run, snapshot)
    backend.load()
    load_s = time.perf_counter() - t0
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]
    backend.generate(prompts[: args.batch_size])  # warm-up: kernels, allocator
    cuda = backend.device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    latencies, tokens = [], 0
    t0 = time.perf_counter()
    for start in range(0, len(prompts), args.batch_size):
        b0 = time.perf_counter()
        out = backend.generate(prompts[start:start + args.batch_size])
        if cuda:
            torch.cuda.synchronize()
        latencies.append(time.perf_counter() - b0)
        tokens += sum(g.generated_tokens for g in out)
    seconds = time.perf_counter() - t0
    info = backend.model_info()
    result = {
        "bench": "transformers_cuda", "device": backend.device, "dtype": backend.dtype,
        "gpu_name": torch.cuda.get_device_name(0) if cuda else None,
        "num_parameters": info["num_parameters"], "prompts": len(prompts), "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens, "load_seconds": round(load_s, 4),
        "generate_seconds": round(seconds, 4), "generated_tokens": tokens,
        "output_tokens_per_second": round(tokens / seconds, 2) if seconds else 0.0,
        "sentences_per_second": round(len(prompts) / seconds, 2) if seconds else 0.0,
        "latency_max_seconds": round(max(latencies), 4),
        "peak_gpu_memory_bytes": int(torch.cuda.max_memory_allocated()) if cuda else None,
        "engine_peak_gpu_memory_bytes": backend.speed_facts().get("peak_gpu_memory_bytes"),
        "versions": {**backend.versions(), "cuda": torch.version.cuda}, "platform": platform.platform(),
        "unknown": {} if cuda else {"peak_gpu_memory_bytes": "no CUDA device visible: ran on CPU"},
    }
    backend.close()
    return result


def main(argv: list[str]) -> int:
    """Run the benchmark, print its JSON on one line, write --out; 3 when --require-cuda finds none."""
    import torch

    args = parse_args(argv)
    if args.require_cuda and not torch.cuda.is_available():
        print("no CUDA device visible", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
        result = run_bench(args, Path(tmp) / "hub")
    text = json.dumps(result, sort_keys=True)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
