#!/bin/bash
# Fault injection:
#  1. resview-runtime killed with SIGKILL at random points of create (300 runs,
#     random delays spread over the whole length of one create): config.json is
#     always either the original or the fully edited file, byte for byte, and
#     valid JSON; never truncated, never missing.
#  2. the same for `exec --process` (the process file the engine hands over).
#  3. a hook whose container pid has vanished exits 0 cleanly, records nothing.
#  4. LXCFS killed with SIGKILL at random points while containers start (so
#     also in the middle of the hook's mounts): every container starts, and
#     once LXCFS is back `resview repair` gives it its views.
#  5. a full disk under the state directory (create) and under the engine's
#     process file (exec), and a read-only one: the container is not failed,
#     no file is damaged, a warning is logged.
# (Disk full and a read-only bundle directory for config.json are in
# 11-badinput.sh.)
source "$(dirname "$0")/../lib/common.sh"

RUNS=${FAULT_RUNS:-300}
rv_config "$T/config.json"
jq '.runtimes = ["/bin/true"]' "$T/config.json" >"$T/config.true"
export RESVIEW_CONFIG=$T/config.true

# a 20 KB Kubernetes-like spec: a long enough rewrite to be hit in the middle
B=$T/bundle
mkdir -p "$B/rootfs"
jq '.root.path = "rootfs" | .linux.cgroupsPath = "/resview-nonexistent/pod/ctr"' \
    "$TOP/tests/samples/k8s-spec.json" >"$B/config.json"
cp "$B/config.json" "$T/orig.json"
"$RUNTIME" create --bundle "$B" ref-$$ || echo "not ok - the reference create failed"
cp "$B/config.json" "$T/edited.json"
t_ok "the reference create edits the spec" test "$(cmp -s "$T/orig.json" "$T/edited.json"; echo $?)" = 1

now_us() { echo $(( $(date +%s%N) / 1000 )); }
# the length of one whole create, as run under timeout (median of 5)
durs=()
for _ in 1 2 3 4 5; do
    cp "$T/orig.json" "$B/config.json"
    t0=$(now_us); timeout -s KILL 10 "$RUNTIME" create --bundle "$B" cal-$$; t1=$(now_us)
    durs+=($((t1 - t0)))
done
span=$(printf '%s\n' "${durs[@]}" | sort -n | sed -n 3p)
span=$((span * 3 / 2))

# kill_loop NAME FILE ORIG EDITED CMD...: RUNS times, restore FILE, run CMD
# under a SIGKILL after a random delay in [0, span], check FILE.
kill_loop() {
    local name=$1 file=$2 orig=$3 edited=$4; shift 4
    local n_orig=0 n_edit=0 n_bad=0 n_killed=0 i d rc
    for i in $(seq 1 "$RUNS"); do
        cp "$orig" "$file"
        d=$(( (RANDOM * 32768 + RANDOM) % (span + 1) ))
        ( timeout -s KILL "$(printf '0.%06d' "$d")" "$@" >/dev/null 2>&1 ) 2>/dev/null; rc=$?
        [ $rc -eq 137 ] && n_killed=$((n_killed + 1))
        if cmp -s "$file" "$orig"; then n_orig=$((n_orig + 1))
        elif cmp -s "$file" "$edited"; then n_edit=$((n_edit + 1))
        else
            n_bad=$((n_bad + 1))
            [ $n_bad -le 3 ] && echo "# run $i (delay ${d}us, exit $rc): $(ls -l "$file" 2>&1 | head -c 200)"
        fi
    done
    echo "# $name: $RUNS runs, kill delays 0..${span}us: $n_killed killed, $n_orig left the original, $n_edit the edited file"
    t_eq "$name: SIGKILL at random points, $RUNS runs: config is always the original or the edited file" "$n_bad" 0
    t_ok "$name: the file is valid JSON afterwards" jq -e . "$file"
}
kill_loop "create" "$B/config.json" "$T/orig.json" "$T/edited.json" "$RUNTIME" create --bundle "$B" kill-$$
left=$(ls -a "$B" | grep -c 'resview.*\.tmp')
echo "# create: $left temporary files left by killed runs (unnamed while written; named only between link and rename)"
t_eq "the bundle holds config.json and rootfs, nothing else visible" "$(ls "$B" | tr '\n' ' ')" "config.json rootfs "
# a killed writer's file, as the link-to-rename instant would leave it: one of
# a pid that is gone, one of a zombie (killed, not reaped yet)
touch "$B/.config.json.resview-999999999.tmp"
( sh -c 'echo $$ >"'"$T"'/zpid"; exec sleep 300' & exec sleep 30 ) &
zp=$!
for _ in $(seq 50); do [ -s "$T/zpid" ] && break; sleep 0.05; done
zpid=$(cat "$T/zpid")
kill -9 "$zpid"; sleep 0.2   # its parent (sleep 30) never reaps it: a zombie
t_eq "the stand-in writer is a zombie" "$(awk '{print $3}' "/proc/$zpid/stat" 2>/dev/null)" Z
touch "$B/.config.json.resview-$zpid.tmp"
cp "$T/orig.json" "$B/config.json"
"$RUNTIME" create --bundle "$B" after-$$ >/dev/null 2>&1
t_eq "the next create removes temporary files of dead writers" "$(ls -a "$B" | grep -c 'resview.*\.tmp')" 0
ls -a "$B" | grep 'resview.*\.tmp' | sed 's/^/#   left: /'
kill "$zp" 2>/dev/null; wait "$zp" 2>/dev/null

