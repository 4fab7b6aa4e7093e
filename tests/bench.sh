#!/bin/bash
# `make bench`: start latency of shim + hook over plain runc and crun
# (interleaved, medians, differences) beside the exec floor (a bare static musl
# and glibc program in front of the runtime); per-exec cost of each binary,
# musl vs glibc; peak RSS; instruction counts for one create on a ~20 KB
# Kubernetes-like spec and for the hook; then every tests/bench.d/*.sh.
# BENCH_ARMS=REGEX: only those start-latency arms (beside plain runc and crun),
# and none of tests/bench.d.
source "$(dirname "$0")/lib/common.sh"
[ "$(id -u)" = 0 ] || { echo "make bench: run as root" >&2; exit 1; }
ROUNDS=${ROUNDS:-100}
SHIM=$BUILD/static/resview-runtime
export HOOK_BIN=$BUILD/static/resview-hook HOOK=$BUILD/static/resview-hook
MUSL=$BUILD/musl
echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start (the latency figures need an idle machine)"

# Bundles on tmpfs, as engines keep them under /run.
mkdir -p "$T/run" && mount -t tmpfs -o size=64m tmpfs "$T/run" && t_cleanup "umount -l '$T/run'"
# Every feature on: variables, and LXCFS views through the hook. The state
# directory on tmpfs too, as /run/resview is.
export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop '$LXCFS_DIR'"
rv_config "$T/config.json" "{\"log\": {\"level\": \"warn\"}, \"state_dir\": \"$T/run/state\"}"
jq '.runtimes = ["runc"]' "$T/config.json" >"$T/cfg-runc.json"
# As deployed (the node agent, the systemd unit): `resview watch` runs and
# holds the LXCFS files for the hook; one arm without it (its own state
# directory, where nothing holds them): the hook looks them up.
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >/dev/null 2>&1 & WATCH=$!
t_cleanup "kill $WATCH"
for _ in $(seq 100); do [ -S "$T/run/state/views.sock" ] && break; sleep 0.05; done
jq --arg s "$T/run/state-nowatch" '.state_dir = $s' "$T/cfg-runc.json" >"$T/cfg-runc-nowatch.json"
jq --arg c "$CRUN_V1" '.runtimes = [$c]' "$T/config.json" >"$T/cfg-crun.json"
ARMS=()
# Two more arms take resview's cost apart (runc only): any prestart hook, a
# static musl no-op, costs the runtime a fork, an exec and a wait; resview
# without the views is the shim alone.
printf 'int main(void) { return 0; }\n' >"$T/noop.c"
musl-gcc -static -O2 -o "$T/noop-musl" "$T/noop.c" || exit 1
jq --arg t "$T/noop-musl" '.runtimes = [$t]' "$T/config.json" >"$T/cfg-noop.json"
# The floor (views-mounts+X): X binds the same LXCFS files itself from the
# spec's mounts, each private, as a Kubernetes webhook's hostPath volumes have
# containerd write them; no hook, no shim.
VIEWS='[["proc/cpuinfo", "/proc/cpuinfo"], ["proc/meminfo", "/proc/meminfo"], ["proc/stat", "/proc/stat"],
        ["proc/uptime", "/proc/uptime"], ["proc/loadavg", "/proc/loadavg"], ["proc/swaps", "/proc/swaps"],
        ["proc/diskstats", "/proc/diskstats"], ["proc/slabinfo", "/proc/slabinfo"],
        ["sys/devices/system/cpu/online", "/sys/devices/system/cpu/online"]]'
