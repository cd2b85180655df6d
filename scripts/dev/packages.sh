#!/usr/bin/env bash
# Usage: scripts/dev/packages.sh [--fast-tier]       (root, Debian/Ubuntu)
#        scripts/dev/packages.sh --list base|fast-tier|all
#
# Every Debian package the test suite and the dev services use, installed in one apt run (one
# `apt-get update`, one dpkg pass) instead of one per service script: shellcheck and git for the
# tests; docker.io, squashfs tools and debootstrap for images; Slurm, munge, PostgreSQL and OAR
# for the dev clusters; openssh for the frontend; a C/C++ tool chain and CMake for llama.cpp;
# chromium (headless) and a font for the HTML report's browser test.
#   --fast-tier  only FAST_TIER, the packages of the programs the fast tier runs that a Debian 12
#                base machine lacks. scripts/test.sh installs them in the foreground before the fast
#                tier starts (the rest installs in the background while the fast tier runs), so the
#                fast tier never races the install; tests/programs.py fails a fast-tier run that
#                starts a program from any other package than these and BASE.
#   --list WHICH print the packages of BASE (what a Debian 12 base machine has besides the packages
#                of Priority required), FAST_TIER, or all that this script installs; no root needed.
# No daemon is started (policy-rc.d): the scripts in scripts/dev start their own. Each service
# script still installs what it needs itself when run alone; this only does it once, up front.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

BASE=(git util-linux openssh-client build-essential gcc g++ make dpkg-dev libc6-dev)
# fontconfig: matplotlib runs fc-list when it first builds its font cache, which kit report does in
# the fast tier's own process (tests/faults); installed first, so that it is there, or not, every time
FAST_TIER=(shellcheck fontconfig)
PACKAGES=(
  "${FAST_TIER[@]}" git
  docker.io squashfs-tools squashfs-tools-ng util-linux debootstrap
  slurmctld slurmd slurm-client munge
  postgresql oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql
  openssh-server openssh-client
  build-essential cmake ninja-build
  chromium fonts-dejavu-core
)

case ${1:-} in
  --list)
    case ${2:-} in
      base) printf '%s\n' "${BASE[@]}" ;;
      fast-tier) printf '%s\n' "${FAST_TIER[@]}" ;;
      all) printf '%s\n' "${PACKAGES[@]}" ;;
      *) die "usage: $0 --list base|fast-tier|all" ;;
    esac
    exit 0
    ;;
  --fast-tier) PACKAGES=("${FAST_TIER[@]}") ;;
  '') ;;
  *) die "usage: $0 [--fast-tier] | --list base|fast-tier|all" ;;
esac

kit_require_root
command -v apt-get >/dev/null || die "apt-get not found: install the equivalents of ${PACKAGES[*]} by hand"
n_missing=$(kit_missing_pkgs "${PACKAGES[@]}" | wc -l)
need_pkgs "${PACKAGES[@]}"
step "$((${#PACKAGES[@]} - n_missing)) of ${#PACKAGES[@]} were installed already; all present now"
