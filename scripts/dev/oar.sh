#!/usr/bin/env bash
# Usage: scripts/dev/oar.sh [start|stop|status|verify]
#
# A single-machine OAR 2.5.9 (Debian 12) for tests: server, node and user on localhost, PostgreSQL.
#   start   install postgresql oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql if
#           missing; start PostgreSQL; set the DB passwords (random, kept in oar.conf) before
#           creating the database; disable the epilogue's /tmp cleanup; start oar-node (OAR's own
#           sshd on port 6667) and oar-server (Almighty) through /etc/init.d; add the properties
#           host cpu core gpu gpu_mem gpu_model gpu_compute_capability gpu_compute_capability_major
#           (Grid'5000's names and types: gpu_compute_capability a string) and one resource per core
#           (2 fake GPUs shared by the cores, gpu_mem 24576, gpu_model 'fake', gpu_compute_capability
#           '8.6', gpu_compute_capability_major 8); let admission rule 16 accept the job types `night` and
#           `exotic` (Grid'5000's) if it does not already; create the submitting user `kit`.
#           Re-running it changes nothing that is already right.
#   stop    kill Almighty and OAR's sshd by their pid files, stop PostgreSQL.
#   status  exit 0 if Almighty runs and oarnodes answers, else exit 3.
#   verify  as user kit: `-t night -p "gpu_compute_capability_major>=7 AND gpu_mem>=23040"` with
#           host=1/gpu=1 runs to Terminated; `-t exotic -q default` is accepted; an array of 2
#           runs; `-p "gpu_mem>=999999"` fails at once with "There are not enough resources".
# Env: KIT_OAR_CPUSET=auto|1|0  use OAR's cgroup-v1 cpusets for jobs (auto: when the host has the
#      v1 cpuset hierarchy; without it, OAR would try to mount one, which fails on cgroup-v2-only hosts).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

CONF=/etc/oar/oar.conf
JRM=/etc/oar/job_resource_manager_cgroups.pl
ALMIGHTY_PID=/var/run/oar-server.pid
OARSSHD_PID=/var/run/oar-node_sshd.pid
LOG=$KIT_LOG_DIR/kit-oar.log
HOST=localhost
EXTRA_TYPES=(night exotic)
RULE_MARK='# kit: extra job types'
CONF_CHANGED=0

# ------------------------------------------------------------------ helpers

pg() { runuser -u postgres -- psql -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
oarsql() { pg -d oar -c "$1"; }
almighty_alive() { pid_alive "$ALMIGHTY_PID"; }
almighty_listening() {
  almighty_alive && (exec 3<>/dev/tcp/127.0.0.1/6666) 2>/dev/null && sleep 0.5 && almighty_alive
}
# almighty_orphans: live OAR server processes (user oar) that the Almighty of the pid file did not start.
almighty_orphans() {
  local d cmd oar_uid
  oar_uid=$(id -u oar 2>/dev/null) || return 0
  for d in /proc/[0-9]*; do
    [ "$(stat -c %u "$d" 2>/dev/null)" = "$oar_uid" ] || continue
    [ "$(sed 's/.*) //; s/ .*//' "$d/stat" 2>/dev/null)" = Z ] && continue
    cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
    case $cmd in "/usr/bin/perl /usr/lib/oar/Almighty"* | "Almighty: "*) echo "${d#/proc/}" ;; esac
  done
}
no_almighty_orphans() { [ -z "$(almighty_orphans)" ]; }
oarsshd_alive() { pid_alive "$OARSSHD_PID" sshd; }
# oarsshd_listeners: the pids of OAR's sshd listeners (started with OAR's config), recorded or not.
oarsshd_listeners() {
  local d cmd
  for d in /proc/[0-9]*; do
    [ "$(sed 's/.*) //; s/ .*//' "$d/stat" 2>/dev/null)" = Z ] && continue
    cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
    case $cmd in *sshd*" -f /etc/oar/sshd_config"*)
      # only the listener: its parent is not an sshd (a session's sshd is the listener's child)
      grep -q '^sshd$' "/proc/$(sed 's/.*) //' "$d/stat" | cut -d' ' -f2)/comm" 2>/dev/null || echo "${d#/proc/}" ;;
    esac
  done
}
kit_home() { getent passwd kit | cut -d: -f6; }
# as_kit CMD...: run as user kit from its home (oarsub takes the job's directory from $PWD).
as_kit() {
  local home
  home=$(kit_home)
  (cd "$home" && runuser -u kit -- env HOME="$home" USER=kit LOGNAME=kit "$@")
}

