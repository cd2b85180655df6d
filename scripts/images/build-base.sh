#!/usr/bin/env bash
# Usage: scripts/images/build-base.sh [TAG]     (root; default TAG kit/base:bookworm-build)
#
# The base of build stages that compile (the gguf CUDA variant's llama.cpp): kit/base:bookworm plus
# g++ and make with every dependency the base lacks (the closure `apt-cache depends --recurse`
# gives on this Debian 12 host, less the base's installed packages), installed offline by
# scripts/images/base-plus.sh. A build stage's base only: no final image is built on it, so the
# compiler never reaches an image kit ships. Does nothing when TAG is up to date.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
kit_require_root
tag=${1:-kit/base:bookworm-build}
base=kit/base:bookworm
docker image inspect "$base" >/dev/null 2>&1 || bash scripts/bootstrap-base.sh bookworm "$base" | sed 's/^/  /'
have=$(docker run --rm --network none "$base" dpkg-query -W -f '${Package}\n')
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances g++ make | grep -v '^[ <]' | sort -u | grep -vxF -f <(echo "$have"))
[ ${#pkgs[@]} -gt 0 ] || die "no packages to add to $base (apt-cache depends gave none)"
bash scripts/images/base-plus.sh "$tag" "${pkgs[@]}"
