"""The load-time cost of checking a model's weights: today's full hash of every weight file (what a
job did at each load before weights manifests) against the manifest check (sizes plus the manifest's
own digest), side by side on the same snapshot of generated weight files.

Writes a Hugging Face cache layout snapshot of SIZE GB (1 GB shards of random bytes named like
safetensors shards) and its weights manifest under DIR, reads it once so the page cache is warm (as
it is for the second task of an array on a node), then times each check REPEAT times and prints the
median, the throughput, the ratio and the saving per array task, with a projection to a 16 GB model.
With --cold (root), the page cache is dropped before each full hash: the first task on a node.

    .venv/bin/python bench/weights_load.py --size-gb 2 [--dir /var/tmp] [--repeat 3] [--cold]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kit.weights.manifest import build_manifest, local_sizes, snapshot_dir, write_manifest  # noqa: E402
from kit.weights.snapshot import digests_at_load, weight_files_sha256  # noqa: E402

MODEL, REVISION = "bench/big", "b" * 40
SHARD = 1 << 30


def write_snapshot(cache: Path, size: int) -> Path:
    """Random weight shards of `size` bytes in all, in the hub cache layout."""
    snap = snapshot_dir(cache, MODEL, REVISION)
    snap.mkdir(parents=True)
    count = -(-size // SHARD)
    left = size
    for i in range(count):
        with open(snap / f"model-{i + 1:05d}-of-{count:05d}.safetensors", "wb") as fh:
            part = min(SHARD, left)
            while part:
                block = os.urandom(min(part, 64 << 20))
                fh.write(block)
                part -= len(block)
                left -= len(block)
    (snap / "config.json").write_text('{"model_type": "llama"}\n')
    return snap


def timed(fn, repeat: int, before=lambda: None) -> list[float]:
    """Seconds of each of `repeat` calls of fn (each after before())."""
    out = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def drop_caches() -> None:
    """Drop the page cache (root only), so the next read comes from the disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def main(argv: list[str]) -> int:
    """Generate, time, print; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-gb", type=float, default=2.0, help="total size of the weight files (>= 1)")
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where to write the snapshot")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cold", action="store_true", help="also time the full hash from a cold page cache (root)")
    args = p.parse_args(argv)
    size = int(args.size_gb * 1e9)
    work = Path(tempfile.mkdtemp(prefix="kit-bench-weights-", dir=args.dir))
    try:
        t0 = time.perf_counter()
        snap = write_snapshot(work, size)
        print(f"snapshot: {size / 1e9:.2f} GB in {len(list(snap.glob('*.safetensors')))} shards at {snap} "
              f"(written in {time.perf_counter() - t0:.1f}s)")
        t0 = time.perf_counter()
        manifest = build_manifest(snap, MODEL, REVISION, local_sizes(snap), ["vllm"])
        write_manifest(work, manifest)
        print(f"staging-time hash for the manifest (once per model, by kit weights stage): "
              f"{time.perf_counter() - t0:.2f}s")
        weight_files_sha256(snap)   # warm the page cache
        full = timed(lambda: weight_files_sha256(snap), args.repeat)
        check = timed(lambda: digests_at_load(snap, MODEL, REVISION), max(args.repeat, 10))
        assert digests_at_load(snap, MODEL, REVISION).files == weight_files_sha256(snap)
        f, c = statistics.median(full), statistics.median(check)
        print(f"full hash at load (before): median {f:.3f}s of {args.repeat} ({size / f / 1e9:.2f} GB/s, warm cache)")
        print(f"manifest check at load (now): median {c * 1000:.2f} ms of {max(args.repeat, 10)}")
        print(f"ratio: {f / c:,.0f}x faster; saving per array task: {f - c:.3f}s")
        per_gb = f / (size / 1e9)
        print(f"projection for a 16 GB model: full hash {16 * per_gb:.1f}s per task, manifest check ~{c * 1000:.1f} ms")
        if args.cold:
            cold = timed(lambda: weight_files_sha256(snap), args.repeat, drop_caches)
            drop_caches()
            cold_check = timed(lambda: digests_at_load(snap, MODEL, REVISION), 1)
            fc = statistics.median(cold)
            print(f"full hash from a cold page cache: median {fc:.3f}s ({size / fc / 1e9:.2f} GB/s); "
                  f"manifest check cold: {cold_check[0] * 1000:.2f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
