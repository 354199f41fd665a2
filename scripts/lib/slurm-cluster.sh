# shellcheck shell=bash
# A throwaway Slurm cluster on this one machine (munged, slurmctld, and one
# slurmd per node) started as plain background processes, without systemd or
# cgroups, for scripts/slurm-test.sh. Sourced after scripts/lib/setup.sh;
# needs root.
#
#   slurm_cluster_install      apt-installs slurm-wlm and munge if missing
#   slurm_cluster_up DIR [K [PATH...]]
#                              config, state and logs under DIR; exports SLURM_CONF.
#                              Partition debug (the default): this machine's node.
#                              K > 0 adds partition multi: nodes node1..nodeK, each
#                              a slurmd in its own UTS and mount namespaces (its
#                              own hostname, a private /tmp); DIR and the PATHs
#                              (the checkout, the jobs' folders) stay visible
#                              there when they lie under /tmp
#   slurm_cluster_down         stops only what slurm_cluster_up started, and every
#                              process left in the nodes' namespaces
#   slurm_cluster_leftovers    what slurm_cluster_down missed, one line each
#   slurm_job_state JOBID      prints "STATE EXITCODE", e.g. "COMPLETED 0:0"
#   slurm_job_wait JOBID SECS  waits for the job to end (polling scontrol, which
#                              returns sooner than sbatch --wait), then prints
#                              its state as slurm_job_state; 124 on timeout
#
# Facts behind the choices (observed on Debian 12, Slurm 22.05, munge 0.5.15):
# munged refuses to run as root with the package's directories, so it runs
# as the munge user; /run/munge is created because systemd-tmpfiles never
# ran; the node advertises at least 16 CPUs with SlurmdParameters=
# config_overrides so that a 2-core VM runs all the test's jobs at once
# (asking for more tasks than CPUs with --oversubscribe pends forever
# instead, and queued jobs make `sbatch --wait` miss its 10 s poll, costing
# 32 s more); EnforcePartLimits=ALL
# makes impossible requests fail at submit time instead of pending;
# MpiDefault stays none, as on many clusters, so the sbatch scripts must
# pick the PMI plugin themselves. Several nodes on one machine: Debian's
# slurmd takes -N NAME; a node's own hostname is inherited by its ranks, so
# MPI and collbench count separate hosts; the private /tmp is needed because
# Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> on every
# node of a step, and two nodes sharing one /tmp fail the launch.

SLURM_CLUSTER_PACKAGES="slurm-wlm munge"
SLURM_CLUSTER_DIR=""
SLURM_CLUSTER_STARTED_MUNGED=0
SLURM_CLUSTER_NODES=()          # the namespaced nodes
SLURM_CLUSTER_SHARED=()         # paths under /tmp the namespaced nodes must see
SLURM_CLUSTER_STOPPED=()        # the daemons slurm_cluster_down signalled
declare -A SLURM_CLUSTER_NS=()  # node -> its mount namespace, e.g. mnt:[4026532290]

slurm_cluster_install() {
    # setup.sh's installer, pointed at Slurm's packages instead of the build's.
    COLLBENCH_APT_PACKAGES=$SLURM_CLUSTER_PACKAGES collbench_install_packages
    local tool
    for tool in munged munge slurmctld slurmd sbatch srun scontrol sinfo squeue scancel; do
        command -v "$tool" >/dev/null || { echo "slurm: $tool not found after installing $SLURM_CLUSTER_PACKAGES" >&2; return 3; }
    done
}

