#!/bin/bash
# What the common CPU tools print under resview (issue #43 item 5), run for
# real in a container: the host's lscpu, coreutils nproc, getconf, procps top
# and htop with their libraries in the rootfs, in a 1-CPU job (quota 1 CPU,
# cpuset 0) on this 2-CPU host, under runc and crun, then after a resize to 2
# CPUs; and a job limited by its quota alone (Kubernetes' CPU limit). The
# views (cpu/online, /proc/stat) follow the limit and the resize; possible and
# present stay the host's (src/lxcfs/resview-hook.8.md "CPU TOOLS" says why):
# lscpu counts the host's CPUs and lists those beyond the view as off-line,
# nproc --all and getconf _NPROCESSORS_CONF count the host's.
source "$(dirname "$0")/../lib/common.sh"
export LXCFS_DIR=$T/lxcfs
source "$TOP/tests/lib/lxcfs-helpers.sh"

# the host's CPUs (online, 0 to LAST) and what the tools print of the host
NCPU=$(getconf _NPROCESSORS_ONLN)
[ "$NCPU" -ge 2 ] || { echo "ok 1 - # SKIP needs 2 CPUs or more (has $NCPU)"; exit 0; }
LAST=$((NCPU - 1))
HOST_CONF=$(getconf _NPROCESSORS_CONF) HOST_LSCPU=$(lscpu | sed -n 's/^CPU(s): *//p')
command -v htop >/dev/null || echo "# htop is not installed (tests/deps.d/lxcfs.txt): its part is skipped"
t_cleanup "lxcfs_stop $LXCFS_DIR"
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
rv_config "$T/config.json"

# The tools' rootfs: busybox (rv_rootfs) and the host's binaries with the
# libraries ldd names; the terminfo of dumb for top and of xterm for htop,
# which draws one screen and quits at the end of its input.
tools_rootfs() {
    local d=$1 b lib
    rv_rootfs "$d"
    for b in lscpu nproc getconf top htop; do
        b=$(command -v "$b") || continue
        cp --parents -L "$b" "$d"
        for lib in $(ldd "$b" | grep -o '/[^ ]*'); do cp --parents -L "$lib" "$d"; done
    done
    for b in /lib/terminfo/d/dumb /lib/terminfo/x/xterm; do [ -f "$b" ] && cp --parents -L "$b" "$d"; done
    cat >"$d/check.sh" <<'EOF'
echo "nproc=$(/usr/bin/nproc)"
echo "nproc-affinity=$(env -u OMP_NUM_THREADS /usr/bin/nproc)"
echo "nproc-all=$(/usr/bin/nproc --all)"
echo "onln=$(/usr/bin/getconf _NPROCESSORS_ONLN)"
echo "conf=$(/usr/bin/getconf _NPROCESSORS_CONF)"
echo "allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
echo "present=$(cat /sys/devices/system/cpu/present)"
echo "possible=$(cat /sys/devices/system/cpu/possible)"
/usr/bin/lscpu | grep -E '^(CPU\(s\)|On-line CPU\(s\) list|Off-line CPU\(s\) list):' | sed 's/:  */: /'
# top's per-CPU lines (-1), two CPUs abreast where the width (-w) allows
echo "top=$(/usr/bin/top -b -n 1 -1 -w 512 | grep -o '%Cpu[0-9]*' | tr '\n' ' ')"
[ -x /usr/bin/htop ] || exit 0
# htop's CPU meters ("0[|| 5.0%]", "1[...") in the header of its one screen
# (not "[Main]", its first tab); busybox sed knows no \x1b
esc=$(printf '\033')
echo "htop=$(TERM=xterm HOME=/tmp COLUMNS=120 LINES=30 /usr/bin/htop -d 10 </dev/null 2>&1 |
    sed -e "s/$esc\[[0-9;?]*[a-zA-Z]//g" -e "s/$esc[()][0-9A-Za-z]//g" | tr -d '\000-\011\013-\037' |
    sed 's/PID USER.*//' | grep -o '[0-9]\+\[[^A-Za-z]' | sed 's/\[.*//' | tr '\n' ' ')"
EOF
}
tools_rootfs "$T/tools"

# the process of one exec through the shim (its variables, as engines' exec)
proc() { jq -n '{terminal: false, args: ["/bin/sh", "/check.sh"], cwd: "/", env: ["PATH=/usr/bin:/bin"],
                 user: {uid: 0, gid: 0}}' >"$T/proc.json"; echo "$T/proc.json"; }
