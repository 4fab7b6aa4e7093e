#!/bin/bash
# 57-nri-sync.sh - `resview nri` against a fake runtime on NRI's socket (the
# host's containerd 1.6 has no NRI; the fake is test_nri_conn's
# RESVIEW_NRI_FAKE mode, which speaks NRI's multiplexer and ttrpc with the
# generated messages), with a real container and a real LXCFS: a container
# started with plain runc (no resview: as one created while no plugin was
# registered) is named in Synchronize with its pid, and gets its views (a
# process inside reads its memory limit from /proc/meminfo), said once in
# the log and in doctor; a second `resview nri` on the socket is refused,
# naming the first, whose record stays; doctor and `resview node ready` say
# serving, then not answering while the plugin is stopped (SIGSTOP) with a
# call waiting, then connection closed once the fake runtime closes it; the
# plugin resumed logs the dropped call and registers again (the container is
# not said twice); the same socket spelled otherwise (`.`, `//`) is refused
# too; a registration the runtime closes during Synchronize (containerd's
# failed split) is said at warn, by doctor and node ready, and the plugin
# waits (RESVIEW_NRI_SYNC_BACKOFF_MS) before it registers and serves again.
# Needs build/.../tests/test_nri_conn (BUILD).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"

FAKE=$BUILD/tests/test_nri_conn
[ -x "$FAKE" ] || { echo "not ok - $FAKE missing: make BUILD=$BUILD $FAKE"; exit 1; }
export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
host_mem=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)
SOCK=$T/nri.sock
doctor() { RESVIEW_CONFIG=$T/config.json "$CLI" doctor --nri-socket "$SOCK" 2>&1 | grep '^.*NRI: '; }
ready_nri() {
    RESVIEW_CONFIG=$T/config.json RESVIEW_NODE_MODE=nri RESVIEW_NODE_NRI_SOCKET=$SOCK "$CLI" node ready 2>&1 |
        grep '^nri:'
}
fake_says() { grep -q "^$1" "$T/fake.out"; }
mem_is() { [ "$(mem_inside "$1")" = "$2" ]; }
synced() { [ "$(grep -c '^synchronized' "$T/fake.out")" = "$1" ]; }

# 1. a container of plain runc, 512 MiB: the host's MemTotal inside
id=nsync-$$
rv_bundle "$T/b-$id" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS"
(cd "$T/b-$id" && runc --root "$T/runc-root" create "$id" </dev/null >/dev/null 2>"$T/create.err" &&
    runc --root "$T/runc-root" start "$id") || { echo "not ok - runc: $(cat "$T/create.err")"; exit 1; }
t_cleanup "runc --root $T/runc-root delete -f $id"
pid=$(pid_of "$id")
t_eq "a container started without resview reads the host's MemTotal" "$(mem_inside "$id")" "$host_mem"

# 2. the fake runtime, the plugin, a registration whose Synchronize names it
mkfifo "$T/fake.in"
RESVIEW_NRI_FAKE="$SOCK $id $pid $CG_PARENT/b-$id" "$FAKE" <"$T/fake.in" >"$T/fake.out" 2>&1 &
FAKE_PID=$!
exec 7>"$T/fake.in"
t_cleanup "kill $FAKE_PID"
wait_for 10 fake_says listening || { echo "not ok - the fake runtime: $(cat "$T/fake.out")"; exit 1; }
RESVIEW_CONFIG=$T/config.json RESVIEW_NRI_SYNC_BACKOFF_MS=2000 "$CLI" nri --socket "$SOCK" >>"$T/nri.out" 2>&1 &
PLUGIN=$!
t_cleanup "kill -CONT $PLUGIN; kill $PLUGIN"
echo accept >&7
wait_for 10 fake_says synchronized
t_contains "the plugin registered and answered Synchronize" "$(cat "$T/fake.out")" "synchronized in"
wait_for 15 mem_is "$id" 524288
t_eq "then a process inside reads its limit from LXCFS's /proc/meminfo" "$(mem_inside "$id")" "524288"
t_eq "one LXCFS mount per target" "$(per_target "$id")" "1 "
said=$(grep -F "$id" "$T/resview.log" | grep -F "its variables are missing until it is re-created")
t_contains "the log names it: views now, variables missing until it is re-created" "$said" \
    "created while the plugin was not registered (pid $pid)"
