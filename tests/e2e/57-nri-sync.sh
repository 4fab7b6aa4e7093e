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
