#!/bin/bash
# What counting costs a container's start (metrics.h): the shim's `create`
# (static musl, next runtime /bin/true: the edit, the rewrite, the record and
# the count, no container) with the counters file there (metrics.address set:
# an open, an fstat, a one-page map, the atomic adds, an unmap) and without it
# (metrics off: one failed open), interleaved, medians; then one
# rv_metrics_add alone in a loop (static musl), file there and not. The hook
# and the broker pay the same per count. METRICS_ROUNDS (default 400).
source "$(dirname "$0")/../lib/common.sh"
R=${METRICS_ROUNDS:-400}
SHIM=${RUNTIME_BIN:-$BUILD/static/resview-runtime}
mkdir -p "$T/run" && mount -t tmpfs -o size=64m tmpfs "$T/run" && t_cleanup "umount -l '$T/run'"
rv_config "$T/config.json" "$(jq -n --arg s "$T/run/state" --arg m "127.0.0.1:0" \
    '{log: {level: "warn"}, state_dir: $s, runtimes: ["/bin/true"], metrics: {address: $m}}')"
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >/dev/null 2>&1 & WATCH=$!
for _ in $(seq 100); do [ -f "$T/run/state/metrics" ] && break; sleep 0.05; done
kill $WATCH; wait $WATCH 2>/dev/null
[ -f "$T/run/state/metrics" ] || { echo "bench: watch made no counters file"; exit 1; }
rv_bundle "$T/run/b" '.process.args = ["/bin/true"] | .linux.resources.cpu = {quota: 150000, period: 100000}'
echo "== metrics: the shim's create with the counters file and without, $R rounds each, interleaved"
RESVIEW_CONFIG=$T/config.json /usr/bin/python3 - "$SHIM" "$T/run/b" "$T/run/state" "$R" <<'PY'
import os, statistics, subprocess, sys, time
shim, bundle, state, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
f, away = os.path.join(state, "metrics"), os.path.join(state, "metrics.away")
def create(i):
    t = time.perf_counter_ns()
    subprocess.run([shim, "--root", bundle + "/r", "create", "--bundle", bundle, "m%d" % i],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - t) / 1e6
on, off = [], []
for i in range(rounds):
    for arm in ((0, 1) if i % 2 else (1, 0)):
        if arm:
            on.append(create(2 * i))
        else:
            os.rename(f, away); off.append(create(2 * i + 1)); os.rename(away, f)
def q(v, p): return sorted(v)[int(p * (len(v) - 1))]
for name, v in (("counting (file there)", on), ("metrics off (no file)", off)):
    print("   %-24s median %.3f ms  p10-p90 %.3f-%.3f ms" % (name, statistics.median(v), q(v, .1), q(v, .9)))
print("   difference of medians: %+.3f ms" % (statistics.median(on) - statistics.median(off)))
PY
cat >"$T/addloop.c" <<'C'
#include "resview/metrics.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int n = atoi(argv[2]);
    uint64_t t0 = rv_metrics_clock();
    for (int i = 0; i < n; i++)
        rv_metrics_add(argv[1], RV_M_VARS_OK);
    printf("%.2f", (double)(rv_metrics_clock() - t0) / n / 1000.0);
    return 0;
}
C
if musl-gcc -static -O2 -I"$TOP/include" -o "$T/addloop" "$T/addloop.c" "$BUILD/musl/libresview.a" 2>"$T/cc.err"; then
    on=$("$T/addloop" "$T/run/state" 100000); off=$("$T/addloop" "$T/run/none" 100000)
    echo "== one rv_metrics_add (static musl, 100000 in a loop): $on us with the file, $off us without"
else
    echo "bench: the add loop did not build: $(head -n 3 "$T/cc.err")"; exit 1
fi