t_contains "doctor names it" "$(doctor)" "NRI: container $id was created while resview's plugin was not registered"
t_contains "doctor: the plugin serves" "$(doctor)" "registered with fakerd v9 on \`$SOCK\`"
t_contains "doctor: serving" "$(doctor)" ", serving"
t_contains "node ready: serving" "$(ready_nri)" ", serving"

# 3. a second instance on the same socket: refused, one line naming the first; the record stays
out=$(RESVIEW_CONFIG=$T/config.json timeout 10 "$CLI" nri --socket "$SOCK" 2>&1); rc=$?
t_ok "a second resview nri on the socket exits non-zero" test "$rc" -ne 0 -a "$rc" -ne 124
t_contains "…saying which one serves it" "$out" "another \`resview nri\` (pid $PLUGIN) serves \`$SOCK\`"
t_eq "…in one line" "$(wc -l <<<"$out")" "1"
t_eq "the record is still the first's" "$(jq -r .pid "$T/state/nri-plugin.json")" "$PLUGIN"
t_contains "doctor still says serving" "$(doctor)" ", serving"
for spelled in "$T/./nri.sock" "$T//nri.sock"; do
    out=$(cd / && RESVIEW_CONFIG=$T/config.json timeout 10 "$CLI" nri --socket "$spelled" 2>&1); rc=$?
    t_contains "the socket spelled \`$spelled\`: refused, naming the first" "$rc $out" \
        "another \`resview nri\` (pid $PLUGIN) serves"
done

# 4. stopped with a call waiting: not answering; the runtime closes: closed
kill -STOP "$PLUGIN"
echo call >&7
wait_for 5 fake_says called
t_contains "stopped, a call waiting: doctor says not answering" "$(doctor)" "is not serving: not answering since"
t_contains "…and node ready says so" "$(ready_nri)" "not answering since"
t_eq "…and is not ready" "$(RESVIEW_CONFIG=$T/config.json RESVIEW_NODE_MODE=nri RESVIEW_NODE_NRI_SOCKET=$SOCK \
    "$CLI" node ready 2>&1 | tail -1)" "not ready"
echo close >&7
wait_for 5 fake_says closed
t_contains "the fake runtime closed the connection: doctor says so" "$(doctor)" "connection closed by the runtime"
t_contains "…and node ready" "$(ready_nri)" "connection closed by the runtime"
kill -CONT "$PLUGIN"
wait_for 10 grep -q "the runtime closed the connection: containers" "$T/resview.log"
t_contains "resumed: the dropped call is logged as such" "$(cat "$T/resview.log")" \
    "NRI: the runtime closed the connection: containers created meanwhile get views at re-registration, not variables"

# 5. registered again: serving, the container not said a second time
echo accept >&7
wait_for 10 synced 2
t_eq "re-registered and synchronized again" "$(grep -c '^synchronized' "$T/fake.out")" "2"
sleep 1
t_eq "the container is said once" "$(grep -F "$id" "$T/resview.log" | grep -c 'its variables are missing')" "1"
t_contains "doctor: serving again" "$(doctor)" ", serving"
t_eq "its limit, still" "$(mem_inside "$id")" "524288"
kill "$PLUGIN"; wait "$PLUGIN" 2>/dev/null
t_ok "SIGTERM: the plugin removes its record" test ! -e "$T/state/nri-plugin.json"

# 6. the runtime closes the registration during Synchronize (its split failed)
RESVIEW_CONFIG=$T/config.json RESVIEW_NRI_SYNC_BACKOFF_MS=2000 "$CLI" nri --socket "$SOCK" >>"$T/nri.out" 2>&1 &
PLUGIN=$!
t_cleanup "kill $PLUGIN"
echo sync-fail >&7
wait_for 10 fake_says "sync failed"
wait_for 10 grep -q "closed the connection during Synchronize" "$T/resview.log"
t_contains "said at warn, with the likely reason" "$(grep 'during Synchronize' "$T/resview.log")" \
    "warn resview-nri"
