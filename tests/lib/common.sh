# common.sh - shared helpers for end-to-end tests (source it; bash, as root).
#
#   t_ok NAME CMD...        run CMD; "ok - NAME" or "not ok - NAME"
#   t_eq NAME GOT WANT      compare strings
#   t_contains NAME HAY NEEDLE   (one line; t_line NAME TEXT LINE: a whole line)
#   rv_rootfs DIR           busybox-static rootfs (+ /proc /sys /dev /tmp)
#   rv_bundle DIR [JQ]      bundle with rootfs and config.json from `runc spec`,
#                           edited by the jq filter (non-interactive by default)
#   rv_config FILE JSON     write a resview configuration (merged over test defaults)
#   run_shim ROOT ID BUNDLE RUNTIME  run a container through resview-runtime,
#                           next runtime runc or crun; prints the container's output
#   lxcfs_start DIR / lxcfs_stop   a private LXCFS on DIR (-l --enable-cfs)
#   lxcfs_views DIR [proc]  how many views the hook mounts from that LXCFS
# Everything lives under $T (a fresh temp dir removed at exit).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}
# The binaries under test: `make check` and `make e2e` set the static musl ones
# (what gets installed); run directly, the glibc development build.
RUNTIME=${RUNTIME_BIN:-$BUILD/resview-runtime}
HOOK=${HOOK_BIN:-$BUILD/resview-hook}
CLI=$BUILD/resview
T=$(mktemp -d /tmp/resview-e2e.XXXXXX)
CRUN_V1=$TOP/tests/lib/crun-v1
T_N=0
# Containers go under this cgroup (unique per test run), removed at exit.
CG_PARENT=/resview-test/$(basename "$T")
# cgroup v2 (the unified hierarchy, as tests/v2/ runs them) or v1
cg_is_v2() { [ -f /sys/fs/cgroup/cgroup.controllers ]; }
# cg_dir CONTROLLER PATH: the directory of cgroup PATH in CONTROLLER's hierarchy
cg_dir() { if cg_is_v2; then echo "/sys/fs/cgroup/${2#/}"; else echo "/sys/fs/cgroup/$1/${2#/}"; fi; }
# make check's cgroup v2 guest (tests/v2/run.sh sets RESVIEW_V2_SHARE) runs
# the parts of a script whose behaviour can differ there; a part with no cgroup
# in it runs on the host and in make e2e-v2 only (CI's time): it loops over
# `$(cgroup_free_rts)` (no runtime in the guest's share) or `in_v2_share &&` skips it.
in_v2_share() { [ -n "${RESVIEW_V2_SHARE:-}" ]; }
cgroup_free_rts() { in_v2_share || echo runc crun; }
# Engines on a systemd host with cgroup v2 use systemd's cgroup driver, as
# nodes do (docker's and podman's default there; containerd's SystemdCgroup =
# true): ENGINE_CGROUPS is systemd or cgroupfs (SYSTEMD_CGROUP: containerd's
# SystemdCgroup, true or false), ENGINE_CG_PARENT the parent
# the tests give an engine (a slice, or $CG_PARENT), pod_cgroup NAME a CRI
# pod's cgroup_parent (kubepods-burstable-podUID.slice, or below $CG_PARENT),
# ctr_cgroup POD ID the cgroup (from the root) containerd's CRI gives a
# container of that pod, POD_CGROUPS the directories of the test's pods.
TID=$(basename "$T" | tr -dc 'a-zA-Z0-9')
if cg_is_v2 && [ -d /run/systemd/system ]; then
    ENGINE_CGROUPS=systemd SYSTEMD_CGROUP=true ENGINE_CG_PARENT=rvtest-$TID.slice
    pod_cgroup() { echo "kubepods-burstable-pod${TID}_${1//[^a-zA-Z0-9]/_}.slice"; }
    ctr_cgroup() { echo "/kubepods.slice/kubepods-burstable.slice/$(pod_cgroup "$1")/cri-containerd-$2.scope"; }
    POD_CGROUPS="/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${TID}_*.slice"