# exec --process: the same, on the process file
echo '{"args":["/bin/sh"],"env":["PATH=/bin","GOMAXPROCS=9"],"cwd":"/","terminal":false}' >"$T/process.orig"
cp "$T/orig.json" "$B/config.json"
RESVIEW_CONFIG=$T/config.true "$RUNTIME" create --bundle "$B" exec-$$
cp "$T/process.orig" "$T/process.json"
"$RUNTIME" exec --process "$T/process.json" exec-$$
cp "$T/process.json" "$T/process.edited"
t_ok "exec adds the recorded variables" grep -q OMP_NUM_THREADS "$T/process.edited"
kill_loop "exec" "$T/process.json" "$T/process.orig" "$T/process.edited" "$RUNTIME" exec --process "$T/process.json" exec-$$

# full disk where the shim's other writes go: the state record (create) and
# the engine's process file (exec). Neither may fail the container or damage
# a file: the record is a warning, the process file stays as it was.
mkdir -p "$T/fullstate"
mount -t tmpfs -o size=16k,nr_inodes=64 tmpfs "$T/fullstate" && t_cleanup "umount -l '$T/fullstate'"
head -c 16384 /dev/zero >"$T/fullstate/filler" 2>/dev/null
jq --arg s "$T/fullstate/state" '.state_dir = $s' "$T/config.true" >"$T/config.fullstate"
cp "$T/orig.json" "$B/config.json"
RESVIEW_CONFIG=$T/config.fullstate "$RUNTIME" create --bundle "$B" fullst-$$ 2>"$T/err"; rc=$?
t_eq "state directory on a full disk: create still succeeds" "$rc" 0
t_ok "state directory on a full disk: config.json edited" grep -q GOMAXPROCS= "$B/config.json"
t_contains "state directory on a full disk: a warning in the log" "$(grep warn "$T/resview.log" | tail -n 3)" "No space left"
t_eq "state directory on a full disk: no temporary file left" "$(find "$T/fullstate" -name '*.tmp' | wc -l)" 0

mkdir -p "$T/fullproc"
mount -t tmpfs -o size=16k tmpfs "$T/fullproc" && t_cleanup "umount -l '$T/fullproc'"
cp "$T/process.orig" "$T/fullproc/process.json"
head -c 16384 /dev/zero >"$T/fullproc/filler" 2>/dev/null
"$RUNTIME" exec --process "$T/fullproc/process.json" exec-$$ 2>"$T/err"; rc=$?
t_eq "exec with the process file on a full disk: passes through (exit of the next runtime)" "$rc" 0
t_ok "exec with the process file on a full disk: process file intact" cmp -s "$T/fullproc/process.json" "$T/process.orig"
t_contains "exec with the process file on a full disk: a warning in the log" "$(grep warn "$T/resview.log" | tail -n 1)" "No space left"
t_eq "exec with the process file on a full disk: no temporary file left" "$(ls -a "$T/fullproc" | grep -c tmp)" 0
mount -o remount,ro "$T/fullproc"
"$RUNTIME" exec --process "$T/fullproc/process.json" exec-$$ 2>"$T/err"; rc=$?
t_eq "exec with the process file on a read-only file system: passes through" "$rc" 0
t_contains "exec with the process file on a read-only file system: a warning in the log" "$(grep warn "$T/resview.log" | tail -n 1)" "Read-only file system"