# start_job RT ID CPUSET: a long-running 1-CPU (quota) container through the shim
start_job() {
    local rt=$1 id=$2 cpus=$3 next=runc
    [ "$rt" = crun ] && next=$CRUN_V1
    mkdir -p "$T/b-$id" && cp -a "$T/tools" "$T/b-$id/rootfs"
    rv_bundle "$T/b-$id" ".process.args = [\"/bin/sleep\", \"300\"] | .linux.resources.cpu = {quota: 100000, period: 100000, cpus: \"$cpus\"}"
    jq --arg n "$next" '.runtimes = [$n]' "$T/config.json" >"$T/config.json.$rt"
    (cd "$T/b-$id" && shim "$rt" create "$id") </dev/null >/dev/null 2>"$T/create-$id.err" && shim "$rt" start "$id"
}
shim() { local rt=$1; shift; RESVIEW_CONFIG=$T/config.json.$rt "$RUNTIME" --root "$T/$rt-root" "$@"; }
check() { shim "$1" exec --process "$(proc)" "$2" 2>&1; }
# top's and htop's CPUs for N CPUs: "%Cpu0 %Cpu1 " and "0 1 "
top_of() { local i s=""; for ((i = 0; i < $1; i++)); do s+="%Cpu$i "; done; echo "$s"; }
htop_of() { local i s=""; for ((i = 0; i < $1; i++)); do s+="$i "; done; echo "$s"; }
# lscpu's list of CPUs FIRST to LAST: "0", "0,1", "0-3"
list_of() { case $(($2 - $1)) in 0) echo "$1" ;; 1) echo "$1,$2" ;; *) echo "$1-$2" ;; esac; }
htop_line() { command -v htop >/dev/null || return 0; t_line "$@"; }

for rt in runc crun; do
    id=cpu-$rt-$$
    t_ok "$rt: a 1-CPU job (quota 1 CPU, cpuset 0) starts" start_job $rt $id 0
    out=$(check $rt $id)
    t_line "$rt: nproc is 1 (OMP_NUM_THREADS)" "$out" "nproc=1"
    t_line "$rt: nproc without OMP_NUM_THREADS is 1 (the cpuset)" "$out" "nproc-affinity=1"
    t_line "$rt: getconf _NPROCESSORS_ONLN is 1 (cpu/online)" "$out" "onln=1"
    t_line "$rt: lscpu On-line CPU(s) list: 0" "$out" "On-line CPU(s) list: 0"
    t_line "$rt: top shows one CPU (%Cpu0)" "$out" "top=$(top_of 1)"
    t_line "$rt: nproc --all is the host's $HOST_CONF (possible)" "$out" "nproc-all=$HOST_CONF"
    t_line "$rt: getconf _NPROCESSORS_CONF is the host's $HOST_CONF (possible)" "$out" "conf=$HOST_CONF"
    t_line "$rt: lscpu CPU(s): the host's $HOST_LSCPU (present)" "$out" "CPU(s): $HOST_LSCPU"
    t_line "$rt: lscpu Off-line CPU(s) list: the host's others ($(list_of 1 $LAST))" "$out" "Off-line CPU(s) list: $(list_of 1 $LAST)"
    t_line "$rt: possible is the host's" "$out" "possible=$(cat /sys/devices/system/cpu/possible)"
    t_line "$rt: present is the host's" "$out" "present=$(cat /sys/devices/system/cpu/present)"
    htop_line "$rt: htop meters the host's $NCPU CPUs (cpuN directories)" "$out" "htop=$(htop_of $NCPU)"

    # resize to every CPU: the views follow
    if [ $rt = crun ]; then "$CRUN_V1" --root "$T/crun-root" update --cpu-quota $((NCPU * 100000)) --cpuset-cpus "0-$LAST" "$id"
    else runc --root "$T/runc-root" update --cpu-quota $((NCPU * 100000)) --cpuset-cpus "0-$LAST" "$id"; fi
    t_eq "$rt: update to $NCPU CPUs exits 0" "$?" "0"
    out=$(check $rt $id)
    t_line "$rt: after, nproc is $NCPU" "$out" "nproc=$NCPU"
    t_line "$rt: after, getconf _NPROCESSORS_ONLN is $NCPU" "$out" "onln=$NCPU"
    t_line "$rt: after, lscpu On-line CPU(s) list: $(list_of 0 $LAST)" "$out" "On-line CPU(s) list: $(list_of 0 $LAST)"
    t_not_contains "$rt: after, lscpu lists no off-line CPU" "$out" "Off-line"
    t_line "$rt: after, top shows $NCPU CPUs" "$out" "top=$(top_of $NCPU)"
    htop_line "$rt: after, htop meters $NCPU CPUs" "$out" "htop=$(htop_of $NCPU)"
    shim $rt kill "$id" KILL; sleep 0.2; shim $rt delete -f "$id" >/dev/null 2>&1
done

# A quota alone (Kubernetes' CPU limit): the view says 1 CPU while the job
# may run on every CPU, so present and possible must stay the host's.
id=cpu-quota-$$
t_ok "quota alone: the job starts" start_job runc $id "0-$LAST"
out=$(check runc $id)
t_line "quota alone: it may run on CPUs 0-$LAST" "$out" "allowed=0-$LAST"
t_line "quota alone: cpu/online says 1 CPU (getconf _NPROCESSORS_ONLN)" "$out" "onln=1"
t_line "quota alone: nproc is 1 (OMP_NUM_THREADS)" "$out" "nproc=1"
t_line "quota alone: nproc without OMP_NUM_THREADS is $NCPU (the affinity)" "$out" "nproc-affinity=$NCPU"
t_line "quota alone: present still covers CPU $LAST" "$out" "present=$(cat /sys/devices/system/cpu/present)"
t_line "quota alone: possible still covers CPU $LAST" "$out" "possible=$(cat /sys/devices/system/cpu/possible)"
shim runc kill "$id" KILL; sleep 0.2; shim runc delete -f "$id" >/dev/null 2>&1
