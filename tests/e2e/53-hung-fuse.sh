#!/bin/bash
# FUSE daemons that read a request and never answer it (tests/lib/fuse-hang.c).
# The caller then waits in D state, and SIGKILL does not end the wait: the
# kernel waits uninterruptibly for a request the daemon has already read.
# (A SIGSTOPped daemon reads nothing: its callers stay killable, which is why
# 22-lxcfs-watch.sh cannot show this.)
#  1. as LXCFS: container starts must not hang (runc create returns; the hook's
#     child must not hold the hook's stdout/stderr), nor repair, nor watch;
#  2. as a tenant's own FUSE mount over one of its views, never answering
#     STATFS: repair and watch go on for every other container, a killed
#     repair leaves no lock behind; the container is remembered as stalling
#     (state_dir/stalled): background passes (watch) skip it and name it, an
#     operator who names it gets it tried again;
#  3. several such containers beside an operator's repair of a plain one: the
#     operator does not wait behind them; each costs its bound once, later
#     passes skip them until they answer; the node still serves the others.
# Every `timeout $BOUND` below only detects a hang; nothing asserts how fast.
source "$(dirname "$0")/../lib/common.sh"
BOUND=${HANG_BOUND:-120}

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
host_mem=$(grep MemTotal /proc/meminfo | awk '{print $2}')
gcc -static -O2 -o "$T/fuse-hang" "$TOP/tests/lib/fuse-hang.c" || { echo "not ok - build fuse-hang"; exit 1; }

# hang_daemon NAME ARGS...: start fuse-hang in the background, wait for "ready"
hang_daemon() {
    local name=$1; shift
    "$T/fuse-hang" "$@" >"$T/$name.out" 2>&1 &
    eval "${name}_PID=$!"
    t_cleanup "kill $!"
    wait_for 10 grep -q ready "$T/$name.out" || { echo "not ok - $name did not come up"; cat "$T/$name.out"; exit 1; }
}
# d_children PID: children of PID waiting in D state
d_children() { ps -o stat= --ppid "$1" | grep -c '^D'; }
# fuse_waiting PID: children of PID waiting for a FUSE answer (S until
# SIGKILL, D after)
fuse_waiting() { ps -o wchan:32= --ppid "$1" | grep -c request_wait_answer; }

# 1. A hung LXCFS: it answers statfs and open, and reads but never answers READ.
mkdir -p "$T/hung"
hang_daemon HUNG --hang read "$T/hung"
t_cleanup "umount -l $T/hung"
rv_config "$T/config-hung.json" "{\"lxcfs\": {\"root\": \"$T/hung\"}}"
rv_bundle "$T/b-h" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS"
(cd "$T/b-h" && RESVIEW_CONFIG=$T/config-hung.json timeout $BOUND "$RUNTIME" --root "$T/runc-root" create "h-$$" </dev/null >"$T/h.out" 2>&1); rc=$?
t_eq "hung LXCFS: runc create through the shim returns, exit 0" "$rc" "0"
t_eq "hung LXCFS: recorded as down" "$(jq -r .status "$T/state/containers/h-$$/views")" "lxcfs-down"
t_contains "hung LXCFS: the reason is logged" "$(cat "$T/resview.log")" "does not answer"
runc --root "$T/runc-root" start "h-$$"
t_eq "hung LXCFS: the container runs with the host's values" "$(mem_inside "h-$$")" "$host_mem"
# The hook's probe was left behind and marked: the next starts do not ask
# LXCFS again (no 3 s wait, no more stuck children) while it waits.
stuck=$(awk '{print $1}' "$T/state/lxcfs-stuck")
t_eq "hung LXCFS: the probe left behind is marked, and waits for LXCFS" \
    "$(ps -o wchan:32= -p "$stuck")" "request_wait_answer"