# Waits up to $1 tenths of a second for the command "${@:2}" to succeed.
slurm_wait_for() {
    local tenths=$1 i
    shift
    for ((i = 0; i < tenths; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    "$@" >/dev/null 2>&1
}

_slurm_munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

_slurm_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The first free port from $1 on (a Slurm already running here keeps its own).
_slurm_free_port() {
    local port=$1
    while ! _slurm_port_free "$port"; do port=$((port + 1)); done
    echo "$port"
}

_slurm_start_munged() {
    if _slurm_munge_works; then
        echo "slurm: munged already running, using it (it is left running)"
        return 0
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    # --force: a munged killed earlier may have left its socket behind.
    runuser -u munge -- /usr/sbin/munged --force
    SLURM_CLUSTER_STARTED_MUNGED=1
    slurm_wait_for 50 _slurm_munge_works || { echo "slurm: munged started but munge -n | unmunge fails" >&2; return 3; }
}

_slurm_write_conf() {
    local dir=$1 extra=$2 host cpus mem ctld_port node_port port i names=""
    host=$(hostname -s)
    cpus=$(nproc)
    [ "$cpus" -ge 16 ] || cpus=16
    mem=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 8 / 10 / 1024))
    ctld_port=$(_slurm_free_port 6817)
    node_port=$(_slurm_free_port $((ctld_port + 1)))
    # Addresses are 127.0.0.1 so a hostname that does not resolve still works.
    cat >"$dir/etc/slurm.conf" <<EOF
# Generated by scripts/lib/slurm-cluster.sh for a one-node test cluster.
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
EnforcePartLimits=ALL
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    mkdir -p "$dir/spool/$host"
    SLURM_CLUSTER_NODES=()
    port=$node_port
    for ((i = 1; i <= extra; i++)); do
        port=$(_slurm_free_port $((port + 1)))
        SLURM_CLUSTER_NODES+=("node$i")
        names+=${names:+,}node$i
        mkdir -p "$dir/spool/node$i" "$dir/nodes/node$i/tmp"
        chmod 1777 "$dir/nodes/node$i/tmp"
        echo "NodeName=node$i NodeHostname=node$i NodeAddr=127.0.0.1 Port=$port CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    done >>"$dir/etc/slurm.conf"
    [ -z "$names" ] || echo "PartitionName=multi Nodes=$names MaxTime=INFINITE State=UP" >>"$dir/etc/slurm.conf"
}

# Every node is idle.
_slurm_node_idle() { [ "$(sinfo -h -N -o %T 2>/dev/null | sort -u)" = idle ]; }

# Starts node $1's slurmd in new UTS and mount namespaces, with hostname $1
# and $SLURM_CLUSTER_DIR/nodes/$1/tmp mounted on /tmp (with the shared paths
# under /tmp bound into it first). slurmd daemonizes; the namespaces last as
# long as it or any process it started.
_slurm_start_node() {
    local name=$1 pid
    # shellcheck disable=SC2016  # expanded by the inner sh
    unshare --uts --mount --propagation private sh -ec '
        tmp=$1 name=$2 conf=$3
        shift 3
        for p in "$@"; do
            mkdir -p "$tmp/${p#/tmp/}"
            mount --bind "$p" "$tmp/${p#/tmp/}"
        done
        mount --rbind "$tmp" /tmp
        hostname "$name"
        exec slurmd -f "$conf" -N "$name"' \
        sh "$SLURM_CLUSTER_DIR/nodes/$name/tmp" "$name" "$SLURM_CONF" "${SLURM_CLUSTER_SHARED[@]}" ||
        { echo "slurm: the slurmd of $name did not start in its namespaces" >&2; return 3; }
    slurm_wait_for 50 test -s "$SLURM_CLUSTER_DIR/run/slurmd-$name.pid" ||
        { echo "slurm: the slurmd of $name wrote no pid file" >&2; return 3; }
    pid=$(cat "$SLURM_CLUSTER_DIR/run/slurmd-$name.pid")
    SLURM_CLUSTER_NS[$name]=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null || true)
    if [ -z "${SLURM_CLUSTER_NS[$name]}" ] || [ "${SLURM_CLUSTER_NS[$name]}" = "$(readlink /proc/self/ns/mnt)" ]; then
        echo "slurm: the slurmd of $name (pid $pid) has no mount namespace of its own" >&2
        return 3
    fi
}