conf_get() { sed -n "s/^$1=\"\\(.*\\)\"\$/\\1/p" "$CONF" | tail -n 1; }
# conf_set KEY VALUE: set KEY="VALUE" in oar.conf (uncommenting it if needed); 0 if it changed.
conf_set() {
  local key=$1 val=$2
  [ "$(conf_get "$key")" = "$val" ] && grep -q "^$key=" "$CONF" && return 1
  if grep -qE "^#? *$key=" "$CONF"; then
    sed -i -E "s|^#? *$key=.*|$key=\"$val\"|" "$CONF"
  else
    printf '%s="%s"\n' "$key" "$val" >>"$CONF"
  fi
}
conf_comment() {
  grep -q "^$1=" "$CONF" || return 1
  sed -i -E "s|^($1=.*)|#\\1  # kit: disabled|" "$CONF"
}

random_pass() { head -c 18 /dev/urandom | base64 | tr -d '/+='; }

# ------------------------------------------------------------------ start steps

# ensure_pg_cluster: a PostgreSQL cluster whose data directory exists (a machine may have the server
# package with its cluster's data gone, or no cluster at all: pg_createcluster makes one).
ensure_pg_cluster() {
  local ver name data
  while read -r ver name _ _ _ data _; do
    [ -d "$data" ] && return 0
    warn "PostgreSQL $ver/$name has no data directory ($data); dropping it to create it anew"
    must "$LOG" "pg_dropcluster $ver $name" pg_dropcluster "$ver" "$name"
  done < <(pg_lsclusters -h 2>/dev/null)
  ver=$(pg_lsclusters -h 2>/dev/null | head -n 1 | cut -d' ' -f1)
  [ -n "$ver" ] || ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
  [ -n "$ver" ] || die "no PostgreSQL server version under /usr/lib/postgresql"
  must "$LOG" "pg_createcluster $ver main" pg_createcluster "$ver" main
  step "PostgreSQL cluster $ver/main created"
}