t_contains "doctor: the registration closed during Synchronize" "$(doctor)" \
    "cannot register: the runtime closed its connection during Synchronize 1 times in a row"
t_contains "node ready says so" "$(ready_nri)" "closed its connection during Synchronize"
t0=$(date +%s%N)
echo accept >&7
wait_for 15 synced 3
t_eq "after its backoff, registered and synchronized again" "$(grep -c '^synchronized' "$T/fake.out")" "3"
t_ok "…not before 2 s" test $(( ($(date +%s%N) - t0) / 1000000 )) -ge 1500
t_eq "doctor: nothing more said of it" "$(doctor | grep -c 'during Synchronize')" "0"
t_contains "doctor: serving again" "$(doctor)" ", serving"

# 7. Views at StartContainer (the NRI mode's fast path). Without `resview
#    watch` the adjustment carries the hook, as before. Where watch holds the
#    LXCFS files it carries none: the plugin gives the views itself when the
#    runtime says the container starts (after runc create, before runc
#    start: NRI's StartContainer), from watch's files, without an exec. Only
#    where watch vouches for LXCFS (an answer within 1.5 s): nothing then asks
#    LXCFS anything, so a stopped LXCFS holds no start, and the NRI call,
#    which holds every pod's on the node, is answered at once.
NV=$(lxcfs_views "$LXCFS_DIR")
created_with() { grep "^created $1 " "$T/fake.out" | sed 's/.*hooks=//'; }
start_ms() { grep "^started $1 in" "$T/fake.out" | awk '{print $4}'; }
vstart() { # ID [FILTER]: created through the fake runtime and runc (its spec
           # through FILTER too), then started
    local v=$1
    echo "create $v" >&7
    wait_for 5 fake_says "created $v " || return 1
    rv_bundle "$T/b-$v" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS | ${2:-.}"
    (cd "$T/b-$v" && runc --root "$T/runc-root" create "$v" </dev/null >/dev/null 2>"$T/create.err") || return 1
    t_cleanup "runc --root $T/runc-root delete -f $v"
    echo "start $v $(pid_of "$v")" >&7
    wait_for 10 fake_says "started $v " && runc --root "$T/runc-root" start "$v"
}
t_ok "no watch: a container created" vstart nw-$$
t_eq "no watch: the adjustment carries the hook" "$(created_with nw-$$)" "1"
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 1 >"$T/watch.out" 2>&1 & WATCH=$!
t_cleanup "kill $WATCH"
wait_for 10 watch_fresh "$T/state/views.sock"
t_ok "watch holds the files: a container created and started" vstart vs-$$
t_eq "…its adjustment carries no hook" "$(created_with vs-$$)" "0"
t_contains "…its StartContainer answered OK" "$(grep "^started vs-$$" "$T/fake.out")" "code 0"
t_eq "…every view given from watch's files" "$(held_of vs-$$)" "$NV"
t_eq "…a process inside reads its limit" "$(mem_inside vs-$$)" "524288"
t_eq "…one LXCFS mount per target" "$(per_target vs-$$)" "1 "
t_eq "…recorded for repair" "$(jq -r .status "$T/state/containers/vs-$$/views")" "ok"

# LXCFS stopped right after its answer to watch: the views are given from
# watch's files (no FUSE request), the start is not held; a read inside
# waits for LXCFS as it would had LXCFS stopped a moment later
wait_for 5 watch_fresh "$T/state/views.sock"
kill -STOP "$LXCFS_PID"
t_ok "stopped after its answer: started" vstart vh-$$
ms=$(start_ms vh-$$)
t_ok "…StartContainer answered in $ms ms (not held)" test "$ms" -lt 500
t_eq "…every view given from watch's files" "$(held_of vh-$$)" "$NV"
stopped_read vh-$$ "…"