for arm in runc glibc-exec+runc musl-exec+runc resview+runc noop-hook+runc resview-noviews+runc resview-nowatch+runc \
           nri+runc nri-hook+runc views-mounts+runc crun glibc-exec+crun musl-exec+crun resview+crun views-mounts+crun; do
    mkdir -p "$T/run/bundle-$arm"
    rv_rootfs "$T/run/bundle-$arm/rootfs"
    rv_bundle "$T/run/bundle-$arm" '.process.args = ["/bin/true"] | .linux.resources.cpu = {"quota": 150000, "period": 100000} | .linux.resources.memory = {"limit": 536870912}'
    case $arm in
        noop-hook+*) jq --arg h "$T/noop-musl" '.hooks.prestart = [{path: $h}]' "$T/run/bundle-$arm/config.json" ;;
        resview-noviews+*) jq '.annotations["resview.io/lxcfs"] = "false"' "$T/run/bundle-$arm/config.json" ;;
        views-mounts+*) jq --arg lx "$LXCFS_DIR" --argjson v "$VIEWS" '.mounts += [$v[] |
                            {destination: .[1], type: "bind", source: "\($lx)/\(.[0])", options: ["rbind", "rprivate", "ro"]}]' \
                            "$T/run/bundle-$arm/config.json" ;;
        # NRI mode: what containerd writes from the plugin's adjustment (the
        # shim's own edit: the variables and the hook entry), run by plain runc
        # NRI mode where watch holds the files: the variables only (the
        # plugin gives the views at StartContainer, bench.py)
        nri+*) jq '.annotations["resview.io/lxcfs"] = "false"' "$T/run/bundle-$arm/config.json" >"$T/nri.json" &&
               mv "$T/nri.json" "$T/run/bundle-$arm/config.json" &&
               RESVIEW_CONFIG=$T/cfg-noop.json "$SHIM" create --bundle "$T/run/bundle-$arm" nri-edit >/dev/null &&
               jq 'del(.annotations["resview.io/lxcfs"])' "$T/run/bundle-$arm/config.json" ;;
        nri-hook+*) RESVIEW_CONFIG=$T/cfg-noop.json "$SHIM" create --bundle "$T/run/bundle-$arm" nri-edit >/dev/null &&
                    cat "$T/run/bundle-$arm/config.json" ;;
        *) cat "$T/run/bundle-$arm/config.json" ;;
    esac >"$T/run/bundle-$arm/config.pristine"
done
# The floor of any shim: one more exec of a static program in front of the
# runtime, with glibc and with musl (what resview is built with).
gcc -static -O2 -o "$T/passthrough-glibc" "$TOP/tests/lib/passthrough.c" || exit 1
musl-gcc -static -O2 -o "$T/passthrough-musl" "$TOP/tests/lib/passthrough.c" || exit 1
RUNC=$(command -v runc)
echo "== start latency (static musl binaries; crun runs through tests/lib/crun-v1, which adds the same unshare to every crun arm)"
echo "   glibc-/musl-exec+X: a bare static exec in front of X, the floor of any wrapper"
echo "   noop-hook+runc: runc running a static no-op prestart hook (any hook's cost to the runtime); resview-noviews+runc: the shim alone"
echo "   resview+X: as deployed, \`resview watch\` holding the LXCFS files: the shim's variables at create, its views at start (no hook)"
echo "   resview-nowatch+runc: without watch: the shim's variables and the hook (it looks the LXCFS files up)"
echo "   nri+runc: NRI mode as deployed (watch runs): the plugin's CreateContainer answer (the variables) over its"
echo "   socket, runc create, its StartContainer (the views, no hook), runc start; the runtime's side: test_nri_conn's fake"
echo "   nri-hook+runc: NRI mode without watch, the spec as containerd writes it (variables, hook) run by plain runc"
echo "   views-mounts+X: the floor, X binding the same nine LXCFS files from the spec's mounts (a webhook's way; no bound on a hung LXCFS)"
BENCH_EXEC=$T/noop-musl RESVIEW_CONFIG=$T/config.json BENCH_NRI="$BUILD/tests/test_nri_conn $T/run/nri.sock $CLI nri --socket $T/run/nri.sock" \
/usr/bin/python3 "$TOP/tests/lib/bench.py" "$ROUNDS" "$T/run" \
    "runc=runc --root $T/r1" \
    "glibc-exec+runc=$T/passthrough-glibc $RUNC --root $T/r5|runc --root $T/r5" \
    "musl-exec+runc=$T/passthrough-musl $RUNC --root $T/r7|runc --root $T/r7" \
    "resview+runc=RESVIEW_CONFIG=$T/cfg-runc.json $SHIM --root $T/r2|runc --root $T/r2" \
    "noop-hook+runc=runc --root $T/r9" \
    "resview-noviews+runc=RESVIEW_CONFIG=$T/cfg-runc.json $SHIM --root $T/r10|runc --root $T/r10" \
    "resview-nowatch+runc=RESVIEW_CONFIG=$T/cfg-runc-nowatch.json $SHIM --root $T/r11|runc --root $T/r11" \
    "nri+runc=runc --root $T/r15" \
    "nri-hook+runc=runc --root $T/r12" \
    "views-mounts+runc=runc --root $T/r13" \
    "crun=$CRUN_V1 --root $T/r3" \
    "glibc-exec+crun=$T/passthrough-glibc $CRUN_V1 --root $T/r6|$CRUN_V1 --root $T/r6" \
    "musl-exec+crun=$T/passthrough-musl $CRUN_V1 --root $T/r8|$CRUN_V1 --root $T/r8" \
    "resview+crun=RESVIEW_CONFIG=$T/cfg-crun.json $SHIM --root $T/r4|$CRUN_V1 --root $T/r4" \
    "views-mounts+crun=$CRUN_V1 --root $T/r14" || exit 1
