#!/bin/bash
# make check stage: memory safety of the library, the shim and the hook.
#  1. build/asan: library, unit tests, resview-runtime and resview-hook built
#     with -fsanitize=address,undefined (no _FORTIFY_SOURCE), LeakSanitizer on:
#     unit tests; the shim's create, exec and a pass-through subcommand; the
#     shim with a next runtime that cannot be executed (it exits after the whole
#     edit, so the leak check covers it: an exec would skip it); the hook with
#     a vanished container pid; the hook called by real runc for a container
#     with a private LXCFS (views mounted under ASan).
#  2. valgrind memcheck (--leak-check=full; definite and indirect leaks are
#     errors): unit tests; the real shim binary's create (next runtime
#     /bin/true); the shim's whole path in one process (shim_inproc: the same
#     steps without the exec) for create and exec; the shim's error exit.
#     The hook called by real runc, through a valgrind wrapper: under
#     valgrind its bounded child is a fork (valgrind does not implement
#     clone(CLONE_VM)) and, as valgrind 3.19 does not know open_tree, it takes
#     the bind fallback; ASan covers the open_tree path.
# Last line: "sanitizers: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
ASAN=$TOP/build/asan
pass=0 fail=0
check() { # check NAME CMD...: run, count, show the output on failure
    local name=$1; shift
    if "$@" >"$T/.out" 2>&1; then echo "ok - sanitizers: $name"; pass=$((pass + 1))
    else echo "not ok - sanitizers: $name"; grep -v '^ok ' "$T/.out" | head -n 30 | sed 's/^/#   /'; fail=$((fail + 1)); fi
}
finish() { echo "sanitizers: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
VG=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --error-exitcode=99 --track-fds=no)

check "ASan+UBSan build (build/asan)" make -s --no-print-directory asan
check "normal build" make -s --no-print-directory all build/hardening/shim-inproc $(ls tests/unit/test_*.c | sed 's|tests/unit/\(.*\)\.c|build/tests/\1|')
[ "$fail" -eq 0 ] || finish

# 1. unit tests under ASan+UBSan
for t in "$ASAN"/tests/test_*; do
    check "ASan+UBSan: unit $(basename "$t")" "$t"
done

# a bundle and a configuration for the binaries (next runtime: /bin/true)
B=$T/bundle
mkdir -p "$B/rootfs"
jq '.root = {"path": "rootfs"} | .linux.cgroupsPath = "/resview-nonexistent/pod/ctr"' \
    tests/samples/k8s-spec.json >"$B/config.json"
cp "$B/config.json" "$T/orig.json"
jq -n --arg log "$T/resview.log" --arg state "$T/state" --arg hook "$TOP/build/resview-hook" \
    --arg lx "$T/no-lxcfs" '{log: {file: $log, level: "debug"}, state_dir: $state,
    hook: {path: $hook}, lxcfs: {root: $lx}, runtimes: ["/bin/true"]}' >"$T/cfg.json"
printf '#!/nonexistent/interpreter\n' >"$T/noexec-runtime"; chmod +x "$T/noexec-runtime"
jq --arg r "$T/noexec-runtime" '.runtimes = [$r]' "$T/cfg.json" >"$T/cfg-noexec.json"
echo '{"args":["/bin/sh"],"env":["PATH=/bin","GOMAXPROCS=9"],"cwd":"/"}' >"$T/process.json"

