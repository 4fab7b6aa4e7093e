#!/bin/bash
# The node agent pod's CPU request (hooks/kubernetes/README.md "Sizing"):
# the NRI plugin's answers and LXCFS's reads while a tenant's burstable pod
# keeps every CPU busy. The cgroups as kubelet lays them out (cgroupfs
# driver): kubepods (shares: the node's CPUs), kubepods/burstable (the sum of
# its pods' requests), a tenant pod requesting what the agent leaves of the
# node (TENANT_THREADS busy loops, more than the CPUs) and the agent pod with
# its container(s); shares = milliCPU*1024/1000 (at least 2), on cgroup v2
# cpu.weight = 1 + (shares-2)*9999/262142. Each arm: LXCFS and `resview nri`
# in the agent's container ("one") or each in its own container with that
# request ("split"); the runtime's side (test_nri, RESVIEW_NRI_BENCH, outside
# kubepods as containerd is) sends NRI_ROUNDS Kubernetes-like CreateContainer
# calls back to back (a burst of pod creations), then HUGE_ROUNDS of each
# worst request (4 MiB of variables, of GPU names), while a process in the
# tenant's container reads LXCFS's meminfo, cpuinfo and stat every 20 ms (what
# the hook and tenants do); then a busy loop in the agent's container shows
# the CPU it gets. NRI drops a plugin whose answer takes over 2 s; the hook
# waits 3 s for LXCFS. AGENT_REQUESTS (milliCPU, default "10 50 100 250"),
# ARM_S (seconds of reads per arm, default 3). No thresholds.
source "$(dirname "$0")/../lib/common.sh"
# Interrupted (timeout signals the whole group, so twice): the cleanup runs
# once, to its end.
trap 'trap "" TERM INT; exit 143' TERM INT
REQS=${AGENT_REQUESTS:-10 50 100 250}
ARM_S=${ARM_S:-3}
THREADS=${TENANT_THREADS:-8}
NCPU=$(nproc)
[ "$(id -u)" = 0 ] || { echo "== agent pod under load: skipped (run as root)"; exit 0; }
# The cpu controller: v1's hierarchy, or v2 with cpu delegable from the root.
if cg_is_v2; then
    CPU_ROOT=/sys/fs/cgroup
    grep -qw cpu "$CPU_ROOT/cgroup.controllers" 2>/dev/null && echo +cpu >"$CPU_ROOT/cgroup.subtree_control" 2>/dev/null ||
        { echo "== agent pod under load: skipped (cgroup v2 without the cpu controller delegated to the root)"; exit 0; }
else
    CPU_ROOT=/sys/fs/cgroup/cpu
    [ -w "$CPU_ROOT/cgroup.procs" ] ||
        { echo "== agent pod under load: skipped (no writable cgroup v1 cpu hierarchy)"; exit 0; }
fi
shares() { local s=$(($1 * 1024 / 1000)); echo $((s < 2 ? 2 : s)); }
# cg_set DIR MILLICPU: DIR's weight for that request
cg_set() {
    local s; s=$(shares "$2")
    if cg_is_v2; then echo $((1 + ((s - 2) * 9999) / 262142)) >"$1/cpu.weight"; else echo "$s" >"$1/cpu.shares"; fi
}
# Under the test's own cgroup: what outlives a run is killed by common.sh.
ROOT=$(cg_dir cpu "$CG_PARENT")
KP=$ROOT/kubepods BU=$ROOT/kubepods/burstable
TEN=$BU/podtenant AG=$BU/podagent
mkdir -p "${ROOT%/*}" || exit 1
cg_is_v2 && echo +cpu >"${ROOT%/*}/cgroup.subtree_control"
CGS="$ROOT $KP $BU $TEN $TEN/busy $AG $AG/agent $AG/lxcfs"
for d in $CGS; do
    mkdir "$d" || exit 1
    cg_is_v2 && [ "$d" != "$TEN/busy" ] && [ "$d" != "$AG/agent" ] && [ "$d" != "$AG/lxcfs" ] &&
        echo +cpu >"$d/cgroup.subtree_control"
done
# At exit: whatever still runs in them (all started here) killed, then the
# cgroups removed, deepest first.
cg_remove() {
    local d p
    for d in $(echo "$CGS" | tr ' ' '\n' | tac); do
        for _ in 1 2 3 4 5; do
            p=$(cat "$d/cgroup.procs" 2>/dev/null)
            [ -z "$p" ] && break
            kill $p 2>/dev/null; sleep 0.1
        done
        rmdir "$d"
    done
}
t_cleanup cg_remove
cg_set "$KP" $((NCPU * 1000))

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop '$LXCFS_DIR'"
rv_config "$T/config.json" "$(jq -n --arg s "$T/state" '{log: {level: "warn"}, state_dir: $s}')"
cat >"$T/reader.py" <<'PY'
import sys, time
d, dur = sys.argv[1], float(sys.argv[2])
files = [d + "/proc/meminfo", d + "/proc/cpuinfo", d + "/proc/stat"]
ms, end = [], time.monotonic() + dur
while time.monotonic() < end:
    for f in files:
        t = time.monotonic()
        with open(f, "rb") as fh:
            fh.read()
        ms.append((time.monotonic() - t) * 1e3)
    time.sleep(0.02)