echo "   nri+runc: views given at StartContainer to $(grep -l '"status":"ok"' "$T"/run/state/containers/bench-nri+runc-*/views 2>/dev/null |
    wc -l) of $((ROUNDS + 3)) containers (their records)"
echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# No-ops and the two binaries, static musl, static glibc and dynamic glibc.
gcc -static -O2 -o "$T/noop-glibc" "$T/noop.c" &&
    gcc -O2 -o "$T/noop-dynamic" "$T/noop.c" || exit 1
for b in resview-runtime resview-hook; do
    gcc -static -Wl,--gc-sections -o "$T/$b-glibc-static" "$BUILD/obj/bin-$b.o" "$BUILD/libresview.a" \
        $(pkg-config --static --libs jansson libseccomp) || exit 1
done
gcc -O2 -o "$T/spawn_cost" "$TOP/tests/lib/spawn_cost.c" || exit 1
echo
echo "== per-exec cost (posix_spawn + wait, median of 5 batches of 100, µs); next runtime of the shim: a static musl no-op"
printf '%-44s %8s %8s %8s\n' "" "musl" "glibc" "glibc"
printf '%-44s %8s %8s %8s\n' "" "static" "static" "dynamic"
printf '%-44s %8s %8s %8s\n' "a no-op program" "$("$T/spawn_cost" 500 "$T/noop-musl")" \
    "$("$T/spawn_cost" 500 "$T/noop-glibc")" "$("$T/spawn_cost" 500 "$T/noop-dynamic")"
printf '%-44s %8s %8s %8s\n' "resview-hook --help (exec, no work)" "$("$T/spawn_cost" 500 "$HOOK" --help)" \
    "$("$T/spawn_cost" 500 "$T/resview-hook-glibc-static" --help)" "$("$T/spawn_cost" 500 "$BUILD/resview-hook" --help)"
export RESVIEW_CONFIG=$T/cfg-noop.json
printf '%-44s %8s %8s %8s\n' "resview-runtime state X (pass-through + no-op)" "$("$T/spawn_cost" 500 "$SHIM" state x)" \
    "$("$T/spawn_cost" 500 "$T/resview-runtime-glibc-static" state x)" "$("$T/spawn_cost" 500 "$BUILD/resview-runtime" state x)"
unset RESVIEW_CONFIG

echo
echo "== peak RSS (KiB) of one create on the benchmark bundle; next runtime: a static no-op"
gcc -static -O2 -o "$T/maxrss" "$TOP/tests/lib/maxrss.c" || exit 1
for b in "$SHIM" "$T/resview-runtime-glibc-static" "$BUILD/resview-runtime"; do
    cp "$T/run/bundle-runc/config.pristine" "$T/run/bundle-runc/config.json"
    printf '%-44s %s\n' "${b#$TOP/}" "$(RESVIEW_CONFIG=$T/cfg-noop.json "$T/maxrss" "$b" create --bundle "$T/run/bundle-runc" rss1)"
done
printf '%-44s %s\n' "the musl no-op alone" "$("$T/maxrss" "$T/noop-musl")"

echo
SPEC=$TOP/tests/samples/k8s-spec.json
echo "== instructions for one create (config load + spec load, edit, rewrite, record) on $(basename "$SPEC"), $(stat -c %s "$SPEC") bytes; callgrind"
musl-gcc -static -O2 -I"$TOP/include" -I"$MUSL/prefix/include" -o "$T/create_once" "$TOP/tests/lib/create_once.c" \
    "$MUSL/libresview.a" "$MUSL/prefix/lib/libseccomp.a" "$MUSL/prefix/lib/libjansson.a" || exit 1