# LXCFS stopped long enough that watch no longer vouches: no views, no
# wait; recorded, and watch gives them once LXCFS answers again
kill -STOP "$LXCFS_PID"
sleep 2
t_ok "stopped 2 s: started" vstart vd-$$
ms=$(start_ms vd-$$)
t_ok "…StartContainer answered in $ms ms (no wait on LXCFS)" test "$ms" -lt 500
t_eq "…recorded as down" "$(jq -r .status "$T/state/containers/vd-$$/views")" "lxcfs-down"
t_contains "…the reason is logged" "$(grep "id=vd-$$" "$T/resview.log")" "does not vouch for the LXCFS"
t_eq "…the host's MemTotal inside meanwhile" "$(mem_inside vd-$$)" "$host_mem"
kill -CONT "$LXCFS_PID"
t_ok "…its views given once LXCFS answers (watch)" wait_for 30 mem_is vd-$$ 524288

# watch itself stopped: its set does not come (the plugin waits for it 20
# ms at most); no views, recorded; watch's sweep gives them once it runs
kill -STOP "$WATCH"
t_ok "watch stopped: started" vstart vw-$$
ms=$(start_ms vw-$$)
t_ok "…StartContainer answered in $ms ms" test "$ms" -lt 500
t_eq "…recorded as down" "$(jq -r .status "$T/state/containers/vw-$$/views")" "lxcfs-down"
kill -CONT "$WATCH"
t_ok "…its views given by watch's sweep once it runs" wait_for 30 mem_is vw-$$ 524288

# A tenant's FUSE volumes that never answer: one over the container's
# /sys/devices/system/cpu whose lookups hang, one over its /proc/meminfo
# whose statfs hangs (what a look at a mount's type would ask). The plugin
# looks nothing up through a tenant's FUSE and asks a mount at a target
# nothing: the call is answered at once, nothing of the plugin is stuck.
gcc -static -O2 -o "$T/fuse-hang" "$TOP/tests/lib/fuse-hang.c" || { echo "not ok - build fuse-hang"; exit 1; }
mkdir -p "$T/hang-dir" && touch "$T/hang-file"
"$T/fuse-hang" --hang lookup "$T/hang-dir" >"$T/hang-dir.out" 2>&1 & HANG1=$!
"$T/fuse-hang" --file --hang statfs "$T/hang-file" >"$T/hang-file.out" 2>&1 & HANG2=$!
t_cleanup "kill $HANG1 $HANG2; umount -l $T/hang-dir $T/hang-file"
wait_for 5 grep -q ready "$T/hang-dir.out" && wait_for 5 grep -q ready "$T/hang-file.out"
vol() { echo ".mounts += [{destination: \"$1\", type: \"bind\", source: \"$2\", options: [\"rbind\"]}]"; }
t_ok "a tenant's hung FUSE over /sys/devices/system/cpu: started" vstart vf-$$ "$(vol /sys/devices/system/cpu "$T/hang-dir")"
ms=$(start_ms vf-$$)
t_ok "…StartContainer answered in $ms ms" test "$ms" -lt 500
t_contains "…no views, said why" "$(jq -r .why "$T/state/containers/vf-$$/views")" "fuse.fuse-hang"
t_ok "a tenant's FUSE file over /proc/meminfo whose statfs hangs: started" \
    vstart vm-$$ "$(vol /proc/meminfo "$T/hang-file")"
ms=$(start_ms vm-$$)
t_ok "…StartContainer answered in $ms ms" test "$ms" -lt 500
t_eq "…its own mount there taken off unasked: the view, its limit" "$(mem_inside vm-$$)" "524288"
t_eq "…nothing of the plugin is stuck" "$(pgrep -P "$PLUGIN" | wc -l)" "0"

# LXCFS killed and restarted: starts meanwhile are not held; watch heals
# every container once it answers
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
t_ok "LXCFS killed: started" vstart vk-$$
ms=$(start_ms vk-$$)
t_ok "…StartContainer answered in $ms ms" test "$ms" -lt 500
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
healed_all() { for v in vs-$$ vh-$$ vd-$$ vk-$$; do mem_is "$v" 524288 || return 1; done; }
t_ok "restarted: every container reads its limit again (watch)" wait_for 30 healed_all
t_ok "the plugin still serves" kill -0 "$PLUGIN"
echo "remove vk-$$" >&7
wait_for 5 fake_says "removed vk-$$"
t_contains "RemoveContainer: answered" "$(grep "^removed vk-$$" "$T/fake.out")" "code 0"
