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
# the request). NRI_ROUNDS (default 2000). No thresholds.
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
