#!/usr/bin/env bash
# Usage: scripts/dev/sshd.sh [start|stop|status|verify]
#
# A local "cluster frontend" over SSH for tests: an OpenSSH server of its own on 127.0.0.1:2222
# (config, host key, known_hosts and log under /etc/kit-sshd and /var/log; pid file
# /run/kit-sshd.pid), separate from any system sshd.
#   start   install openssh-server if missing; create user kit if missing; give root and kit an
#           ed25519 key (~/.ssh/id_ed25519, kept if present), both authorized for both accounts;
#           write /etc/ssh/ssh_config.d/kit-frontend.conf with the Host aliases
#             kit-frontend       -> kit@127.0.0.1:2222
#             kit-frontend-root  -> root@127.0.0.1:2222
#           (StrictHostKeyChecking accept-new, known_hosts /etc/kit-sshd/known_hosts, already
#           holding the server's key); start the server unless it runs.
#   stop    stop this server by its pid file (the system sshd is not touched).
#   status  exit 0 if the server runs and listens, else exit 3.
#   verify  `ssh kit-frontend true` and `ssh kit-frontend-root true` as root, `ssh kit-frontend true`
#           as kit; if OAR runs, `oarstat` through a ControlMaster connection.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

ADDR=127.0.0.1 PORT=2222
DIR=/etc/kit-sshd
CONF=$DIR/sshd_config
HOSTKEY=$DIR/ssh_host_ed25519_key
KNOWN=$DIR/known_hosts
PIDFILE=/run/kit-sshd.pid
CLIENT_CONF=/etc/ssh/ssh_config.d/kit-frontend.conf
LOG=$KIT_LOG_DIR/kit-sshd.log
USERS=(root kit)

home_of() { getent passwd "$1" | cut -d: -f6; }
listening() { (exec 3<>"/dev/tcp/$ADDR/$PORT") 2>/dev/null; }
running() { pid_alive "$PIDFILE" sshd && listening; }

# write_if_changed FILE MODE: replace FILE with stdin if different; 0 if it changed.
write_if_changed() {
  local file=$1 mode=$2 tmp
  tmp=$(mktemp "$file.XXXXXX")
  cat >"$tmp"
  chmod "$mode" "$tmp"
  if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$file"
}

render_sshd_config() {
  cat <<CONF
# Written by kit scripts/dev/sshd.sh: the local test frontend. Not the system sshd.
Port $PORT
ListenAddress $ADDR
HostKey $HOSTKEY
PidFile $PIDFILE
AllowUsers ${USERS[*]}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
# No PAM: no session modules (loginuid, motd, limits) to fail in containers or slow logins down.
# Accounts must then not be locked with '!' (start makes sure).
UsePAM no
PrintMotd no
PrintLastLog no
X11Forwarding no
UseDNS no
# Tests open many connections at once, or many sessions over one ControlMaster.
MaxStartups 100:30:200
MaxSessions 64
Subsystem sftp internal-sftp
CONF
}

render_client_config() {
  cat <<CONF
# Written by kit scripts/dev/sshd.sh: the local test frontend (sshd on $ADDR:$PORT).
Host kit-frontend kit-frontend-root
    HostName $ADDR
    Port $PORT
    StrictHostKeyChecking accept-new
    UserKnownHostsFile $KNOWN
    BatchMode yes
    LogLevel ERROR
Host kit-frontend
    User kit
Host kit-frontend-root
    User root
CONF
}

# ensure_client_key USER: USER's ~/.ssh/id_ed25519 and .pub (created if missing).
ensure_client_key() {
  local user=$1 home
  home=$(home_of "$user")
  if [ ! -s "$home/.ssh/id_ed25519" ]; then
    # shellcheck disable=SC2016  # expanded by the inner sh
    runuser -u "$user" -- sh -c 'umask 077 && mkdir -p "$1/.ssh" && ssh-keygen -q -t ed25519 -N "" -C "$2@kit-frontend" -f "$1/.ssh/id_ed25519"' \
      sh "$home" "$user" || die "ssh-keygen for $user failed"
    step "created $home/.ssh/id_ed25519"
  fi
  if [ ! -s "$home/.ssh/id_ed25519.pub" ]; then
    ssh-keygen -y -f "$home/.ssh/id_ed25519" >"$home/.ssh/id_ed25519.pub" || die "cannot derive $home/.ssh/id_ed25519.pub"
  fi
}

# authorize USER KEYLINE...: add each key to USER's authorized_keys unless present.
authorize() {
  local user=$1 home file key added=0
  shift
  home=$(home_of "$user")
  file=$home/.ssh/authorized_keys
  install -d -m 700 -o "$user" -g "$(id -gn "$user")" "$home/.ssh"
  touch "$file"
  for key in "$@"; do
    grep -qxF "$key" "$file" || { echo "$key" >>"$file"; added=$((added + 1)); }
  done
  chown "$user:$(id -gn "$user")" "$file"
  chmod 600 "$file"
  [ "$added" = 0 ] || step "authorized $added key(s) for $user"
}

