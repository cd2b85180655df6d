#!/usr/bin/env bash
# Usage: scripts/images/gguf-cpu-wheel.sh [WHEELHOUSE]     (run by scripts/images/cpu-images.sh gguf)
#
# Put the llama-cpp-python CPU wheel into the wheelhouse for the gguf CPU image, without compiling it
# in the image build: the wheel is the one scripts/backends/llamacpp-venv.sh compiles once per machine
# and caches (~/.cache/kit/wheels; compiled here only when the cache is empty), with the host's
# libgomp.so.1 (Debian 12's, the base's release) copied beside its libraries: they load it through
# RUNPATH $ORIGIN, and the bootstrapped base has no OpenMP. Then containers/gguf/llama-cpp-python-cpu.lock
# is written with the result's sha256 (byte-stable: the same cached wheel gives the same lock).
#   WHEELHOUSE   default $KIT_WHEELHOUSE, else ~/.cache/kit/wheelhouse
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
wheelhouse=${1:-${KIT_WHEELHOUSE:-$HOME/.cache/kit/wheelhouse}}
wheel=$(bash scripts/backends/llamacpp-venv.sh --wheel | tail -n 1)
[ -f "$wheel" ] || die "scripts/backends/llamacpp-venv.sh --wheel printed no wheel path"
libgomp=/usr/lib/$(uname -m)-linux-gnu/libgomp.so.1
[ -e "$libgomp" ] || die "$libgomp not found (apt-get install libgomp1)"
.venv/bin/python - "$wheel" "$libgomp" "$wheelhouse" <<'PY'
import sys
from pathlib import Path
from kit.images.prebuilt import bundle_libs, write_lock

wheel, lib, dest = (Path(a) for a in sys.argv[1:4])
out = bundle_libs(wheel, [lib], "llama_cpp/lib", dest)
note = ("A wheel compiled on this machine, pinned by its sha256; written by\n"
        "   scripts/images/gguf-cpu-wheel.sh (make locks leaves this lock alone)\n"
        f"{wheel.name} from scripts/backends/llamacpp-venv.sh ({wheel.parent.name}), with {lib.name} added.")
digest = write_lock(out, "llama-cpp-python==0.3.36", Path("containers/gguf/llama-cpp-python-cpu.lock"), note)
print(f"gguf-cpu-wheel: {out} sha256 {digest[:16]}... -> containers/gguf/llama-cpp-python-cpu.lock")
PY