slurm_cluster_up() {
    local extra=${2:-0} name p
    SLURM_CLUSTER_DIR=$(realpath -m "$1")
    SLURM_CLUSTER_SHARED=()
    for p in "$SLURM_CLUSTER_DIR" "${@:3}"; do
        p=$(realpath -m "$p")
        [[ $p == /tmp/* ]] && SLURM_CLUSTER_SHARED+=("$p")
    done
    mkdir -p "$SLURM_CLUSTER_DIR"/{etc,state,spool,log,run}
    _slurm_start_munged || return
    _slurm_write_conf "$SLURM_CLUSTER_DIR" "$extra"
    export SLURM_CONF=$SLURM_CLUSTER_DIR/etc/slurm.conf
    slurmctld -f "$SLURM_CONF" || { echo "slurm: slurmctld did not start" >&2; return 3; }
    slurmd -f "$SLURM_CONF" || { echo "slurm: slurmd did not start" >&2; return 3; }
    for name in "${SLURM_CLUSTER_NODES[@]}"; do
        _slurm_start_node "$name" || return
    done
    if ! slurm_wait_for 300 _slurm_node_idle; then
        echo "slurm: not every node is idle after 30 s: $(sinfo -h -N -o '%N %T %E' 2>&1 | grep -v ' idle ' | head -n 1)" >&2
        return 3
    fi
}


_slurm_pids() {
    local f
    for f in "$SLURM_CLUSTER_DIR"/run/slurmd-*.pid "$SLURM_CLUSTER_DIR/run/slurmctld.pid"; do
        [ -s "$f" ] && cat "$f"
    done
    return 0
}

# The processes in the namespaced nodes' mount namespaces: slurmd and all
# it started there (slurmstepd, the ranks).
_slurm_ns_pids() {
    [ ${#SLURM_CLUSTER_NS[@]} -gt 0 ] || return 0
    local p ns want=" ${SLURM_CLUSTER_NS[*]} "
    for p in /proc/[0-9]*; do
        ns=$(readlink "$p/ns/mnt" 2>/dev/null) || continue
        [[ $want == *" $ns "* ]] && echo "${p#/proc/}"
    done
    return 0
}

# What slurm_cluster_down left behind: a daemon it signalled still alive,
# or any process in a node's namespaces; one line each, nothing if none.
slurm_cluster_leftovers() {
    local pid
    for pid in "${SLURM_CLUSTER_STOPPED[@]}" $(_slurm_ns_pids); do
        kill -0 "$pid" 2>/dev/null && echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) still runs"
    done
    return 0
}

_slurm_none_alive() {
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 1; done
    return 0
}

_slurm_no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

# Stops the jobs, then every slurmd and slurmctld (by their pid files), then
# what is left in the nodes' namespaces, then munged if this file started it;
# SIGKILL after 10 s (5 s). Never fails: it runs from traps.
slurm_cluster_down() {
    [ -n "$SLURM_CLUSTER_DIR" ] || return 0
    local jobs pids pid
    if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
        jobs=$(squeue -h -o %i 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true
            slurm_wait_for 150 _slurm_no_jobs || true
        fi
    fi
    pids=$(_slurm_pids | tr '\n' ' ')
    # shellcheck disable=SC2206
    SLURM_CLUSTER_STOPPED=($pids)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null || true
        # shellcheck disable=SC2086
        if ! slurm_wait_for 100 _slurm_none_alive $pids; then
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null || true
        fi
    fi
    # What the nodes' slurmd left in their namespaces (the steps of a node
    # whose slurmd was stopped); namespaces and their /tmp mounts end with
    # their last process.
    pids=$(_slurm_ns_pids | tr '\n' ' ')
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null || true
        # shellcheck disable=SC2086
        slurm_wait_for 50 _slurm_none_alive $pids || kill -KILL $pids 2>/dev/null || true
    fi
    if [ "$SLURM_CLUSTER_STARTED_MUNGED" = 1 ] && [ -s /run/munge/munged.pid ]; then
        pid=$(cat /run/munge/munged.pid)
        SLURM_CLUSTER_STOPPED+=("$pid")
        kill -TERM "$pid" 2>/dev/null || true
        slurm_wait_for 50 _slurm_none_alive "$pid" || kill -KILL "$pid" 2>/dev/null || true
        SLURM_CLUSTER_STARTED_MUNGED=0
    fi
    SLURM_CLUSTER_DIR=""
}

# "STATE EXITCODE" of a job, from scontrol (kept MinJobAge = 300 s after it
# ends), else from the jobcomp file; "UNKNOWN ?" when neither knows it.
slurm_job_state() {
    local job=$1 line state code
    line=$(scontrol -o show job "$job" 2>/dev/null || true)
    if [ -z "$line" ] && [ -f "$SLURM_CLUSTER_DIR/log/jobcomp.txt" ]; then
        line=$(grep "^JobId=$job " "$SLURM_CLUSTER_DIR/log/jobcomp.txt" | tail -n 1)
    fi
    state=$(sed -n 's/.*JobState=\([^ ]*\).*/\1/p' <<<"$line")
    code=$(sed -n 's/.* ExitCode=\([^ ]*\).*/\1/p' <<<"$line")
    echo "${state:-UNKNOWN} ${code:-?}"
}

# Waits up to $2 seconds for job $1 to end (COMPLETING included), polling
# every 0.2 s; prints "STATE EXITCODE"; returns 124 if it is still going.
slurm_job_wait() {
    local job=$1 deadline=$((SECONDS + $2)) state
    while :; do
        read -r state _ <<<"$(slurm_job_state "$job")"
        case $state in
            PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | RESIZING | UNKNOWN) ;;
            *) slurm_job_state "$job"; return 0 ;;
        esac
        [ $SECONDS -lt $deadline ] || { slurm_job_state "$job"; return 124; }
        sleep 0.2
    done
}
