#!/usr/bin/env bash
# The prepared GPU check (for a machine with torch + transformers, no network), results in ${OUT:-.}:
#   1. the transformers engine on a tiny and on a small random Llama with CUDA (tiny.json, small-bf16.json)
#   2. the demo's sweep through `kit run --site local` on the GPU, `kit verify` and `kit check`, and
#      the checkpoint's provenance must name the GPU (demo-checkpoint.json, demo-system.json,
#      demo-provenance.json)
#   3. a random-weight model of Qwen3-4B's configuration in bf16 through `kit shard` on a language of
#      300 rows: items/s, generated tokens/s, peak GPU memory, beside the seed's per-language GPU
#      seconds (real-arch.json; bench/gpu/real_arch.py; about 3 minutes, most of it making 8 GB of weights)
#   4. llama.cpp compiled with CUDA for this GPU's architecture from llama-cpp-python's sources trimmed
#      to 3.4 MiB (python bench/gpu/pack_llama_cpp.py writes build/gpu-carry/: carry that folder), then
#      the demo's tiny Llama as an F32 GGUF generates the same greedy tokens on the GPU as on the CPU
#      (llama-cuda.json; bench/gpu/llama_cuda.py; FlashAttention kernels left out to fit the time)
# and the whole log in run.log. Each step reports "STEP n FAILED rc=N" and the script goes on.
# KIT_GPU_STEPS picks steps (default "0 1 2 3 4"; 0 is always run): one command may run 10 minutes, so
# a lease runs "1 2 3" in one call and "4" in the next.
#
# Python packages the machine lacks travel as wheels in .whl/ (git-ignored; for Python 3.12:
# pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5
# typing_extensions==4.16.0 platformdirs==4.14.8 mlperf_logging==4.1.68, fetched with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 -d .whl NAME==VERSION ...)
# and are installed first:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#   OUT=/some/dir bash bench/gpu/run.sh            (from the repository root)
# KIT_BENCH_ALLOW_CPU=1 is the CPU dry run: no --require-cuda, a smaller "small" run, and a demo
# checkpoint without a GPU is accepted. Worst case (every step at its timeout): steps 1-3 about 13
# minutes, step 4 9 minutes; expected about 6 and 5.
# Each step below ends in `|| echo STEP n FAILED`: one failure does not stop the rest.
set -euo pipefail
out=${OUT:-.}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.." || exit 1
repo=$PWD
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
allow_cpu=${KIT_BENCH_ALLOW_CPU:-0}
[ "$allow_cpu" = 1 ] && cuda_flag=() || cuda_flag=(--require-cuda)
[ "$allow_cpu" = 1 ] && small=(--prompts 16 --batch-size 8 --max-new-tokens 16) \
                     || small=(--prompts 256 --batch-size 64 --max-new-tokens 128)

steps=" ${KIT_GPU_STEPS:-0 1 2 3 4} "
want() { [[ "$steps" == *" $1 "* ]]; }
step() { echo; echo "=== STEP $1 ($(date +%T), ${SECONDS}s)"; }