# a hook whose container pid is gone
sleep 0 & gone=$!; wait $gone
cp "$T/edited.json" "$B/config.json"
printf '{"ociVersion":"1.0.2","id":"gone-%s","status":"creating","pid":%d,"bundle":"%s"}' $$ $gone "$B" \
    | "$HOOK" >"$T/hook.out" 2>&1; rc=$?
t_eq "hook with a vanished container pid: exit 0" "$rc" 0
t_eq "hook with a vanished container pid: nothing on stdout/stderr" "$(cat "$T/hook.out")" ""
t_contains "hook with a vanished container pid: says so in the log" "$(cat "$T/resview.log")" "process $gone is gone"
t_ok "hook with a vanished container pid: no record" test ! -e "$T/state/containers/gone-$$/views"

# LXCFS killed at random points while containers start
unset RESVIEW_CONFIG
LX=$T/lxcfs
jq --arg lx "$LX" '.runtimes = ["runc"] | .lxcfs.root = $lx' "$T/config.json" >"$T/config.runc"
t_cleanup "lxcfs_stop $LX"
RUNC="runc --root $T/runc-root"
bad_start=0 bad_repair=0 bad_view=0 n=0
# start_lx I: create+start container lx$I through the shim; exit code in lx$I.rc
start_lx() {
    (cd "$T/lx$1" && RESVIEW_CONFIG=$T/config.runc "$RUNTIME" --root "$T/runc-root" create "lx$1-$$" \
        </dev/null >/dev/null 2>"$T/lx$1.err" && $RUNC start "lx$1-$$" 2>>"$T/lx$1.err"; echo $? >"$T/lx$1.rc")
}
stop_lx() { $RUNC kill "lx$1-$$" KILL; for _ in $(seq 1 100); do [ "$($RUNC state "lx$1-$$" | jq -r .status)" = stopped ] && break; sleep 0.05; done; $RUNC delete -f "lx$1-$$"; }
LIMIT='.process.args = ["/bin/sleep", "3600"] | .linux.resources.memory = {limit: 201326592}'
# the length of one whole start (create with the hook, then start), to spread the kills over
lxcfs_start "$LX" || echo "not ok - lxcfs did not start"
rv_bundle "$T/lx0" "$LIMIT"
t0=$(now_us); start_lx 0; lx_span=$(( $(now_us) - t0 ))
stop_lx 0
kill -9 "$LXCFS_PID"; lxcfs_stop "$LX"
for i in 1 2 3 4 5 6 7 8; do
    lxcfs_start "$LX" || { echo "not ok - lxcfs did not start"; break; }
    rv_bundle "$T/lx$i" "$LIMIT"
    start_lx $i & starter=$!
    d=$(( (RANDOM * 32768 + RANDOM) % (lx_span + 1) ))
    sleep "$(printf '%d.%06d' $((d / 1000000)) $((d % 1000000)))"
    kill -9 "$LXCFS_PID"
    wait $starter
    lxcfs_stop "$LX"
    n=$((n + 1))
    [ "$(cat "$T/lx$i.rc")" = 0 ] || { bad_start=$((bad_start + 1)); echo "# lx$i: $(cat "$T/lx$i.err")"; continue; }
    echo "# lx$i: LXCFS killed ${d}us into a ${lx_span}us start; views recorded as: $(jq -r .status "$T/state/containers/lx$i-$$/views" 2>&1)"
    lxcfs_start "$LX" || break
    RESVIEW_CONFIG=$T/config.runc "$CLI" repair >"$T/repair.out" 2>&1 || { bad_repair=$((bad_repair + 1)); sed 's/^/#   /' "$T/repair.out"; }
    mem=$($RUNC exec "lx$i-$$" grep MemTotal /proc/meminfo)
    grep -qE '^MemTotal: +196608 kB' <<<"$mem" || { bad_view=$((bad_view + 1)); echo "# lx$i after repair: $mem"; }
    stop_lx $i
    kill -9 "$LXCFS_PID"; lxcfs_stop "$LX"   # (a TERM takes LXCFS seconds to exit)
done
t_eq "LXCFS killed during $n container starts: every container started" "$bad_start" 0
t_eq "LXCFS back: repair exits 0 each time" "$bad_repair" 0
t_eq "LXCFS back: after repair every container reads its limit (MemTotal 192 MiB)" "$bad_view" 0
