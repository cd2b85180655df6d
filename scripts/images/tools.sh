#!/usr/bin/env bash
# Usage: scripts/images/tools.sh        (root; what `make image-tools` runs)
#
# Host tools kit's image commands use, made ready on a Debian machine:
#   - a Docker engine (scripts/dev/dockerd.sh);
#   - squashfs-tools (mksquashfs, unsquashfs: sqsh artifacts) and squashfs-tools-ng (sqfs2tar:
#     `kit images verify` reads SIF and sqsh files without extracting them);
#   - kit/base:bookworm and kit/base:sid (scripts/bootstrap-base.sh: debootstrap + docker import);
#   - the Apptainer helper image kit/apptainer:sid (scripts/dev/apptainer-image.sh), unless the
#     host has apptainer itself.
# Idempotent: each step does nothing when its result exists.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/../dev/lib.sh"

kit_require_root
need_pkgs squashfs-tools squashfs-tools-ng util-linux
step "squashfs tools: $(mksquashfs -version | head -n 1)"
bash "$HERE/../dev/dockerd.sh" start | sed 's/^/  /'
bash "$HERE/../bootstrap-base.sh" bookworm kit/base:bookworm | sed 's/^/  /'
bash "$HERE/../bootstrap-base.sh" sid kit/base:sid | sed 's/^/  /'
if command -v apptainer >/dev/null; then
  step "host apptainer: $(apptainer --version)"
else
  bash "$HERE/../dev/apptainer-image.sh" | sed 's/^/  /'
fi
step "ready"
