#!/bin/bash
# `resview watch` holds the LXCFS files open and hands them over
# state_dir/views.sock: to resview-runtime at `start` (an engine's create then
# start: no hook in the spec) and to the hook (`run`; hooks.d and enroot),
# which clone them without a FUSE lookup. What a container reads is the same
# either way; nothing is taken that cannot be checked: a set of another
# LXCFS, a socket that is not root's, a holder that does not answer, garbage.
# The hook then looks the files up itself; at `start`, a holder that does not
# vouch for LXCFS means no views (nothing may wait on LXCFS there), recorded
# for watch's repair, and no start waits.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
SOCK=$T/state/views.sock
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }

# the hook's own count: "N mounted (M cloned from files watch holds)"; held_of: M (lxcfs-helpers.sh)
mounted_of() { grep "id=$1: LXCFS views" "$T/resview.log" | tail -1 | sed -n 's/.*LXCFS views: \([0-9]*\) mounted.*/\1/p'; }
# start ID: a container through the shim; passes when it reads its limit
start_reads_limit() { start_bg "$1" && [ "$(mem_inside "$1")" = 524288 ]; }

# 1. No watch: the hook looks the files up.
t_ok "no holder: the container reads its limit" start_reads_limit h0-$$
t_eq "no holder: nothing cloned from held files" "$(held_of h0-$$)" "0"
n_views=$(mounted_of h0-$$)

# 2. watch holds them: every view cloned from a held file, runc and crun.
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >"$T/watch.out" 2>&1 & WATCH=$!
t_cleanup "kill $WATCH 2>/dev/null"
sock_up() { [ -S "$SOCK" ]; }
t_ok "watch: serves state_dir/views.sock" wait_for 10 sock_up
t_eq "watch: the socket is root's, mode 0600" "$(stat -c '%U %a' "$SOCK")" "root 600"
wait_for 10 grep -q "LXCFS answers" "$T/watch.out"
t_ok "held: the container reads its limit (runc)" start_reads_limit h1-$$
t_eq "held: every view cloned from a held file (runc)" "$(held_of h1-$$)/$(mounted_of h1-$$)" "$n_views/$n_views"
rv_hooks() { jq '[.hooks[]?[]? | select(.path | test("resview-hook"))] | length' "$T/b-$1/config.json"; }
t_eq "held, at start: no hook in the spec" "$(rv_hooks h1-$$)" "0"
t_eq "held, at start: recorded ok" "$(jq -r .status "$T/state/containers/h1-$$/views")" "ok"
t_ok "held, at start: the record that asked for it is gone" test ! -e "$T/state/containers/h1-$$/start"
# crun runs here in a mount namespace of its own (tests/lib/crun-v1); at
# `start` the shim clones in the host's, as for runc
t_ok "held: the container reads its limit (crun)" start_reads_limit ch1-$$
t_eq "held: crun's views cloned from held files too (at start, in the host's namespace)" "$(held_of ch1-$$)" "$n_views"
# at start, the pid in the runtime's state no longer the process that
# started then (a pid used again; here its start time changed in runc's
# state.json, which runc itself then refuses too): no views given to it
rv_bundle "$T/b-hp-$$" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS"
(cd "$T/b-hp-$$" && RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" create hp-$$ </dev/null >/dev/null 2>&1)
hp_pid=$(jq .init_process_pid "$T/runc-root/hp-$$/state.json")
jq -c '.init_process_start += 1' "$T/runc-root/hp-$$/state.json" >"$T/hp.state" &&
    cat "$T/hp.state" >"$T/runc-root/hp-$$/state.json"
RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" start hp-$$ 2>/dev/null
t_contains "at start, a pid not the container's: logged" "$(grep "id=hp-$$" "$T/resview.log")" "is not the container's"
t_eq "at start, a pid not the container's: no views given to that process" \
    "$(grep -c fuse.lxcfs "/proc/$hp_pid/mountinfo")" "0"
kill -9 "$hp_pid" 2>/dev/null
# `run` has no moment between create and start: the hook, given the set
run_reads_limit() { run_bg "$1" && [ "$(mem_inside "$1")" = 524288 ]; }
t_ok "held, run: the container reads its limit" run_reads_limit hr1-$$
t_eq "held, run: the hook's spec" "$(rv_hooks hr1-$$)" "1"
t_eq "held, run: the hook cloned every view from a held file" "$(held_of hr1-$$)/$(mounted_of hr1-$$)" "$n_views/$n_views"
# the hook in crun's namespace: the kernel clones only mounts of the
# caller's namespace, so it looks them up
t_ok "held, run: the container reads its limit (crun)" run_reads_limit chr1-$$
t_eq "held, run: the hook in crun's namespace looks them up" "$(held_of chr1-$$)" "0"
t_eq "held: the same mounts as looked up" "$(views_of h1-$$ | sort | tr '\n' ' ')" "$(views_of h0-$$ | sort | tr '\n' ' ')"
t_eq "held: one LXCFS mount per target" "$(per_target h1-$$)" "1 "

# 3. LXCFS restarted: a new device; watch holds the new one's files, and
#    until it does the hook takes nothing of the old one.
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
rewatched() { [ "$(grep -c "LXCFS answers" "$T/watch.out")" -ge 2 ]; }
t_ok "restart: watch sees the new LXCFS" wait_for 30 rewatched
t_ok "restart: the container reads its limit" start_reads_limit h2-$$
t_eq "restart: cloned from the new LXCFS's held files" "$(held_of h2-$$)" "$n_views"
t_eq "restart: its views are of the live LXCFS" "$(inside h2-$$ head -c 9 /proc/meminfo)" "MemTotal:"

# 4. watch killed -9: its socket stays behind, nobody listens.
kill -9 $WATCH; wait $WATCH 2>/dev/null
t_ok "stale socket: the container reads its limit" start_reads_limit h3-$$
t_eq "stale socket: looked up" "$(held_of h3-$$)" "0"

# 5. Impostors on the socket: the hook takes nothing.
# impostor MODE [USER]: a server on $SOCK (replacing it) until killed, as
# USER from its listen() on (what the hook's SO_PEERCRED sees). MODE set: a
# well-formed set of the live LXCFS's device, its files /dev/null; garbage;
# silent: accepts and never answers.
impostor() {
    rm -f "$SOCK"
    python3 - "$SOCK" "$1" "$(id -u "${2:-root}")" "$(stat -c %d "$LXCFS_DIR")" <<'EOF' &
import array, os, socket, struct, sys, time
path, mode, uid, dev = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); os.chmod(path, 0o666)
os.setuid(uid)
s.listen(8)
null = os.open("/dev/null", os.O_PATH)
# viewhold.c's wire: magic, n, dev, absent, answered_ms (0: a fresh answer), idx[16]
wire = struct.pack("=IIQII16B", 0x72766832, 3, dev, 0, 0, 0, 1, 2, *([0] * 13))
while True:
    c, _ = s.accept()
    try:   # the hook may hang up first: it checks who listens
        if mode == "silent":
            time.sleep(3600)
        elif mode == "garbage":
            c.send(os.urandom(40))
        else:
            c.sendmsg([wire], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null] * 3))])
    except OSError:
        pass
    c.close()
