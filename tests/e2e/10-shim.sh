#!/bin/bash
# resview-runtime end to end with real runc and crun: variables seen inside
# the container, the never-override rule, ancestor cgroups, GOMAXPROCS as the
# container asks (resview.io/gomaxprocs), chaining and pass-through subcommands.
source "$(dirname "$0")/../lib/common.sh"

rv_config "$T/config.json"
Q15='.linux.resources.cpu = {"quota": 150000, "period": 100000} | .linux.resources.memory = {"limit": 536870912}'

for rt in runc crun; do
    rv_bundle "$T/b-$rt" "$Q15"
    out=$(run_shim $rt "q15-$rt" "$T/b-$rt")
    for kv in GOMAXPROCS=2 OMP_NUM_THREADS=2 SLURM_CPUS_ON_NODE=2 SLURM_CPUS_PER_TASK=2 SLURM_MEM_PER_NODE=512; do
        t_contains "$rt: 1.5 CPUs / 512 MiB container sees $kv" "$out" "$kv"
    done
    t_not_contains "$rt: no GPU variables without GPUs" "$out" "SLURM_GPUS"
    t_not_contains "$rt: no Slurm detection variables" "$out" "SLURM_JOB_ID"
done

# the container's own choice wins
rv_bundle "$T/b-own" "$Q15 | .process.env += [\"GOMAXPROCS=7\"]"
out=$(run_shim runc own "$T/b-own")
t_contains "GOMAXPROCS=7 set by the container is kept" "$out" "GOMAXPROCS=7"
t_eq "GOMAXPROCS appears once" "$(grep -c '^GOMAXPROCS=' <<<"$out")" 1
t_contains "other variables still injected" "$out" "OMP_NUM_THREADS=2"

# a parent cgroup limited to 1 CPU (a Kubernetes pod, a Slurm job) limits a
# container that has no quota of its own (cgroup v1 refuses a child quota above
# its parent's); its 256 MiB beats the container's own 512 MiB
cg_limit "$CG_PARENT/pod1" 100000 $((256 << 20))
for rt in runc crun; do
    rv_bundle "$T/b-pod-$rt" ".linux.resources.memory = {\"limit\": 536870912} | .linux.cgroupsPath = \"$CG_PARENT/pod1/c-$rt\""
    out=$(run_shim $rt "pod-$rt" "$T/b-pod-$rt")
    t_contains "$rt: under a 1-CPU parent cgroup the container sees GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
    t_contains "$rt: parent's 256 MiB beats the container's 512" "$out" "SLURM_MEM_PER_NODE=256"
done
why=$("$CLI" env --bundle "$T/b-pod-runc")
t_contains "resview env names the ancestor that won" "$why" "$CG_PARENT/pod1/cpu.$(cg_is_v2 && echo max || echo cfs_quota_us)"
t_contains "resview env says LXCFS's CPU views do not follow a parent's quota" "$why" \
    "LXCFS's CPU views (/proc/cpuinfo, /proc/stat) will show $(nproc) CPUs"
jq '.annotations["resview.io/gomaxprocs"] = "false" | .process.env |= map(select(startswith("GOMAXPROCS=") | not))' \
    "$T/b-pod-runc/config.json" >"$T/pod-gomax.json"
t_contains "... and that Go, left to itself, does not read the parent's limit" "$("$CLI" env --spec "$T/pod-gomax.json")" \
    "the CPU limit here is an ancestor's (1), which Go does not read: it counts more CPUs"

# what else a parent can set: an effective cpuset (one CPU) counts; a soft
# memory level (v2 memory.high, v1 memory.soft_limit_in_bytes) is not a limit
cg_limit "$CG_PARENT/pod2" "" ""
cg_cpuset "$CG_PARENT/pod2" 0
cg_memsoft "$CG_PARENT/pod2" $((128 << 20))
for rt in runc crun; do
    rv_bundle "$T/b-pod2-$rt" ".linux.cgroupsPath = \"$CG_PARENT/pod2/c-$rt\""
    out=$(run_shim $rt "pod2-$rt" "$T/b-pod2-$rt")
    t_contains "$rt: a parent's cpuset of CPU 0 gives GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
    t_not_contains "$rt: a parent's soft memory level is no SLURM_MEM_PER_NODE" "$out" "SLURM_MEM_PER_NODE"
