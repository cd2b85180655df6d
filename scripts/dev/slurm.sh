#!/usr/bin/env bash
# Usage: scripts/dev/slurm.sh [start|stop|status|verify]
#
# A single-machine Slurm (Debian 12: 22.05) for tests: cluster kit-ci, node node1, partition debug,
# 2 fake GPUs (gres.conf on /dev/kitgpu0,1, char devices like /dev/null), node features a40, l40s and
# ib (for --constraint expressions), munge authentication.
# Accounting: jobcomp/filetxt, so `sacct -c` works without slurmdbd. WITH_DBD=1 adds slurmdbd and
# MariaDB (plain `sacct`, `sacct --json`).
#   start   install the packages if missing, write the configuration (daemons are restarted only
#           when it changed), start munged, [mariadb, slurmdbd,] slurmctld and slurmd unless they
#           already run, clear a DRAIN state, and wait for node1 to be idle. Stale pid files are fine.
#   stop    stop the daemons by their pid files (MariaDB too if this script started it).
#   status  exit 0 and print the node line if node1 answers, else exit 3.
#   verify  an array of 2 with --gres=gpu:1 must be COMPLETED and `exit 3` FAILED in `sacct -c`.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/dev/lib.sh
. "$HERE/lib.sh"

CLUSTER=kit-ci NODE=node1 PARTITION=debug
WITH_DBD=${WITH_DBD:-0}
ETC=/etc/slurm
LOGD=/var/log/slurm
STATE=/var/lib/slurm/slurmctld
SPOOL=/var/lib/slurm/slurmd
JOBCOMP=$LOGD/jobcomp.log
CTLD_PID=/run/slurmctld.pid SLURMD_PID=/run/slurmd.pid DBD_PID=/run/slurmdbd.pid
MUNGE_PID=/run/munge/munged.pid
MARIADB_MARK=/run/kit-slurm-mariadb
LOG=$KIT_LOG_DIR/kit-slurm.log
DBPASS_FILE=/etc/slurm/.kit-dbpass

# ------------------------------------------------------------------ configuration

render_slurm_conf() {
  local mem_mb cpus acct=accounting_storage/none gather=jobacct_gather/none
  cpus=$(nproc)
  mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.75 }' /proc/meminfo)
  if [ "$WITH_DBD" = 1 ]; then
    acct=accounting_storage/slurmdbd
    gather=jobacct_gather/linux
  fi
  cat <<CONF
# Written by kit scripts/dev/slurm.sh; rewritten on every start.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without DefMemPerCPU every job gets the whole node's memory and jobs run one at a time.
DefMemPerCPU=1000
MinJobAge=300
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmdSpoolDir=$SPOOL
StateSaveLocation=$STATE
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd.log
AccountingStorageType=$acct
AccountingStorageHost=localhost
$([ "$WITH_DBD" = 1 ] && echo "AccountingStorageTRES=gres/gpu")
JobAcctGatherType=$gather
JobCompType=jobcomp/filetxt
JobCompLoc=$JOBCOMP
GresTypes=gpu
NodeName=$NODE NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:2 Features=a40,l40s,ib State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}

render_gres_conf() {
  # Slurm 22.05 drops gpu GRES without File=, so point it at fake character devices.
  printf '# Written by kit scripts/dev/slurm.sh\nAutoDetect=off\nNodeName=%s Name=gpu File=/dev/kitgpu[0-1]\n' "$NODE"
}

render_dbd_conf() {
  cat <<CONF
# Written by kit scripts/dev/slurm.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
LogFile=$LOGD/slurmdbd.log
PidFile=$DBD_PID
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$(cat "$DBPASS_FILE")
StorageLoc=slurm_acct_db
CONF
}