rv_bundle "$T/b-h2" ".process.args = [\"/bin/true\"] | $LIMITS"
(cd "$T/b-h2" && RESVIEW_CONFIG=$T/config-hung.json timeout $BOUND "$RUNTIME" --root "$T/runc-root" run "h2-$$" </dev/null >/dev/null 2>&1); rc=$?
t_eq "hung LXCFS: the next container starts" "$rc" "0"
t_contains "... without asking LXCFS" "$(grep "id=h2-$$" "$T/resview.log")" "still waits for it"
# hook processes of this test (their environment names its files) waiting on FUSE
hook_waiting() {
    local p n=0
    for p in $(ps -eo pid=,wchan:32= | awk '$2 == "request_wait_answer" {print $1}'); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qF "$T/config-hung.json" && n=$((n + 1))
    done
    echo $n
}
t_eq "... and without leaving another stuck child" "$(hook_waiting)" "1"
runc --root "$T/runc-root" delete -f "h2-$$" >/dev/null 2>&1
RESVIEW_CONFIG=$T/config-hung.json timeout $BOUND "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "hung LXCFS: repair returns, exit 1" "$rc" "1"
t_contains "hung LXCFS: ... saying LXCFS does not answer" "$(cat "$T/out")" "LXCFS is not answering"
RESVIEW_CONFIG=$T/config-hung.json timeout $BOUND "$CLI" repair --wait 1 >"$T/out" 2>&1; rc=$?
t_eq "hung LXCFS: repair --wait (the lxcfs.service drop-in) returns, exit 1" "$rc" "1"
RESVIEW_CONFIG=$T/config-hung.json "$CLI" watch --interval 1 >"$T/watch-h.out" 2>&1 & WH=$!
t_cleanup "kill $WH"
# watch probes LXCFS every 100 ms while it is mounted and does not answer:
# each probe that hangs may leave one child behind, but only one at a time.
wait_for 30 test "$(d_children $WH)" -ge 1
sleep 3
t_eq "hung LXCFS: watch leaves at most one stuck probe behind" "$(d_children $WH)" "1"
t_ok "hung LXCFS: watch is still running" kill -0 $WH
kill $WH; wait $WH
kill "$HUNG_PID"; wait "$HUNG_PID" 2>/dev/null; umount -l "$T/hung"
runc --root "$T/runc-root" delete -f "h-$$"
waited() { [ "$(hook_waiting)" = 0 ]; }
t_ok "hung LXCFS gone: the stuck probe ends" wait_for 30 waited
(cd "$T/b-h2" && RESVIEW_CONFIG=$T/config-hung.json "$RUNTIME" --root "$T/runc-root" run "h3-$$" </dev/null >/dev/null 2>&1)
t_contains "... and the next start asks LXCFS again" "$(grep "id=h3-$$" "$T/resview.log")" "no LXCFS mounted"
runc --root "$T/runc-root" delete -f "h3-$$" >/dev/null 2>&1

# 2. A tenant's FUSE file system over its own /proc/meminfo view that never
#    answers STATFS (the repair's check of what sits at a target).
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
start_bg evil-$$ && start_bg good-$$ && start_bg good2-$$
t_eq "tenant: neighbour reads its limit" "$(mem_inside good-$$)" "524288"
hang_daemon EVIL --file --hang statfs --enter "$(pid_of evil-$$)" /proc/meminfo
t_eq "tenant: its FUSE mount sits on its /proc/meminfo" "$(grep -c ' /proc/meminfo .* - fuse.fuse-hang ' "/proc/$(pid_of evil-$$)/mountinfo")" "1"
# LXCFS's mount is shared (as on a systemd host): the view must not be its peer
t_eq "tenant: ... and nowhere else: not over LXCFS's file on the host" "$(grep -c ' - fuse.fuse-hang ' /proc/self/mountinfo)" "0"
t_eq "tenant: ... nor in the neighbour's view" "$(grep -c ' - fuse.fuse-hang ' "/proc/$(pid_of good-$$)/mountinfo")" "0"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
RESVIEW_CONFIG=$T/config.json timeout $BOUND "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "tenant: repair returns, exit 1 (one container failed)" "$rc" "1"
t_contains "tenant: the neighbours were repaired" "$(cat "$T/out")" "repaired 2, failed 1"
t_contains "tenant: its container failed, saying why" "$(grep "^failed   evil-$$" "$T/out")" "timed out"
t_eq "tenant: the neighbour reads its limit again" "$(mem_inside good-$$)" "524288"
evil_ns=$(stat -L -c %i "/proc/$(pid_of evil-$$)/ns/mnt")
t_ok "tenant: the stall is remembered (state_dir/stalled/<its namespace>), root's alone" \
    test "$(stat -c '%u %a' "$T/state/stalled/$evil_ns")" = "0 600"
RESVIEW_CONFIG=$T/config.json timeout $BOUND "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "tenant: the next pass skips it, exit 1" "$rc" "1"
t_contains "tenant: ... naming it and why" "$(grep "^stalled  evil-$$" "$T/out")" "still stuck in its file systems"
t_contains "tenant: ... and the summary says so" "$(tail -1 "$T/out")" "1 stalled: skipped"

# A repair killed while its child is stuck must not keep the repair lock.
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
RESVIEW_CONFIG=$T/config.json "$CLI" repair evil-$$ >/dev/null 2>&1 & RP=$!
waiting() { test "$(fuse_waiting $RP)" -ge 1; }
t_ok "tenant: named by the operator, it is tried again: repair's child waits for the tenant's daemon" wait_for 30 waiting
kill -9 $RP; wait $RP 2>/dev/null
RESVIEW_CONFIG=$T/config.json timeout $BOUND "$CLI" repair good-$$ good2-$$ >"$T/out" 2>&1; rc=$?
t_eq "tenant: after kill -9 of that repair, the next one gets the lock, exit 0" "$rc" "0"
t_contains "tenant: ... and repairs" "$(cat "$T/out")" "repaired 2, failed 0"