ms.sort()
print("%.2f %.2f %.2f %d" % (ms[len(ms) // 2], ms[len(ms) * 99 // 100], ms[-1], len(ms)))
PY
# in_cg DIR CMD...: CMD in cgroup DIR
# (exec: the caller's $! is CMD's pid)
in_cg() { local d=$1; shift; exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$d" "$@"; }

# arm LABEL AGENT_MILLICPU LAYOUT(one|split)
arm() {
    local label=$1 a=$2 layout=$3 pod=$2 ten plugin rt nri rd probe cpu0 cpu1
    [ "$layout" = split ] && pod=$((2 * a))
    ten=$((NCPU * 1000 - pod))
    cg_set "$AG/agent" "$a"; cg_set "$AG/lxcfs" "$a"; cg_set "$AG" "$pod"
    cg_set "$TEN/busy" "$ten"; cg_set "$TEN" "$ten"; cg_set "$BU" $((ten + pod))
    if [ "$layout" = split ]; then echo "$LXCFS_PID" >"$AG/lxcfs/cgroup.procs"; else echo "$LXCFS_PID" >"$AG/agent/cgroup.procs"; fi
    rm -f "$T/nri.sock"
    RESVIEW_NRI_BENCH="$T/nri.sock $NRI_ROUNDS $HUGE_ROUNDS" timeout 110 "$BUILD/tests/test_nri" >"$T/nri.out" 2>&1 & rt=$!
    RT=$rt
    for _ in $(seq 100); do [ -S "$T/nri.sock" ] && break; sleep 0.02; done
    RESVIEW_CONFIG=$T/config.json in_cg "$AG/agent" "$CLI" nri --socket "$T/nri.sock" >>"$T/nri.log" 2>&1 & plugin=$!
    rd=$(in_cg "$TEN/busy" timeout 60 python3 "$T/reader.py" "$LXCFS_DIR" "$ARM_S")
    wait $rt
    kill "$plugin" 2>/dev/null; wait "$plugin" 2>/dev/null
    # The CPU the agent's container gets when it wants it all (a call that
    # costs C ms of CPU needs at least C*1000/granted ms): a busy loop there.
    in_cg "$AG/agent" sh -c 'while :; do :; done' & probe=$!
    sleep 0.1; cpu0=$(cut -d' ' -f1 "/proc/$probe/schedstat"); sleep 1
    cpu1=$(cut -d' ' -f1 "/proc/$probe/schedstat")
    kill "$probe"; wait "$probe" 2>/dev/null
    # "NRI CreateContainer, answered: median X us p90 X us p99 X us max X us (...)"
    # and the worst requests' "... median X ms  p90 X ms (...)", p90 their maximum
    nri=$(awk '/answered:/ { printf "%9.2f %9.2f %9.2f", $5 / 1e3, $8 / 1e3, $14 / 1e3 }
               /4 MiB/ { for (i = 1; i < NF; i++) if ($i == "p90" && $(i + 1) > w) w = $(i + 1) }
               END { if (w != "") printf " %9.1f", w }' "$T/nri.out")
    [ "$(echo "$nri" | wc -w)" = 4 ] || nri=$(printf '%39s' "failed: $(tail -c 50 "$T/nri.out" | tr '\n' ' ')")
    set -- $rd
    printf '   %-20s %s   %9s %9s %9s  %6s\n' "$label" "$nri" "${1:--}" "${2:--}" "${3:--}" $(((cpu1 - cpu0) / 1000000))
}
NRI_ROUNDS=${NRI_ROUNDS:-100} HUGE_ROUNDS=${HUGE_ROUNDS:-2} RT=""
# the runtime's side runs outside the cgroups (timeout: a process group of its own)
t_cleanup '[ -n "$RT" ] && kill "$RT"'
echo "== agent pod under load: $NCPU CPUs, a tenant pod requesting the rest of the node runs $THREADS busy loops; ms"
echo "   NRI: $NRI_ROUNDS Kubernetes-like CreateContainer calls back to back, then $HUGE_ROUNDS of each worst request (4 MiB of"
echo "   variables, of GPU names), slowest; LXCFS: meminfo, cpuinfo, stat read from the tenant every 20 ms"
echo "   CPU: what a busy loop in the agent's container gets, ms per s; split: LXCFS in a second container, same request"
printf '   %-20s %9s %9s %9s %9s   %9s %9s %9s  %6s\n' "agent request" "NRI p50" "p90" "max" "4 MiB" "LXCFS p50" "p99" "max" "CPU"
arm "${REQS%% *}m, no tenant" "${REQS%% *}" one
for ((i = 0; i < THREADS; i++)); do
    in_cg "$TEN/busy" timeout 150 sh -c 'while :; do :; done' & BUSY+=($!)
done
t_cleanup "kill ${BUSY[*]}"
sleep 0.5
for a in $REQS; do
    arm "${a}m, one container" "$a" one
    arm "${a}m, split" "$a" split
done
kill "${BUSY[@]}"; wait "${BUSY[@]}" 2>/dev/null
echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
