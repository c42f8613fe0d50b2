#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for tests and CI (Debian's slurmctld, slurmd, slurm-client
# and munge packages; docs/ci.md#slurm):
#   scripts/slurm/cluster.sh start DIR   writes DIR/slurm.conf (one node with this machine's CPUs
#                                        and memory less 1 GiB, one partition "debug", free ports,
#                                        state, spool, pid and log files under DIR), starts munged
#                                        as the munge user with a fresh key in a private temporary
#                                        folder, then slurmctld and slurmd as root; waits until
#                                        the node is idle. Writes DIR/env ("export SLURM_CONF=...",
#                                        to source before any Slurm command).
#   scripts/slurm/cluster.sh stop DIR    cancels the cluster's jobs, stops slurmd, slurmctld and
#                                        munged by the process ids in their pid files (SIGTERM, then
#                                        SIGKILL after 30 s), removes munge's folder; DIR keeps the
#                                        logs (DIR/log) for a failed test to be read.
# Where the cluster cannot start (not root: slurmd starts jobs as their users; no Slurm or munge
# installed; a container where runuser may not switch users), start writes the reason to DIR/skip,
# prints it and exits 77, so that CTest shows the fixture and the tests that need it SKIPPED with
# the reason (tests read DIR/skip). Exit 0 done, 1 failed (the daemons' logs are printed), 2 bad usage.
set -euo pipefail
usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)

skip() {
  echo "$*" >"$dir/skip"
  echo "cluster.sh: SKIPPED: $*"
  exit 77
}
# stop_pid FILE: SIGTERM to the process in FILE, SIGKILL after 30 s; the file is removed.
stop_pid() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  fi
  rm -f "$file"
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case $cmd in
  start)
    for p in slurmctld slurmd munged; do
      if [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null; then
        echo "cluster.sh: $p is already running for $dir (pid $(cat "$dir/$p.pid")): stop it first" >&2; exit 1
      fi
    done
    rm -rf "$dir/skip" "$dir/state" "$dir/spool" "$dir/log" "$dir/env" "$dir/slurm.conf"
    [ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs each job as its user, and munged runs as the munge user"
    for b in /usr/sbin/munged /usr/sbin/mungekey /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/bin/sinfo; do
      [ -x "$b" ] || skip "$b is not installed (Debian's munge, slurmctld, slurmd, slurm-client: SDPABENCH_TEST_DEPS=1 scripts/setup.sh)"
    done
    getent passwd munge >/dev/null || skip "no munge user (Debian's munge package creates it)"
    runuser -u munge -- true 2>/dev/null || skip "runuser cannot switch to the munge user here (a container without setuid/setgid permissions?)"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"

    # munged: its own key and socket in a folder the munge user owns (munged refuses a key or
    # socket folder others may write); a short /tmp path keeps the socket under the 108-byte limit.
    mdir=$(mktemp -d /tmp/sdpabench-munge.XXXXXX)
    echo "$mdir" >"$dir/mungedir"
    chmod 755 "$mdir"
    chown munge: "$mdir"
    runuser -u munge -- /usr/sbin/mungekey --create --keyfile="$mdir/munge.key" >"$dir/log/mungekey.log" 2>&1 ||
      { cat "$dir/log/mungekey.log" >&2; exit 1; }
    runuser -u munge -- /usr/sbin/munged --socket="$mdir/munge.socket" --key-file="$mdir/munge.key" \
        --log-file="$mdir/munged.log" --pid-file="$mdir/munged.pid" --seed-file="$mdir/munged.seed" ||
      { cat "$mdir/munged.log" >&2; exit 1; }
    cp "$mdir/munged.pid" "$dir/munged.pid"

    ctld_port=$(free_port)
    d_port=$(free_port)
    while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
    mem_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) - 1024 }' /proc/meminfo)
    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm/cluster.sh: a single-node cluster for sdpabench's tests.
ClusterName=sdpabench
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
AuthInfo=socket=$mdir/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
KillWait=5
NodeName=localhost NodeHostname=$(hostname) CPUs=$(nproc) RealMemory=$mem_mib State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
    export SLURM_CONF=$dir/slurm.conf
    # Both daemons fork and write their pid files; -i: a fresh controller ignores old state.
    /usr/sbin/slurmctld -i || { cat "$dir/log/slurmctld.log" >&2; exit 1; }
    /usr/sbin/slurmd -N localhost || { cat "$dir/log/slurmd.log" >&2; exit 1; }
    for _ in $(seq 600); do
      state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
      [ "$state" = idle ] && break
      sleep 0.1
    done
    if [ "$state" != idle ]; then
      echo "cluster.sh: the node is '$state', not idle, after 60 s:" >&2
      tail -n 30 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
      exit 1
    fi
    echo "cluster.sh: node localhost idle ($(nproc) CPUs; SLURM_CONF=$SLURM_CONF)"
    ;;
  stop)
    if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
      export SLURM_CONF=$dir/slurm.conf
      mapfile -t jobs < <(squeue -h -o %A 2>/dev/null || true)
      if [ ${#jobs[@]} -gt 0 ]; then
        scancel "${jobs[@]}" 2>/dev/null || true
        for _ in $(seq 300); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.1; done
      fi
    fi
    stop_pid "$dir/slurmd.pid"
    stop_pid "$dir/slurmctld.pid"
    stop_pid "$dir/munged.pid"
    [ ! -f "$dir/mungedir" ] || rm -rf "$(cat "$dir/mungedir")"
    rm -rf "$dir/mungedir" "$dir/state" "$dir/spool" "$dir/env"
    ;;
  *) usage ;;
esac
