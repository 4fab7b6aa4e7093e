#!/bin/bash
# `resview-hook --enroot` through hooks/enroot/50-resview.sh, the way enroot
# runs its hooks: ENROOT_PID (a process in the container's mount namespace,
# rootfs not pivoted yet), ENROOT_ROOTFS, ENROOT_ENVIRON. enroot itself is not
# packaged for Debian; the namespace and cgroups it would make are made here.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
NV=$(lxcfs_views "$LXCFS_DIR")   # the views a container gets: LXCFS 5 nine, 6 and 7 add /proc/pressure/*
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
job_cgroup enroot

# start_ns NAME: a "container" process in the job's cgroups with its own mount
# namespace, procfs and sysfs mounted in its rootfs; sets NS_PID
start_ns() {
    local r=$T/$1/rootfs
    rv_rootfs "$r" >/dev/null
    sh -c "$JOB_JOIN"'; exec "$@"' sh unshare -m --propagation private sleep 600 >/dev/null 2>&1 &
    NS_PID=$!
    t_cleanup "kill $NS_PID"
    for _ in $(seq 100); do [ "$(readlink /proc/$NS_PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break; sleep 0.02; done
    [ "$(readlink /proc/$NS_PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || { echo "not ok - no namespace for $1"; exit 1; }
    nsenter -t "$NS_PID" -m sh -c "mount -t proc proc $r/proc && mount -t sysfs sysfs $r/sys"
}
run_enroot_hook() { # PID NAME (the hook's own environment is the job's: only these here)
    env -i PATH="$PATH" ENROOT_PID=$1 ENROOT_ROOTFS=$T/$2/rootfs ENROOT_ENVIRON=$T/$2/environ \
        RESVIEW_CONFIG=$T/config.json RESVIEW_HOOK=$HOOK sh "$TOP/hooks/enroot/50-resview.sh"
}

start_ns job; pid=$NS_PID
printf 'PATH=/usr/bin:/bin\nHOME=/root\nOMP_NUM_THREADS=7\n' >"$T/job/environ"
run_enroot_hook "$pid" job; rc=$?
t_eq "enroot hook: exit 0" "$rc" "0"
env_out=$(cat "$T/job/environ")
t_contains "enroot: GOMAXPROCS from the job's CPU quota" "$env_out" "GOMAXPROCS=1"
t_contains "enroot: SLURM_MEM_PER_NODE from its memory limit" "$env_out" "SLURM_MEM_PER_NODE=512"
t_eq "enroot: the container's own OMP_NUM_THREADS is kept" "$(grep -c '^OMP_NUM_THREADS=' "$T/job/environ") $(grep '^OMP_NUM_THREADS=' "$T/job/environ")" "1 OMP_NUM_THREADS=7"
t_eq "enroot: a process of the job reads its memory limit" "$(in_cg nsenter -t "$pid" -m grep MemTotal "$T/job/rootfs/proc/meminfo" | awk '{print $2}')" "524288"
t_eq "enroot: ... and one processor" "$(in_cg nsenter -t "$pid" -m grep -c ^processor "$T/job/rootfs/proc/cpuinfo")" "1"
t_eq "enroot: cpu/online" "$(in_cg nsenter -t "$pid" -m cat "$T/job/rootfs/sys/devices/system/cpu/online")" "0"
t_eq "enroot: nothing mounted in our namespace" "$(grep -c " $T/job/" /proc/self/mountinfo)" "0"
t_eq "enroot: recorded for repair" "$(jq -r '.status + " " + (.mounted | length | tostring)' "$T/state/containers/enroot-$pid/views")" "ok $NV"

# A real Slurm job (SLURM_JOB_ID in the environment): no SLURM_* added.
start_ns slurm; pid2=$NS_PID
printf 'SLURM_JOB_ID=42\n' >"$T/slurm/environ"
run_enroot_hook "$pid2" slurm
t_eq "enroot in a Slurm job: GOMAXPROCS but no SLURM_*" "$(grep -c '^GOMAXPROCS=1$' "$T/slurm/environ") $(grep -c '^SLURM_' "$T/slurm/environ")" "1 1"

# GOMAXPROCS left to the program (no annotations here: the variable)
printf 'RESVIEW_LXCFS=0\nRESVIEW_GOMAXPROCS=0\n' >"$T/slurm/environ"
run_enroot_hook "$pid2" slurm
t_eq "enroot: RESVIEW_GOMAXPROCS=0: no GOMAXPROCS, OMP_NUM_THREADS still" \
    "$(grep -c '^GOMAXPROCS=' "$T/slurm/environ") $(grep -c '^OMP_NUM_THREADS=1$' "$T/slurm/environ")" "0 1"

# Opt-outs from the container's environment.
start_ns optout; pid3=$NS_PID
printf 'RESVIEW_LXCFS=0\nRESVIEW_ENV=0\n' >"$T/optout/environ"
run_enroot_hook "$pid3" optout; rc=$?
t_eq "enroot opt-out: exit 0, nothing added" "$rc $(wc -l <"$T/optout/environ")" "0 2"
t_eq "enroot opt-out: no views" "$(grep fuse.lxcfs /proc/$pid3/mountinfo | awk '$4 != "/"' | wc -l)" "0"
printf 'RESVIEW_LXCFS=maybe\n' >"$T/optout/environ"
out=$(run_enroot_hook "$pid3" optout 2>&1); rc=$?
t_eq "enroot: an invalid request value fails clearly" "$rc" "1"
t_contains "enroot: ... naming it" "$out" "RESVIEW_LXCFS"
out=$(ENROOT_PID=1 "$HOOK" --enroot 2>&1); rc=$?
t_eq "enroot: missing ENROOT_* variables: exit 1" "$rc" "1"
