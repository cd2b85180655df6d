#!/usr/bin/env bash
# Usage: scripts/bootstrap-base.sh SUITE TAG        e.g.  bookworm kit/base:bookworm  |  sid kit/base:sid
#
# Build a Debian base image without a container registry: debootstrap --variant=minbase SUITE from
# the machine's configured Debian mirror, then `docker import` it as TAG. Does nothing if TAG exists.
#   bookworm (and any non-sid suite): ca-certificates python3 python3-venv python3-pip, and checks
#                                     that `python3 -m venv` and `python3 -m pip` work;
#   sid / unstable:                   ca-certificates only.
# The image gets PATH, CMD ["/bin/bash"], /usr/sbin/policy-rc.d (exit 101), and labels
# kit.base.suite, kit.base.snapshot (Date of the suite's Release file), kit.base.mirror.
# The last line printed is the image id.
# Env: KIT_MIRROR (override the mirror), KIT_INCLUDE (override the package list, comma-separated).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/dev/lib.sh"

[ $# -eq 2 ] || die "usage: $0 SUITE TAG   (e.g. bookworm kit/base:bookworm)"
SUITE=$1 TAG=$2
[[ $SUITE =~ ^[a-z][a-z0-9-]*$ ]] || die "bad suite name: $SUITE"
LOG=$KIT_LOG_DIR/kit-bootstrap-base.log

# mirror_candidates: "URI SUITE" for every enabled `deb` source (one-line and deb822 formats).
mirror_candidates() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk '$1 == "deb" { i = 2
           if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
           print $i, $(i + 1) }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         { types = ""; uris = ""; suites = ""; enabled = "yes"
           for (i = 1; i <= NF; i++) {
             line = $i
             if (line ~ /^[ \t]*#/) continue
             split(line, kv, ":"); key = tolower(kv[1]); val = substr(line, length(kv[1]) + 2)
             if (key == "types") types = val; else if (key == "uris") uris = val
             else if (key == "suites") suites = val; else if (key == "enabled") enabled = tolower(val)
           }
           if (types !~ /(^|[ \t])deb([ \t]|$)/ || enabled ~ /no/) next
           nu = split(uris, u, /[ \t]+/); ns = split(suites, s, /[ \t]+/)
           for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++) if (u[a] != "" && s[b] != "") print u[a], s[b]
         }' "$f"
  done
}

# pick_mirror: the first configured main-archive mirror (not security, updates or backports).
pick_mirror() {
  local uri suite
  while read -r uri suite; do
    case $uri in http://* | https://* | file:/*) ;; *) continue ;; esac
    case $uri in *security*) continue ;; esac
    case $suite in *-security | *-updates | *-backports | */*) continue ;; esac
    echo "${uri%/}"
    return 0
  done < <(mirror_candidates)
  echo http://deb.debian.org/debian
}

# import_rootfs: tar the rootfs into `docker import` with the image settings and labels.
import_rootfs() {
  tar --numeric-owner -C "$ROOT" -c . | "$KIT_DOCKER" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL kit.base.suite=$SUITE kit.base.snapshot=$SNAPSHOT kit.base.mirror=$MIRROR kit.base.include=$INCLUDE org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --message "debootstrap --variant=minbase $SUITE ($SNAPSHOT) from $MIRROR" - "$TAG"
}

WORK='' ROOT='' SNAPSHOT='' MIRROR='' INCLUDE=''
cleanup() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  # debootstrap mounts /proc and /sys in the target: never rm -rf through a live mount.
  awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  if mountpoint -q "$WORK"; then umount "$WORK" || umount -l "$WORK"; fi
  rm -rf --one-file-system "$WORK"
}

main() {
  kit_require_root
  kit_lock "bootstrap-${TAG//[^A-Za-z0-9._-]/_}" "$SUITE" "$TAG"
  kit_ensure_docker
  local id
  if id=$("$KIT_DOCKER" image inspect -f '{{.Id}}' "$TAG" 2>/dev/null); then
    step "image $TAG already exists"
    echo "$id"
    return 0
  fi
  need_pkgs debootstrap
  local mirror include
  mirror=${KIT_MIRROR:-$(pick_mirror)}
  case $SUITE in
    sid | unstable) include=ca-certificates ;;
    *) include=ca-certificates,python3,python3-venv,python3-pip ;;
  esac
  include=${KIT_INCLUDE:-$include}
  step "debootstrap --variant=minbase $SUITE from $mirror (include $include)"

  trap cleanup EXIT
  WORK=$(mktemp -d /var/tmp/kit-bootstrap.XXXXXX)
  # On tmpfs the rootfs is gone with one umount (rm -rf of ~12k files takes 10-35 s on slow disks).
  if mount -t tmpfs -o size="${KIT_BOOTSTRAP_TMPFS_SIZE:-4g}",mode=0755 kit-bootstrap "$WORK" 2>/dev/null; then
    step "work dir $WORK (tmpfs)"
  else
    step "work dir $WORK (disk; tmpfs mount not permitted)"
  fi
  local root=$WORK/rootfs
  if ! quiet "$LOG" debootstrap --variant=minbase --include="$include" "$SUITE" "$root" "$mirror"; then
    [ -s "$root/debootstrap/debootstrap.log" ] && cat "$root/debootstrap/debootstrap.log" >>"$LOG"
    die "debootstrap $SUITE from $mirror failed" "$LOG"
  fi
  step "debootstrap done ($(du -sm --one-file-system "$root" | cut -f1) MB)"

  if [[ ,$include, == *,python3,* ]]; then
    must "$LOG" "python3 -m venv check in the $SUITE rootfs" chroot "$root" python3 -m venv --help
    must "$LOG" "python3 -m pip check in the $SUITE rootfs" chroot "$root" python3 -m pip --version
    step "python3 $(chroot "$root" python3 -c 'import platform; print(platform.python_version())'), venv and pip present"
  fi

  # The suite's snapshot date: the Date field of the Release file debootstrap fetched.
  local rel snapshot=unknown d
  rel=$(find "$root/var/lib/apt/lists" -maxdepth 1 \( -name '*_InRelease' -o -name '*_Release' \) 2>/dev/null | head -n 1)
  if [ -n "$rel" ] && d=$(sed -n 's/^Date: //p' "$rel" | head -n 1) && [ -n "$d" ]; then
    snapshot=$(date -u -d "$d" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "$d")
  fi

  # Slim and neutralize: no apt lists or caches, no host resolver or name, no daemon starts.
  rm -rf "${root:?}"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/bootstrap.log
  mkdir -p "$root/var/lib/apt/lists/partial"
  : >"$root/etc/resolv.conf"
  echo localhost >"$root/etc/hostname"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"

  SNAPSHOT=$snapshot MIRROR=$mirror INCLUDE=$include ROOT=$root
  must "$LOG" "docker import of $TAG" import_rootfs
  id=$("$KIT_DOCKER" image inspect -f '{{.Id}}' "$TAG")
  step "imported $TAG (suite $SUITE, snapshot $snapshot, $("$KIT_DOCKER" image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}'))"
  cleanup
  step "removed the work dir"
  echo "$id"
}

main
