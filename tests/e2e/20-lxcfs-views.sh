#!/bin/bash
# LXCFS views put in by resview-hook: values a container reads, under runc and
# crun, both hook stages; opt-out; idempotence; hostile rootfs; bad state.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
t_cleanup "lxcfs_stop $LXCFS_DIR"
# the views a container gets: what this LXCFS serves (LXCFS 5: nine; 6 and 7
# add /proc/pressure/*), each a file the kernel has
NV=$(lxcfs_views "$LXCFS_DIR") NV_PROC=$(lxcfs_views "$LXCFS_DIR" proc)
t_ok "LXCFS serves the nine files LXCFS 5 does, at least ($NV, $NV_PROC under /proc)" test "$NV" -ge 9 -a "$NV_PROC" -ge 8
rv_config "$T/config.json"
rv_config "$T/config-cr.json" '{"hook": {"stage": "createRuntime"}}'

READ='grep MemTotal /proc/meminfo; echo cpus=$(grep -c ^processor /proc/cpuinfo); echo online=$(cat /sys/devices/system/cpu/online); echo uptime=$(cut -d. -f1 /proc/uptime); grep -c fuse.lxcfs /proc/self/mountinfo; grep " /proc/meminfo " /proc/self/mountinfo'
LIMITS='.linux.resources.memory.limit = 536870912 | .linux.resources.cpu = {quota: 100000, period: 100000}'
host_mem=$(grep MemTotal /proc/meminfo)
host_cpus=$(grep -c ^processor /proc/cpuinfo)

for rt in runc crun; do
    for stage in prestart createRuntime; do
        cfg=$T/config.json; [ $stage = createRuntime ] && cfg=$T/config-cr.json
        b=$T/b-$rt-$stage
        rv_bundle "$b" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS"
        out=$(run_shim $rt "v-$rt-$stage-$$" "$b" "$cfg" 2>&1)
        t_contains "$rt $stage: MemTotal is the 512 MiB limit" "$out" "MemTotal:         524288 kB"
        t_contains "$rt $stage: one processor in /proc/cpuinfo" "$out" "cpus=1"
        t_contains "$rt $stage: cpu/online is 0" "$out" "online=0"
        up=$(sed -n 's/^uptime=//p' <<<"$out")
        host_up=$(cut -d. -f1 /proc/uptime)
        t_ok "$rt $stage: /proc/uptime is the container's (${up}s, host ${host_up}s)" test "${up:-99999}" -lt 60 -a "$host_up" -gt "${up:-0}"
        t_contains "$rt $stage: views are read-only, nosuid, nodev, noexec" "$out" "/proc/meminfo ro,nosuid,nodev,noexec"
        t_line "$rt $stage: $NV views, every file LXCFS serves" "$out" "$NV"
    done
done
rec=$(cat "$T/state/containers/v-runc-prestart-$$/views")
t_eq "record: status ok" "$(jq -r .status <<<"$rec")" "ok"
t_eq "record: $NV files mounted" "$(jq '.mounted | length' <<<"$rec")" "$NV"
t_eq "record: pid start time recorded" "$(jq '.start_time > 0' <<<"$rec")" "true"
t_eq "record: rootfs" "$(jq -r .rootfs <<<"$rec")" "$T/b-runc-prestart/rootfs"