gcc -O2 -I"$TOP/include" $(pkg-config --cflags jansson) -o "$T/create_once-glibc" "$TOP/tests/lib/create_once.c" \
    "$BUILD/libresview.a" $(pkg-config --libs jansson libseccomp) || exit 1
mkdir -p "$T/run/k8s"
instr() { # LABEL PROGRAM ARGS...: instructions of one run
    local label=$1; shift
    RESVIEW_CONFIG=$T/cfg-noop.json valgrind --tool=callgrind --callgrind-out-file="$T/cg.%p" "$@" \
        >/dev/null 2>"$T/cg.err" || { cat "$T/cg.err"; exit 1; }
    printf '%-58s %s\n' "$label" "$(grep -o 'Collected : [0-9]*' "$T/cg.err" | grep -o '[0-9]*' | awk '{s += $1} END {print s}')"
}
cp "$SPEC" "$T/run/k8s/config.json"
instr "create on a fresh spec (static musl):" "$T/create_once" "$T/run/k8s"
instr "create on an edited spec (idempotent: no rewrite):" "$T/create_once" "$T/run/k8s"
cp "$SPEC" "$T/run/k8s/config.json"
instr "create on a fresh spec (dynamic glibc, with ld.so):" "$T/create_once-glibc" "$T/run/k8s"
# A FUSE create starts the container's broker (pidfd_open, which valgrind
# 3.19 does not know): tests/bench.d/fuse.sh measures it in time instead.
instr "pass-through (state X), up to the exec:" "$T/create_once" -- state bench-x

# The hook with views, run by runc as a prestart hook of a plain runc
# container through a callgrind wrapper: as the shim's entry runs it (root.path
# handed over), and reading config.json (a hooks.d entry). Under valgrind the
# hook's bounded child is a fork and the mounts take the bind fallback
# (valgrind 3.19 knows no open_tree): the hook's count plus the child's own
# work (hook_child; a forked child's count starts with the parent's).
jq --arg s "$T/state" '.state_dir = $s' "$T/cfg-noop.json" >"$T/cfg-hook.json"
hook_instr() { # LABEL ID HOOK-ARGS-JSON
    local label=$1 id=$2 args=$3
    rm -f "$T"/cgh.* "$T"/cgh-log.*
    printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s/cgh.%%p --log-file=%s/cgh-log.%%p %s "$@"\n' \
        "$T" "$T" "$HOOK" >"$T/hook-cg"
    chmod +x "$T/hook-cg"
    rv_bundle "$T/run/$id" ".process.args = [\"/bin/true\"] | .linux.resources.memory = {\"limit\": 536870912} |
        .hooks.prestart = [{path: \"$T/hook-cg\", args: $args, env: [\"RESVIEW_CONFIG=$T/cfg-hook.json\"]}]"
    (cd "$T/run/$id" && runc --root "$T/rh" run "$id" </dev/null >/dev/null 2>"$T/hk.err") ||
        { echo "bench: the hook under callgrind failed: $(cat "$T/hk.err" "$T"/cgh-log.* | tail -5)"; exit 1; }
    local f n total=0
    for f in "$T"/cgh.*; do
        n=$(callgrind_annotate --inclusive=yes "$f" | awk '/hook.c:hook_child \[/ {gsub(",", "", $1); print $1; exit}')
        [ -n "$n" ] || n=$(sed -n 's/^summary: //p' "$f")
        total=$((total + n))
    done
    printf '%-58s %s (%s)\n' "$label" "$total" \
        "$(jq -r '"\(.mounted | length) views mounted, \(.status)"' "$T/state/containers/$id/views")"
}
hook_instr "hook, handed over by the shim (--rootfs=rootfs):" hk-bench1 '["resview-hook", "--rootfs=rootfs"]'
hook_instr "hook reading config.json (hooks.d):" hk-bench2 '["resview-hook"]'

for b in "$TOP"/tests/bench.d/*.sh; do
    [ -e "$b" ] && [ -z "${BENCH_ARMS:-}" ] || continue
    echo
    bash "$b"
done
