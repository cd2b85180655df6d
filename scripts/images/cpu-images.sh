#!/usr/bin/env bash
# Usage: scripts/images/cpu-images.sh [NAME...]     (root; what `make images-cpu` and `make test-images` run)
#
# Build the CPU variant of each backend image (default: all six), one at a time, offline from the
# wheelhouse on the bootstrapped Debian base (kit images build NAME --variant cpu --wheelhouse DIR),
# and print each one's build seconds and size. An image already built from the same inputs is a
# Docker cache hit (seconds); a changed kit source rebuilds only kit's layer.
# gguf first puts the llama-cpp-python CPU wheel into the wheelhouse (scripts/images/gguf-cpu-wheel.sh:
# the wheel scripts/backends/llamacpp-venv.sh compiles once per machine and caches), never compiles it
# inside the build. vllm first makes its base, kit/base:bookworm-numa (scripts/images/base-plus.sh).
#   KIT_WHEELHOUSE     the wheelhouse (default ~/.cache/kit/wheelhouse)
#   KIT_IMAGES_LOCK    the lock of built images to record them in (default containers/images.lock.json)
#   KIT_BUILD_TIMES    a TSV the build seconds and sizes are appended to (default build/images/cpu-builds.tsv)
#   KIT_KEEP_OLD_IMAGES=1  keep the superseded (untagged) builds of each variant (removed by default,
#                      except transformers-5.17's)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
kit_require_root
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(transformers-5.17 transformers-5.11 gliner2 gliclass gguf vllm)
wheelhouse=${KIT_WHEELHOUSE:-$HOME/.cache/kit/wheelhouse}
times=${KIT_BUILD_TIMES:-build/images/cpu-builds.tsv}
mkdir -p "$(dirname "$times")" "$wheelhouse"
bash scripts/images/tools.sh | sed 's/^/  /'
for name in "${names[@]}"; do
  [ "$name" != gguf ] || bash scripts/images/gguf-cpu-wheel.sh "$wheelhouse" | sed 's/^/  /'
  [ "$name" != vllm ] || bash scripts/images/base-plus.sh kit/base:bookworm-numa libnuma1 | sed 's/^/  /'
  t=$(date +%s)
  .venv/bin/kit images build "$name" --variant cpu --wheelhouse "$wheelhouse" --quiet
  s=$(( $(date +%s) - t ))
  tag=$(.venv/bin/python -c 'import sys; from kit.images.spec import target; print(target(sys.argv[1], "cpu").tag)' "$name")
  size=$(docker image inspect -f '{{.Size}}' "$tag")
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$tag" "$s" "$size" >>"$times"
  step "$name: $tag built in ${s}s, $(( size / 1000000 )) MB"
  # superseded builds of this variant (untagged now; 0.6 to 3.9 GB each) go, unless a container uses
  # them or KIT_KEEP_OLD_IMAGES=1; never transformers-5.17's, which CI's test sessions use by id
  if [ "${KIT_KEEP_OLD_IMAGES:-0}" != 1 ] && [ "$name" != transformers-5.17 ]; then
    for id in $(docker images -q -f dangling=true -f "label=kit.backend=$name" -f label=kit.variant=cpu); do
      docker rmi "$id" >/dev/null 2>&1 || true
    done
  fi
done
