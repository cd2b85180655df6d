"""Check what `kit demo` wrote on the GPU machine: one checkpoint's provenance names the GPU.

Copies one checkpoint JSON and the system description JSON of the demo's results into OUT under
flat names (demo-checkpoint.json, demo-system.json), prints the provenance's hardware and package
fields, and writes them with the verdict to OUT/demo-provenance.json. Exit 0 when the provenance
names a CUDA device (hardware.gpu_name set, gpu_count >= 1, hardware.cuda set), 1 otherwise,
2 when the results hold no checkpoint. --allow-cpu (the CPU dry run) accepts a CPU checkpoint.

Needs only the standard library (no kit import), so it runs whatever the demo's state.

    python3 bench/gpu/demo_check.py --results WORKDIR/results --out OUT [--allow-cpu]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

CHECKPOINT = ("en", "kit-demo__tiny-llama.json")  # the generate run: it has the GPU speed facts


def find_checkpoint(results: Path) -> Path | None:
    """The tiny Llama's English checkpoint, else the first checkpoint of any language folder."""
    preferred = results.joinpath(*CHECKPOINT)
    if preferred.is_file():
        return preferred
    found = sorted(p for p in results.glob("*/*.json") if p.parent.name not in {"systems", "report", "logs"})
    return found[0] if found else None


def main(argv: list[str]) -> int:
    """Copy, print and judge; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, required=True, help="the demo's results folder")
    p.add_argument("--out", type=Path, required=True, help="folder for the flat copies and demo-provenance.json")
    p.add_argument("--allow-cpu", action="store_true", help="accept a checkpoint written without CUDA")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    ckpt = find_checkpoint(args.results)
    if ckpt is None:
        print(f"demo_check: no checkpoint under {args.results}", file=sys.stderr)
        return 2
    data = json.loads(ckpt.read_text(encoding="utf-8"))
    shutil.copyfile(ckpt, args.out / "demo-checkpoint.json")
    systems = sorted((args.results / "systems").glob("*.json"))
    if systems:
        shutil.copyfile(systems[-1], args.out / "demo-system.json")
    system = json.loads(systems[-1].read_text(encoding="utf-8")) if systems else {}
    prov = data.get("provenance", {})
    hw = prov.get("hardware", {})
    on_gpu = bool(hw.get("gpu_name")) and (hw.get("gpu_count") or 0) >= 1 and bool(hw.get("cuda"))
    summary = {
        "checkpoint": str(ckpt), "system_file": str(systems[-1]) if systems else None,
        "hardware": hw, "packages": prov.get("packages"), "job": prov.get("job"),
        "kit_commit": prov.get("kit_commit"), "unknown": prov.get("unknown"),
        "dtype": data.get("metadata", {}).get("dtype"), "speed": data.get("speed"), "metrics_f1":
        data.get("metrics", {}).get("f1"),
        "system": {k: system.get(k) for k in ("system_name", "accelerator_model_name", "accelerators_per_node",
                                              "accelerator_driver", "cuda_version", "framework")},
        "gpu_named": on_gpu,
    }
    (args.out / "demo-provenance.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                                                   encoding="utf-8")
    print(f"checkpoint: {ckpt} ({ckpt.stat().st_size} bytes)")
    for key in ("gpu_name", "gpu_count", "driver", "cuda", "cpu"):
        print(f"  provenance.hardware.{key} = {hw.get(key)!r}")
    for key, value in sorted((prov.get("packages") or {}).items()):
        print(f"  provenance.packages.{key} = {value!r}")
    for key, why in sorted((prov.get("unknown") or {}).items()):
        print(f"  provenance.unknown.{key}: {why}")
    print(f"  speed: {json.dumps(data.get('speed'), sort_keys=True)}")
    print(f"  system: accelerator_model_name={system.get('accelerator_model_name')!r} "
          f"cuda_version={system.get('cuda_version')!r} driver={system.get('accelerator_driver')!r}")
    if on_gpu:
        print(f"PROVENANCE NAMES THE GPU: {hw['gpu_name']} x{hw['gpu_count']} (CUDA {hw['cuda']}, driver {hw.get('driver')})")
        return 0
    if args.allow_cpu:
        print("provenance names no GPU (allowed: --allow-cpu dry run)")
        return 0
    print(f"PROVENANCE NAMES NO GPU: {(prov.get('unknown') or {}).get('hardware.gpu_name', 'gpu fields empty')}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
