# lxcfs-helpers.sh - helpers for the LXCFS tests (tests/e2e/2*.sh); source
# after common.sh. Ids starting with "c" run under crun, others under runc.
LIMITS='.linux.resources.memory.limit = 536870912 | .linux.resources.cpu = {quota: 100000, period: 100000}'
rt_of() { case $1 in c*) echo crun ;; *) echo runc ;; esac; }
rt_cmd() { if [ "$1" = crun ]; then echo "$CRUN_V1 --root $T/crun-root"; else echo "runc --root $T/runc-root"; fi; }
# start_bg ID [CONFIG]: a long-running 1-CPU/512 MiB container through the
# shim, created then started, as engines do (where watch runs, the views are
# given at `start`); run_bg: the same in one `run -d` (the hook gives them)
start_bg() { bg_ create "$@"; }
run_bg() { bg_ run "$@"; }
bg_() {
    local how=$1 id=$2 cfg=${3:-$T/config.json} rt; rt=$(rt_of "$id")
    local next=runc root=$T/runc-root
    [ "$rt" = crun ] && next=$CRUN_V1 root=$T/crun-root
    rv_bundle "$T/b-$id" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS"
    jq --arg n "$next" '.runtimes = [$n]' "$cfg" >"$cfg.$rt"
    if [ "$how" = run ]; then
        (cd "$T/b-$id" && RESVIEW_CONFIG=$cfg.$rt "$RUNTIME" --root "$root" run -d "$id" </dev/null >/dev/null 2>"$T/create-$id.err")
    else
        (cd "$T/b-$id" && RESVIEW_CONFIG=$cfg.$rt "$RUNTIME" --root "$root" create "$id" </dev/null >/dev/null 2>"$T/create-$id.err" &&
            RESVIEW_CONFIG=$cfg.$rt "$RUNTIME" --root "$root" start "$id")
    fi
}
# timed CMD...: CMD's status, and how long it took in MS (milliseconds)
timed() { local t0 rc; t0=$(date +%s%N); "$@"; rc=$?; MS=$(( ($(date +%s%N) - t0) / 1000000 )); return $rc; }
pid_of() { $(rt_cmd "$(rt_of "$1")") state "$1" | jq -r .pid; }
# What a process inside the container reads (exec joins the container's
# cgroup, which is what LXCFS answers for).
inside() { local id=$1; shift; $(rt_cmd "$(rt_of "$id")") exec "$id" "$@" 2>&1; }
mem_inside() { inside "$1" grep MemTotal /proc/meminfo | awk '{print $2}'; }
# the hook's own count in the log: "N mounted (M cloned from files watch holds)"
held_of() { grep "id=$1: LXCFS views" "$T/resview.log" | tail -1 | sed -n 's/.*(\([0-9]*\) cloned from files watch holds).*/\1/p'; }
# watch_fresh SOCK: watch's set on SOCK says LXCFS answered at most 300 ms ago
watch_fresh() { [ -S "$1" ] && [ "$(python3 -c 'import socket,struct,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); d = s.recv(64)
print(struct.unpack_from("=IIQII", d)[4])' "$1")" -le 300 ]; }
# stopped_read ID LABEL: LXCFS stopped (SIGSTOP), a read of a view inside ID
# waits for it; continued (SIGCONT), the read completes
stopped_read() {
    local id=$1 label=$2 reader
    inside "$id" head -c 9 /proc/meminfo >"$T/$id.read" & reader=$!
    sleep 0.5
    t_ok "$label: a read inside waits for LXCFS" kill -0 $reader
    kill -CONT "$LXCFS_PID"
    wait $reader
    t_eq "$label: the read completes once LXCFS runs" "$(cat "$T/$id.read")" "MemTotal:"
}
# LXCFS file mounts in the container's mount table
views_of() { grep fuse.lxcfs "/proc/$(pid_of "$1")/mountinfo" | awk '$4 != "/" {print $5}'; }
# distinct counts of LXCFS mounts per target: "1 " when nothing is stacked
per_target() { views_of "$1" | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' '; }
# wait_for SECONDS CMD...: until CMD succeeds (not a timing assertion: a bound)
wait_for() { local n=$(( $1 * 10 )); shift; while [ $n -gt 0 ]; do "$@" && return 0; sleep 0.1; n=$((n - 1)); done; return 1; }

# job_cgroup NAME: a job's cgroups at resview-test/<test>/NAME with 1 CPU
# (quota 100000/100000) and 512 MiB, the same path in every controller
# (LXCFS reads the CPU quota at the cpuset cgroup's path). JOB_JOIN: shell
# code that moves $$ into them; in_cg CMD...: run CMD there (as the job's
# processes are; `sh -c "$JOB_JOIN; exec ..." &` where $! must be CMD).
job_cgroup() {
    JOB_CG=resview-test/$(basename "$T")/$1
    cg_limit "$JOB_CG" 100000 536870912
    JOB_JOIN=$(cg_join_code "$JOB_CG")
}
in_cg() { sh -c "$JOB_JOIN"'; exec "$@"' sh "$@"; }

# enroot jobs of a user, started as pyxis and enroot do (tests/lib/pyxis-sim.c):
# enroot_job NAME UID [HOOK]: sets TASK (a task of the job: as UID, in the
# container's namespaces) and ENROOT (the process enroot named, gone by now).
# The job runs under ${JOB_WRAP:-} (e.g. a command that joins its cgroups).
# $T must be searchable by UID (chmod 711) and the configuration readable.
enroot_job() {
    local name=$1 uid=$2 hook=${3:-$TOP/hooks/enroot/50-resview.sh} out
    [ -x "$T/pyxis-sim" ] || gcc -static -O2 -o "$T/pyxis-sim" "$TOP/tests/lib/pyxis-sim.c" || return 1
    mkdir -p "$T/$name/run"
    rv_rootfs "$T/$name/rootfs" >/dev/null
    chown -R "$uid:$uid" "$T/$name"
    out=$(${JOB_WRAP:-} env RESVIEW_CONFIG="$T/config.json" RESVIEW_HOOK="$HOOK" \
        "$T/pyxis-sim" "$uid" "$uid" "$T/$name/rootfs" "$T/$name/run" "$hook" /bin/sleep 3600 2>"$T/$name.err")
    ENROOT=$(awk '$1 == "enroot" {print $2}' <<<"$out")
    TASK=$(awk '$1 == "task" {print $2}' <<<"$out")
    [ -n "$TASK" ] || { echo "# enroot job $name did not start: $(cat "$T/$name.err")"; return 1; }
    t_cleanup "kill $TASK"
}
