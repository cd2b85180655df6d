#!/usr/bin/env bash
# Usage: scripts/dev/dockerd.sh [start|stop|status]
#
# A Docker engine for tests and image builds on a machine without systemd.
#   start   if `docker info` answers, nothing to do; otherwise install Debian's docker.io when
#           dockerd is missing, start dockerd in the background (log /var/log/kit-dockerd.log,
#           pid file /run/kit-dockerd.pid) and wait up to 60 s for `docker info`.
#           dockerd starts and supervises its own containerd when no system containerd socket
#           exists, so containerd needs no separate start.
#   stop    stop the dockerd this script started (by its pid file); an engine started some other
#           way is left alone.
#   status  exit 0 and print the server version if the engine answers, else exit 3.
# Env: DOCKER (client binary; default: first docker in PATH), DOCKERD_WAIT (seconds, default $KIT_START_WAIT: 180).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

PIDFILE=/run/kit-dockerd.pid
LOG=/var/log/kit-dockerd.log
CONTAINERD_PID=/var/run/docker/containerd/containerd.pid
WAIT=${DOCKERD_WAIT:-$KIT_START_WAIT}

answers() { timeout 10 "$KIT_DOCKER" info >/dev/null 2>&1; }
server_version() { timeout 10 "$KIT_DOCKER" version --format '{{.Server.Version}}' 2>/dev/null || echo '?'; }

start() {
  kit_docker_cli
  if answers; then
    step "engine already answers (server $(server_version))"
    return 0
  fi
  if ! command -v dockerd >/dev/null || [ ! -x "$KIT_DOCKER" ]; then
    need_pkgs docker.io
    kit_docker_cli
  fi
  local pid
  if pid=$(pid_of "$PIDFILE"); then
    step "dockerd (pid $pid) is running but not answering yet; waiting"
  else
    rm -f "$PIDFILE"
    # After a killed dockerd, its containerd may linger as a zombie: dockerd would then wait on
    # "containerd is still running" until it gives up. Forget a containerd that is not alive.
    if [ -e "$CONTAINERD_PID" ] && ! pid_of "$CONTAINERD_PID" >/dev/null; then
      rm -f "$CONTAINERD_PID"
    fi
    mkdir -p "$(dirname "$LOG")"
    printf '\n=== %s kit dockerd.sh start\n' "$(date -u +%FT%TZ)" >>"$LOG"
    setsid dockerd --pidfile "$PIDFILE" </dev/null >>"$LOG" 2>&1 &
    pid=$!
    step "started dockerd (pid $pid, log $LOG)"
  fi
  local end=$(( ${EPOCHREALTIME//[!0-9]/} + WAIT * 1000000 ))
  until answers; do
    kill -0 "$pid" 2>/dev/null || die "dockerd (pid $pid) exited during startup" "$LOG"
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$end" ] || die "dockerd (pid $pid) did not answer 'docker info' within ${WAIT}s" "$LOG"
    sleep 0.5
  done
  step "engine answers (server $(server_version), pid $pid)"
}

stop() {
  kit_docker_cli
  if pid_of "$PIDFILE" >/dev/null; then
    stop_pidfile "$PIDFILE" dockerd 30
  elif answers; then
    step "an engine answers but was not started by this script (no $PIDFILE); leaving it"
  else
    rm -f "$PIDFILE"
    step "not running"
  fi
}

status() {
  kit_docker_cli
  if answers; then
    local pid
    pid=$(pid_of "$PIDFILE") || pid="not ours"
    echo "running: server $(server_version), pid $pid"
  else
    echo "not running"
    return 3
  fi
}

action=${1:-start}
case $action in
  start | stop)
    kit_require_root
    kit_lock dockerd "$action"
    "$action"
    ;;
  status) status ;;
  *) die "usage: $0 [start|stop|status]" ;;
esac
