#!/bin/bash
# enroot run by a user, the normal case under Slurm with pyxis. enroot and
# pyxis are not in Debian: tests/lib/pyxis-sim.c repeats what they do (user
# and mount namespaces made by the job's user, hooks as that user, pyxis's
# `sh -c 'kill -STOP $$'` as ENROOT_PID, tasks joining the namespaces, that
# process ending right after). The hook is hooks/enroot/50-resview.sh.
#  1. the hook, running as the user, mounts the views and records the
#     container in state_dir/users/ (the state directory is root's);
#  2. the default `resview repair` and `resview watch` heal these containers
#     after LXCFS restarts, and attach views to one started while LXCFS was
#     down, although the process enroot named has exited;
#  3. records a user forges (the host, a root container, another user's job,
#     a symlink, a FIFO, a huge file, a wrong root) are refused and removed,
#     and nothing is mounted anywhere for them;
#  4. a job that ended: its record is dropped (a root job's as well, whose
#     record is root's: it too outlives the process enroot named).
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
# Job users: uids nobody else on this machine uses, without passwd entries.
U=$((200000 + RANDOM % 50000)); U2=$((U + 50000))
chmod 711 "$T"
chmod 644 "$T/config.json"
USERS=$T/state/users
repair() { RESVIEW_CONFIG=$T/config.json "$CLI" repair "$@"; }

# The job's cgroups (1 CPU, 512 MiB).
job_cgroup job
JOB_WRAP=in_cg

# What a task of the job reads (a process in the job's cgroup and the
# container's mount namespace).
task_mem() { in_cg nsenter -t "$1" -m grep MemTotal /proc/meminfo 2>&1 | awk '{print $2}'; }
task_views() { grep -c ' - fuse.lxcfs ' "/proc/$1/mountinfo"; }
host_mem=$(grep MemTotal /proc/meminfo | awk '{print $2}')

# 0. Before any root command has run, users/ does not exist: the hook says so
#    on stderr (enroot's log; the log file is root's) and the job starts.
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
enroot_job early "$U"; early=$TASK
t_eq "no users/ yet: the job starts with its views anyway" "$(task_mem "$early")" "524288"
t_contains "no users/ yet: the hook says why it could not record" "$(cat "$T/early.err")" "resview repair"
kill "$early"
repair >"$T/out" 2>&1
t_eq "repair (root) makes users/: root's, mode 1733" "$(stat -c '%U %a' "$USERS")" "root 1733"
t_eq "... and state_dir 711" "$(stat -c '%a' "$T/state")" "711"

# 1. LXCFS up at start.
enroot_job one "$U"; one=$TASK; one_enroot=$ENROOT
t_eq "job 1: a task reads the job's memory limit" "$(task_mem "$one")" "524288"
t_eq "job 1: the process enroot named (pyxis's sh) has exited" "$(kill -0 "$one_enroot" 2>/dev/null; echo $?)" "1"
rec=$(ls "$USERS")
t_eq "job 1: one record in users/, the user's" "$(stat -c %u "$USERS/$rec")" "$U"
t_eq "job 1: it names the container's mount namespace" "$(jq .mntns "$USERS/$rec")" "$(stat -L -c %i "/proc/$one/ns/mnt")"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
t_contains "LXCFS restarted: the task reads ENOTCONN" "$(in_cg nsenter -t "$one" -m cat /proc/meminfo 2>&1)" "not connected"
repair >"$T/out" 2>&1; rc=$?
t_eq "repair (no --all): exit 0" "$rc" "0"
t_contains "repair: the user's container was repaired" "$(cat "$T/out")" "repaired user $U's container"
t_eq "repair: the task reads its limit again" "$(task_mem "$one")" "524288"
NV=$(lxcfs_views "$LXCFS_DIR")   # the views a container gets: LXCFS 5 nine, 6 and 7 add /proc/pressure/*
t_eq "repair: one LXCFS mount per target ($NV)" "$(grep ' - fuse.lxcfs ' "/proc/$one/mountinfo" | awk '{print $5}' | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')$(task_views "$one")" "1 $NV"

# 2. LXCFS down at start: repair, then watch, attach the views.
lxcfs_stop "$LXCFS_DIR"
enroot_job two "$U"; two=$TASK
t_eq "job 2, LXCFS down: the task starts with the host's values" "$(task_mem "$two")" "$host_mem"
t_eq "job 2: recorded as lxcfs-down" "$(jq -r .status "$USERS"/* | sort | tr '\n' ' ')" "lxcfs-down ok "
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
repair >"$T/out" 2>&1
t_eq "job 2: repair attaches its views" "$(task_mem "$two")" "524288"
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >"$T/watch.out" 2>&1 & WATCH=$!
t_cleanup "kill $WATCH"
wait_for 10 grep -q watching "$T/watch.out"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
healed() { [ "$(task_mem "$one")" = 524288 ] && [ "$(task_mem "$two")" = 524288 ]; }
t_ok "watch (no --all) heals both jobs after a restart" wait_for 30 healed
kill $WATCH; wait $WATCH

