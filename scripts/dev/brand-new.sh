#!/usr/bin/env bash
# Usage: scripts/dev/brand-new.sh --yes [CLONE_DIR]      (root, Debian; DESTRUCTIVE)
#
# Runs CI as a brand-new machine would: first makes this machine one, then starts `CI=true bash
# .ci/run` under nohup in a fresh clone of this checkout's HEAD, and returns at once.
#   1. stops every service the dev scripts start (OAR, Slurm, the sshd frontend, dockerd) and the
#      daemons they leave (containerd, munged, PostgreSQL, MariaDB);
#   2. removes Docker's images, containers, volumes and build cache (/var/lib/docker, containerd);
#   3. purges (apt-get purge, then autoremove --purge) every Debian package that the set-up scripts
#      install, but those a Debian 12 base machine has (scripts/dev/packages.sh --list base), and the
#      files kit's scripts leave (policy-rc.d, locks, the apt stamp, the user `kit`);
#   4. empties the caches (pip, uv, kit's wheelhouse and llama.cpp wheel, Hugging Face) and
#      /tmp/kit-*, /var/tmp/kit-*, /tmp/pytest-of-*; root's home back to mode 700;
#   5. clones HEAD into CLONE_DIR (default: a folder `kit-brand-new-ci` beside this checkout, so that
#      ../shared is found as CI finds it) and starts `.ci/run` there under nohup, HOME an empty folder
#      and stdin closed, as CI starts it. Its output goes to CLONE_DIR.log, its exit status to
#      CLONE_DIR.rc; the phase table is at the end of the log.
# Without --yes it prints what it would purge and stops.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"
REPO=$(cd "$HERE/../.." && pwd)

# Packages the service scripts install beyond packages.sh's list (slurm.sh's accounting database).
EXTRA=(slurmdbd mariadb-server)

mapfile -t base < <(bash "$HERE/packages.sh" --list base)
mapfile -t all < <(bash "$HERE/packages.sh" --list all)
purge=()
for p in "${all[@]}" "${EXTRA[@]}"; do
  printf '%s\n' "${base[@]}" | grep -qx -- "$p" || purge+=("$p")
done
mapfile -t purge < <(printf '%s\n' "${purge[@]}" | sort -u)

if [ "${1:-}" != --yes ]; then
  echo "would stop kit's dev services, remove Docker's data and purge: ${purge[*]}"
  echo "and keep: ${base[*]}; run again with --yes to do it and start CI"
  exit 0
fi
kit_require_root
clone=${2:-$(dirname "$REPO")/kit-brand-new-ci}
case $clone in /*) ;; *) clone=$PWD/$clone ;; esac

# 1. services
for s in oar slurm sshd dockerd; do
  bash "$HERE/$s.sh" stop >/dev/null 2>&1 || true
done
for d in dockerd containerd slurmctld slurmd slurmdbd munged mariadbd Almighty; do
  pkill -x "$d" 2>/dev/null || true
done
pkill -f '/usr/lib/oar/' 2>/dev/null || true
pkill -u postgres 2>/dev/null || true
sleep 2
step "services stopped"

# 2. Docker's data (mounts of running containers first)
grep -oE ' /(var/lib/docker|run/docker)[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
rm -rf /var/lib/docker /var/lib/containerd /run/docker /run/containerd /etc/docker
step "Docker's images, containers and build cache removed"

# 3. packages and what kit's scripts leave
installed=()
for p in "${purge[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] && installed+=("$p")
done
if [ "${#installed[@]}" -gt 0 ]; then
  must "$KIT_APT_LOG" "apt-get purge" apt-get purge -y -q "${installed[@]}"
fi
must "$KIT_APT_LOG" "apt-get autoremove" apt-get autoremove --purge -y -q
step "purged: ${installed[*]:-(none was installed)}"
rm -f /usr/sbin/policy-rc.d "$KIT_APT_STAMP" /run/lock/kit-*.lock
# (the data of packages a base machine keeps, PostgreSQL's cluster, is left: purging removes the rest)
rm -rf /etc/oar /var/lib/oar /etc/slurm /var/lib/slurm /var/spool/slurm* \
  /etc/munge /var/lib/munge /etc/kit-sshd /etc/ssh/ssh_config.d/kit-frontend.conf /run/kit-* /var/log/kit-*
id kit >/dev/null 2>&1 && userdel -r kit 2>/dev/null || true
# tests that run kit as user kit open root's home for traversal (tests/services.py); a new machine's is 700
chmod 700 "$(getent passwd root | cut -d: -f6)"

# 4. caches and temporary files
rm -rf "${HOME:?}/.cache/pip" "$HOME/.cache/uv" "$HOME/.cache/kit" "$HOME/.cache/huggingface" \
  /tmp/kit-* /var/tmp/kit-* /tmp/pytest-of-*
step "caches emptied"

# 5. a fresh clone, CI started under nohup
rm -rf "$clone" "$clone.home" "$clone.rc"
git clone -q "$REPO" "$clone"
mkdir -p "$clone.home"
( cd "$clone" && nohup env -u VIRTUAL_ENV HOME="$clone.home" CI=true bash -c 'bash .ci/run; echo $? >"$0.rc"' "$clone" \
    </dev/null >"$clone.log" 2>&1 & )
step "CI started in $clone (HEAD $(git -C "$clone" rev-parse --short HEAD)); log $clone.log, exit status in $clone.rc"