# Opt-out: annotation and env; host values.
rv_bundle "$T/optout" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS | .annotations = {\"resview.io/lxcfs\": \"false\"}"
out=$(run_shim runc "optout-$$" "$T/optout" 2>&1)
t_contains "opt-out annotation: host MemTotal" "$out" "$host_mem"
t_contains "opt-out annotation: host processors" "$out" "cpus=$host_cpus"
rv_bundle "$T/optenv" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS | .process.env += [\"RESVIEW_LXCFS=0\"]"
out=$(run_shim crun "optenv-$$" "$T/optenv" 2>&1)
t_contains "opt-out env (crun): host MemTotal" "$out" "$host_mem"
# hooks.d adds the hook even for opted-out containers: the hook itself obeys.
jq --arg h "$HOOK" --arg c "$T/config.json" '.hooks.prestart = [{path: $h, args: ["resview-hook"], env: ["RESVIEW_CONFIG=" + $c]}]' "$T/optout/config.json" >"$T/optout/c.json" && mv "$T/optout/c.json" "$T/optout/config.json"
out=$(run_plain runc "optout2-$$" "$T/optout" 2>&1)
t_contains "opt-out annotation, hook from hooks.d: host MemTotal" "$out" "$host_mem"

# Running the hook twice (hooks.d + shim, or a retry) stacks nothing.
rv_bundle "$T/twice" '.process.args = ["/bin/sh", "-c", "grep -c fuse.lxcfs /proc/self/mountinfo"]'
jq --arg h "$HOOK" --arg c "$T/config.json" '.hooks.prestart = [{path: $h, args: ["resview-hook"], env: ["RESVIEW_CONFIG=" + $c]}, {path: $h, args: ["resview-hook"], env: ["RESVIEW_CONFIG=" + $c]}]' "$T/twice/config.json" >"$T/twice/c.json" && mv "$T/twice/c.json" "$T/twice/config.json"
t_eq "hook run twice: still $NV views, none stacked" "$(run_plain runc "twice-$$" "$T/twice" 2>&1)" "$NV"

# Hostile rootfs: targets that lead outside the rootfs. Nothing may be mounted
# outside it, and the container starts.
mkdir -p "$T/outside/proc" "$T/outside/cpu"
echo secret >"$T/outside/meminfo"; echo secret >"$T/outside/proc/meminfo"; echo secret >"$T/outside/cpu/online"
# 1. The hook against a namespace whose rootfs has /proc/meminfo a symlink to
#    a host path, `..` symlinks, a directory target, and one plain target
#    (procfs cannot hold symlinks, so a runtime cannot build this one for us).
mkdir -p "$T/h1/rootfs/proc" "$T/h1/rootfs/sys/devices/system" "$T/h1/rootfs/proc/stat"
ln -s "$T/outside/meminfo" "$T/h1/rootfs/proc/meminfo"
ln -s "../../../../../../../../../../$T/outside/meminfo" "$T/h1/rootfs/proc/cpuinfo"
ln -s "../../../../../../../../../../$T/outside/cpu" "$T/h1/rootfs/sys/devices/system/cpu"
echo 1 >"$T/h1/rootfs/proc/uptime"
jq -n '{ociVersion: "1.0.2", root: {path: "rootfs"}, process: {args: ["true"]}}' >"$T/h1/config.json"
unshare -m --propagation private sleep 600 & ns_pid=$!
t_cleanup "kill $ns_pid"
for _ in $(seq 50); do [ "$(readlink /proc/$ns_pid/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break; sleep 0.05; done
out=$(jq -n --arg b "$T/h1" --argjson p $ns_pid '{id: "h1", pid: $p, bundle: $b}' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "hostile: hook exits 0" "$rc" "0"
t_eq "hostile: only the plain target got a view" "$(grep fuse.lxcfs /proc/$ns_pid/mountinfo | awk '$4 != "/" {print $5}')" "$T/h1/rootfs/proc/uptime"
t_eq "hostile: host files untouched" "$(cat "$T/outside/meminfo") $(cat "$T/outside/cpu/online")" "secret secret"
t_eq "hostile: nothing mounted on the outside tree (namespace)" "$(grep -c " $T/outside" /proc/$ns_pid/mountinfo)" "0"
t_eq "hostile: nothing mounted on the outside tree (host)" "$(grep -c " $T/outside" /proc/self/mountinfo)" "0"
t_eq "hostile: no LXCFS file mounted anywhere on the host" "$(grep fuse.lxcfs /proc/self/mountinfo | awk '$4 != "/"' | wc -l)" "0"
t_eq "hostile: the only mount under the test dir is LXCFS" "$(grep " $T/" /proc/self/mountinfo | awk '{print $5}')" "$LXCFS_DIR"
rec=$(cat "$T/state/containers/h1/views")
t_eq "hostile: symlink targets recorded as skipped" "$(jq -r '.skipped["proc/meminfo"], .skipped["proc/cpuinfo"], .skipped["sys/devices/system/cpu/online"]' <<<"$rec" | tr '\n' /)" "target is a symlink/target is a symlink/a symlink on the way to the target/"
t_eq "hostile: directory target recorded as skipped" "$(jq -r '.skipped["proc/stat"]' <<<"$rec")" "target is not a regular file"
# 2. /proc itself a symlink out of the rootfs (runtimes refuse to start such a
#    container themselves, so again the hook against a namespace).
mkdir -p "$T/h2/rootfs"
ln -s "../../../../../../../../$T/outside/proc" "$T/h2/rootfs/proc"
cp "$T/h1/config.json" "$T/h2/config.json"
out=$(jq -n --arg b "$T/h2" --argjson p $ns_pid '{id: "h2", pid: $p, bundle: $b}' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "hostile: /proc a symlink: hook exits 0" "$rc" "0"
t_eq "hostile: /proc a symlink: no view through it" "$(grep fuse.lxcfs /proc/$ns_pid/mountinfo | awk '$4 != "/" {print $5}' | grep -c h2)" "0"
t_eq "hostile: /proc a symlink: nothing mounted outside" "$(grep -c " $T/outside" /proc/$ns_pid/mountinfo)" "0"
# 2b. A process in the host's own mount namespace (a spec without one, or a
#     VM-based runtime's process on the host): no view, nothing recorded, and
#     with lxcfs.required the start fails.
mkdir -p "$T/h4/rootfs/proc" && echo 1 >"$T/h4/rootfs/proc/uptime"
cp "$T/h1/config.json" "$T/h4/config.json"
sleep 600 & host_pid=$!
t_cleanup "kill $host_pid"
before=$(grep -c fuse.lxcfs /proc/self/mountinfo)
out=$(jq -n --arg b "$T/h4" --argjson p $host_pid '{id: "h4", pid: $p, bundle: $b}' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "host namespace: hook exits 0" "$rc" "0"
t_eq "host namespace: no view mounted" "$(grep -c fuse.lxcfs /proc/self/mountinfo)" "$before"
t_ok "host namespace: nothing recorded" test ! -e "$T/state/containers/h4/views"
t_contains "host namespace: logged" "$(cat "$T/resview.log")" "is in the host's mount namespace"
jq '.lxcfs.required = true' "$T/config.json" >"$T/config-required.json"
out=$(jq -n --arg b "$T/h4" --argjson p $host_pid '{id: "h4r", pid: $p, bundle: $b}' | RESVIEW_CONFIG=$T/config-required.json "$HOOK" 2>&1); rc=$?
t_eq "host namespace, lxcfs.required: the hook fails the start" "$rc" "1"
t_eq "host namespace, lxcfs.required: still no view" "$(grep -c fuse.lxcfs /proc/self/mountinfo)" "$before"
# 3. A real container with a `..` symlink on the way to /sys/devices/system/cpu/online
#    (no /sys mount): it starts, gets the /proc views and none through the symlink.
for rt in runc crun; do
    rv_bundle "$T/h3-$rt" '.process.args = ["/bin/sh", "/check.sh"] | .mounts |= map(select(.destination != "/sys" and .destination != "/sys/fs/cgroup"))'
    echo "grep fuse.lxcfs /proc/self/mountinfo | awk '{print \$5}' | grep -c ^/proc/; cat /sys/devices/system/cpu/online 2>&1; exit 0" >"$T/h3-$rt/rootfs/check.sh"
    mkdir -p "$T/h3-$rt/rootfs/sys/devices/system"
    ln -s "../../../../../../../../$T/outside/cpu" "$T/h3-$rt/rootfs/sys/devices/system/cpu"
    out=$(run_shim $rt "h3-$rt-$$" "$T/h3-$rt" 2>&1); rc=$?
    t_eq "hostile ($rt): symlinked /sys path, the container starts" "$rc" "0"
    t_eq "hostile ($rt): /proc views only; the symlink leads nowhere outside" "$out" "$NV_PROC"$'\ncat: can\'t open \'/sys/devices/system/cpu/online\': No such file or directory'
done
t_eq "hostile: outside file still untouched" "$(cat "$T/outside/cpu/online")" "secret"
t_eq "hostile: still no LXCFS file mounted on the host" "$(grep fuse.lxcfs /proc/self/mountinfo | awk '$4 != "/"' | wc -l)" "0"

# The hook with bad input: clear error, non-zero; with a gone process: exit 0.
out=$(echo '{"id": "../x", "pid": 1, "bundle": "/"}' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "hook: bad id refused" "$rc" "1"; t_contains "hook: says why" "$out" "state: id"
out=$(head -c 2000000 /dev/zero | tr '\0' ' ' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "hook: oversized state refused" "$rc/$(grep -c 'larger than' <<<"$out")" "1/1"
sh -c 'exit 0' & gone=$!; wait $gone
out=$(jq -n --arg b "$T/b-runc-prestart" --argjson p $gone '{id: "gone", pid: $p, bundle: $b}' | RESVIEW_CONFIG=$T/config.json "$HOOK" 2>&1); rc=$?
t_eq "hook: process exited before the hook: exit 0" "$rc" "0"
t_ok "hook: nothing recorded for it" test ! -e "$T/state/containers/gone/views"
t_contains "hook: the gone process is logged" "$(cat "$T/resview.log")" "is gone"

# The fallback for kernels without open_tree (a bind from the host path inside
# the container's namespace before pivot_root), forced: runc and crun.
for rt in runc crun; do
    rv_bundle "$T/legacy-$rt" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS"
    jq --arg h "$HOOK" --arg c "$T/config.json" '.hooks.prestart = [{path: $h, args: ["resview-hook"], env: ["RESVIEW_CONFIG=" + $c, "RESVIEW_LEGACY_BIND=1"]}]' "$T/legacy-$rt/config.json" >"$T/legacy-$rt/c.json" && mv "$T/legacy-$rt/c.json" "$T/legacy-$rt/config.json"
    out=$(run_plain $rt "legacy-$rt-$$" "$T/legacy-$rt" 2>&1)
    t_contains "bind fallback ($rt): MemTotal is the limit" "$out" "MemTotal:         524288 kB"
    t_contains "bind fallback ($rt): read-only, nosuid, nodev, noexec" "$out" "/proc/meminfo ro,nosuid,nodev,noexec"
    t_line "bind fallback ($rt): $NV views" "$out" "$NV"
done
