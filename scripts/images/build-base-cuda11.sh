#!/usr/bin/env bash
# Usage: scripts/images/build-base-cuda11.sh [TAG]     (root; default TAG kit/base:bookworm-cuda11-build)
#
# The build stage's base of the gguf cuda11 variant (images.toml [image.gguf.variants.cuda11],
# containers/gguf/Dockerfile.cuda11): kit/base:bookworm-build (scripts/images/build-base.sh: the base
# plus g++ and make) plus Debian 12's CUDA 11.8 toolkit (nvcc, headers, cudart, cuBLAS) and g++-11, the
# newest host compiler nvcc 11.8 accepts (bookworm's g++ is 12). Why Debian: CUDA 13 (PyPI's nvcc, the
# cuda variant) dropped Volta (sm_70), and PyPI's cu11/cu12 nvcc wheels hold ptxas alone (no nvcc or
# cicc), so a compiler that still targets V100s comes from bookworm's non-free component.
# The packages are installed by apt in a docker build with the network (deb.debian.org): apt checks
# the suite's signed InRelease with the keyring the base carries (debian-archive-keyring), so nothing
# unsigned enters; the two top packages are pinned to exact versions (their dependencies come from the
# same bookworm point release). Unlike base-plus.sh (offline dpkg of the host's .debs) this needs
# non-free, which the host's sources do not enable. About 66 packages, 90 to 110 s, ~5 GB (cuBLAS and
# the other CUDA libraries). A build stage's base only: no final image is built on it.
# Does nothing when TAG exists and was made from the same kit/base:bookworm-build and the same
# Dockerfile below (a label, kit.base.cuda11, as base-plus.sh's kit.base.plus).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
kit_require_root
tag=${1:-kit/base:bookworm-cuda11-build}
base=kit/base:bookworm-build
# build-base.sh does nothing when kit/base:bookworm-build is up to date
bash scripts/images/build-base.sh "$base" | sed 's/^/  /'
cuda_pkg="nvidia-cuda-toolkit=11.8.89~11.8.0-5~deb12u1"
gxx_pkg="g++-11=11.3.0-12"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cat >"$work/Dockerfile" <<EOF
FROM $base
# bookworm with non-free (nvidia-cuda-toolkit and its libraries live there); apt verifies the
# InRelease signature against /usr/share/keyrings and /etc/apt/trusted.gpg.d of the base.
RUN set -eu; \\
    echo 'deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware' >/etc/apt/sources.list; \\
    apt-get update -qq; \\
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $cuda_pkg $gxx_pkg; \\
    apt-get clean; rm -rf /var/lib/apt/lists/*; \\
    nvcc --version | tail -2; g++-11 --version | head -1
EOF
key=$({ docker image inspect -f '{{.Id}}' "$base"; cat "$work/Dockerfile"; } | sha256sum | cut -c1-16)
if [ "$(docker image inspect -f '{{index .Config.Labels "kit.base.cuda11"}}' "$tag" 2>/dev/null || true)" = "$key" ]; then
  step "$tag is up to date ($cuda_pkg $gxx_pkg)"
  exit 0
fi
echo "LABEL kit.base.cuda11=$key kit.base.cuda11.packages=\"$cuda_pkg $gxx_pkg\"" >>"$work/Dockerfile"
t=$(date +%s)
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$work" >/dev/null
step "$tag: $base plus $cuda_pkg $gxx_pkg in $(( $(date +%s) - t ))s ($(docker image inspect -f '{{.Id}}' "$tag" | cut -c1-19))"
