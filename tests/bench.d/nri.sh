#!/bin/bash
# The NRI mode (`resview nri`): what the plugin adds to a container's
# creation. The runtime (containerd) sends CreateContainer and waits for the
# answer before it writes the spec; here the runtime's side is test_nri's
# (RESVIEW_NRI_BENCH: the generated NRI messages over NRI's multiplexer, as
# containerd frames them), the plugin the installed `resview nri` with LXCFS
# live and the hook present, as on a node: a Kubernetes-like container with
# CPU and memory limits, a new one each call. The hook's cost at the
# container's start is the same in both modes (the start-latency table:
# resview+runc against resview-noviews+runc); the shim's own cost, an exec
# in front of the runtime, is resview-noviews+runc against runc there.
# Then the worst requests NRI carries (a ttrpc message of 4 MiB, what a
# tenant's pod spec or image can fill): one of short variables, one whose
# NVIDIA_VISIBLE_DEVICES is GPU names, 20 rounds each, timed from the first
# byte sent (NRI's request timeout is 2 s; the plugin's work is linear in
# the request). NRI_ROUNDS (default 2000). Then a registration on a node of
# tenants with large environments (#42): Synchronize naming NRI_SYNC_CONTAINERS
# (120) running containers in 12 pods, NRI_SYNC_VARS (65,000) variables of
# 12 bytes each, split as containerd's NRI splits it (test_nri's
# RESVIEW_NRI_SYNC_BENCH), a fresh plugin: its own CPU time for it
# (schedstat), the time to the last answer, its peak RSS (the DaemonSet
# requests 32Mi), then a CreateContainer it must still answer. The target
# for the CPU time is 50 ms; no thresholds.
source "$(dirname "$0")/../lib/common.sh"
R=${NRI_ROUNDS:-2000}
export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop '$LXCFS_DIR'"
rv_config "$T/config.json" "$(jq -n --arg s "$T/state" '{log: {level: "warn"}, state_dir: $s}')"
echo "== NRI mode: the plugin's answer to CreateContainer (the runtime's side: test_nri), $R rounds"
RESVIEW_NRI_BENCH="$T/nri.sock $R" "$BUILD/tests/test_nri" >"$T/bench.out" 2>&1 & rt=$!
for _ in $(seq 100); do [ -S "$T/nri.sock" ] && break; sleep 0.02; done
RESVIEW_CONFIG=$T/config.json "$CLI" nri --socket "$T/nri.sock" >"$T/nri.log" 2>&1 & plugin=$!
t_cleanup "kill $plugin"
wait $rt; rc=$?
cat "$T/bench.out"
[ $rc = 0 ] || { echo "bench: the NRI runs failed (exit $rc): $(tail -n 3 "$T/nri.log")"; exit 1; }
echo "   peak RSS of the plugin: $(awk '/VmHWM/ {print $2}' "/proc/$plugin/status") KiB"
kill "$plugin"; wait "$plugin" 2>/dev/null
SC=${NRI_SYNC_CONTAINERS:-120} SV=${NRI_SYNC_VARS:-65000}
echo "== NRI mode: a registration's Synchronize, $SC running containers of $SV variables each"
RESVIEW_NRI_SYNC_BENCH="$T/sync.sock $SC $SV 12" "$BUILD/tests/test_nri" >"$T/sync.out" 2>&1 & rt=$!
for _ in $(seq 100); do [ -S "$T/sync.sock" ] && break; sleep 0.02; done
RESVIEW_CONFIG=$T/config.json "$CLI" nri --socket "$T/sync.sock" >"$T/nri-sync.log" 2>&1 & plugin2=$!
t_cleanup "kill $plugin2"
wait $rt; rc=$?
cat "$T/sync.out"
[ $rc = 0 ] || { echo "bench: the Synchronize run failed (exit $rc): $(tail -n 3 "$T/nri-sync.log")"; exit 1; }
echo "   (target: the plugin's CPU at most 50 ms; its peak RSS within the DaemonSet's request, 32Mi)"
