#!/usr/bin/env bash
# Usage: scripts/images/image.sh [--print] NAME [VARIANT]     (what `make image-NAME [VARIANT=...]` runs)
#
# Builds image NAME of containers/images.toml in the variant that was built and linted on this project's
# machines, unless VARIANT names another:
#   cuda      the default where the image has one (transformers-5.17, gguf, vllm): the CUDA build on the
#             bootstrapped Debian base, offline from the wheelhouse, no registry (README: CUDA variants
#             without a registry; gguf's compiles llama.cpp for Hopper, sm_90, only);
#   registry  the default of the others (transformers-5.11, gliner2, gliclass): the Dockerfile on its
#             nvidia/cuda base pinned by digest, which needs a registry; for any image, its registry build
#             (gguf's: CUDA 12.8 for Volta to Hopper, 70;75;80;86;89;90);
#   cpu       the CPU variant (scripts/images/cpu-images.sh NAME: its bases and wheels first);
#   cuda11    gguf only: llama.cpp compiled with Debian 12's CUDA 11.8 for Volta (V100, sm_70), which
#             CUDA 13 dropped; no registry (README: CUDA variants without a registry).
# The Debian-based builds make kit/base:bookworm first when Docker lacks it (scripts/images/tools.sh;
# root), gguf's cuda build its build-stage base (scripts/images/build-base.sh) and its cuda11 build its
# own (scripts/images/build-base-cuda11.sh).
#   --print         print the build command it would run (after the variant is chosen), run nothing
#   KIT_WHEELHOUSE  the wheelhouse (default ~/.cache/kit/wheelhouse)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
print=0
if [ "${1:-}" = --print ]; then
  print=1
  shift
fi
name=${1:?usage: scripts/images/image.sh [--print] NAME [VARIANT]}
variant=${2:-}
kit=.venv/bin/kit
wheelhouse=${KIT_WHEELHOUSE:-$HOME/.cache/kit/wheelhouse}
has_variant() {
  .venv/bin/python -c 'import sys; from kit.images.spec import target; target(sys.argv[1], sys.argv[2])' "$1" "$2" \
    2>/dev/null
}
if [ -z "$variant" ]; then
  if has_variant "$name" cuda; then variant=cuda; else variant=registry; fi
fi
case $variant in
  registry) cmd=("$kit" images build "$name") ;;
  cpu) cmd=(bash scripts/images/cpu-images.sh "$name") ;;
  *)
    has_variant "$name" "$variant" || die "containers/images.toml: image $name has no variant $variant (registry, cpu or one it lists)"
    cmd=("$kit" images build "$name" --variant "$variant" --wheelhouse "$wheelhouse")
    ;;
esac
if [ "$print" = 1 ]; then
  printf '%s\n' "${cmd[*]}"
  exit 0
fi
if [ "$variant" != registry ] && [ "$variant" != cpu ]; then
  docker image inspect kit/base:bookworm >/dev/null 2>&1 || bash scripts/images/tools.sh
  [ "$name/$variant" != gguf/cuda ] || bash scripts/images/build-base.sh
  [ "$name/$variant" != gguf/cuda11 ] || bash scripts/images/build-base-cuda11.sh
fi
step "$name: variant $variant"
exec "${cmd[@]}"