# unlock USER: without PAM, sshd refuses accounts whose password starts with '!' even for keys.
unlock() {
  local pw
  pw=$(getent shadow "$1" | cut -d: -f2)
  if [ "${pw:0:1}" = '!' ]; then
    if [ "$pw" = '!' ] || [ "$pw" = '!!' ] || [ "$pw" = '!*' ]; then
      usermod -p '*' "$1"
      step "account $1 was locked ('$pw'): set to '*' (still no password login)"
    else
      die "account $1 has a locked password hash; sshd (UsePAM no) would refuse it. Unlock it with 'usermod -U $1' or remove the hash"
    fi
  fi
}

start() {
  command -v /usr/sbin/sshd >/dev/null 2>&1 || need_pkgs openssh-server
  [ -x /usr/bin/ssh ] || need_pkgs openssh-client
  kit_user
  install -d -m 755 "$DIR" /etc/ssh/ssh_config.d
  install -d -m 755 /run/sshd  # privilege separation directory
  if [ ! -s "$HOSTKEY" ]; then
    ssh-keygen -q -t ed25519 -N '' -C kit-frontend -f "$HOSTKEY" || die "host key generation failed"
    step "created host key $HOSTKEY"
  fi

  local u keys=()
  for u in "${USERS[@]}"; do
    unlock "$u"
    ensure_client_key "$u"
    keys+=("$(head -n 1 "$(home_of "$u")/.ssh/id_ed25519.pub")")
  done
  for u in "${USERS[@]}"; do authorize "$u" "${keys[@]}"; done

  # The server's key is known in advance: nobody has to write known_hosts (kit could not).
  printf '[%s]:%s %s\n' "$ADDR" "$PORT" "$(cut -d' ' -f1-2 "$HOSTKEY.pub")" |
    write_if_changed "$KNOWN" 644 && step "wrote $KNOWN"
  render_client_config | write_if_changed "$CLIENT_CONF" 644 && step "wrote $CLIENT_CONF (kit-frontend, kit-frontend-root)"

  local changed=0
  render_sshd_config | write_if_changed "$CONF" 644 && changed=1
  must "$LOG" "sshd -t (config check)" /usr/sbin/sshd -t -f "$CONF"

  local pid
  if pid=$(pid_of "$PIDFILE") && pid_alive "$PIDFILE" sshd; then
    if [ "$changed" = 1 ]; then
      kill -HUP "$pid"
      sleep 0.3
      step "config changed: sshd (pid $pid) reloaded"
    fi
  else
    rm -f "$PIDFILE"
    # sshd must be started by absolute path (it re-executes itself); it daemonizes.
    must "$LOG" "starting sshd" /usr/sbin/sshd -f "$CONF" -E "$LOG"
  fi
  wait_until "$KIT_START_WAIT" running || die "sshd is not listening on $ADDR:$PORT after ${KIT_START_WAIT}s" "$LOG"
  step "sshd listening on $ADDR:$PORT (pid $(pid_of "$PIDFILE"))"
}

stop() {
  stop_pidfile "$PIDFILE" "kit sshd"
}

status() {
  if running; then
    echo "running: pid $(pid_of "$PIDFILE"), $ADDR:$PORT"
  else
    echo "not running"
    return 3
  fi
}

verify() {
  local out who
  who=$(ssh kit-frontend whoami </dev/null 2>&1) || die "ssh kit-frontend failed: $who" "$LOG"
  [ "$who" = kit ] || die "ssh kit-frontend logged in as '$who', not kit"
  who=$(ssh kit-frontend-root whoami </dev/null 2>&1) || die "ssh kit-frontend-root failed: $who" "$LOG"
  [ "$who" = root ] || die "ssh kit-frontend-root logged in as '$who', not root"
  out=$(cd / && runuser -u kit -- env HOME="$(home_of kit)" ssh kit-frontend true </dev/null 2>&1) ||
    die "ssh kit-frontend as user kit failed: $out" "$LOG"
  step "ssh kit-frontend (kit) and kit-frontend-root (root) work, from root and from kit"
  if command -v oarstat >/dev/null && "$HERE/oar.sh" status >/dev/null 2>&1; then
    local cp
    cp=$(mktemp -u /tmp/kit-cm.XXXXXX)
    out=$(ssh -o ControlMaster=auto -o "ControlPath=$cp" -o ControlPersist=60 kit-frontend oarstat </dev/null 2>&1) ||
      die "oarstat over a ControlMaster connection failed: $out" "$LOG"
    [ -S "$cp" ] || die "no ControlMaster socket at $cp"
    out=$(ssh -o "ControlPath=$cp" kit-frontend 'oarstat -u kit | wc -l' </dev/null 2>&1) ||
      die "a second command through the master failed: $out"
    ssh -o "ControlPath=$cp" -O exit kit-frontend 2>/dev/null || true
    step "oarstat through a ControlMaster connection works"
  else
    step "OAR is not running: skipped the oarstat check"
  fi
}

action=${1:-start}
case $action in
  start | stop)
    kit_require_root
    kit_lock sshd "$action"
    "$action"
    ;;
  status) status ;;
  verify) kit_require_root && verify ;;
  *) die "usage: $0 [start|stop|status|verify]" ;;
esac
