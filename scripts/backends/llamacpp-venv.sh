#!/usr/bin/env bash
# Set up the llama.cpp (gguf) engine for tests and host runs: build the llama-cpp-python CPU wheel once
# per machine kind and cache it, then install it with kit (worker extra, no torch) into a venv.
#   scripts/backends/llamacpp-venv.sh [VENV]     VENV defaults to .venv-llamacpp (created if missing;
#                                                an existing venv, e.g. .venv, just gets the wheel added)
#   scripts/backends/llamacpp-venv.sh --wheel    only build (or find) the cached wheel; print its path last
#   KIT_LLAMACPP_VERSION  llama-cpp-python version   (default 0.3.36; PyPI ships only an sdist)
#   KIT_LLAMACPP_CMAKE    CMAKE_ARGS for the CPU build (default below)
#   KIT_WHEEL_CACHE       wheel cache folder          (default ~/.cache/kit/wheels)
# Build choices: -DGGML_NATIVE=OFF makes ggml compile its portable x86-64-v3 set (AVX, AVX2, BMI2, FMA,
# F16C) instead of -march=native, so a cached wheel runs on any AVX2 machine and the cache key needs only
# the version, the CMake arguments, the architecture and the compiler. -DLLAVA_BUILD=OFF skips the
# multimodal mtmd library (not used for text models; saves about 90 s of a 2-core build).
# The CUDA build (Dockerfile.gguf) uses -DGGML_CUDA=ON instead; see docs/backends.md.
# Two callers at once (CI's background set-up and a test) never build twice: the wheel and the venv
# each have a lock, and the second caller waits for the first.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
wheel_only=0
if [ "${1:-}" = --wheel ]; then wheel_only=1; shift; fi
venv=${1:-${KIT_LLAMACPP_VENV:-.venv-llamacpp}}
version=${KIT_LLAMACPP_VERSION:-0.3.36}
cmake_args=${KIT_LLAMACPP_CMAKE:-"-DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"}
cache_root=${KIT_WHEEL_CACHE:-$HOME/.cache/kit/wheels}
py=${PYTHON:-python3}
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac

key=$(printf '%s\n%s\n%s\n%s\n' "$version" "$cmake_args" "$(uname -m)" "$(gcc -dumpfullversion 2>/dev/null || echo nogcc)" \
      | sha256sum | cut -c1-12)
wheel_dir="$cache_root/llama-cpp-python-$version-$key"
# cached_wheel: the cached wheel's path, or nothing (always status 0: it runs in $(...) under set -e).
cached_wheel() { local f; for f in "$wheel_dir"/llama_cpp_python-"$version"-*.whl; do [ -f "$f" ] && echo "$f" && break; done; return 0; }

# build_wheel: compile llama-cpp-python into the cache (the entry appears whole or not at all).
build_wheel() {
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      need_pkgs build-essential cmake ninja-build
    fi
  fi
  local tool tmp tb log=$cache_root/llama-cpp-python-$version-$key.build.log
  for tool in cmake gcc g++; do
    command -v "$tool" >/dev/null || die "$tool is needed to build llama-cpp-python (apt-get install build-essential cmake)"
  done
  tmp=$(mktemp -d "$cache_root/.build-XXXXXX")
  # shellcheck disable=SC2064  # expand $tmp now: it is local
  trap "rm -rf '$tmp'" EXIT
  : >"$log"   # kept after a failure, replaced by the next build
  step "building llama-cpp-python $version (CMAKE_ARGS=$cmake_args); log: $log"
  tb=$(date +%s)
  must "$log" "creating the build venv" "$py" -m venv "$tmp/py"
  CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    KIT_TAIL_LINES=40 must "$log" "building the llama-cpp-python $version wheel" \
    "$tmp/py/bin/python" -m pip wheel --no-cache-dir --no-deps -w "$tmp/out" "llama-cpp-python==$version"
  printf 'version=%s\ncmake_args=%s\nbuild_s=%s\n' "$version" "$cmake_args" "$(( $(date +%s) - tb ))" > "$tmp/out/BUILD_INFO"
  mv "$log" "$tmp/out/build.log"
  rm -rf "$wheel_dir"
  mv "$tmp/out" "$wheel_dir"
  rm -rf "$tmp"
  trap - EXIT
  [ -n "$(cached_wheel)" ] || die "pip wheel left no llama_cpp_python-$version-*.whl in $wheel_dir"
  step "built $(basename "$(cached_wheel)") in $(( $(date +%s) - tb ))s, cached in $wheel_dir"
}

mkdir -p "$cache_root"
exec {wheel_lock}>"$cache_root/.llama-cpp-python-$version-$key.lock"
if ! flock -n "$wheel_lock"; then
  step "another build of llama-cpp-python $version is running; waiting for it"
  flock -w "${KIT_LOCK_TIMEOUT:-3600}" "$wheel_lock" || die "timed out waiting for the wheel build lock"
fi
wheel=$(cached_wheel)
if [ -z "$wheel" ]; then
  build_wheel
  wheel=$(cached_wheel)
else
  step "using cached $wheel"
fi
exec {wheel_lock}>&-
if [ "$wheel_only" = 1 ]; then
  echo "$wheel"
  exit 0
fi

venv_lock "$venv"
stamp=.kit-llamacpp
want="$(sha256sum pyproject.toml | cut -c1-16) $(basename "$wheel") $key"
if venv_current "$venv" "$stamp" "$want"; then
  step "$venv is up to date"
  exit 0
fi
venv_create "$py" "$venv"
# kit with its worker extra (no torch: the gguf image has none); gguf for kit.demo.gguf.write_gguf.
"$venv/bin/python" -m pip show -q kit-sweep >/dev/null 2>&1 || venv_pip "$venv" install -q -e ".[worker]"
venv_pip "$venv" install -q --force-reinstall --no-deps "$wheel"
venv_pip "$venv" install -q "numpy>=1.20" "diskcache>=5.6.1" "jinja2>=2.11.3" "typing-extensions>=4.5" \
  "gguf==${KIT_GGUF_VERSION:-0.19.0}"
venv_check "$venv" "llama.cpp (llama_cpp, gguf, kit's worker)" 'import llama_cpp, gguf, kit.worker.shard'
echo "$want" > "$venv/$stamp"
step "$venv ready"
