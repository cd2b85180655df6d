"""Trim the llama-cpp-python sdist to what a CUDA build of it needs, for the GPU machine (the tree that
travels there is at most 64 MiB, and the sdist alone is 74 MiB): the Python package and its CMake
files, and of llama.cpp its CMake files, include, src, common, vendor, ggml with only its CPU and
CUDA backends, and gguf-py (the `gguf` package bench/gpu/llama_cuda.py writes its tiny model with).
Models, docs, tests, tools, examples and the other backends stay behind. Writes
build/gpu-carry/<sdist name>-trimmed.tar.gz and copies the diskcache wheel beside it (llama_cpp imports
it; the GPU machine has its other needs); run.sh's step 4 reads that folder (carry it: `build/gpu-carry`).

    python bench/gpu/pack_llama_cpp.py [SDIST] [--wheelhouse DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEEP_TOP = {"llama_cpp", "vendor"}                          # folders of the sdist's root kept (and its files)
KEEP_LLAMA = {"cmake", "include", "src", "common", "vendor", "ggml", "licenses", "gguf-py"}   # of vendor/llama.cpp
KEEP_BACKENDS = {"ggml-cpu", "ggml-cuda"}                   # of vendor/llama.cpp/ggml/src


def kept(name: str) -> bool:
    """Whether a member of the sdist (path under its top folder) goes into the trimmed archive."""
    parts = name.split("/")[1:]
    if len(parts) <= 1:
        return True                                         # the root and its files (pyproject, CMakeLists...)
    if parts[0] not in KEEP_TOP:
        return False
    if parts[0] == "vendor":
        if len(parts) >= 2 and parts[1] != "llama.cpp":
            return False
        if len(parts) >= 4 and parts[2] not in KEEP_LLAMA:
            return False
        if len(parts) >= 6 and parts[2:4] == ["ggml", "src"] and parts[4].startswith("ggml-") \
                and "." not in parts[4] and parts[4] not in KEEP_BACKENDS:
            return False
    return True


def trim(sdist: Path, out: Path) -> Path:
    """Write the trimmed archive of `sdist` into folder `out`; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / (sdist.name.removesuffix(".tar.gz") + "-trimmed.tar.gz")
    with tarfile.open(sdist) as src, tarfile.open(target, "w:gz", compresslevel=9) as dst:
        for member in src:
            if not kept(member.name):
                continue
            data = src.extractfile(member) if member.isfile() else None
            dst.addfile(member, io.BytesIO(data.read()) if data is not None else None)
    return target


def main(argv: list[str] | None = None) -> int:
    """Trim the sdist found in the wheelhouse (or given), copy the diskcache wheel; print the sizes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sdist", type=Path, nargs="?", default=None)
    parser.add_argument("--wheelhouse", type=Path, default=Path.home() / ".cache" / "kit" / "wheelhouse")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "gpu-carry")
    args = parser.parse_args(argv)
    sdist = args.sdist or max(args.wheelhouse.glob("llama_cpp_python-*.tar.gz"), default=None)
    wheels = sorted(args.wheelhouse.glob("diskcache-*.whl"))
    if sdist is None or not sdist.is_file() or not wheels:
        print(f"pack_llama_cpp: need llama_cpp_python-*.tar.gz and diskcache-*.whl in {args.wheelhouse} "
              "(make image-gguf fills it); or pass the sdist", file=sys.stderr)
        return 2
    target = trim(sdist, args.out)
    (args.out / wheels[-1].name).write_bytes(wheels[-1].read_bytes())
    print(f"{target}: {target.stat().st_size / 2**20:.1f} MiB (from {sdist.stat().st_size / 2**20:.1f} MiB); "
          f"{wheels[-1].name} beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