EOF
    IMP=$!
    wait_for 10 sock_up
}
impostor set nobody
t_ok "a non-root holder: the container reads its limit" start_reads_limit h4-$$
t_eq "a non-root holder: nothing taken from it" "$(held_of h4-$$)" "0"
kill $IMP
impostor set
t_ok "a root holder whose files are not LXCFS's: the container reads its limit" start_reads_limit h5-$$
t_eq "files not LXCFS's: nothing taken" "$(held_of h5-$$)" "0"
kill $IMP
# A root holder that does not vouch: at start, no views and no wait; the
# hook (run) looks them up.
unvouched() {
    local id=$1 what=$2 rc
    timed start_bg "$id"; rc=$?
    t_eq "$what, at start: the container starts" "$rc" "0"
    t_ok "$what, at start: not held ($MS ms)" test "$MS" -lt 2500
    t_eq "$what, at start: no views, recorded for repair" "$(jq -r .status "$T/state/containers/$id/views")" "lxcfs-down"
    t_ok "$what, run: the container reads its limit" run_reads_limit "r$id"
    t_eq "$what, run: nothing taken" "$(held_of "r$id")" "0"
}
impostor garbage
unvouched h6-$$ "garbage from the holder"
kill $IMP
impostor silent
unvouched h7-$$ "a holder that never answers"
kill $IMP
# 6. watch back: it repairs the containers that started without views.
rm -f "$SOCK"
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >"$T/watch2.out" 2>&1 & WATCH=$!
reads_limit() { local id; for id in "$@"; do [ "$(mem_inside "$id")" = 524288 ] || return 1; done; }
t_ok "watch back: the containers started without views get them" wait_for 30 reads_limit h6-$$ h7-$$
# 7. watch stopped (SIGSTOP) with its socket's queue full (connections nobody
#    accepts stay queued, hung up or not): a connection that would wait is
#    given up at once, so no start waits on watch; the hook looks the files up.
kill -STOP $WATCH
python3 - "$SOCK" <<'EOF'
import socket, sys
for _ in range(200):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.setblocking(False)
    try:
        c.connect(sys.argv[1])
    except BlockingIOError:
        break
    c.close()
EOF
for how in start_bg run_bg; do
    id=q-$how-$$
    t0=$(date +%s%N)
    $how "$id" & starter=$!
    wait_for 20 sh -c "! kill -0 $starter 2>/dev/null"
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if kill -0 $starter 2>/dev/null; then kill -9 $starter; fi
    t_ok "watch stopped, its queue full ($how): the start is not held ($ms ms)" test "$ms" -lt 2500
    t_ok "watch stopped, its queue full ($how): the container reads its limit" reads_limit "$id"
    t_eq "watch stopped, its queue full ($how): looked up, nothing taken" "$(held_of "$id")" "0"
done
kill -CONT $WATCH
kill $WATCH
t_eq "no hook failed or warned" "$(grep -c 'resview-hook.*\(warn\|error\)' "$T/resview.log")" "0"