# 3. Forged records. The user writes whatever it likes into users/.
forge() { # NAME JSON: a record written by the user
    setpriv --reuid="$U" --regid="$U" --clear-groups sh -c 'cat >"$1"' sh "$USERS/$1" <<<"$2"
}
root_id() { stat -L -c '%Hd:%Ld:%i' "$1"; }
ns_of() { stat -L -c %i "/proc/$1/ns/mnt"; }
start_of() { awk '{print $22}' "/proc/$1/stat"; }
record() { # PID ROOT_ID
    jq -n --argjson pid "$1" --argjson st "$(start_of "$1")" --argjson ns "$(ns_of "$1")" --arg rid "$2" \
        '{pid: $pid, start_time: $st, mntns: $ns, root_id: $rid, rootfs: "/", wanted: ["proc/meminfo", "proc/cpuinfo"]}'
}
# a process of the host (this test's shell)
forge host "$(record $$ "$(root_id /)")"
# a container of root's (plain runc, no resview)
rv_bundle "$T/b-root" '.process.args = ["/bin/sleep", "3600"]'
(cd "$T/b-root" && runc --root "$T/runc-root" run -d root-$$ </dev/null >/dev/null 2>&1)
rootc=$(runc --root "$T/runc-root" state root-$$ | jq .pid)
forge rootc "$(record "$rootc" "$(root_id "/proc/$rootc/root")")"
# another user's job (without the hook: no views of its own)
echo 'exit 0' >"$T/nohook.sh"
enroot_job other "$U2" "$T/nohook.sh"; other=$TASK
forge other "$(record "$other" "$(root_id "/proc/$other/root")")"
# the user's own job, with another root
forge wrongroot "$(record "$one" "$(root_id /)")"
forge garbage 'not json'
setpriv --reuid="$U" --regid="$U" --clear-groups sh -c "ln -s /etc/shadow $USERS/link && mkfifo $USERS/fifo && head -c 200000 /dev/zero >$USERS/huge && mkdir $USERS/dir"
shadow=$(md5sum </etc/shadow)
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
timeout 120 env RESVIEW_CONFIG="$T/config.json" "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "forged records: repair returns, exit 0" "$rc" "0"
out=$(cat "$T/out")
t_contains "forged: the host refused" "$out" "belongs to the host's user namespace"
t_contains "forged: another user's job refused" "$out" "another user's"

t_contains "forged: not JSON refused" "$out" "not a record"
t_contains "forged: summary" "$(tail -1 "$T/out")" "refused 4 records of users"
t_eq "forged: nothing mounted on the host's /proc" "$(awk '$5 ~ /^\/proc\// && / - fuse.lxcfs /' /proc/$$/mountinfo | wc -l)" "0"
t_eq "forged: nothing mounted in root's container" "$(grep -c ' - fuse.lxcfs ' "/proc/$rootc/mountinfo")" "0"
t_eq "forged: nothing mounted in the other user's job" "$(task_views "$other")" "0"
t_eq "forged: the user's own jobs were repaired" "$(task_mem "$one") $(task_mem "$two")" "524288 524288"
t_eq "forged: every forged file removed but the one naming the user's own running job" "$(ls "$USERS" | wc -l) $(ls "$USERS" | grep -c wrongroot)" "3 1"
t_eq "... which is never acted on (a process with the recorded root is not in the namespace)" "$(grep -c wrongroot "$T/out")" "0"
t_eq "forged: /etc/shadow untouched" "$(md5sum </etc/shadow)" "$shadow"
runc --root "$T/runc-root" delete -f root-$$

# 3b. A root job: enroot still makes a user namespace (uid 0 mapped to 0),
#     the hook can write state_dir/containers/; the process enroot named
#     exits all the same: the record must not be dropped while the job runs.
enroot_job rootjob 0; rj=$TASK
t_eq "root job: its task reads the limit" "$(task_mem "$rj")" "524288"
t_ok "root job: recorded under containers/" test -e "$T/state/containers/enroot-$ENROOT/views"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
repair >"$T/out" 2>&1
t_contains "root job: repaired although enroot's process has exited" "$(cat "$T/out")" "repaired enroot-$ENROOT"
t_eq "root job: the task reads its limit again" "$(task_mem "$rj")" "524288"
kill "$rj"; wait_for 10 test ! -e "/proc/$rj"
repair >"$T/out" 2>&1
t_contains "root job ended: its record is dropped" "$(cat "$T/out")" "dropped  enroot-$ENROOT"

# 4. A job that ended.
kill "$one"; wait_for 10 test ! -e "/proc/$one"
repair >"$T/out" 2>&1
t_contains "job 1 ended: its record is dropped" "$(cat "$T/out")" "dropped  user $U's container"
t_eq "... one record left" "$(ls "$USERS" | wc -l)" "1"
