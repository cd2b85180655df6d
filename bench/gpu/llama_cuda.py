"""GPU check (issue 19): build llama.cpp with CUDA for this machine's GPU from the trimmed
llama-cpp-python sources (bench/gpu/pack_llama_cpp.py), then generate greedily with the demo's tiny
Llama as an F32 GGUF on the CPU (n_gpu_layers=0) and on the GPU (all layers offloaded): the tokens
must be the same. Prints and saves the build time, the architecture, whether the CUDA backend
loaded, and both token lists.

Needs nvcc, CMake, ninja and scikit-build-core (the GPU machine has them), numpy, jinja2 and
typing_extensions, and the diskcache wheel packed beside the sources. --cpu-only is the dry run: the
same sources built without CUDA, both generations on the CPU.

    PYTHONPATH=. python3 bench/gpu/llama_cuda.py --carry build/gpu-carry --out llama-cuda.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROMPTS = ("Does this sentence describe land use? A dense forest covers the hills.",
           "The river flows past a wetland, a lake and a small harbour.")
TOKENS = 24
GENERATE = r"""
import json, sys
import llama_cpp
from llama_cpp import Llama
path, layers, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
llm = Llama(model_path=path, n_gpu_layers=layers, n_ctx=256, seed=0, verbose=False)
out = []
for prompt in json.loads(sys.argv[4]):
    ids = llm.tokenize(prompt.encode(), add_bos=True)
    got = []
    for token in llm.generate(ids, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
        got.append(int(token))
        if len(got) == tokens:
            break
    out.append(got)
print("KIT-TOKENS " + json.dumps({"gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()), "tokens": out}))
"""


def gpu_arch() -> str | None:
    """This machine's GPU as a CMAKE_CUDA_ARCHITECTURES entry ("90" for an H200), or None without one."""
    r = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                       text=True) if _which("nvidia-smi") else None
    if r is None or r.returncode != 0 or not r.stdout.strip():
        return None
    return r.stdout.split()[0].replace(".", "")


def _which(tool: str) -> bool:
    return any((Path(d) / tool).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def build(sources: Path, site: Path, arch: str | None, log: Path) -> float:
    """pip-install the sources into `site` with CUDA for `arch` (none: a CPU build); returns seconds."""
    flags = ["-DGGML_NATIVE=off", "-DGGML_OPENMP=off", "-DLLAVA_BUILD=off", "-DGGML_CUDA_NCCL=off"]
    if arch:
        # FlashAttention's kernels are most of the CUDA compile; without them llama.cpp takes its other
        # attention path, and a lease has minutes
        flags += ["-DGGML_CUDA=on", f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DGGML_CUDA_FA=off"]
    env = {**os.environ, "CMAKE_ARGS": " ".join(flags), "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    started = time.perf_counter()
    with log.open("w") as out:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation",
                            "--no-cache-dir", "--disable-pip-version-check", "--target", str(site), str(sources)],
                           env=env, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SystemExit(f"llama_cuda: the build failed (rc {r.returncode}); the end of {log}:\n"
                         + log.read_text(errors="replace")[-3000:])
    return time.perf_counter() - started


def generate(site: Path, gguf_file: Path, layers: int) -> dict:
    """Greedy tokens of PROMPTS with `layers` offloaded, in a fresh process importing the built llama_cpp."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", GENERATE, str(gguf_file), str(layers), str(TOKENS), json.dumps(PROMPTS)],
                       env=env, capture_output=True, text=True)
    line = next((x for x in r.stdout.splitlines() if x.startswith("KIT-TOKENS ")), None)
    if line is None:
        raise SystemExit(f"llama_cuda: generation with n_gpu_layers={layers} failed: {r.stderr[-2000:]}")
    return json.loads(line[len("KIT-TOKENS "):])


def main(argv: list[str] | None = None) -> int:
    """Build, make the tiny GGUF, generate on CPU and GPU, compare; 0 when the tokens are equal."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--carry", type=Path, default=REPO / "build" / "gpu-carry")
    parser.add_argument("--cpu-only", action="store_true", help="the dry run: build without CUDA")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    archives = sorted(args.carry.glob("llama_cpp_python-*-trimmed.tar.gz"))
    wheels = sorted(args.carry.glob("diskcache-*.whl"))
    if not archives or not wheels:
        print(f"llama_cuda: no trimmed sources and diskcache wheel in {args.carry} "
              "(python bench/gpu/pack_llama_cpp.py makes them; carry that folder)", file=sys.stderr)
        return 2
    arch = None if args.cpu_only else gpu_arch()
    if not args.cpu_only and arch is None:
        print("llama_cuda: no GPU (nvidia-smi gave no compute capability); --cpu-only for the dry run", file=sys.stderr)
        return 3
    work = args.work or Path(tempfile.mkdtemp(prefix="kit-llama-cuda-"))
    with tarfile.open(archives[-1]) as tar:
        tar.extractall(work / "src", filter="data")
    sources = next((work / "src").iterdir())
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(site),
                    str(wheels[-1])], check=True)
    seconds = build(sources, site, arch, work / "build.log")
    sys.path[:0] = [str(sources / "vendor" / "llama.cpp" / "gguf-py"), str(REPO)]
    from kit.demo.gguf import GGUF_FILE, write_gguf
    from kit.demo.model import build_tiny_llama, repo_folder

    hub = work / "hub"
    build_tiny_llama(hub)
    repo, revision = write_gguf(hub)
    gguf_file = repo_folder(hub, repo) / "snapshots" / revision / GGUF_FILE
    cpu, gpu = generate(site, gguf_file, 0), generate(site, gguf_file, -1)
    facts = {"arch": arch, "build_seconds": round(seconds, 1), "cuda_backend": gpu["gpu_offload"],
             "cpu_tokens": cpu["tokens"], "gpu_tokens": gpu["tokens"], "same": cpu["tokens"] == gpu["tokens"],
             "sources": archives[-1].name}
    args.out.write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    print(f"llama.cpp built {'for sm_' + arch if arch else 'without CUDA'} in {seconds:.0f} s; CUDA backend "
          f"{'loaded' if facts['cuda_backend'] else 'absent'}; {len(PROMPTS)} prompts x {TOKENS} greedy tokens: "
          f"GPU {'SAME as' if facts['same'] else 'DIFFERENT from'} CPU")
    ok = facts["same"] and (args.cpu_only or facts["cuda_backend"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
