#!/bin/bash
# `resview watch` holds the LXCFS files open and hands them to the hook over
# state_dir/views.sock, so the hook clones them without a FUSE lookup. What a
# container reads is the same either way; the hook takes nothing it cannot
# check: a set of another LXCFS, a socket that is not root's, a holder that
# does not answer, garbage. Each case: the views are mounted all the same.
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
# crun runs here in a mount namespace of its own (tests/lib/crun-v1), and
# the kernel clones only mounts of the caller's namespace: looked up.
t_ok "held: the container reads its limit (crun)" start_reads_limit ch1-$$
t_eq "held: crun in a namespace of its own looks them up (no clone across namespaces)" "$(held_of ch1-$$)" "0"
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
impostor garbage
t_ok "garbage from the holder: the container reads its limit" start_reads_limit h6-$$
t_eq "garbage: nothing taken" "$(held_of h6-$$)" "0"
kill $IMP
impostor silent
t_ok "a holder that never answers: the container reads its limit" start_reads_limit h7-$$
t_eq "never answers: nothing taken" "$(held_of h7-$$)" "0"
kill $IMP
t_eq "no hook failed or warned" "$(grep -c 'resview-hook.*\(warn\|error\)' "$T/resview.log")" "0"