# install_if_changed FILE MODE: replace FILE with stdin if different; return 0 if it changed.
install_if_changed() {
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

# ------------------------------------------------------------------ daemons

munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
ctld_ok() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
slurmd_registered_since() {
  local t
  t=$(timeout 5 scontrol show node "$NODE" -o 2>/dev/null | tr ' ' '\n' | sed -n 's/^SlurmdStartTime=//p')
  [ -n "$t" ] && [ "$(date -d "$t" +%s 2>/dev/null || echo 0)" -ge $(( $1 - 1 )) ] && pid_alive "$SLURMD_PID" slurmd
}
jobs_gone() { ! timeout 5 squeue -h -j "$1" 2>/dev/null | grep -q .; }
node_state() { timeout 5 sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n 1; }

start_munge() {
  if munge_ok; then return 0; fi
  [ -s /etc/munge/munge.key ] || must "$LOG" "mungekey --create" mungekey --create
  mkdir -p /run/munge
  chown munge:munge /run/munge
  chmod 755 /run/munge
  # --force: take over a socket left behind by a munged that was killed.
  must "$LOG" "starting munged" runuser -u munge -- /usr/sbin/munged --force
  wait_until "$KIT_START_WAIT" munge_ok || die "munged does not answer within ${KIT_START_WAIT}s" /var/log/munge/munged.log
  step "munged up (pid $(pid_of "$MUNGE_PID" || echo ?))"
}

start_dbd() {
  need_pkgs slurmdbd mariadb-server
  if ! mysqladmin ping >/dev/null 2>&1; then
    must "$LOG" "service mariadb start" service mariadb start
    touch "$MARIADB_MARK"
    wait_until "$KIT_START_WAIT" mysqladmin ping || die "mariadb does not answer within ${KIT_START_WAIT}s" /var/log/mysql/error.log
    step "mariadb up"
  fi
  if [ ! -s "$DBPASS_FILE" ]; then
    (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$DBPASS_FILE")
  fi
  must "$LOG" "creating the accounting database" mysql -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost';
    ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$(cat "$DBPASS_FILE")';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  if render_dbd_conf | install_if_changed "$ETC/slurmdbd.conf" 600; then
    chown slurm:slurm "$ETC/slurmdbd.conf"
    stop_pidfile "$DBD_PID" slurmdbd
  fi
  if ! pid_alive "$DBD_PID" slurmdbd; then
    rm -f "$DBD_PID"
    must "$LOG" "starting slurmdbd" slurmdbd
    wait_until "$KIT_START_WAIT" sacctmgr -n list cluster || die "slurmdbd does not answer within ${KIT_START_WAIT}s" "$LOGD/slurmdbd.log"
    step "slurmdbd up (pid $(pid_of "$DBD_PID" || echo ?))"
  fi
  if ! sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"; then
    must "$LOG" "sacctmgr add cluster $CLUSTER" sacctmgr -i add cluster "$CLUSTER"
    step "cluster $CLUSTER registered in slurmdbd"
  fi
}

start() {
  local pkgs=(slurmctld slurmd slurm-client munge)
  need_pkgs "${pkgs[@]}"
  mkdir -p "$ETC" "$LOGD" "$STATE" "$SPOOL"
  chown slurm:slurm "$LOGD" "$STATE"
  touch "$JOBCOMP"
  chown slurm:slurm "$JOBCOMP"

  local i dev
  for i in 0 1; do
    dev=/dev/kitgpu$i
    if [ ! -c "$dev" ]; then
      rm -f "$dev"
      mknod -m 666 "$dev" c 1 3 || die "cannot create the fake GPU device $dev (mknod not permitted?)"
    fi
  done

  local changed=0
  render_slurm_conf | install_if_changed "$ETC/slurm.conf" 644 && changed=1
  render_gres_conf | install_if_changed "$ETC/gres.conf" 644 && changed=1
  [ "$changed" = 1 ] && step "configuration written ($ETC/slurm.conf, gres.conf)"

  start_munge
  [ "$WITH_DBD" = 1 ] && start_dbd

  if [ "$changed" = 1 ] && { pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd; }; then
    step "configuration changed: restarting slurmctld and slurmd"
    stop_pidfiles 30 slurmd="$SLURMD_PID" slurmctld="$CTLD_PID"
  fi

  if ! pid_alive "$CTLD_PID" slurmctld; then
    rm -f "$CTLD_PID"
    # State saved under another ClusterName makes slurmctld refuse to start: start clean instead.
    if [ -s "$STATE/clustername" ] && [ "$(cat "$STATE/clustername")" != "$CLUSTER" ]; then
      warn "state in $STATE belongs to cluster '$(cat "$STATE/clustername")'; clearing it"
      find "$STATE" -mindepth 1 -delete
    fi
    must "$LOG" "starting slurmctld" slurmctld
    wait_until "$KIT_START_WAIT" ctld_ok || die "slurmctld does not answer 'scontrol ping' within ${KIT_START_WAIT}s" "$LOGD/slurmctld.log"
    step "slurmctld up (pid $(pid_of "$CTLD_PID" || echo ?))"
  fi
  if ! pid_alive "$SLURMD_PID" slurmd; then
    rm -f "$SLURMD_PID"
    local since
    since=$(date +%s)
    must "$LOG" "starting slurmd" slurmd -N "$NODE"
    # slurmctld may still show the node idle from before: wait until this slurmd has registered.
    wait_until "$KIT_START_WAIT" slurmd_registered_since "$since" ||
      die "slurmd did not register with slurmctld within ${KIT_START_WAIT}s" "$LOGD/slurmd.log" "$LOGD/slurmctld.log"
    step "slurmd up and registered (pid $(pid_of "$SLURMD_PID" || echo ?))"
  fi

  local state='' resumed=0 end=$(( ${EPOCHREALTIME//[!0-9]/} + KIT_START_WAIT * 1000000 ))
  while :; do
    state=$(node_state || true)
    case $state in
      idle | mixed | allocated | completing) break ;;
      *drain* | *inval* | down)
        # A node drained by an earlier bad configuration stays drained after a restart.
        if [ "$resumed" = 0 ]; then
          warn "$NODE is '$state' ($(timeout 5 sinfo -h -n "$NODE" -o %E 2>/dev/null)); resuming it"
          quiet "$LOG" scontrol update nodename="$NODE" state=resume || true
          resumed=1
        fi
        ;;
    esac
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$end" ] ||
      die "$NODE is not idle after ${KIT_START_WAIT}s (state '${state:-no answer}')" "$LOGD/slurmctld.log" "$LOGD/slurmd.log"
    sleep 0.5
  done
  step "$NODE $state: $(timeout 5 sinfo -h -o '%P %T %N %G %c cpus %m MB')"
}

stop() {
  stop_pidfiles 30 slurmd="$SLURMD_PID" slurmctld="$CTLD_PID" slurmdbd="$DBD_PID"
  if [ -e "$MARIADB_MARK" ] || [ "$WITH_DBD" = 1 ]; then
    if mysqladmin ping >/dev/null 2>&1; then
      must "$LOG" "service mariadb stop" service mariadb stop
      step "stopped mariadb"
    fi
    rm -f "$MARIADB_MARK"
  fi
  stop_pidfile "$MUNGE_PID" munged
}

status() {
  local state
  state=$(node_state || true)
  if [ -n "$state" ]; then
    echo "running: $(timeout 5 sinfo -h -o '%P %T %N %G')"
  else
    echo "not running"
    return 3
  fi
}

# ------------------------------------------------------------------ verify

verify() {
  local dir arr fail out tag
  dir=$(mktemp -d /tmp/kit-slurm-verify.XXXXXX)
  tag=kit-verify-${dir##*.}
  chmod 755 "$dir"
  # shellcheck disable=SC2016  # expanded by the job
  arr=$(sbatch --parsable --array=0-1 --gres=gpu:1 -J "$tag-arr" -D "$dir" -o "$dir/arr-%A_%a.out" \
    --wrap 'echo "task=$SLURM_ARRAY_TASK_ID gpu=$CUDA_VISIBLE_DEVICES"') || die "sbatch of the array failed"
  fail=$(sbatch --parsable -J "$tag-fail" -D "$dir" -o "$dir/fail-%j.out" --wrap 'exit 3') ||
    die "sbatch of the failing job failed"
  step "submitted array $arr (2 tasks, --gres=gpu:1) and failing job $fail"
  wait_until 120 jobs_gone "$arr,$fail" || die "jobs $arr, $fail still queued after 120 s: $(squeue -h -j "$arr,$fail")"
  # jobcomp/filetxt lists array tasks under their raw job ids: select them by the unique job name.
  out=$(sacct -c --parsable2 -n -o JobID,JobName,State,ExitCode 2>/dev/null)
  local done_arr failed
  done_arr=$(awk -F'|' -v n="$tag-arr" '$2 == n && $3 == "COMPLETED"' <<<"$out" | wc -l)
  failed=$(awk -F'|' -v n="$tag-fail" '$2 == n && $3 == "FAILED" && $4 == "3:0"' <<<"$out" | wc -l)
  [ "$done_arr" = 2 ] || die "expected 2 COMPLETED array tasks in 'sacct -c', got $done_arr: $(grep "$tag" <<<"$out")"
  [ "$failed" = 1 ] || die "expected job $fail FAILED 3:0 in 'sacct -c': $(grep "$tag" <<<"$out")"
  step "array tasks COMPLETED ($(cat "$dir"/arr-*.out | tr '\n' ' ')), job $fail FAILED 3:0"
  rm -rf "$dir"
}

action=${1:-start}
case $action in
  start | stop)
    kit_require_root
    kit_lock slurm "$action"
    "$action"
    ;;
  status | verify) "$action" ;;
  *) die "usage: $0 [start|stop|status|verify]" ;;
esac