else
    ENGINE_CGROUPS=cgroupfs SYSTEMD_CGROUP=false ENGINE_CG_PARENT=$CG_PARENT
    pod_cgroup() { echo "$CG_PARENT/$1"; }
    ctr_cgroup() { echo "$CG_PARENT/$1/$2"; }
    POD_CGROUPS=$(cg_dir pids "$CG_PARENT")
fi

_t_cleanups=()
t_cleanup() { _t_cleanups+=("$1"); }
_t_exit() {
    local i
    for (( i=${#_t_cleanups[@]}-1; i>=0; i-- )); do eval "${_t_cleanups[$i]}" >/dev/null 2>&1 || true; done
    # containers left behind by a failed test
    for r in "$T"/runc-root "$T"/crun-root; do
        [ -d "$r" ] || continue
        for c in $(ls "$r" 2>/dev/null); do
            case $r in *crun*) "$CRUN_V1" --root "$r" delete -f "$c" ;; *) runc --root "$r" delete -f "$c" ;; esac >/dev/null 2>&1
        done
    done
    grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
    # processes left in the test's own cgroups (a container whose runtime or
    # shim is gone): thawed and killed, so that nothing outlives the test
    local left
    left=$(find /sys/fs/cgroup/*/resview-test/"$(basename "$T")" /sys/fs/cgroup/resview-test/"$(basename "$T")" \
        -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    if [ -n "$left" ]; then
        find /sys/fs/cgroup/freezer/resview-test/"$(basename "$T")" -name freezer.state \
            -exec sh -c 'for f; do echo THAWED >"$f"; done' _ {} + 2>/dev/null
        find /sys/fs/cgroup/resview-test/"$(basename "$T")" -name cgroup.freeze \
            -exec sh -c 'for f; do echo 0 >"$f"; done' _ {} + 2>/dev/null
        kill -9 $left 2>/dev/null
        sleep 0.3
    fi
    [ "$ENGINE_CGROUPS" = systemd ] &&
        systemctl stop "rvtest-$TID.slice" "kubepods-burstable-pod${TID}_*.slice" >/dev/null 2>&1
    for c in /sys/fs/cgroup/*/resview-test /sys/fs/cgroup/resview-test; do
        [ -d "$c/$(basename "$T")" ] || continue
        find "$c/$(basename "$T")" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    rm -rf "$T"
}
trap _t_exit EXIT

t_ok() {
    local name=$1; shift
    T_N=$((T_N + 1))
    if "$@" >"$T/.t_out" 2>&1; then echo "ok $T_N - $name"
    else echo "not ok $T_N - $name"; sed 's/^/#   /' "$T/.t_out" | head -20; fi
}
t_eq() {
    T_N=$((T_N + 1))
    if [ "$2" == "$3" ]; then echo "ok $T_N - $1"
    else echo "not ok $T_N - $1"; echo "#   got:  $(printf %q "$2")"; echo "#   want: $(printf %q "$3")"; fi
}
# (a needle with a newline is refused: grep -F would take each of its lines as
# a pattern of its own, an empty one matching anything; t_line checks a line)
t_contains() {
    T_N=$((T_N + 1))
    if [[ $3 == *$'\n'* ]]; then echo "not ok $T_N - $1"; echo "#   t_contains: the needle has a newline (t_line?)"
    elif grep -qF -- "$3" <<<"$2"; then echo "ok $T_N - $1"
    else echo "not ok $T_N - $1"; echo "#   missing: $3"; echo "$2" | head -20 | sed 's/^/#   in: /'; fi
}
t_line() { # NAME TEXT LINE: TEXT has a line that is exactly LINE
    T_N=$((T_N + 1))
    if grep -qxF -- "$3" <<<"$2"; then echo "ok $T_N - $1"
    else echo "not ok $T_N - $1"; echo "#   no line: $3"; echo "$2" | head -20 | sed 's/^/#   in: /'; fi
}
t_not_contains() {
    T_N=$((T_N + 1))
    if [[ $3 == *$'\n'* ]]; then echo "not ok $T_N - $1"; echo "#   t_not_contains: the needle has a newline"
    elif ! grep -qF -- "$3" <<<"$2"; then echo "ok $T_N - $1"
    else echo "not ok $T_N - $1"; echo "#   unexpected: $3"; fi
}

rv_rootfs() {
    local d=$1
    mkdir -p "$d"/{bin,proc,sys,dev,tmp,etc,root}
    cp /bin/busybox "$d/bin/busybox"
    for a in sh cat env nproc free grep true sleep ls mount umount uptime head wc sed awk stat mkdir echo test id readlink; do
        ln -sf busybox "$d/bin/$a"
    done
    echo "root:x:0:0:root:/root:/bin/sh" >"$d/etc/passwd"
    echo "root:x:0:" >"$d/etc/group"
}

rv_bundle() {
    local b=$1 filter=${2:-.}
    mkdir -p "$b"
    [ -d "$b/rootfs" ] || rv_rootfs "$b/rootfs"
    (cd "$b" && rm -f config.json && runc spec)
    jq '.process.terminal = false | .process.args = ["/bin/sh", "-c", "env"] | .linux.cgroupsPath = $cg' --arg cg "$CG_PARENT/$(basename "$b")" "$b/config.json" \
        | jq "$filter" >"$b/config.json.new"
    mv "$b/config.json.new" "$b/config.json"
}

# Test configuration: private log, state dir, and the next runtimes.
rv_config() {
    local file=$1 extra=${2:-'{}'}
    jq -n --arg log "$T/resview.log" --arg state "$T/state" --arg hook "$HOOK" \
        --arg lx "${LXCFS_DIR:-/var/lib/lxcfs}" \
        '{log: {file: $log, level: "debug"}, state_dir: $state, hook: {path: $hook},
          lxcfs: {root: $lx}, runtimes: ["runc"]}' \
        | jq --argjson x "$extra" '. * $x' >"$file"
}

# run_shim RUNTIME(runc|crun) ID BUNDLE [config]: create+start+wait via `run`,
# output of the container on stdout, exit code of `run`.
run_shim() {
    local which=$1 id=$2 bundle=$3 cfg=${4:-$T/config.json}
    local next=runc root=$T/runc-root
    if [ "$which" = crun ]; then next=$CRUN_V1; root=$T/crun-root; fi
    jq --arg n "$next" '.runtimes = [$n]' "$cfg" >"$cfg.$which" 
    (cd "$bundle" && RESVIEW_CONFIG=$cfg.$which "$RUNTIME" --root "$root" run "$id")
}

# Plain runtime, no resview.
run_plain() {
    local which=$1 id=$2 bundle=$3
    if [ "$which" = crun ]; then (cd "$bundle" && "$CRUN_V1" --root "$T/crun-root" run "$id")
    else (cd "$bundle" && runc --root "$T/runc-root" run "$id"); fi
}

LXCFS_PID=""
lxcfs_start() {
    local dir=$1
    mkdir -p "$dir"
    lxcfs -f -l --enable-cfs -p "$T/lxcfs.pid" "$dir" >"$T/lxcfs.out" 2>&1 &
    LXCFS_PID=$!
    for _ in $(seq 1 100); do
        # shared, as every mount is on a systemd host (nodes run systemd)
        [ -r "$dir/proc/meminfo" ] && head -c1 "$dir/proc/meminfo" >/dev/null 2>&1 &&
            mount --make-shared "$dir" && return 0
        sleep 0.05
    done
    echo "lxcfs did not come up on $dir" >&2; cat "$T/lxcfs.out" >&2
    return 1
}
# lxcfs_views DIR [proc]: how many views the hook mounts from the LXCFS on DIR:
# the candidates of src/lxcfs/lxcfs.c it serves whose target this kernel has
# (LXCFS 5: nine; LXCFS 6 and 7 add /proc/pressure/{cpu,io,memory} where PSI
# is on); "proc": the /proc ones only
LXCFS_CANDIDATES="proc/cpuinfo proc/meminfo proc/stat proc/uptime proc/loadavg proc/swaps proc/diskstats
    proc/slabinfo proc/pressure/cpu proc/pressure/io proc/pressure/memory sys/devices/system/cpu/online"
lxcfs_views() {
    local dir=$1 only=${2:-} c n=0
    for c in $LXCFS_CANDIDATES; do
        [ -n "$only" ] && [ "${c%%/*}" != "$only" ] && continue
        [ -f "$dir/$c" ] && [ ! -L "$dir/$c" ] && [ -e "/$c" ] && n=$((n + 1))
    done
    echo "$n"
}
lxcfs_stop() {
    local dir=$1
    [ -n "$LXCFS_PID" ] && kill "$LXCFS_PID" 2>/dev/null && wait "$LXCFS_PID" 2>/dev/null
    umount -l "$dir" 2>/dev/null
    LXCFS_PID=""
    rm -f "$T/lxcfs.pid"
}

# cg_limit PATH QUOTA MEM: cgroup PATH (from the root; under $CG_PARENT, so
# removed at exit) limited to QUOTA/100000 CPUs and MEM bytes ("" for none),
# at the same path in each hierarchy a job uses (v1: cpu, cpuacct, cpuset,
# memory). On v2 the controllers are enabled down to it, as a runtime or
# Slurm does.
cg_limit() {
    local path=${1#/} quota=$2 mem=$3 d part
    if cg_is_v2; then
        d=/sys/fs/cgroup
        for part in ${path//\// }; do
            echo "+cpu +cpuset +memory +pids" >"$d/cgroup.subtree_control" 2>/dev/null ||
                for c in cpu cpuset memory pids; do echo "+$c" >"$d/cgroup.subtree_control" 2>/dev/null; done
            d=$d/$part
            mkdir -p "$d"
        done
        [ -z "$quota" ] || echo "$quota 100000" >"$d/cpu.max"
        [ -z "$mem" ] || echo "$mem" >"$d/memory.max"
        return
    fi
    for c in cpu cpuacct cpuset memory; do mkdir -p "/sys/fs/cgroup/$c/$path"; done
    d=/sys/fs/cgroup/cpuset
    for part in ${path//\// }; do
        [ -n "$(cat "$d/$part/cpuset.cpus")" ] || cat "$d/cpuset.cpus" >"$d/$part/cpuset.cpus"
        [ -n "$(cat "$d/$part/cpuset.mems")" ] || cat "$d/cpuset.mems" >"$d/$part/cpuset.mems"
        d=$d/$part
    done
    [ -z "$quota" ] || { echo 100000 >"/sys/fs/cgroup/cpu/$path/cpu.cfs_period_us"
                         echo "$quota" >"/sys/fs/cgroup/cpu/$path/cpu.cfs_quota_us"; }
    [ -z "$mem" ] || echo "$mem" >"/sys/fs/cgroup/memory/$path/memory.limit_in_bytes"
}
# cg_cpuset PATH LIST: cgroup PATH of cg_limit restricted to CPUs LIST
cg_cpuset() {
    if cg_is_v2; then echo "$2" >"/sys/fs/cgroup/${1#/}/cpuset.cpus"
    else echo "$2" >"/sys/fs/cgroup/cpuset/${1#/}/cpuset.cpus"; fi
}
# cg_memsoft PATH BYTES: the memory level PATH is pushed back to, not a limit
# (v2 memory.high, v1 memory.soft_limit_in_bytes)
cg_memsoft() {
    if cg_is_v2; then echo "$2" >"/sys/fs/cgroup/${1#/}/memory.high"
    else echo "$2" >"/sys/fs/cgroup/memory/${1#/}/memory.soft_limit_in_bytes"; fi
}
# cg_enter PATH: move this (sub)shell into cgroup PATH of cg_limit
cg_enter() { eval "$(cg_join_code "$1" '$BASHPID')"; }
# cg_join_code PATH [PID]: shell code that moves PID (the code's text, default
# $$: the shell that runs it) into cgroup PATH of cg_limit
cg_join_code() {
    local pid=${2:-'$$'}
    if cg_is_v2; then echo "echo $pid >/sys/fs/cgroup/${1#/}/cgroup.procs"
    else echo "for c in cpu cpuacct cpuset memory; do echo $pid >/sys/fs/cgroup/\$c/${1#/}/cgroup.procs; done"; fi
}
