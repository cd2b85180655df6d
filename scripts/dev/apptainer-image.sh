#!/usr/bin/env bash
# Usage: scripts/dev/apptainer-image.sh [TAG] [verify]        (default TAG: kit/apptainer:sid)
#
# Apptainer is not packaged for Debian 12 (only for sid, which needs a newer libc), so tests run it
# inside a helper image: kit/base:sid (built by scripts/bootstrap-base.sh if missing) plus sid's
# apptainer, squashfs-tools, squashfuse, fuse2fs and ca-certificates, and a user kit (uid 1000).
# Does nothing if TAG exists. The last line printed is the image id.
#   verify  also build a SIF from `docker save kit/base:bookworm` (as root in the helper) and run
#           `apptainer exec --unsquash x.sif python3 -c 'print(1)'` as uid 1000. Exec needs
#           --security-opt seccomp=unconfined, apparmor=unconfined, systempaths=unconfined
#           (user namespaces, /proc mounts); root inside the helper cannot exec, and
#           `docker run --privileged` may be refused by the host ("unable to apply caps").
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

TAG=${1:-kit/apptainer:sid}
ACTION=${2:-build}
BASE=kit/base:sid
LOG=$KIT_LOG_DIR/kit-apptainer-image.log
EXEC_OPTS=(--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined)

dockerfile() {
  cat <<DOCKERFILE
FROM $BASE
# The sid Release file of a snapshot mirror is past its Valid-Until date.
RUN apt-get -o Acquire::Check-Valid-Until=false update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      apptainer squashfs-tools squashfuse fuse2fs ca-certificates \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \\
 && useradd -m -u 1000 -s /bin/bash kit \\
 && apptainer --version
LABEL kit.image=apptainer-helper kit.base=$BASE
CMD ["/bin/bash"]
DOCKERFILE
}

build() {
  local id
  if id=$("$KIT_DOCKER" image inspect -f '{{.Id}}' "$TAG" 2>/dev/null); then
    step "image $TAG already exists"
    echo "$id"
    return 0
  fi
  "$BASH" "$HERE/../bootstrap-base.sh" sid "$BASE" | sed 's/^/  /'
  step "building $TAG from $BASE (apt-get in sid)"
  # The classic builder: a newer CLI first in PATH may lack buildx, and nothing here needs BuildKit.
  if ! dockerfile | quiet_stdin "$LOG" env DOCKER_BUILDKIT=0 "$KIT_DOCKER" build --pull=false -t "$TAG" -; then
    die "docker build of $TAG failed" "$LOG"
  fi
  id=$("$KIT_DOCKER" image inspect -f '{{.Id}}' "$TAG")
  step "built $TAG ($("$KIT_DOCKER" run --rm "$TAG" apptainer --version), $("$KIT_DOCKER" image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}'))"
  echo "$id"
}

# quiet_stdin LOG CMD...: like lib's quiet, but CMD reads this function's stdin.
quiet_stdin() {
  local log=$1
  shift
  printf '\n=== %s %s: %s\n' "$(date -u +%FT%TZ)" "$KIT_NAME" "$*" >>"$log"
  "$@" >>"$log" 2>&1
}

WORK=''
cleanup() { [ -z "$WORK" ] || rm -rf "$WORK"; }

verify() {
  "$BASH" "$HERE/../bootstrap-base.sh" bookworm kit/base:bookworm | sed 's/^/  /'
  trap cleanup EXIT
  WORK=$(mktemp -d /var/tmp/kit-apptainer-verify.XXXXXX)
  chmod 755 "$WORK"
  must "$LOG" "docker save kit/base:bookworm" "$KIT_DOCKER" save kit/base:bookworm -o "$WORK/x.tar"
  step "saved kit/base:bookworm ($(du -m "$WORK/x.tar" | cut -f1) MB)"
  must "$LOG" "apptainer build (as root in $TAG)" "$KIT_DOCKER" run --rm -v "$WORK:/w" "$TAG" \
    apptainer build /w/x.sif docker-archive:///w/x.tar
  chmod 644 "$WORK/x.sif"
  step "built x.sif ($(du -m "$WORK/x.sif" | cut -f1) MB)"
  local out
  out=$("$KIT_DOCKER" run --rm --user 1000:1000 "${EXEC_OPTS[@]}" -v "$WORK:/w:ro" "$TAG" \
    apptainer exec --unsquash /w/x.sif python3 -c 'print(1)' 2>>"$LOG") ||
    die "apptainer exec as uid 1000 failed" "$LOG"
  [ "$(tail -n 1 <<<"$out")" = 1 ] || die "apptainer exec printed '$out', not 1" "$LOG"
  step "apptainer exec --unsquash x.sif python3 as uid 1000: printed 1"
  cleanup
}

kit_require_root
kit_lock "apptainer-image-${TAG//[^A-Za-z0-9._-]/_}" "$TAG" "$ACTION"
kit_ensure_docker
case $ACTION in
  build) build ;;
  verify) build && verify ;;
  *) die "usage: $0 [TAG] [build|verify]" ;;
esac
