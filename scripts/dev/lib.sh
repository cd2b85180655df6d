# shellcheck shell=bash
# Shared helpers for kit's set-up scripts: the dev services (scripts/dev/*.sh), the base bootstrap
# (scripts/bootstrap-base.sh) and the virtual environments (scripts/venv.sh, scripts/backends/*.sh).
# Source it after `set -euo pipefail`; it defines functions and a few variables, and sets one ERR trap
# (with errtrace) so that no command ends a script silently under set -e: bash itself says nothing
# when a function's `return 1` or a `$(...)` that fails stops the script.
#
# Conventions:
#   - one line per step on stdout: "[  12.3s] NAME: what happened";
#   - command output goes to a log file; on failure the log's tail goes to stderr;
#   - every failure exits non-zero with a line starting "NAME: ERROR:".

KIT_NAME=${KIT_NAME:-$(basename "$0" .sh)}
KIT_LOG_DIR=${KIT_LOG_DIR:-/var/log}
KIT_APT_LOG=$KIT_LOG_DIR/kit-apt.log
# Start time in microseconds. A script re-executed under its lock (kit_lock) keeps its caller's clock.
KIT_T0=${_KIT_T0:-${EPOCHREALTIME//[!0-9]/}}
unset _KIT_T0
export DEBIAN_FRONTEND=noninteractive
# Daemons and admin tools live in sbin, which a non-login root shell (or CI runner) may lack.
case ":$PATH:" in
  *:/usr/sbin:*) ;;
  *) PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin ;;
esac

