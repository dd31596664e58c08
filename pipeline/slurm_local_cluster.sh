#!/bin/bash
# A one-node Slurm cluster on this machine, for tests/pipeline/test_reproduce_slurm.py and for trying
# `make reproduce SCHEDULER=slurm` without a cluster:
#
#   pipeline/slurm_local_cluster.sh start DIR    # writes DIR/slurm.conf, starts munged, slurmctld,
#                                                # slurmd; waits for the node to be idle
#   export SLURM_CONF=DIR/slurm.conf             # then sbatch / squeue / sinfo talk to it
#   pipeline/slurm_local_cluster.sh status DIR
#   pipeline/slurm_local_cluster.sh stop DIR     # cancels its jobs, stops the three daemons
#
# Everything lives in DIR (config, munge key and socket, state, spool, logs, pid files): nothing
# under /etc is read or written. The daemons listen on 127.0.0.1 only, on two free ports picked at
# start; no accounting database, no cgroups (proctrack/linuxproc, task/none). The node is this
# machine as `slurmd -C` sees it (CPUs, sockets, cores, memory), named "localhost".
# Needs root (slurmd starts jobs as their owner) and Debian's slurmctld, slurmd, slurm-client and
# munge (`make test-slurm` installs them). Exit status 3 with one line "cannot start: ..." when
# either is missing; 1 when a daemon fails (its log is named).
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|status DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

cannot_start() {
  echo "cannot start: $*"
  exit 3
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
  local name pidfile
  # Jobs still queued or running on this cluster are cancelled first (their processes with them).
  if pid_alive "$dir/run/slurmctld.pid"; then
    SLURM_CONF="$dir/slurm.conf" scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF="$dir/slurm.conf" squeue -h 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  # Then the daemons in reverse order, each by the pid it wrote, never by name.
  for name in slurmd slurmctld munged; do
    pidfile="$dir/run/$name.pid"
    if pid_alive "$pidfile"; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
      for _ in $(seq 50); do pid_alive "$pidfile" || break; sleep 0.2; done
      if pid_alive "$pidfile"; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true; fi
    fi
    rm -f "$pidfile"
  done
}

status() {
  local ok=0 name
  for name in munged slurmctld slurmd; do
    if pid_alive "$dir/run/$name.pid"; then
      echo "$name: running (pid $(cat "$dir/run/$name.pid"))"
    else
      echo "$name: not running"
      ok=1
    fi
  done
  if [ $ok -eq 0 ]; then SLURM_CONF="$dir/slurm.conf" sinfo -h -o "node %N: %T, %c CPUs, %m MB" || ok=1; fi
  return $ok
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
  local node ctld_port slurmd_port
  # The node as slurmd detects it ("NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105"), renamed.
  node=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]*/NodeName=localhost NodeAddr=127.0.0.1/')
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
  cat > "$dir/slurm.conf.tmp" <<EOF
# Written by pipeline/slurm_local_cluster.sh: a one-node cluster on 127.0.0.1.
ClusterName=sblocal
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# Finished jobs stay visible to scontrol for 10 minutes (there is no accounting database).
MinJobAge=600
$node State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$dir/slurm.conf.tmp" "$dir/slurm.conf"
}

start() {
  [ "$(id -u)" -eq 0 ] || cannot_start "not root (slurmd runs jobs as their owner and must be root)"
  local missing="" tool
  for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
  done
  [ -z "$missing" ] || cannot_start "missing$missing (Debian: apt-get install slurmctld slurmd slurm-client munge, or make test-slurm)"
  if pid_alive "$dir/run/slurmctld.pid"; then
    echo "already running in $dir: stop it first" >&2
    exit 1
  fi
  mkdir -p "$dir"/{run,state,spool,log}
  dir=$(cd "$dir" && pwd)
  chmod 700 "$dir/run"
  write_config
  export SLURM_CONF="$dir/slurm.conf"

  # munged: its own key, socket, pid, seed and log in DIR (--force: root-owned dirs in /tmp).
  if [ ! -s "$dir/run/munge.key" ]; then
    (umask 077 && dd if=/dev/urandom of="$dir/run/munge.key" bs=1024 count=1 status=none)
  fi
  munged --force --socket="$dir/run/munge.socket" --key-file="$dir/run/munge.key" \
    --pid-file="$dir/run/munged.pid" --seed-file="$dir/run/munged.seed" \
    --log-file="$dir/log/munged.log" >> "$dir/log/munged.log" 2>&1 ||
    { echo "munged failed to start: see $dir/log/munged.log" >&2; stop; exit 1; }

  slurmctld -i -f "$SLURM_CONF" >> "$dir/log/slurmctld.log" 2>&1 ||
    { echo "slurmctld failed to start: see $dir/log/slurmctld.log" >&2; stop; exit 1; }
  slurmd -N localhost -f "$SLURM_CONF" >> "$dir/log/slurmd.log" 2>&1 ||
    { echo "slurmd failed to start: see $dir/log/slurmd.log" >&2; stop; exit 1; }

  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
    [ "$state" = "idle" ] && break
    sleep 0.2
  done
  if [ "$state" != "idle" ]; then
    echo "the node did not become idle in 30 s (state '${state:-unknown}'): see $dir/log/" >&2
    stop
    exit 1
  fi
  echo "local Slurm cluster up: $(sinfo -h -o '%N %T, %c CPUs, %m MB'); export SLURM_CONF=$SLURM_CONF"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
