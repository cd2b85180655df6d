#!/usr/bin/env bash
# The prepared GPU check (for a machine with torch + transformers, no network): the transformers
# engine on a tiny and on a small random Llama with CUDA; results as JSON in ${OUT:-.}.
#   bash bench/gpu/run.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-.}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 bench/gpu/transformers_cuda.py --require-cuda --out "$out/tiny.json"
python3 bench/gpu/transformers_cuda.py --require-cuda --dtype bfloat16 --hidden 1024 --heads 16 --layers 8 \
  --prompts 256 --batch-size 64 --max-new-tokens 128 --out "$out/small-bf16.json"