kit_elapsed() {
  local d=$(( ${EPOCHREALTIME//[!0-9]/} - KIT_T0 ))
  printf '%d.%d' $(( d / 1000000 )) $(( d / 100000 % 10 ))
}

# kit_on_error STATUS COMMAND FILE LINE: the ERR trap. Prints which command failed, where.
kit_on_error() {
  printf '[%6ss] %s: ERROR: `%s` exited %s (%s line %s)\n' "$(kit_elapsed)" "$KIT_NAME" "$2" "$1" "${3##*/}" "$4" >&2
}
set -E
trap 'kit_on_error $? "$BASH_COMMAND" "${BASH_SOURCE[0]}" "$LINENO"' ERR

# step MESSAGE...: one progress line with the elapsed time.
step() { printf '[%6ss] %s: %s\n' "$(kit_elapsed)" "$KIT_NAME" "$*"; }

warn() { printf '[%6ss] %s: WARNING: %s\n' "$(kit_elapsed)" "$KIT_NAME" "$*" >&2; }

# die MESSAGE [LOGFILE...]: print an error and the last lines of each readable log, then exit 1.
die() {
  local msg=$1 f
  shift
  printf '[%6ss] %s: ERROR: %s\n' "$(kit_elapsed)" "$KIT_NAME" "$msg" >&2
  for f in "$@"; do
    if [ -s "$f" ]; then
      printf -- '----- last %d lines of %s -----\n' "${KIT_TAIL_LINES:-25}" "$f" >&2
      tail -n "${KIT_TAIL_LINES:-25}" "$f" >&2
    fi
  done
  exit 1
}

# quiet LOG CMD...: run CMD with stdout+stderr appended to LOG (after a header line); return its status.
quiet() {
  local log=$1
  shift
  mkdir -p "$(dirname "$log")"
  printf '\n=== %s %s: %s\n' "$(date -u +%FT%TZ)" "$KIT_NAME" "$*" >>"$log"
  "$@" </dev/null >>"$log" 2>&1
}

# must LOG DESCRIPTION CMD...: like quiet, but die with DESCRIPTION and the log's tail on failure.
must() {
  local log=$1 what=$2
  shift 2
  quiet "$log" "$@" || die "$what failed (exit $?): $*" "$log"
}

kit_require_root() {
  [ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"
}

# kit_lock NAME "$@": re-run this script under an exclusive lock, so that two callers
# (two CI steps, a test fixture and a shell) never start the same service at once.
# The lock is held by flock itself (-o), so daemons started by the script do not inherit it.
kit_lock() {
  local name=$1 rc=0
  shift
  [ "${_KIT_LOCKED:-}" = "$name" ] && return 0
  mkdir -p /run/lock
  _KIT_LOCKED=$name _KIT_T0=$KIT_T0 flock -o -w "${KIT_LOCK_TIMEOUT:-900}" -E 75 \
    "/run/lock/kit-$name.lock" "$BASH" "$0" "$@" || rc=$?
  [ "$rc" = 75 ] && die "another '$name' run held /run/lock/kit-$name.lock for ${KIT_LOCK_TIMEOUT:-900}s"
  exit "$rc"
}

# ---------------------------------------------------------------- Debian packages

kit_policy_rc_d() {
  # Keep apt from starting daemons: every script here starts its own, by hand.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# created by kit scripts/dev: never start daemons from maintainer scripts\nexit 101\n' \
      >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    step "created /usr/sbin/policy-rc.d (exit 101)"
  fi
}

# kit_missing_pkgs PKG...: print the packages that are not installed.
kit_missing_pkgs() {
  local p
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] || echo "$p"
  done
}

KIT_APT_UPDATED=0
KIT_APT_STAMP=/run/kit-apt-updated
# kit_apt_update: `apt-get update` once per script, and not again within 30 minutes of a set-up
# script's earlier one (scripts/test.sh installs the fast tier's packages, then the rest: one update).
kit_apt_update() {
  [ "$KIT_APT_UPDATED" = 1 ] && return 0
  if [ -n "$(find "$KIT_APT_STAMP" -mmin -30 2>/dev/null)" ]; then
    KIT_APT_UPDATED=1
    return 0
  fi
  must "$KIT_APT_LOG" "apt-get update" apt-get -q -o DPkg::Lock::Timeout=600 update
  KIT_APT_UPDATED=1
  touch "$KIT_APT_STAMP"
  step "apt-get update done"
}

# need_pkgs PKG...: install the missing ones (apt-get update once, no recommends, no daemon starts).
need_pkgs() {
  local missing
  mapfile -t missing < <(kit_missing_pkgs "$@")
  [ "${#missing[@]}" -eq 0 ] && return 0
  kit_policy_rc_d
  # Serialize our own apt runs; DPkg::Lock::Timeout covers anybody else's.
  mkdir -p /run/lock
  exec {_kit_apt_fd}>/run/lock/kit-apt.lock
  flock -w 900 "$_kit_apt_fd" || die "timed out waiting for /run/lock/kit-apt.lock"
  mapfile -t missing < <(kit_missing_pkgs "$@")
  if [ "${#missing[@]}" -gt 0 ]; then
    kit_apt_update
    local install=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}")
    if ! quiet "$KIT_APT_LOG" "${install[@]}"; then
      # the lists of an earlier script's update may be stale by now: update and try once more
      rm -f "$KIT_APT_STAMP"
      KIT_APT_UPDATED=0
      kit_apt_update
      must "$KIT_APT_LOG" "apt-get install ${missing[*]}" "${install[@]}"
    fi
    step "installed ${missing[*]}"
  fi
  exec {_kit_apt_fd}>&-
}

# ---------------------------------------------------------------- processes

# pid_of PIDFILE: print the pid recorded in PIDFILE if that process is alive.
pid_of() {
  local pid=''
  [ -s "$1" ] || return 1
  read -r pid <"$1" || true
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  # A killed daemon whose parent is a slow reaper lingers as a zombie: that is not alive.
  local st
  st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "${st%% *}" != Z ] || return 1
  echo "$pid"
}

# pid_alive PIDFILE [COMM_REGEX]: the recorded process is alive (and its name matches).
pid_alive() {
  local pid
  pid=$(pid_of "$1") || return 1
  [ -z "${2:-}" ] || grep -qE "^($2)\$" "/proc/$pid/comm" 2>/dev/null
}

# stop_pidfiles SECONDS LABEL=PIDFILE...: SIGTERM every recorded process at once, wait up to
# SECONDS for all of them, SIGKILL the rest; remove the pid files.
stop_pidfiles() {
  local secs=$1 arg label pf pid i alive
  shift
  local -a labels=() pids=() pfs=()
  for arg in "$@"; do
    label=${arg%%=*} pf=${arg#*=}
    if pid=$(pid_of "$pf"); then
      kill -TERM "$pid" 2>/dev/null || true
      labels+=("$label") pids+=("$pid") pfs+=("$pf")
    else
      rm -f "$pf"
    fi
  done
  for ((i = 0; i < secs * 10; i++)); do
    alive=0
    for pid in "${pids[@]}"; do
      if kill -0 "$pid" 2>/dev/null && [ "$(sed 's/.*) //; s/ .*//' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
        alive=1
      fi
    done
    [ "$alive" = 1 ] || break
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    if pid_of "${pfs[$i]}" >/dev/null; then
      warn "${labels[$i]} (pid ${pids[$i]}) ignored SIGTERM for ${secs}s; sending SIGKILL"
      kill -KILL "${pids[$i]}" 2>/dev/null || true
    fi
    rm -f "${pfs[$i]}"
    step "stopped ${labels[$i]} (pid ${pids[$i]})"
  done
}

# stop_pidfile PIDFILE LABEL [SECONDS]: stop one recorded process (see stop_pidfiles).
stop_pidfile() { stop_pidfiles "${3:-20}" "$2=$1"; }

# How long a service may take to come up: on a loaded 2-core machine (apt, builds and the fast tier
# running beside it) a daemon that answers in a second when idle can take a minute. Every start
# waits on its condition for this long, never on a fixed short sleep.
KIT_START_WAIT=${KIT_START_WAIT:-180}

# wait_until SECONDS CMD...: poll CMD every 0.5 s until it succeeds; fail after SECONDS.
wait_until() {
  local secs=$1 end
  shift
  end=$(( ${EPOCHREALTIME//[!0-9]/} + secs * 1000000 ))
  until "$@" >/dev/null 2>&1; do
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$end" ] || return 1
    sleep 0.5
  done
}

# ---------------------------------------------------------------- users and docker

# kit_user: the ordinary user `kit` that submits jobs (uid 1000 when that uid is free).
kit_user() {
  id kit >/dev/null 2>&1 && return 0
  local uid_opt=()
  getent passwd 1000 >/dev/null || uid_opt=(-u 1000)
  # '*' (no password) rather than useradd's locked '!': sshd without PAM refuses locked accounts.
  useradd -m -s /bin/bash -p '*' "${uid_opt[@]}" kit
  step "created user kit (uid $(id -u kit))"
}

# The docker client: $DOCKER if set, else the first `docker` in PATH. A newer CLI earlier in PATH
# than Debian's works with the 20.10 engine (API version negotiation).
kit_docker_cli() {
  KIT_DOCKER=${DOCKER:-$(command -v docker || true)}
  [ -n "$KIT_DOCKER" ] || KIT_DOCKER=/usr/bin/docker
}

# kit_ensure_docker: make sure a Docker engine answers (starting ours through dockerd.sh).
kit_ensure_docker() {
  kit_docker_cli
  if ! timeout 20 "$KIT_DOCKER" info >/dev/null 2>&1; then
    "$BASH" "$(dirname "${BASH_SOURCE[0]}")/dockerd.sh" start | sed 's/^/  /'
    kit_docker_cli
  fi
}

# ---------------------------------------------------------------- virtual environments
# Used by scripts/venv.sh and scripts/backends/*.sh (as root or not). Every step's output goes to
# VENV/.kit-setup.log; a failing step prints its name and the log's tail (no silent exit under set -e).

# venv_lock VENV: create the folder VENV and hold its set-up lock until the script ends, so a second
# caller (a test, while CI's background set-up still runs) waits and then finds the venv ready.
# Sets KIT_VENV_LOG.
venv_lock() {
  local venv=$1 fd
  mkdir -p "$venv"
  KIT_VENV_LOG=$venv/.kit-setup.log
  exec {fd}>"$venv/.kit-setup.lock"
  if ! flock -n "$fd"; then
    step "another set-up of $venv is running; waiting for it"
    flock -w "${KIT_LOCK_TIMEOUT:-3600}" "$fd" || die "timed out waiting for $venv/.kit-setup.lock"
  fi
}

# venv_current VENV STAMP WANT: true when VENV/STAMP records WANT (the venv is up to date).
venv_current() {
  [ -x "$1/bin/python" ] && [ -f "$1/$2" ] && [ "$(cat "$1/$2")" = "$3" ]
}

# venv_create PYTHON VENV: `PYTHON -m venv VENV` unless VENV has a python already.
venv_create() {
  [ -x "$2/bin/python" ] || must "$KIT_VENV_LOG" "creating $2 with $1" "$1" -m venv "$2"
}

# venv_pip VENV ARG...: `pip ARG...` in VENV (quiet; output in the set-up log).
venv_pip() {
  local venv=$1
  shift
  must "$KIT_VENV_LOG" "pip $1 in $venv" env PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip "$@"
}

# venv_check VENV WHAT CODE: run `python -c CODE` in VENV from / (not this checkout); die naming WHAT.
venv_check() {
  local venv=$1 what=$2 code=$3
  (cd / && quiet "$KIT_VENV_LOG" "$venv/bin/python" -c "$code") || die "$what does not import in $venv" "$KIT_VENV_LOG"
}
