#!/bin/bash
# `make bench`: start latency of shim + hook over plain runc and crun
# (interleaved, medians, differences), peak RSS, instruction counts for one
# create on a ~20 KB Kubernetes-like spec; then every tests/bench.d/*.sh.
source "$(dirname "$0")/lib/common.sh"
[ "$(id -u)" = 0 ] || { echo "make bench: run as root" >&2; exit 1; }
ROUNDS=${ROUNDS:-100}
SHIM=$BUILD/static/resview-runtime
export HOOK_BIN=$BUILD/static/resview-hook HOOK=$BUILD/static/resview-hook

# Bundles on tmpfs, as engines keep them under /run.
mkdir -p "$T/run" && mount -t tmpfs -o size=64m tmpfs "$T/run" && t_cleanup "umount -l '$T/run'"
# Every feature on: variables, and LXCFS views through the hook.
export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop '$LXCFS_DIR'"
rv_config "$T/config.json" '{"log": {"level": "warn"}}'
jq '.runtimes = ["runc"]' "$T/config.json" >"$T/cfg-runc.json"
jq --arg c "$CRUN_V1" '.runtimes = [$c]' "$T/config.json" >"$T/cfg-crun.json"
for arm in runc exec+runc resview+runc crun exec+crun resview+crun; do
    mkdir -p "$T/run/bundle-$arm"
    rv_rootfs "$T/run/bundle-$arm/rootfs"
    rv_bundle "$T/run/bundle-$arm" '.process.args = ["/bin/true"] | .linux.resources.cpu = {"quota": 150000, "period": 100000} | .linux.resources.memory = {"limit": 536870912}'
    cp "$T/run/bundle-$arm/config.json" "$T/run/bundle-$arm/config.pristine"
done
# The floor of any shim: one more exec of a static program in front of the runtime.
gcc -static -O2 -o "$T/passthrough" "$TOP/tests/lib/passthrough.c" || exit 1
echo "== start latency (static binaries; crun runs through tests/lib/crun-v1, which adds the same unshare to every crun arm)"
echo "   exec+X: a bare static exec in front of X, the floor of any wrapper; resview+X: shim (variables) + hook (LXCFS views)"
/usr/bin/python3 "$TOP/tests/lib/bench.py" "$ROUNDS" "$T/run" \
    "runc=runc --root $T/r1" \
    "exec+runc=$T/passthrough $(command -v runc) --root $T/r5|runc --root $T/r5" \
    "exec+crun=$T/passthrough $CRUN_V1 --root $T/r6|$CRUN_V1 --root $T/r6" \
    "resview+runc=RESVIEW_CONFIG=$T/cfg-runc.json $SHIM --root $T/r2|runc --root $T/r2" \
    "crun=$CRUN_V1 --root $T/r3" \
    "resview+crun=RESVIEW_CONFIG=$T/cfg-crun.json $SHIM --root $T/r4|$CRUN_V1 --root $T/r4" || exit 1

echo
echo "== peak RSS (KiB) of one create on the benchmark bundle; next runtime: a static no-op"
gcc -static -O2 -o "$T/maxrss" "$TOP/tests/lib/maxrss.c" || exit 1
printf 'int main(void) { return 0; }\n' >"$T/noop.c" && gcc -static -O2 -o "$T/noop" "$T/noop.c" || exit 1
jq --arg t "$T/noop" '.runtimes = [$t]' "$T/config.json" >"$T/cfg-noop.json"
for b in "$SHIM" "$BUILD/resview-runtime"; do
    cp "$T/run/bundle-runc/config.pristine" "$T/run/bundle-runc/config.json"
    printf '%-34s %s\n' "${b#$TOP/}" "$(RESVIEW_CONFIG=$T/cfg-noop.json "$T/maxrss" "$b" create --bundle "$T/run/bundle-runc" rss1)"
done
printf '%-34s %s\n' "the no-op alone" "$("$T/maxrss" "$T/noop")"

echo
SPEC=$TOP/tests/samples/k8s-spec.json
echo "== instructions for one create (config load + spec load, edit, rewrite, record) on $(basename "$SPEC"), $(stat -c %s "$SPEC") bytes; callgrind"
gcc -O2 -I"$TOP/include" $(pkg-config --cflags jansson) -o "$T/create_once" "$TOP/tests/lib/create_once.c" \
    "$BUILD/libresview.a" $(pkg-config --libs jansson libseccomp) || exit 1
mkdir -p "$T/run/k8s"
cp "$SPEC" "$T/run/k8s/config.json"
RESVIEW_CONFIG=$T/cfg-noop.json valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" \
    "$T/create_once" "$T/run/k8s" >/dev/null 2>"$T/cg.err" || { cat "$T/cg.err"; exit 1; }
echo "create on a fresh spec:      $(grep -o 'Collected : [0-9]*' "$T/cg.err" | grep -o '[0-9]*') instructions"
RESVIEW_CONFIG=$T/cfg-noop.json valgrind --tool=callgrind --callgrind-out-file="$T/cg2.out" \
    "$T/create_once" "$T/run/k8s" >/dev/null 2>"$T/cg.err" || { cat "$T/cg.err"; exit 1; }
echo "create on an edited spec:    $(grep -o 'Collected : [0-9]*' "$T/cg.err" | grep -o '[0-9]*') instructions (idempotent: no rewrite)"

for b in "$TOP"/tests/bench.d/*.sh; do
    [ -e "$b" ] || continue
    echo
    bash "$b"
done
