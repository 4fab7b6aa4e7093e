#!/bin/bash
# 29-lxcfs-self.sh - resview never mounts LXCFS views into the mount namespace
# where the LXCFS that serves them runs (its own reads of /proc would be FUSE
# requests to itself: every thread of it, and every reader of every view,
# would wait forever; issue 21, the node agent's pod). Hook and repair refuse
# it and say why; a namespace of its own next to it gets its views; doctor
# names views found in LXCFS's own namespace, and a view whose read does not
# answer within its bound, without hanging itself.
source "$(dirname "$0")/../lib/common.sh"

until_ok() { local i; for i in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
LX=$T/lx
mkdir -p "$LX/lxcfs"
# LXCFS in a mount namespace of its own whose mounts the host sees (as the
# agent's, through its Bidirectional volume)
mount --bind "$LX" "$LX" && mount --make-shared "$LX"
unshare --mount --propagation unchanged lxcfs -f -l --enable-cfs -p "$LX/lxcfs.pid" "$LX/lxcfs" >"$T/lxcfs.out" 2>&1 &
LXPID=$!
t_cleanup "kill -CONT $LXPID; kill $LXPID; umount -l '$LX/lxcfs'"
until_ok head -c1 "$LX/lxcfs/proc/uptime" || { echo "not ok - lxcfs did not start"; cat "$T/lxcfs.out"; exit 1; }
export LXCFS_DIR=$LX/lxcfs
rv_config "$T/config.json"
export RESVIEW_CONFIG=$T/config.json
t_ok "LXCFS runs in a mount namespace of its own" test "$(readlink /proc/$LXPID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"

# a "container": its rootfs at the same host path in both namespaces
ROOTFS=$T/rootfs
rv_rootfs "$ROOTFS"
mkdir -p "$ROOTFS/proc" "$ROOTFS/sys/devices/system/cpu"
for f in cpuinfo meminfo stat uptime loadavg swaps diskstats slabinfo; do : >"$ROOTFS/proc/$f"; done
: >"$ROOTFS/sys/devices/system/cpu/online"
views() { awk '/ - fuse.lxcfs / && $4 != "/" {print $5}' "/proc/$1/mountinfo"; }
hook() { # ID PID
    jq -n --arg id "$1" --argjson pid "$2" '{ociVersion: "1.0.2", id: $id, pid: $pid, bundle: "/"}' |
        timeout 20 "$HOOK" "--rootfs=$ROOTFS"
}

# 1. the hook: a process in LXCFS's namespace gets no views
nsenter --target "$LXPID" --mount sleep 2147483647 &
SELF=$!
t_cleanup "kill $SELF"
until_ok test "$(readlink /proc/$SELF/ns/mnt)" = "$(readlink /proc/$LXPID/ns/mnt)"
hook self-1 "$SELF"; rc=$?
t_eq "hook, target in LXCFS's own namespace: the container still starts (exit 0)" "$rc" "0"
t_eq "…no view mounted where LXCFS runs" "$(views "$SELF")" ""
t_contains "…and the log says which LXCFS and why" "$(cat "$T/resview.log")" \
    "LXCFS (pid $LXPID), which serves these views, runs in this mount namespace"
t_eq "…recorded as refused" "$(jq -r .status "$T/state/containers/self-1/views")" "refused"

# beside it, a namespace of its own (and its rootfs as its root, as after
# pivot_root): views as usual
unshare --mount --propagation private chroot "$ROOTFS" /bin/sleep 2147483647 &
OTHER=$!
t_cleanup "kill $OTHER"
until_ok test "$(readlink /proc/$OTHER/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"
hook other-1 "$OTHER"
t_eq "hook, a namespace of its own: its views (the rule is about LXCFS's namespace only)" \
    "$(views "$OTHER" | wc -l)" "9"
t_eq "…and they answer" "$(nsenter --target "$OTHER" --mount timeout 5 head -c 9 "$ROOTFS/proc/meminfo")" "MemTotal:"

# 2. repair and watch (a sweep is a repair): refused, said, the record kept
"$CLI" repair >"$T/out" 2>&1; rc=$?
t_contains "repair: refuses the container in LXCFS's namespace, says why" "$(cat "$T/out")" \
    "refused  self-1: LXCFS (pid $LXPID)"
t_eq "repair: …still no view there" "$(views "$SELF")" ""
t_eq "repair: a refusal is not a failure (exit 0)" "$rc" "0"
t_contains "repair: …counted apart in the summary" "$(tail -1 "$T/out")" "1 not attached: LXCFS runs there"
t_ok "repair: the record stays (the container is still there)" test -e "$T/state/containers/self-1/views"
"$CLI" repair --all >"$T/out" 2>&1
t_eq "repair --all: still no view in LXCFS's namespace" "$(views "$SELF")" ""
# without a pid file: repair finds LXCFS among the processes named lxcfs (with this mount)
mv "$LX/lxcfs.pid" "$LX/lxcfs.pid.away"
"$CLI" repair >"$T/out" 2>&1
t_contains "repair, LXCFS's pid file gone: found by name and mount, refused" "$(cat "$T/out")" "refused  self-1"
t_eq "…no view" "$(views "$SELF")" ""
mv "$LX/lxcfs.pid.away" "$LX/lxcfs.pid"

# 3. doctor: what the node agent's readiness probe checks too
t_ok "doctor: no fault while no view is where LXCFS runs" \
    bash -c "! '$CLI' doctor 2>&1 | grep 'FAIL.*views:'"
# views in LXCFS's own namespace (made by hand here, away from /proc, so LXCFS
# itself never reads through it): the deadlock's precondition
: >"$T/target"
nsenter --target "$LXPID" --mount mount --bind "$LX/lxcfs/proc/swaps" "$T/target"
t0=$(date +%s%N)
out=$(timeout 30 "$CLI" doctor 2>&1); rc=$?
t_contains "doctor: names LXCFS with views in its own mount namespace" "$out" \
    "LXCFS pid $LXPID has 1 LXCFS view in its own mount namespace ($T/target)"
t_ok "doctor: …and fails" test "$rc" -ne 0
nsenter --target "$LXPID" --mount umount -l "$T/target"; umount -l "$T/target" 2>/dev/null
# a view whose read does not answer: LXCFS stopped
kill -STOP "$LXPID"
t0=$(date +%s%N)
out=$(timeout 60 "$CLI" doctor 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -CONT "$LXPID"
t_contains "doctor: a view read that does not answer within its bound: says which container" "$out" \
    "other-1: /proc/"
t_contains "…and that it hangs" "$out" "does not answer within 1000 ms"
t_ok "…doctor itself comes back (${ms} ms)" test "$ms" -lt 20000
t_ok "…and fails" test "$rc" -ne 0
t_eq "LXCFS answers again afterwards" "$(nsenter --target "$OTHER" --mount timeout 5 head -c 9 "$ROOTFS/proc/meminfo")" "MemTotal:"
