#!/usr/bin/env bash
# Usage: scripts/dev/packages.sh        (root, Debian/Ubuntu)
#
# Every Debian package the test suite and the dev services use, installed in one apt run (one
# `apt-get update`, one dpkg pass) instead of one per service script: shellcheck and git for the
# tests; docker.io, squashfs tools and debootstrap for images; Slurm, munge, PostgreSQL and OAR
# for the dev clusters; openssh for the frontend; a C/C++ tool chain and CMake for llama.cpp;
# chromium (headless) and a font for the HTML report's browser test.
# No daemon is started (policy-rc.d): the scripts in scripts/dev start their own. Each service
# script still installs what it needs itself when run alone; this only does it once, up front.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

PACKAGES=(
  shellcheck git
  docker.io squashfs-tools squashfs-tools-ng util-linux debootstrap
  slurmctld slurmd slurm-client munge
  postgresql oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql
  openssh-server openssh-client
  build-essential cmake ninja-build
  chromium fonts-dejavu-core
)

kit_require_root
command -v apt-get >/dev/null || die "apt-get not found: install the equivalents of ${PACKAGES[*]} by hand"
missing=$(kit_missing_pkgs "${PACKAGES[@]}" | wc -l)
need_pkgs "${PACKAGES[@]}"
step "$((${#PACKAGES[@]} - missing)) of ${#PACKAGES[@]} were installed already; all present now"