start_postgres() {
  if pg_isready -q 2>/dev/null; then return 0; fi
  ensure_pg_cluster
  must "$LOG" "service postgresql start" service postgresql start
  wait_until "$KIT_START_WAIT" pg_isready -q || die "PostgreSQL does not accept connections within ${KIT_START_WAIT}s" /var/log/postgresql/*.log
  step "postgresql up"
}

setup_conf() {
  local changed=0 key
  for key in DB_BASE_PASSWD DB_BASE_PASSWD_RO; do
    if [ -z "$(conf_get "$key")" ]; then
      conf_set "$key" "$(random_pass)"
      changed=1
    fi
  done
  [ "$changed" = 1 ] && step "database passwords set in $CONF"

  local cpuset=${KIT_OAR_CPUSET:-auto}
  if [ "$cpuset" = auto ]; then
    cpuset=0
    [ -r /sys/fs/cgroup/cpuset/tasks ] && cpuset=1
  fi
  if [ "$cpuset" = 1 ]; then
    conf_set CPUSET_PATH /oar && { step "cpusets on (CPUSET_PATH=/oar)"; CONF_CHANGED=1; }
  else
    conf_comment CPUSET_PATH && { step "cpusets off: CPUSET_PATH commented out"; CONF_CHANGED=1; }
  fi

  # Almighty postpones a scheduling request that comes within this many seconds of the previous
  # pass to its next 10 s tick: with the default 5, every short job waits 10-15 s to start.
  conf_set SCHEDULER_MIN_TIME_BETWEEN_2_CALLS 0 && { step "SCHEDULER_MIN_TIME_BETWEEN_2_CALLS=0"; CONF_CHANGED=1; }

  # The job epilogue otherwise deletes every file of the job's user in /tmp, /dev/shm and /var/tmp
  # (and runs fstrim) after each job: slow, and it eats the test user's files.
  if grep -q '^my @Tmp_dir_to_clear = (.\+);' "$JRM"; then
    sed -i 's|^my @Tmp_dir_to_clear = (.\+);|my @Tmp_dir_to_clear = (); # kit: no /tmp cleanup after jobs|' "$JRM"
    step "epilogue /tmp cleanup disabled in $JRM"
  fi
}

setup_database() {
  if quiet "$LOG" oar-database --check; then return 0; fi
  if [ "$(pg -c "SELECT 1 FROM pg_database WHERE datname = 'oar'")" = 1 ]; then
    # The database exists but oar.conf's credentials do not open it: align the roles with oar.conf.
    warn "database oar exists but 'oar-database --check' fails; resetting the oar roles' passwords"
    must "$LOG" "resetting the oar role passwords" pg -c \
      "ALTER ROLE oar PASSWORD '$(conf_get DB_BASE_PASSWD)'; ALTER ROLE oar_ro PASSWORD '$(conf_get DB_BASE_PASSWD_RO)';"
  else
    must "$LOG" "oar-database --create" oar-database --create --db-is-local -y
    step "database created"
  fi
  quiet "$LOG" oar-database --check || die "'oar-database --check' still fails" "$LOG"
}

start_daemons() {
  if [ "$CONF_CHANGED" = 1 ] && almighty_alive; then
    step "oar.conf changed: restarting Almighty"
    stop_almighty
  fi
  if ! oarsshd_alive; then
    mkdir -p /run/sshd
    must "$LOG" "/etc/init.d/oar-node start" /etc/init.d/oar-node start
    # the init script returns before sshd has written its pid file
    wait_until "$KIT_START_WAIT" oarsshd_alive || die "OAR's sshd (port 6667) did not start within ${KIT_START_WAIT}s" "$LOG"
    step "oar-node up (sshd on 6667, pid $(pid_of "$OARSSHD_PID"))"
  fi
  if ! almighty_alive; then
    rm -f "$ALMIGHTY_PID"
    # Helpers of a killed Almighty keep port 6666, and a new Almighty then dies at once.
    end_almighty_orphans
    must "$LOG" "/etc/init.d/oar-server start" /etc/init.d/oar-server start
    wait_until "$KIT_START_WAIT" almighty_listening || die "Almighty did not start listening on port 6666 within ${KIT_START_WAIT}s" /var/log/oar.log "$LOG"
    step "oar-server up (Almighty pid $(pid_of "$ALMIGHTY_PID"))"
  fi
}

setup_properties() {
  local have p new=()
  have=$(oarsql "SELECT column_name FROM information_schema.columns WHERE table_name = 'resources'")
  for p in host gpu_model gpu_compute_capability; do
    grep -qx "$p" <<<"$have" || { must "$LOG" "oarproperty -a $p -c" oarproperty -a "$p" -c; new+=("$p"); }
  done
  for p in cpu core gpu gpu_mem gpu_compute_capability_major; do
    grep -qx "$p" <<<"$have" || { must "$LOG" "oarproperty -a $p" oarproperty -a "$p"; new+=("$p"); }
  done
  [ "${#new[@]}" -eq 0 ] || step "properties added: ${new[*]}"
}

setup_resources() {
  local n c gpu want have id added=0 fixed=0
  n=$(nproc)
  for ((c = 0; c < n; c++)); do
    gpu=$(( c * 2 / n ))  # two fake GPUs, the cores split between them
    want="$HOST|0|$c|$c|$gpu|24576|fake|8.6|8"
    have=$(oarsql "SELECT resource_id, host, cpu, core, cpuset, gpu, gpu_mem, gpu_model, gpu_compute_capability,
                          gpu_compute_capability_major
                   FROM resources WHERE network_address = '$HOST' AND core = $c ORDER BY resource_id LIMIT 1")
    local props=(-p "host=$HOST" -p cpu=0 -p "core=$c" -p "cpuset=$c" -p "gpu=$gpu" -p gpu_mem=24576
      -p gpu_model=fake -p gpu_compute_capability=8.6 -p gpu_compute_capability_major=8)
    if [ -z "$have" ]; then
      must "$LOG" "adding the resource for core $c" oarnodesetting -a -h "$HOST" "${props[@]}"
      added=$((added + 1))
    elif [ "${have#*|}" != "$want" ]; then
      id=${have%%|*}
      must "$LOG" "updating resource $id" oarnodesetting -r "$id" "${props[@]}"
      fixed=$((fixed + 1))
    fi
  done
  [ "$added" = 0 ] || step "resources added: $added (one per core)"
  [ "$fixed" = 0 ] || step "resources updated: $fixed"
}

# rule_script: admission rule 16 as plain Perl. `-f` (even with -H) prints the header lines
# "--- (16) RULE #16" and "---": left in, they break every submission with a Perl syntax error.
rule_script() {
  oaradmissionrules -s 16 -f 2>/dev/null | grep -v -E '^--- \(16\) RULE #16$|^---$'
}

# rejected_types TYPE...: print the types that rule 16's @types list does not accept.
rejected_types() {
  perl -e '
    my $src = do { local $/; <STDIN> };
    my ($list) = $src =~ /my \@types\s*=\s*\((.*?)\n\s*\);/s or exit 3;
    my @re = eval "($list\n)";
    exit 3 if $@ or !@re;
    for my $t (@ARGV) { print "$t\n" unless grep { $t =~ $_ } @re }' "$@"
}

setup_admission_rule() {
  local rule missing rc=0 tmp alt
  rule=$(rule_script) || true
  [ -n "$rule" ] || die "cannot read admission rule 16 (oaradmissionrules -s 16 -f)"
  missing=$(rejected_types "${EXTRA_TYPES[@]}" <<<"$rule") || rc=$?
  [ "$rc" = 0 ] || die "admission rule 16 has no 'my @types = (...);' list of job types; not patching it"
  [ -n "$missing" ] || return 0
  grep -q '^ *qr/^state=permissive\$/,' <<<"$rule" ||
    die "admission rule 16 lacks the line qr/^state=permissive\$/, after which the types would go"
  alt=$(paste -sd'|' <<<"$missing")
  tmp=$(mktemp /tmp/kit-rule16.XXXXXX)
  ALT=$alt MARK=$RULE_MARK perl -pe \
    's{^(\s*)qr/\^state=permissive\$/,\n}{$&$1qr/^(?:$ENV{ALT})\$/, $ENV{MARK}\n}' <<<"$rule" >"$tmp"
  [ -z "$(rejected_types "${EXTRA_TYPES[@]}" <"$tmp")" ] || die "patched rule 16 still rejects: $missing"
  chmod 644 "$tmp"  # oaradmissionrules reads it as user oar
  must "$LOG" "oaradmissionrules -m 16" oaradmissionrules -m 16 -r "$tmp"
  rm -f "$tmp"
  step "admission rule 16 now accepts job types: $(paste -sd' ' <<<"$missing")"
}

nodes_alive() {
  [ "$(oarsql "SELECT count(*) FROM resources WHERE network_address = '$HOST' AND state = 'Alive'")" -ge "$(nproc)" ]
}
wait_nodes_alive() {
  wait_until "$KIT_START_WAIT" nodes_alive || die "resources on $HOST are not Alive after ${KIT_START_WAIT}s: $(oarnodes -s 2>&1 | tr '\n' ' ')" /var/log/oar.log
}

start() {
  need_pkgs postgresql oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql
  start_postgres
  setup_conf
  setup_database
  start_daemons
  setup_properties
  setup_resources
  setup_admission_rule
  kit_user
  wait_nodes_alive
  step "ready: $(oarnodes -s | xargs)"
}

# end_almighty_orphans: end OAR server processes left without a live Almighty pid file.
end_almighty_orphans() {
  local orphans
  orphans=$(almighty_orphans)
  [ -n "$orphans" ] || return 0
  # shellcheck disable=SC2086
  kill -TERM $orphans 2>/dev/null || true
  if ! wait_until 3 no_almighty_orphans; then
    # shellcheck disable=SC2086
    kill -KILL $orphans 2>/dev/null || true
  fi
  step "ended leftover Almighty helper processes: $(paste -sd' ' <<<"$orphans")"
}

stop_almighty() {
  stop_pidfile "$ALMIGHTY_PID" Almighty
  # Its appendice server and bipbip launcher do not always go with it.
  end_almighty_orphans
}

stop() {
  stop_almighty
  stop_pidfile "$OARSSHD_PID" "OAR sshd"
  # an sshd whose start was judged failed (or whose pid file went) is still OAR's: stop it too
  local pid
  for pid in $(oarsshd_listeners); do
    kill -TERM "$pid" 2>/dev/null && step "stopped OAR sshd (pid $pid, not in $OARSSHD_PID)"
  done
  if pg_isready -q 2>/dev/null; then
    must "$LOG" "service postgresql stop" service postgresql stop
    step "stopped postgresql"
  fi
  # OAR leaves an empty cpuset cgroup behind.
  rmdir /sys/fs/cgroup/cpuset/oar 2>/dev/null || true
}

status() {
  if almighty_alive && timeout 10 oarnodes -s >/dev/null 2>&1; then
    echo "running: Almighty pid $(pid_of "$ALMIGHTY_PID"), $(oarnodes -s | xargs)"
  else
    echo "not running"
    return 3
  fi
}

# ------------------------------------------------------------------ verify

# submit ARGS...: oarsub as kit; prints the job ids (one per line).
submit() {
  local out
  out=$(as_kit oarsub "$@" 2>&1) || die "oarsub $* failed: $out"
  sed -n 's/^OAR_JOB_ID=//p' <<<"$out"
}
job_state() { as_kit oarstat -s -j "$1" 2>/dev/null | sed -n "s/^$1: //p"; }
job_done() { case $(job_state "$1") in Terminated | Error) return 0 ;; *) return 1 ;; esac; }

verify() {
  local j1 j2 arr id st out rc
  # shellcheck disable=SC2016  # expanded by the job
  j1=$(submit -t night -l host=1/gpu=1,walltime=0:05 \
    -p "gpu_compute_capability_major>=7 AND gpu_mem>=23040" -n kit-verify-night 'echo ok')
  j2=$(submit -t exotic -q default -l core=1,walltime=0:05 -n kit-verify-exotic 'echo exotic')
  # shellcheck disable=SC2016
  mapfile -t arr < <(submit --array 2 -l core=1,walltime=0:05 -n kit-verify-array 'echo idx=$OAR_ARRAY_INDEX')
  [ "${#arr[@]}" = 2 ] || die "expected 2 job ids from oarsub --array 2, got: ${arr[*]}"
  step "submitted night job $j1, exotic job $j2 (queue default), array ${arr[*]}"
  rc=0
  out=$(as_kit oarsub -l host=1/gpu=1,walltime=0:05 -p "gpu_mem>=999999" true 2>&1) || rc=$?
  if [ "$rc" = 0 ] || ! grep -q 'There are not enough resources' <<<"$out"; then
    die "a request for gpu_mem>=999999 should fail with 'There are not enough resources' (rc $rc): $out"
  fi
  step "gpu_mem>=999999 refused at once (rc $rc: not enough resources)"
  for id in "$j1" "$j2" "${arr[@]}"; do
    wait_until 180 job_done "$id" || die "job $id is still '$(job_state "$id")' after 180 s" /var/log/oar.log
    st=$(job_state "$id")
    [ "$st" = Terminated ] || die "job $id ended in state $st: $(as_kit oarstat -f -j "$id" | grep -iE 'state|exit|event')"
  done
  step "all Terminated; night job said '$(cat "$(kit_home)/OAR.kit-verify-night.$j1.stdout")'"
}

action=${1:-start}
case $action in
  start | stop)
    kit_require_root
    kit_lock oar "$action"
    "$action"
    ;;
  status) status ;;
  verify) kit_require_root && verify ;;
  *) die "usage: $0 [start|stop|status|verify]" ;;
esac
