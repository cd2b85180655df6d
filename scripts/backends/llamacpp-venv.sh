#!/usr/bin/env bash
# Set up the llama.cpp (gguf) engine for tests and host runs: build the llama-cpp-python CPU wheel once
# per machine kind and cache it, then install it with kit (worker extra, no torch) into a venv.
#   scripts/backends/llamacpp-venv.sh [VENV]     VENV defaults to .venv-llamacpp (created if missing;
#                                                an existing venv, e.g. .venv, just gets the wheel added)
#   KIT_LLAMACPP_VERSION  llama-cpp-python version   (default 0.3.36; PyPI ships only an sdist)
#   KIT_LLAMACPP_CMAKE    CMAKE_ARGS for the CPU build (default below)
#   KIT_WHEEL_CACHE       wheel cache folder          (default ~/.cache/kit/wheels)
# Build choices: -DGGML_NATIVE=OFF makes ggml compile its portable x86-64-v3 set (AVX, AVX2, BMI2, FMA,
# F16C) instead of -march=native, so a cached wheel runs on any AVX2 machine and the cache key needs only
# the version, the CMake arguments, the architecture and the compiler. -DLLAVA_BUILD=OFF skips the
# multimodal mtmd library (not used for text models; saves about 90 s of a 2-core build).
# The CUDA build (Dockerfile.gguf) uses -DGGML_CUDA=ON instead; see docs/backends.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${1:-${KIT_LLAMACPP_VENV:-.venv-llamacpp}}
version=${KIT_LLAMACPP_VERSION:-0.3.36}
cmake_args=${KIT_LLAMACPP_CMAKE:-"-DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"}
cache_root=${KIT_WHEEL_CACHE:-$HOME/.cache/kit/wheels}
py=${PYTHON:-python3}
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
export PIP_DISABLE_PIP_VERSION_CHECK=1
t0=$(date +%s)

key=$(printf '%s\n%s\n%s\n%s\n' "$version" "$cmake_args" "$(uname -m)" "$(gcc -dumpfullversion 2>/dev/null || echo nogcc)" \
      | sha256sum | cut -c1-12)
wheel_dir="$cache_root/llama-cpp-python-$version-$key"
# cached_wheel: the cached wheel path, or nothing (always status 0: it runs in $(...) under set -e).
cached_wheel() { local f; for f in "$wheel_dir"/llama_cpp_python-"$version"-*.whl; do [ -f "$f" ] && echo "$f" && break; done; return 0; }
wheel=$(cached_wheel)
if [ -z "$wheel" ]; then
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        build-essential cmake ninja-build >/dev/null
    fi
  fi
  for tool in cmake gcc g++; do
    command -v "$tool" >/dev/null || { echo "llamacpp-venv.sh: $tool is needed to build llama-cpp-python" >&2; exit 1; }
  done
  mkdir -p "$cache_root"
  tmp=$(mktemp -d "$cache_root/.build-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "llamacpp-venv.sh: building llama-cpp-python $version (CMAKE_ARGS=$cmake_args); log: $tmp/build.log"
  tb=$(date +%s)
  [ -x "$tmp/py/bin/python" ] || "$py" -m venv "$tmp/py"
  if ! CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
       "$tmp/py/bin/python" -m pip wheel --no-cache-dir --no-deps -w "$tmp/out" "llama-cpp-python==$version" \
       >"$tmp/build.log" 2>&1; then
    tail -40 "$tmp/build.log" >&2
    echo "llamacpp-venv.sh: wheel build failed" >&2
    exit 1
  fi
  printf 'version=%s\ncmake_args=%s\nbuild_s=%s\n' "$version" "$cmake_args" "$(( $(date +%s) - tb ))" > "$tmp/out/BUILD_INFO"
  cp "$tmp/build.log" "$tmp/out/"
  rm -rf "$wheel_dir"
  mv "$tmp/out" "$wheel_dir"           # same filesystem: the cache entry appears whole or not at all
  wheel=$(cached_wheel)
  echo "llamacpp-venv.sh: built $(basename "$wheel") in $(( $(date +%s) - tb ))s, cached in $wheel_dir"
else
  echo "llamacpp-venv.sh: using cached $wheel"
fi

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
stamp="$venv/.kit-llamacpp"
want="$(sha256sum pyproject.toml | cut -c1-16) $(basename "$wheel") $key"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "llamacpp-venv.sh: $venv is up to date"
  exit 0
fi
quiet() { grep -v -e '^WARNING: Location' || true; }
# kit with its worker extra (no torch: the gguf image has none); gguf for kit.demo.gguf.write_gguf.
"$venv/bin/python" -m pip show -q kit-sweep >/dev/null 2>&1 \
  || "$venv/bin/python" -m pip install -q -e ".[worker]" 2>&1 | quiet
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel" 2>&1 | quiet
"$venv/bin/python" -m pip install -q "numpy>=1.20" "diskcache>=5.6.1" "jinja2>=2.11.3" "typing-extensions>=4.5" \
  "gguf==${KIT_GGUF_VERSION:-0.19.0}" 2>&1 | quiet
(cd / && "$venv/bin/python" -c 'import llama_cpp, gguf, kit.worker.shard') \
  || { echo "llamacpp-venv.sh: install incomplete in $venv" >&2; exit 1; }
echo "$want" > "$stamp"
echo "llamacpp-venv.sh: $venv ready in $(( $(date +%s) - t0 ))s"
