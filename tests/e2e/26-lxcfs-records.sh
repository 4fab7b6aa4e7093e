#!/bin/bash
# Records (state_dir/containers/<id>) live as long as their container:
#  1. a `delete` the runtime refuses keeps them (exec sessions keep their
#     variables, repair keeps healing); one that succeeds removes them;
#  2. repair never writes back a record that changed while it worked: a
#     container deleted meanwhile is not resurrected, a new container under
#     the same id keeps its own record (repair is held in the middle by a
#     FUSE mount over a view that never answers STATFS, tests/lib/fuse-hang.c);
#  3. ids beginning with '.', and records without views (LXCFS off, a create
#     runc refused) are dropped once their container is gone.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
gcc -static -O2 -o "$T/fuse-hang" "$TOP/tests/lib/fuse-hang.c" || { echo "not ok - build fuse-hang"; exit 1; }
S=$T/state/containers
shim() { RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" "$@"; }
repair() { RESVIEW_CONFIG=$T/config.json "$CLI" repair "$@"; }
fuse_waiting() { ps -o wchan:32= --ppid "$1" | grep -c request_wait_answer; }
# hold_repair ID: a FUSE mount over ID's /proc/meminfo that never answers
# STATFS, and a repair of ID started in the background (RP), waiting on it
hold_repair() {
    "$T/fuse-hang" --file --hang statfs --enter "$(pid_of "$1")" /proc/meminfo >"$T/fh-$1.out" 2>&1 &
    t_cleanup "kill $!"
    wait_for 10 grep -qs ready "$T/fh-$1.out" || echo "# fuse-hang did not come up: $(cat "$T/fh-$1.out")"
    RESVIEW_CONFIG=$T/config.json "$CLI" repair "$1" >"$T/hold.out" 2>&1 & RP=$!
    held() { test "$(fuse_waiting $RP)" -ge 1; }
    wait_for 30 held || echo "# repair is not held: $(cat "$T/hold.out")"
}

# 1. delete
start_bg del-$$
out=$(shim delete del-$$ 2>&1); rc=$?
t_eq "delete of a running container without --force: runc's refusal, exit 1" "$rc" "1"
t_contains "... runc's message" "$out" "running"
t_ok "... its records are kept" test -e "$S/del-$$/env" -a -e "$S/del-$$/views"
jq -n '{args: ["/bin/env"], cwd: "/", env: ["PATH=/bin"], user: {uid: 0, gid: 0}}' >"$T/proc.json"
t_contains "... an exec session still gets the variables" "$(shim exec --process "$T/proc.json" del-$$ 2>&1)" "GOMAXPROCS=1"
out=$(shim delete --force del-$$ 2>&1); rc=$?
t_eq "delete --force: exit 0" "$rc" "0"
t_ok "... records removed" test ! -e "$S/del-$$"
notime() { sed 's/time="[^"]*" //'; }
out=$(shim delete no-such-$$ 2>&1 | notime; echo "rc=${PIPESTATUS[0]}")
want=$(runc --root "$T/runc-root" delete no-such-$$ 2>&1 | notime; echo "rc=${PIPESTATUS[0]}")
t_eq "delete of an unknown container: runc's exit status and message" "$out" "$want"

# 2a. deleted while repair works on it: not written back
start_bg res-$$
hold_repair res-$$
shim delete --force res-$$
wait $RP
t_ok "a record deleted while repair worked on it stays deleted" test ! -e "$S/res-$$"

# 2b. deleted and created again under the same id: the new record stays
start_bg reuse-$$
hold_repair reuse-$$
shim delete --force reuse-$$
start_bg reuse-$$
new=$(pid_of reuse-$$)
wait $RP
t_eq "a new container under the same id keeps its record" "$(jq .pid "$S/reuse-$$/views")" "$new"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
repair reuse-$$ >"$T/out" 2>&1
t_eq "... and is repaired after the next LXCFS restart" "$(mem_inside reuse-$$)" "524288"

# 3a. an id beginning with '.'
start_bg .dot-$$
t_ok "id .dot: recorded" test -e "$S/.dot-$$/views"
runc --root "$T/runc-root" delete -f .dot-$$
repair >"$T/out" 2>&1
t_contains "id .dot, container gone: repair drops its record" "$(cat "$T/out")" "dropped  .dot-$$"
t_ok "... removed" test ! -e "$S/.dot-$$"

# 3b. LXCFS off: a record of variables only
rv_bundle "$T/b-off" '.process.args = ["/bin/sleep", "3600"] | .annotations = {"resview.io/lxcfs": "false"}'
(cd "$T/b-off" && shim create off-$$ </dev/null >/dev/null 2>&1 && shim start off-$$)
t_eq "LXCFS off: only the variables are recorded" "$(ls "$S/off-$$")" "env"
touch -d '-10 min' "$S/off-$$/env"
repair >"$T/out" 2>&1
t_ok "LXCFS off, running: kept" test -e "$S/off-$$/env"
runc --root "$T/runc-root" delete -f off-$$
repair >"$T/out" 2>&1
t_contains "LXCFS off, container gone: dropped" "$(cat "$T/out")" "dropped  off-$$: no such container"
t_ok "... removed" test ! -e "$S/off-$$"

# 3c. a create runc refused (no rootfs)
rv_bundle "$T/b-bad" '.root.path = "no-such-rootfs"'
(cd "$T/b-bad" && shim create bad-$$ </dev/null >/dev/null 2>&1); rc=$?
t_ok "refused create: runc fails" test "$rc" -ne 0
t_ok "... the variables were recorded" test -e "$S/bad-$$/env"
repair >"$T/out" 2>&1
t_ok "... a young record is left alone (its create may still be on its way)" test -e "$S/bad-$$/env"
touch -d '-10 min' "$S/bad-$$/env"
repair >"$T/out" 2>&1
t_contains "... an older one is dropped" "$(cat "$T/out")" "dropped  bad-$$: no such container"
t_ok "... removed" test ! -e "$S/bad-$$"
runc --root "$T/runc-root" delete -f reuse-$$