# watch: sweeps every second go on; the namespace that hung is remembered as
# stalling (its children of earlier repairs are still stuck): watch skips it
# and leaves no child of its own stuck.
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 1 >"$T/watch.out" 2>&1 & WATCH=$!
t_cleanup "kill $WATCH"
wait_for 30 test "$(grep -c 'sweep:\|LXCFS answers' "$T/watch.out")" -ge 1
sleep 3
t_eq "tenant: watch sweeps, skips it and leaves no child stuck of its own" "$(d_children $WATCH)" "0"
t_contains "tenant: ... said" "$(grep 'LXCFS answers' "$T/watch.out")" "stalled (skipped) 1"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
healed() { [ "$(mem_inside good-$$)" = 524288 ] && [ "$(mem_inside good2-$$)" = 524288 ]; }
t_ok "tenant: watch still heals the neighbours after another LXCFS restart" wait_for 60 healed
t_ok "tenant: watch is still running" kill -0 $WATCH
kill $WATCH; wait $WATCH

# 3. Three more containers of the tenant stall the same way (one of them will
#    answer later: --release), beside an operator's repair of a plain one.
NS=3
for i in $(seq 1 $NS); do
    start_bg st$i-$$ || { echo "not ok - start st$i-$$"; exit 1; }
    hang_daemon ST$i --file --hang statfs --release --enter "$(pid_of st$i-$$)" /proc/meminfo
done
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
# a background pass (as watch's, Synchronize's): on the stalling ones first
# (evil is remembered and left to the end; the new ones are not yet)
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/bg.out" 2>&1 & BG=$!
waiting_bg() { test "$(fuse_waiting $BG)" -ge 1; }
t_ok "several: the background pass waits on a stalling container" wait_for 30 waiting_bg
t0=$(date +%s%N)
RESVIEW_CONFIG=$T/config.json timeout $BOUND "$CLI" repair good-$$ >"$T/op.out" 2>&1; rc=$?
op_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -0 $BG 2>/dev/null; bg_on=$?
echo "# an operator's repair of a plain container beside a pass over $NS stalling ones: $op_ms ms"
t_eq "several: the operator's repair of a plain container: exit 0, nothing failed" "$rc $(grep -c "^failed" "$T/op.out")" "0 0"
t_eq "several: ... while the background pass is still on the stalling ones (not behind them)" "$bg_on" "0"
t0=$(date +%s%N); wait $BG; rc=$?; bg_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
t_eq "several: the background pass: exit 1, each stalling one failed once (timed out), evil skipped" \
    "$rc $(grep -c "^failed   st[0-9]-$$: .*timed out" "$T/bg.out") $(grep -c "^stalled  evil-$$" "$T/bg.out")" "1 $NS 1"
t0=$(date +%s%N)
RESVIEW_CONFIG=$T/config.json timeout $BOUND "$CLI" repair >"$T/out" 2>&1; rc=$?
again_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "# the next background pass: $again_ms ms (the first: $bg_ms ms after the operator's ended)"
t_eq "several: the next pass pays for none of them: each skipped and named" \
    "$rc $(grep -c "^stalled  \(st[0-9]\|evil\)-$$: " "$T/out") $(grep -c '^failed' "$T/out")" "1 $((NS + 1)) 0"
t_ok "several: ... at once (under one container's bound, ${again_ms} ms)" test "$again_ms" -lt 2000
# one answers (its held STATFS and all later requests): its stuck child ends,
# and the next pass tries it again
kill -USR1 "$ST1_PID"
st1_answers() { RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1; grep -q "^repaired st1-$$" "$T/out"; }
t_ok "several: the one that answers is tried again by a background pass, and repaired" wait_for 30 st1_answers
t_eq "several: ... its memory gone" "$(ls "$T/state/stalled" | grep -c "^$(stat -L -c %i "/proc/$(pid_of st1-$$)/ns/mnt")$")" "0"
t_eq "several: the node still serves the others: the neighbours read their limit" "$(mem_inside good-$$) $(mem_inside good2-$$)" "524288 524288"
start_bg new-$$ && t_eq "several: ... and a new container starts and reads its limit" "$(mem_inside new-$$)" "524288"
runc --root "$T/runc-root" delete -f "new-$$" >/dev/null 2>&1
# a container that is gone: its memory goes with it (the next pass)
kill "$ST2_PID"; wait "$ST2_PID" 2>/dev/null
st2_ns=$(stat -L -c %i "/proc/$(pid_of st2-$$)/ns/mnt")
runc --root "$T/runc-root" delete -f "st2-$$"
forgot() { RESVIEW_CONFIG=$T/config.json "$CLI" repair >/dev/null 2>&1; test ! -e "$T/state/stalled/$st2_ns"; }
t_ok "several: a container that is gone: its memory goes at a later pass" wait_for 30 forgot

# The tenant's daemon gone, the stuck children end.
for i in 1 3; do kill "$(eval echo \$ST${i}_PID)" 2>/dev/null; done
kill "$EVIL_PID"; wait "$EVIL_PID" 2>/dev/null
gone() { ! ps -eo stat=,args= | grep -F -- "$CLI" | grep -q "^D"; }
t_ok "tenant: its daemon gone, no resview process is left in D state" wait_for 30 gone
for id in evil-$$ good-$$ good2-$$ st1-$$ st3-$$; do runc --root "$T/runc-root" delete -f "$id"; done