main() {
  step "0 facts"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader || echo "nvidia-smi failed rc=$?"
  python3 - <<'EOF' || echo "STEP 0 FAILED rc=$?"
import importlib, importlib.metadata as md, platform, sys
print("python", platform.python_version(), sys.executable)
for dist, mod in (("torch", "torch"), ("transformers", "transformers"), ("tokenizers", "tokenizers"),
                  ("safetensors", "safetensors"), ("huggingface_hub", "huggingface_hub"), ("numpy", "numpy"),
                  ("typing_extensions", "typing_extensions"), ("pydantic", "pydantic"), ("pydantic_core", "pydantic_core"),
                  ("platformdirs", "platformdirs"), ("mlperf-logging", "mlperf_logging"), ("matplotlib", "matplotlib"),
                  ("click", "click"), ("rich", "rich"), ("filelock", "filelock"), ("PyYAML", "yaml")):
    try:
        where = importlib.import_module(mod).__file__
        print(f"  {dist:18} {md.version(dist):14} {where}")
    except Exception as exc:  # noqa: BLE001 - a fact, not a failure
        print(f"  {dist:18} MISSING ({type(exc).__name__}: {exc})")
import torch
print("torch cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
EOF

  work=$(mktemp -d /tmp/kit-gpu.XXXXXX)
  if want 1; then
  step "1a transformers_cuda tiny"
  timeout 90 python3 bench/gpu/transformers_cuda.py "${cuda_flag[@]}" --out "$out/tiny.json" \
    || echo "STEP 1a FAILED rc=$?"

  step "1b transformers_cuda small bf16"
  timeout 120 python3 bench/gpu/transformers_cuda.py "${cuda_flag[@]}" --dtype bfloat16 --hidden 1024 --heads 16 \
    --layers 8 "${small[@]}" --out "$out/small-bf16.json" || echo "STEP 1b FAILED rc=$?"

  fi

  if want 2; then
  step "2a the demo's files ($work/demo), its site forwarding PYTHONPATH"
  # A job runs in a clean environment (kit's allow-list): the wheels in /tmp/site and this checkout
  # reach it only through the site's forward_env, as a cluster site would be configured.
  KIT_CACHE_DIR="$work/cache" timeout 90 python3 - "$work/demo" <<'EOF' || echo "STEP 2a FAILED rc=$?"
import sys
from pathlib import Path
from kit.demo.run import prepare_demo
files = prepare_demo(Path(sys.argv[1]))
text = files.sites.read_text(encoding="utf-8").replace("gpus_per_node = 0", "gpus_per_node = 1")
# [site.local] is the file's last table
files.sites.write_text(text + 'forward_env = ["PYTHONPATH", "LD_LIBRARY_PATH"]\n', encoding="utf-8")
print(files.sites.read_text(encoding="utf-8"))
EOF

  step "2b kit run --site local (the demo's sweep on the GPU)"
  (cd "$work/demo" && KIT_CACHE_DIR="$work/cache" timeout 150 python3 -m kit run --site local) \
    || echo "STEP 2b FAILED rc=$?"

  step "2c kit verify"
  timeout 45 python3 -m kit verify "$work/demo/results" || echo "STEP 2c FAILED rc=$?"

  step "2d kit check"
  timeout 45 python3 -m kit check --roster "$work/demo/roster.toml" "$work/demo/results" || echo "STEP 2d FAILED rc=$?"

  step "2e provenance names the GPU"
  [ "$allow_cpu" = 1 ] && cpu_ok=(--allow-cpu) || cpu_ok=()
  python3 bench/gpu/demo_check.py --results "$work/demo/results" --out "$out" "${cpu_ok[@]}" \
    || echo "STEP 2e FAILED rc=$?"
  fi

  if want 3; then
  step "3 Qwen3-4B's architecture, random weights, bf16, through kit shard (300 rows)"
  [ "$allow_cpu" = 1 ] && scale=(--scale tiny --max-new-tokens 4) || scale=(--scale qwen3-4b)
  timeout 300 python3 bench/gpu/real_arch.py "${scale[@]}" "${cuda_flag[@]}" --work "$work/real-arch" \
    --out "$out/real-arch.json" || echo "STEP 3 FAILED rc=$?"
  fi

  if want 4; then
  step "4 llama.cpp built with CUDA for this GPU from the trimmed sources; a tiny GGUF's GPU tokens = CPU tokens"
  [ "$allow_cpu" = 1 ] && llama=(--cpu-only) || llama=()
  timeout 540 python3 bench/gpu/llama_cuda.py "${llama[@]}" --carry "$repo/build/gpu-carry" --work "$work/llama" \
    --out "$out/llama-cuda.json" || echo "STEP 4 FAILED rc=$?"
  fi

  step "done"
  ls -la "$out"
}

main 2>&1 | tee "$out/run.log"