edited() { grep -q GOMAXPROCS= "$B/config.json" && grep -q resview-hook "$B/config.json"; }
asan_clean() { ! grep -q 'Sanitizer\|runtime error' "$T/.asan" || { cat "$T/.asan"; return 1; }; }
asan_shim() {
    cp "$T/orig.json" "$B/config.json"
    RESVIEW_CONFIG=$T/cfg.json "$ASAN/resview-runtime" --root "$T/root" create --bundle "$B" asan1 2>"$T/.asan" &&
        edited && asan_clean &&
        RESVIEW_CONFIG=$T/cfg.json "$ASAN/resview-runtime" --root "$T/root" exec --process "$T/process.json" asan1 2>"$T/.asan" &&
        grep -q OMP_NUM_THREADS= "$T/process.json" && asan_clean &&
        RESVIEW_CONFIG=$T/cfg.json "$ASAN/resview-runtime" --root "$T/root" state asan1 2>"$T/.asan" && asan_clean
}
check "ASan+UBSan: shim create, exec, state (next runtime /bin/true)" asan_shim
asan_shim_exit() { # the exec fails: the process exits, LeakSanitizer checks the whole create
    cp "$T/orig.json" "$B/config.json"
    RESVIEW_CONFIG=$T/cfg-noexec.json "$ASAN/resview-runtime" --root "$T/root" create --bundle "$B" asan2 2>"$T/.asan"
    [ $? -eq 1 ] && edited && grep -q "exec .*noexec-runtime" "$T/.asan" && asan_clean
}
check "ASan+LSan: shim create that exits after the edit, zero leaks" asan_shim_exit
asan_exec_exit() {
    RESVIEW_CONFIG=$T/cfg-noexec.json "$ASAN/resview-runtime" --root "$T/root" exec --process "$T/process.json" asan2 2>"$T/.asan"
    [ $? -eq 1 ] && asan_clean
}
check "ASan+LSan: shim exec that exits after adding the variables, zero leaks" asan_exec_exit

# a state whose pid is gone (a process that has exited)
sleep 0 & gone=$!; wait $gone
state_json() { printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%d,"bundle":"%s"}' "$1" "$2" "$B"; }
asan_hook_gone() {
    local out
    state_json gone1 $gone | RESVIEW_CONFIG=$T/cfg.json "$ASAN/resview-hook" 2>"$T/.asan" &&
        asan_clean && grep -q 'process [0-9]* is gone' "$T/resview.log"
}
check "ASan+UBSan: hook with a vanished container pid exits 0" asan_hook_gone

# the hook under ASan, called by real runc, with a live private LXCFS
hook_real() { # hook_real NAME HOOK-WRAPPER-BODY: container through the shim with that hook
    local name=$1 out
    printf '#!/bin/sh\n%s\n' "$2" >"$T/hook-$name"
    chmod +x "$T/hook-$name"
    rv_bundle "$T/real-$name" '.process.args = ["/bin/cat", "/proc/meminfo"] | .linux.resources.memory = {"limit": 268435456}'
    jq --arg h "$T/hook-$name" --arg lx "$T/lxcfs" '.hook.path = $h | .lxcfs.root = $lx | .runtimes = ["runc"]' \
        "$T/cfg.json" >"$T/cfg-$name.json"
    out=$(run_shim runc "$name-$$" "$T/real-$name" "$T/cfg-$name.json") || { echo "$out"; return 1; }
    grep -q '^MemTotal: *262144 kB' <<<"$out" || { echo "container saw: $(head -n1 <<<"$out")"; return 1; }
}
asan_hook_real() {
    t_cleanup "lxcfs_stop $T/lxcfs"
    lxcfs_start "$T/lxcfs" || return 1
    hook_real asan "ASAN_OPTIONS=$ASAN_OPTIONS:log_path=$T/asan-hook UBSAN_OPTIONS=$UBSAN_OPTIONS:log_path=$T/asan-hook exec $ASAN/resview-hook \"\$@\""
    local rc=$?
    kill -9 "$LXCFS_PID"; lxcfs_stop "$T/lxcfs"   # (a TERM takes LXCFS seconds to exit)
    [ $rc -eq 0 ] || return 1
    ! ls "$T"/asan-hook* 2>/dev/null || { cat "$T"/asan-hook*; return 1; }
    grep -q 'LXCFS views: .* mounted' "$T/resview.log" || { echo "no mount logged"; tail "$T/resview.log"; return 1; }
}
check "ASan+UBSan: hook run by runc mounts the views (the container reads MemTotal 256 MiB)" asan_hook_real