done
why=$("$CLI" env --bundle "$T/b-pod2-runc")
t_contains "resview env names the cpuset" "$why" "cpuset 0"
t_contains "... and says no memory limit" "$why" "mem_mib = none"

# a relative or empty cgroupsPath is placed by the next runtime's own rule
# (runc: below its own cgroup on v1, below that cgroup's parent on v2; crun:
# below the root; empty: runc's per-container cgroup there). The runtime runs in .../rel-RT/runner, and rel-RT is limited to
# 1 CPU and 256 MiB: resview counts that limit exactly for the containers
# that land below rel-RT, which each reads from its own /proc/self/cgroup.
if cg_is_v2; then own_cg() { sed -n 's/^0:://p'; }; else own_cg() { sed -n 's/^[0-9]*:memory://p'; }; fi
for case in "runc c-runc yes" "runc - yes" "crun ${CG_PARENT#/}/rel-crun/c-crun yes" \
            "crun ${CG_PARENT#/}/c-crun no"; do
    read -r rt cp limited <<<"$case"
    [ "$cp" = - ] && cp=""
    cg_limit "$CG_PARENT/rel-$rt" 100000 $((256 << 20))
    cg_limit "$CG_PARENT/rel-$rt/runner" "" ""
    T_CASE=$((${T_CASE:-0} + 1))
    rv_bundle "$T/b-rel$T_CASE" ".linux.cgroupsPath = \"$cp\" | .linux.namespaces |= map(select(.type != \"cgroup\"))
        | .process.args = [\"/bin/sh\", \"-c\", \"env; cat /proc/self/cgroup\"]"
    out=$(cg_enter "$CG_PARENT/rel-$rt/runner"; run_shim "$rt" "rel$T_CASE" "$T/b-rel$T_CASE" 2>&1)
    where=$(own_cg <<<"$out")
    if [ "$limited" = yes ]; then
        t_contains "$rt, cgroupsPath '$cp': the container is in the limited pod" "$where" "$CG_PARENT/rel-$rt/"
        t_contains "... and sees GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
        t_contains "... and SLURM_MEM_PER_NODE=256" "$out" "SLURM_MEM_PER_NODE=256"
    else
        t_not_contains "$rt, cgroupsPath '$cp': the container is not in the pod ($where)" "$where" "/rel-$rt"
        t_contains "... and sees the host's $(nproc) CPUs" "$out" "GOMAXPROCS=$(nproc)"
        t_not_contains "... and no memory limit" "$out" "SLURM_MEM_PER_NODE="
    fi
done
# (crun with an empty cgroupsPath runs the container in the root cgroup itself,
# and on v2 attaches the container's device filter there, for the whole host:
# not tried here; resview counts the root's limits, none)

# What follows names no cgroup (variables a spec asks for, chaining, the
# bundle's file): make check's guest stops here (tests/v2/suites.txt)
in_v2_share && exit 0

# a real Slurm job: no SLURM_* added
rv_bundle "$T/b-slurm" "$Q15 | .process.env += [\"SLURM_JOB_ID=77\"]"
out=$(run_shim runc slurm "$T/b-slurm")
t_eq "inside a real Slurm job only the job's own SLURM_* are present" "$(grep '^SLURM_' <<<"$out")" "SLURM_JOB_ID=77"
t_contains "GOMAXPROCS still injected inside a Slurm job" "$out" "GOMAXPROCS=2"

# opt-out
rv_bundle "$T/b-optout" "$Q15 | .annotations = {\"resview.io/env\": \"false\"}"
out=$(run_shim runc optout "$T/b-optout")
t_not_contains "resview.io/env=false: no variables" "$out" "GOMAXPROCS"

# GOMAXPROCS left to the program (Go 1.25+ follows its cgroup's CPU limit, and a
# resize, only when it is not set): neither the container's process nor a later
# exec session reads it, the other variables are there
shim() { RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" "$@"; }
rv_bundle "$T/b-gomax" "$Q15 | .annotations = {\"resview.io/gomaxprocs\": \"false\"} | .process.args = [\"/bin/sleep\", \"30\"]"
(cd "$T/b-gomax" && shim create gomax1) </dev/null >/dev/null 2>&1
shim start gomax1
jq -n '{terminal: false, args: ["/bin/sh", "-c", "tr \"\\0\" \"\\n\" </proc/1/environ; echo --- exec; env"], cwd: "/",
        env: ["PATH=/bin"], user: {uid: 0, gid: 0}}' >"$T/proc-gomax.json"
ex=$(shim exec --process "$T/proc-gomax.json" gomax1)
t_not_contains "resview.io/gomaxprocs=false: the container's process has no GOMAXPROCS" "${ex%%--- exec*}" "GOMAXPROCS="
t_contains "... and has OMP_NUM_THREADS=2" "${ex%%--- exec*}" "OMP_NUM_THREADS=2"
t_not_contains "... nor has a later exec session" "${ex#*--- exec}" "GOMAXPROCS="
t_contains "... which has OMP_NUM_THREADS=2" "${ex#*--- exec}" "OMP_NUM_THREADS=2"
t_contains "resview env says GOMAXPROCS is left to the program, and why" "$("$CLI" env --bundle "$T/b-gomax")" \
    'GOMAXPROCS is left to the program (annotation resview.io/gomaxprocs="false")'
shim kill gomax1 KILL; sleep 0.2; shim delete -f gomax1 >/dev/null 2>&1
rv_bundle "$T/b-gomax-set" "$Q15"
t_contains "resview env says how to leave a set GOMAXPROCS to the program" "$("$CLI" env --bundle "$T/b-gomax-set")" \
    'resview.io/gomaxprocs: "false" (or RESVIEW_GOMAXPROCS=0) leaves it to the program'
# the node turned it off (env.vars): "true" sets it for one container
rv_config "$T/config-nogo.json" '{"env": {"vars": {"GOMAXPROCS": false}}}'
t_contains "resview env says when the node leaves it to the program" \
    "$(RESVIEW_CONFIG=$T/config-nogo.json "$CLI" env --bundle "$T/b-gomax-set")" \
    'GOMAXPROCS is left to the program (env.vars GOMAXPROCS false on this node'
out=$(run_shim runc gomax-node "$T/b-gomax-set" "$T/config-nogo.json")
t_not_contains "env.vars GOMAXPROCS false: not set" "$out" "GOMAXPROCS="
t_contains "... the others are" "$out" "OMP_NUM_THREADS=2"
rv_bundle "$T/b-gomax-on" "$Q15 | .annotations = {\"resview.io/gomaxprocs\": \"true\"}"
out=$(run_shim runc gomax-on "$T/b-gomax-on" "$T/config-nogo.json")
t_contains "... but resview.io/gomaxprocs=true sets it" "$out" "GOMAXPROCS=2"
# an invalid value: refused, naming the annotation, the bundle untouched
rv_bundle "$T/b-gomax-bad" "$Q15 | .annotations = {\"resview.io/gomaxprocs\": \"no\"}"
sum=$(sha256sum <"$T/b-gomax-bad/config.json")
out=$(run_shim runc gomax-bad "$T/b-gomax-bad" 2>&1); rc=$?
t_ok "an invalid resview.io/gomaxprocs is refused" test "$rc" -ne 0
t_contains "... naming the annotation" "$out" 'annotation resview.io/gomaxprocs: expected "true" or "false"'
t_eq "... config.json byte for byte intact" "$(sha256sum <"$T/b-gomax-bad/config.json")" "$sum"

# the next runtime receives the original arguments unchanged
cat >"$T/recorder" <<EOS
#!/bin/sh
printf '%s\n' "\$@" >"$T/argv.\$\$"
exec runc "\$@"
EOS
chmod +x "$T/recorder"
rv_bundle "$T/b-rec" "$Q15"
jq --arg r "$T/recorder" '.runtimes = [$r]' "$T/config.json" >"$T/config-rec.json"
args=(--root "$T/runc-root" --log "$T/runc.log" --log-format json run --bundle "$T/b-rec" --no-new-keyring rec1)
RESVIEW_CONFIG=$T/config-rec.json "$RUNTIME" "${args[@]}" >"$T/rec.out" 2>&1
t_eq "chained runtime gets argv unchanged" "$(cat "$T"/argv.*)" "$(printf '%s\n' "${args[@]}")"
t_contains "and the container ran with the variables" "$(cat "$T/rec.out")" "GOMAXPROCS=2"

# never itself, and no loop between two runtimes that name each other
cp "$RUNTIME" "$T/other-shim"
jq --arg a "$T/other-shim" --arg self "$RUNTIME" '.runtimes = [$self, $a, "runc"]' "$T/config.json" >"$T/loop-a.json"
jq --arg b "$RUNTIME" '.runtimes = [$b, "runc"]' "$T/config.json" >"$T/loop-b.json"
# other-shim reads loop-b through RESVIEW_CONFIG? Both read the same variable:
# give both the union: [self, other, runc] — each skips itself and what it visited.
rv_bundle "$T/b-loop" "$Q15"
out=$(cd "$T/b-loop" && RESVIEW_CONFIG=$T/loop-a.json timeout 20 "$RUNTIME" --root "$T/runc-root" run loop1 2>&1); rc=$?
t_eq "two shims naming each other: no loop, container runs" "$rc" 0
t_contains "looped chain still delivers the variables" "$out" "GOMAXPROCS=2"
t_eq "variables added once" "$(grep -c '^GOMAXPROCS=' <<<"$out")" 1
t_eq "hook added once" "$(jq '[.hooks[][] | select(.path | endswith("resview-hook"))] | length' "$T/b-loop/config.json")" 1

# create/start/state/exec/delete pass through
rv_bundle "$T/b-life" "$Q15 | .process.args = [\"/bin/sleep\", \"30\"]"
(cd "$T/b-life" && RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" create life1) </dev/null >/dev/null 2>&1
t_ok "create through the shim" test -f "$T/runc-root/life1/state.json"
t_ok "start through the shim" env RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" start life1
mkdir -p "$T/badcwd" && echo '{' >"$T/badcwd/config.json"  # a broken bundle in the cwd must not matter
st=$(cd "$T/badcwd" && RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" state life1)
t_eq "state passes through without reading a bundle" "$(jq -r .status <<<"$st")" running
jq -n '{terminal: false, args: ["/bin/sh", "-c", "env"], cwd: "/", env: ["PATH=/bin", "GOMAXPROCS=9"], user: {uid: 0, gid: 0}}' >"$T/proc.json"
jq -n '{terminal: false, args: ["/bin/sh", "-c", "env"], cwd: "/", env: ["PATH=/bin"], user: {uid: 0, gid: 0}}' >"$T/proc2.json"
ex=$(RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" exec --process "$T/proc2.json" life1)
t_contains "exec session sees the injected variables" "$ex" "OMP_NUM_THREADS=2"
t_contains "exec session sees SLURM_MEM_PER_NODE" "$ex" "SLURM_MEM_PER_NODE=512"
ex=$(RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" exec --process "$T/proc.json" life1)
t_contains "exec session's own GOMAXPROCS=9 is kept" "$ex" "GOMAXPROCS=9"
t_ok "create recorded the variables for exec sessions" test -s "$T/state/containers/life1/env"
t_ok "kill passes through" env RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" kill life1 KILL
sleep 0.2
t_ok "delete passes through" env RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" delete -f life1
t_ok "container is gone" test ! -e "$T/runc-root/life1"
t_ok "delete removed the container's records" test ! -e "$T/state/containers/life1"
t_contains "features passes through" "$(RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" features 2>&1)" "ociVersion"

# the rewrite keeps config.json's mode and owner
rv_bundle "$T/b-mode" "$Q15"
chmod 0640 "$T/b-mode/config.json" && chown 1234:5678 "$T/b-mode/config.json"
ino_before=$(stat -c %i "$T/b-mode/config.json")
out=$(run_shim runc mode1 "$T/b-mode")
t_contains "container with a 0640, 1234:5678 config.json runs with the variables" "$out" "GOMAXPROCS=2"
t_eq "mode and owner kept after the rewrite" "$(stat -c '%a %u:%g' "$T/b-mode/config.json")" "640 1234:5678"
t_ok "config.json was replaced (rename), not written in place" test "$(stat -c %i "$T/b-mode/config.json")" != "$ino_before"
t_eq "no temporary file left in the bundle" "$(ls -a "$T/b-mode" | grep -c 'resview.*tmp')" 0
sum=$(sha256sum <"$T/b-mode/config.json")
(cd "$T/b-mode" && RESVIEW_CONFIG=$T/config.json.runc "$RUNTIME" --root "$T/runc-root" run mode2 >/dev/null 2>&1)
t_eq "a second create on the same bundle changes nothing" "$(sha256sum <"$T/b-mode/config.json")" "$sum"
