#!/bin/bash
# In-place resize (src/runtime/resview-runtime.8.md "VARIABLES"): a container started through
# resview with 2 CPUs and 2 GiB is updated to 1 CPU and 512 MiB, by `runc
# update` / `crun update` directly (not through resview) and through
# resview-runtime; a new exec session then reads GOMAXPROCS=1 and
# SLURM_MEM_PER_NODE=512, and /proc/meminfo shows 512 MiB (LXCFS follows the
# cgroup by itself). GPU variables keep their value; GOMAXPROCS stays out with
# resview.io/gomaxprocs "false" and follows with "true". (This host has 2 CPUs:
# the issue's 4 CPUs show as 2.) docker update: tests/e2e/41-docker.sh.
source "$(dirname "$0")/../lib/common.sh"
export LXCFS_DIR=$T/lxcfs
source "$TOP/tests/lib/lxcfs-helpers.sh"

t_cleanup "lxcfs_stop $LXCFS_DIR"
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
rv_config "$T/config.json"
BIG='.linux.resources.memory.limit = 2147483648 | .linux.resources.cpu = {quota: 200000, period: 100000}
     | .process.args = ["/bin/sleep", "300"] | .process.env += ["NVIDIA_VISIBLE_DEVICES=0"]'
# the process of one exec, a new file each time as engines write it
proc() { jq -n '{terminal: false, args: ["/bin/sh", "-c", "env; grep MemTotal /proc/meminfo"], cwd: "/",
                 env: ["PATH=/bin"], user: {uid: 0, gid: 0}}' >"$T/proc.json"; echo "$T/proc.json"; }

for rt in runc crun; do
    for how in direct shim; do
        id=resize-$rt-$how
        b=$T/b-$id
        rv_bundle "$b" "$BIG"
        jq --arg n "$([ "$rt" = crun ] && echo "$CRUN_V1" || echo runc)" '.runtimes = [$n]' "$T/config.json" >"$T/config.json.$rt"
        rtc="$([ "$rt" = crun ] && echo "$CRUN_V1" || echo runc) --root $T/$rt-root"
        shim() { RESVIEW_CONFIG=$T/config.json.$rt "$RUNTIME" --root "$T/$rt-root" "$@"; }
        (cd "$b" && shim create "$id") </dev/null >/dev/null 2>&1
        shim start "$id"
        before=$(shim exec --process "$(proc)" "$id" 2>&1)
        t_contains "$rt $how: before, an exec reads GOMAXPROCS=2" "$before" "GOMAXPROCS=2"
        t_contains "$rt $how: before, SLURM_MEM_PER_NODE=2048" "$before" "SLURM_MEM_PER_NODE=2048"
        if [ "$how" = direct ]; then
            $rtc update --cpu-quota 100000 --cpu-period 100000 --memory 536870912 "$id"
        else
            shim update --cpu-quota 100000 --cpu-period 100000 --memory 536870912 "$id"
        fi
        t_eq "$rt $how: update exits 0" "$?" "0"
        after=$(shim exec --process "$(proc)" "$id" 2>&1)
        t_contains "$rt $how: after, a new exec reads GOMAXPROCS=1" "$after" "GOMAXPROCS=1"
        t_contains "$rt $how: ... OMP_NUM_THREADS=1" "$after" "OMP_NUM_THREADS=1"
        t_contains "$rt $how: ... SLURM_MEM_PER_NODE=512" "$after" "SLURM_MEM_PER_NODE=512"
        t_contains "$rt $how: ... /proc/meminfo shows 512 MiB" "$after" "524288 kB"
        t_contains "$rt $how: ... the GPU variable keeps its value" "$after" "SLURM_GPUS_ON_NODE=1"
        t_contains "$rt $how: the log says what changed" "$(grep "id=$id" "$T/resview.log")" \
            "exec: GOMAXPROCS=1 now (was GOMAXPROCS=2)"
        shim kill "$id" KILL; sleep 0.2; shim delete -f "$id" >/dev/null 2>&1
    done
done
# GOMAXPROCS as the container asks (resview.io/gomaxprocs): "false" keeps it out
# of exec sessions after a resize too; "true", where env.vars turns it off,
# follows the resize like the others
rv_config "$T/config-nogo.json" '{"env": {"vars": {"GOMAXPROCS": false}}}'
for ask in false true; do
    id=resize-gomax-$ask
    cfg=$T/config.json.runc; [ "$ask" = true ] && cfg=$T/config-nogo.json
    shim() { RESVIEW_CONFIG=$cfg "$RUNTIME" --root "$T/runc-root" "$@"; }
    rv_bundle "$T/b-$id" "$BIG | .annotations = {\"resview.io/gomaxprocs\": \"$ask\"}"
    (cd "$T/b-$id" && shim create "$id") </dev/null >/dev/null 2>&1
    shim start "$id"
    runc --root "$T/runc-root" update --cpu-quota 100000 --cpu-period 100000 "$id"
    out=$(shim exec --process "$(proc)" "$id" 2>&1)
    if [ "$ask" = false ]; then
        t_not_contains "resview.io/gomaxprocs=false: after a resize, an exec has no GOMAXPROCS" "$out" "GOMAXPROCS="
        t_contains "... and reads OMP_NUM_THREADS=1" "$out" "OMP_NUM_THREADS=1"
    else
        t_contains "env.vars GOMAXPROCS false, resview.io/gomaxprocs=true: after a resize, an exec reads GOMAXPROCS=1" \
            "$out" "GOMAXPROCS=1"
    fi
    shim kill "$id" KILL; sleep 0.2; shim delete -f "$id" >/dev/null 2>&1
done
# a record without the runtime's root (written by resview 0.1): the recorded values
id=resize-oldrecord
rv_bundle "$T/b-$id" "$BIG"
shim() { RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" "$@"; }
(cd "$T/b-$id" && shim create "$id") </dev/null >/dev/null 2>&1
shim start "$id"
runc --root "$T/runc-root" update --memory 536870912 "$id"
jq 'del(.runtime_root)' "$T/state/containers/$id/env" >"$T/rec" && cp "$T/rec" "$T/state/containers/$id/env"
out=$(shim exec --process "$(proc)" "$id" 2>&1)
t_contains "a record without the runtime's root: the exec works, with the recorded values" "$out" "SLURM_MEM_PER_NODE=2048"
t_contains "... while /proc/meminfo follows the cgroup" "$out" "524288 kB"
shim kill "$id" KILL; sleep 0.2; shim delete -f "$id" >/dev/null 2>&1