# 2. valgrind memcheck
check "valgrind: unit tests" env UNIT_WRAP="${VG[*]}" tests/run-unit.sh build/tests/test_*
vg_clean() { # no valgrind report with content
    local f bad=0
    for f in "$T"/vg-*; do [ -s "$f" ] && { cat "$f"; bad=1; }; done
    rm -f "$T"/vg-*
    return $bad
}
vg_shim_true() {
    cp "$T/orig.json" "$B/config.json"
    RESVIEW_CONFIG=$T/cfg.json "${VG[@]}" --log-file="$T/vg-shim.%p" \
        "$TOP/build/resview-runtime" --root "$T/root" create --bundle "$B" vg1 && edited && vg_clean
}
check "valgrind: resview-runtime create (next runtime /bin/true), no errors" vg_shim_true
vg_inproc() {
    cp "$T/orig.json" "$B/config.json"
    echo '{"args":["/bin/sh"],"env":["PATH=/bin","GOMAXPROCS=9"],"cwd":"/"}' >"$T/process.json"
    RESVIEW_CONFIG=$T/cfg.json "${VG[@]}" --log-file="$T/vg-inproc.%p" \
        "$TOP/build/hardening/shim-inproc" --root "$T/root" create --bundle "$B" vg2 && edited &&
    RESVIEW_CONFIG=$T/cfg.json "${VG[@]}" --log-file="$T/vg-inproc.%p" \
        "$TOP/build/hardening/shim-inproc" --root "$T/root" exec --process "$T/process.json" vg2 &&
        grep -q OMP_NUM_THREADS= "$T/process.json" && vg_clean
}
check "valgrind: the shim's create and exec paths in one process, zero errors and leaks" vg_inproc
vg_shim_error() { # an invalid request: refused before the exec, leaks checked at exit
    jq '.annotations["resview.io/env"] = "maybe"' "$T/orig.json" >"$B/config.json"
    RESVIEW_CONFIG=$T/cfg.json "${VG[@]}" --log-file="$T/vg-err.%p" \
        "$TOP/build/resview-runtime" --root "$T/root" create --bundle "$B" vg3 2>/dev/null
    [ $? -eq 1 ] && vg_clean
}
check "valgrind: resview-runtime refusing an invalid request, exit 1, zero leaks" vg_shim_error
vg_hook_real() { # valgrind's notes on syscalls it does not know are not errors
    local f bad=0 rc
    t_cleanup "lxcfs_stop $T/lxcfs"
    lxcfs_start "$T/lxcfs" || return 1
    hook_real vg "exec ${VG[*]} --log-file=$T/vg-hook.%p $TOP/build/resview-hook \"\$@\""
    rc=$?
    kill -9 "$LXCFS_PID"; lxcfs_stop "$T/lxcfs"
    ls "$T"/vg-hook.* >/dev/null 2>&1 || { echo "the hook did not run under valgrind"; return 1; }
    for f in "$T"/vg-hook.*; do
        grep -v -e 'WARNING: unhandled amd64-linux syscall' -e 'You may be able to write your own handler' \
            -e 'Read the file README_MISSING_SYSCALL_OR_IOCTL' -e 'Nevertheless we consider this a bug' \
            -e 'Valgrind-developers list, or by submitting' -e 'valgrind.org/support/bug_reports.html' \
            -e 'See README_MISSING_SYSCALL_OR_IOCTL' -e '^--[0-9]*-- *$' "$f" | grep -q . && { cat "$f"; bad=1; }
    done
    rm -f "$T"/vg-hook.*
    [ $rc -eq 0 ] && [ $bad -eq 0 ]
}
check "valgrind: hook run by runc mounts the views (the container reads MemTotal 256 MiB), zero errors and leaks" vg_hook_real
finish
