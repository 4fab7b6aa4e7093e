#!/bin/bash
# A hostile tenant against its FUSE broker, under runc and crun, with docker's
# capability set (CAP_SYS_CHROOT included) and profiles/seccomp.json (chroot
# allowed): what it controls is its root, its working directory, its own FUSE
# daemons and their timing, and how often it asks (profiles/README.md "Where a mount may go",
# profiles/README.md "A tenant's file system cannot hold the broker").
#  1. chroot into /proc, /sys, /dev, /etc, or cd there, and name the target
#     from there: never a FUSE mount over a view, a mask, cgroupfs, /dev or
#     an engine file; a later exec reads the LXCFS view. A volume and the
#     root file system still take mounts, a file target included, and
#     busybox umount takes a FUSE mount over a file away.
#  2. a FUSE daemon of its own that never answers LOOKUP, and mounts under
#     it that name that daemon's own descriptor: refused at once, nothing
#     waits on it; after kill and delete no process of ours is left and the
#     container's mount namespace is gone.
#  3. mount strings in a mapping of a file whose READ is never answered:
#     every worker ends up blocked, new calls get EAGAIN (not a wait); the
#     daemon killed, the broker serves again.
#     The daemon's descriptor held outside the container: the broker aborts
#     the connection when the container is gone, and the delete reports it.
#  4. 70 mounts: the 65th gets ENOSPC (fuse.max_mounts); the kernel memory
#     of the mounts is charged to the container's memory cgroup, not to the
#     runtime's.
#  5. 20 execs in a row, each ending before the next, each mounting.
#  6. the node's table lock held across nothing a tenant can make wait: a
#     tenant holds a directory's inode lock with getdents64 into a private
#     mapping of its own FUSE file whose READ is never answered, and asks for
#     a mount there (move_mount waits for that lock); another container's
#     mount is served meanwhile, at once; the daemon killed, the tenant's own
#     mount completes and nothing of ours is left waiting.
#  7. who in the container asks (fuse.allow_other set here): uid 1000 may not
#     mount over root's files, as fusermount's rule says; the container's
#     root may.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"
export LXCFS_DIR=$T/lxcfs
source "$TOP/tests/lib/lxcfs-helpers.sh"

fuse_tenant_prep || exit 1
# fuse-hang mounts with allow_other
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" \
    '{fuse: {allowed: true, allow_other: true, seccomp_profile: $p}, log: {level: "info"}}')"
mkdir -p "$T/ctl"
echo "127.0.0.1 engine-hosts" >"$T/hosts"

make_bundle() { # DIR SCRIPT
    local b=$1 s=$2 a
    mkdir -p "$b" "$T/vol-$(basename "$b")"
    fuse_rootfs "$b/rootfs"
    cp "$T/fuse-hang" "$b/rootfs/bin/fuse-hang"
    for a in kill timeout sort uniq cut; do ln -sf busybox "$b/rootfs/bin/$a"; done
    mkdir -p "$b/rootfs/data" "$b/rootfs/ctl" "$b/rootfs/mnt/p" "$b/rootfs/mnt/q"
    : >"$b/rootfs/etc/hosts"
    echo file >"$b/rootfs/mnt/file"
    rv_bundle "$b" "$LIMITS"
    jq --arg s "$s" --argjson caps "$DOCKER_CAPS" --arg vol "$T/vol-$(basename "$b")" --arg ctl "$T/ctl" \
        --arg hosts "$T/hosts" '.process.args = ["/bin/sh", "-c", $s] | .root.readonly = false
        | .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
        | .annotations["resview.io/fuse"] = "true"
        | .mounts += [{destination: "/data", type: "bind", source: $vol, options: ["rbind", "rw"]},
                      {destination: "/ctl", type: "bind", source: $ctl, options: ["rbind", "rw"]},
                      {destination: "/etc/hosts", type: "bind", source: $hosts, options: ["rbind", "ro"]}]' \
        "$b/config.json" >"$b/c.new" && mv "$b/c.new" "$b/config.json"
}
brokers_of() { pgrep -f "resview-fuse-broker --id $1 " | wc -l; }
wait_file() { wait_for 60 test -e "$1"; }
# processes of ours (brokers of this test, resview binaries) in D state
d_state() { ps -eo stat=,args= | grep -E "resview-fuse-broker .*$T/|$RUNTIME" | grep -v grep | grep -c '^D'; }
mnt_users() { local n=0 p; for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$1" ] && n=$((n + 1)); done; echo $n; }

# Sections 4 and 6 (a tenant's charges, and the lock the fs is created before)
# also run in make check's cgroup v2 guest; the others name no cgroup.
# 1. The place of a mount, from every root and working directory the tenant
#    can take. "PLACE ROOT TARGET" lines; a file target gets a file root.
PLACES='mkdir -p /dev/newdir "$(dirname "$LOG")"
for t in "/proc /meminfo" "/proc /cpuinfo" "/proc /acpi" "/proc /sys" "/proc /self/root/mnt/tmp" \
         "/sys /firmware" "/sys /fs/cgroup" "/sys /devices/system/cpu/online" \
         "/dev /" "/dev /shm" "/dev /newdir" "/etc /hosts" "/data /../proc/meminfo"; do
  set -- $t; echo "chroot $1 $2 $(fuse-probe chroot $1 mount $2)"
done
for t in "/proc meminfo" "/sys/fs cgroup" "/dev shm" "/etc hosts" "/proc/self root/mnt/tmp"; do
  set -- $t; echo "cd $1 $2 $(fuse-probe cd $1 mount $2)"
done
grep " - fuse" /proc/self/mountinfo | grep -v fuse.lxcfs | cut -d" " -f5 | sort >/tmp/fuse-mounts
echo "tenant fuse mounts: $(tr "\n" " " </tmp/fuse-mounts)"
echo "ok-volume $(fuse-probe mount /data) $(umount /data 2>&1 && echo umounted)"
mkdir -p /data/sub && echo "ok-volume-sub $(fuse-probe chroot /data mount /sub) $(umount /data/sub 2>&1 && echo umounted)"
echo "ok-rootfs $(fuse-probe mount /mnt/tmp) $(umount /mnt/tmp 2>&1 && echo umounted)"
echo "ok-file $(fuse-probe mount /mnt/file) $(umount /mnt/file 2>&1 && echo umounted)"
echo "ok-cd $(fuse-probe cd /mnt mount tmp) $(umount /mnt/tmp 2>&1 && echo umounted)"
echo "meminfo $(grep MemTotal /proc/meminfo | tr -s " ")"
echo "log inside: $(ls "$(dirname "$LOG")")"
touch /ctl/placed-$RT; while [ ! -e /ctl/exec-done-$RT ]; do sleep 0.1; done'

for rt in $(cgroup_free_rts); do
    l="$rt chroot"
    b=$T/b-place-$rt
    make_bundle "$b" "RT=$rt; LOG=$T/resview.log; $PLACES"
    run_shim "$rt" "place-$rt-$$" "$b" >"$T/place-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/placed-$rt"
    ex=$(cd "$b" && RESVIEW_CONFIG=$T/config.json.$rt "$RUNTIME" --root "$T/$rt-root" exec "place-$rt-$$" \
        grep MemTotal /proc/meminfo 2>&1 | tr -s ' ')
    touch "$T/ctl/exec-done-$rt"; wait $bg
    out=$(cat "$T/place-$rt.out")
    for t in "/proc /meminfo" "/proc /cpuinfo" "/proc /acpi" "/proc /sys" "/proc /self/root/mnt/tmp" \
             "/sys /firmware" "/sys /fs/cgroup" "/sys /devices/system/cpu/online" \
             "/dev /" "/dev /shm" "/dev /newdir" "/etc /hosts"; do
        set -- $t
        t_eq "$l $1, then a FUSE mount on $2: EPERM" "$(grep "^chroot $1 $2 " <<<"$out")" "chroot $1 $2 mount EPERM"
    done
    t_eq "$l into a volume, then /../proc/meminfo: stays in it (ENOENT)" \
        "$(grep '^chroot /data ' <<<"$out")" "chroot /data /../proc/meminfo mount ENOENT"
    for t in "/proc meminfo" "/sys/fs cgroup" "/dev shm" "/etc hosts" "/proc/self root/mnt/tmp"; do
        set -- $t
        t_eq "$rt cd $1, then a FUSE mount on $2: EPERM" "$(grep "^cd $1 $2 " <<<"$out")" "cd $1 $2 mount EPERM"
    done
    t_eq "$rt: no tenant FUSE mount anywhere after those" "$(sed -n 's/^tenant fuse mounts: //p' <<<"$out")" ""
    t_eq "$rt: a later exec reads the LXCFS view of /proc/meminfo" "$ex" "MemTotal: 524288 kB"
    t_contains "$rt: the container itself reads the view" "$out" "meminfo MemTotal: 524288 kB"
    t_eq "$rt: the broker's log is written on the host, never at the same path in the container" \
        "$(sed -n 's/^log inside: //p' <<<"$out")" ""
    t_contains "$rt: ... where each refusal is logged with its reason" \
        "$(grep "id=place-$rt-$$" "$T/resview.log" | grep "refused" | grep '`/meminfo`')" "the container's root file system or a volume"
    t_contains "$rt: a volume takes a FUSE mount (and umount)" "$out" "ok-volume mount ok umounted"
    t_contains "$rt: chroot into a volume, a mount in it" "$out" "ok-volume-sub mount ok umounted"
    t_contains "$rt: the root file system takes a FUSE mount" "$out" "ok-rootfs mount ok umounted"
    t_contains "$rt: a FUSE mount over a regular file, and busybox umount of it" "$out" "ok-file mount ok umounted"
    t_contains "$rt: a relative target from the caller's working directory" "$out" "ok-cd mount ok umounted"
done

# 2. A daemon that never answers LOOKUP on /mnt/p, and 8 mounts under it
#    naming its own /dev/fuse descriptor.
HUNG='fuse-hang --hang lookup --mounts 8 /mnt/p >/tmp/p.out 2>&1 &
for i in $(seq 1 200); do [ "$(grep -c spawned-mount /tmp/p.out)" = 8 ] && break; sleep 0.1; done
sort /tmp/p.out; touch /ctl/hung-$RT; sleep 3600'
for rt in $(cgroup_free_rts); do
    id=hung-$rt-$$
    b=$T/b-hung-$rt
    make_bundle "$b" "RT=$rt; $HUNG"
    run_shim "$rt" "$id" "$b" >"$T/hung-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/hung-$rt"
    sleep 0.5
    t_eq "$rt hung LOOKUP: 8 mounts under the daemon's own mount, its fd given: EPERM, at once" \
        "$(grep -c 'spawned-mount [0-7] EPERM' "$T/hung-$rt.out")" "8"
    pid=$($(rt_cmd "$rt") state "$id" | jq -r .pid)
    ns=$(readlink "/proc/$pid/ns/mnt")
    $(rt_cmd "$rt") kill "$id" KILL; wait $bg
    $(rt_cmd "$rt") delete -f "$id" >/dev/null 2>&1
    gone() { [ "$(brokers_of "$id")" = 0 ]; }
    t_ok "$rt hung LOOKUP: killed and deleted, no broker process of it is left" wait_for 10 gone
    t_eq "$rt hung LOOKUP: nothing of ours in D state" "$(d_state)" "0"
    t_eq "$rt hung LOOKUP: its mount namespace is gone" "$(mnt_users "$ns")" "0"
done

# 3. Every worker blocked reading strings that a hung daemon serves: EAGAIN
#    meanwhile; once the daemon is gone, the broker serves again.
SAT='fuse-hang --hang read /mnt/q >/tmp/q.out 2>&1 & Q=$!
for i in $(seq 1 100); do grep -q ready /tmp/q.out && break; sleep 0.1; done
fuse-probe mmap-mounts /mnt/q/f /mnt/tmp 8 >/tmp/mm.out
touch /ctl/sat-started-$RT; while [ ! -e /ctl/sat-go-$RT ]; do sleep 0.1; done
echo "saturated $(timeout 10 fuse-probe mount /mnt/fuse)"
kill -9 $Q; sleep 0.2
for i in $(seq 1 10); do timeout 3 bindfs --no-allow-other /src /mnt/fuse 2>/dev/null && break; sleep 0.2; done
echo "recovered at try $i: $(cat /mnt/fuse/hello)"; umount /mnt/fuse
sleep 1; sort /tmp/mm.out | uniq -c | tr -s " "'
for rt in $(cgroup_free_rts); do
    id=sat-$rt-$$
    b=$T/b-sat-$rt
    make_bundle "$b" "RT=$rt; $SAT"
    run_shim "$rt" "$id" "$b" >"$T/sat-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/sat-started-$rt"
    # 8 workers, each replaced after 2 s inside its request
    saturated() { grep "id=$id" "$T/resview.log" | grep -q "8 workers blocked"; }
    t_ok "$rt saturated: every worker ends up blocked on the daemon" wait_for 40 saturated
    touch "$T/ctl/sat-go-$rt"; wait $bg
    out=$(cat "$T/sat-$rt.out")
    t_eq "$rt saturated: a new mount call gets EAGAIN, not a wait" "$(grep '^saturated' <<<"$out")" "saturated mount EAGAIN"
    t_contains "$rt saturated: ... and the log says so" "$(grep "id=$id" "$T/resview.log")" "answered EAGAIN until one returns"
    t_ok "$rt saturated: the daemon killed, the broker serves again (a bindfs mount works)" grep -q "^recovered at try .*: hello through fuse" <<<"$out"
    t_contains "$rt saturated: the blocked calls returned (EFAULT)" "$out" "8 mmap-mount EFAULT"
done

# 3b. The same daemon's descriptor held outside the container (here by a
#     host process): the container's end does not abort its connection, so
#     the broker does, and the delete says so.
HELD='fuse-hang --hang read /mnt/q >/tmp/q.out 2>&1 &
for i in $(seq 1 100); do grep -q ready /tmp/q.out && break; sleep 0.1; done
fuse-probe mmap-mounts /mnt/q/f /mnt/tmp 2 >/tmp/mm.out; touch /ctl/held-$RT; sleep 3600'
for rt in $(cgroup_free_rts); do
    id=held-$rt-$$
    b=$T/b-held-$rt
    make_bundle "$b" "RT=$rt; $HELD"
    run_shim "$rt" "$id" "$b" >/dev/null 2>&1 & bg=$!
    wait_file "$T/ctl/held-$rt"
    pidns=$(readlink "/proc/$($(rt_cmd "$rt") state "$id" | jq -r .pid)/ns/pid")
    q=$(pgrep -f "fuse-hang --hang read /mnt/q" | while read -r p; do
        [ "$(readlink "/proc/$p/ns/pid")" = "$pidns" ] && echo "$p"; done | head -1)
    qfd=$(ls -l "/proc/$q/fd" 2>/dev/null | awk '$NF == "/dev/fuse" {print $9}' | head -1)
    "$T/fuse-hang" --grab "$q" "$qfd" >"$T/grab.out" 2>&1 & grab=$!
    t_cleanup "kill $grab"
    blocked() { grep "id=$id" "$T/resview.log" | grep -q "inside one request"; }
    t_ok "$rt held: a worker is blocked reading the caller's mapping (the daemon's fd held on the host: $(cat "$T/grab.out"))" \
        wait_for 20 blocked
    $(rt_cmd "$rt") kill "$id" KILL; wait $bg
    (cd "$b" && RESVIEW_CONFIG=$T/config.json.$rt "$RUNTIME" --root "$T/$rt-root" delete -f "$id")
    gone() { [ "$(brokers_of "$id")" = 0 ]; }
    t_ok "$rt held: the container gone, its broker aborts the connection and exits, no process left" wait_for 10 gone
    t_eq "$rt held: nothing of ours in D state" "$(d_state)" "0"
    t_contains "$rt held: the delete logs what the broker aborted" \
        "$(grep "id=$id" "$T/resview.log" | grep 'delete: the FUSE broker')" "aborted=1 blocked="
    kill $grab 2>/dev/null; wait $grab 2>/dev/null
done

# 4. The cap, and who pays.
CAP='touch /ctl/cap-ready-$RT; while [ ! -e /ctl/cap-start-$RT ]; do sleep 0.1; done
fuse-probe mounts /mnt/m 70; touch /ctl/capped-$RT; while [ ! -e /ctl/cap-go-$RT ]; do sleep 0.1; done'
# kernel memory only: on v2 memory.stat's `kernel` (Linux 5.18+), not memory.current, whose page
# cache of binaries a cold guest reads first is charged to whoever reads them first
kmem() { cat "/sys/fs/cgroup/memory$1/memory.kmem.usage_in_bytes" 2>/dev/null ||
         awk '$1 == "kernel" {print $2; f = 1} END {exit !f}' "/sys/fs/cgroup$1/memory.stat" 2>/dev/null ||
         cat "/sys/fs/cgroup$1/memory.current"; }
for rt in runc crun; do
    id=cap-$rt-$$
    b=$T/b-cap-$rt
    make_bundle "$b" "RT=$rt; $CAP"
    # the runtime (and so the broker it starts) in a memory cgroup of its own
    rtcg=/resview-test/$(basename "$T")/rt-$rt
    cg_limit "$rtcg" "" ""
    (cg_enter "$rtcg"; run_shim "$rt" "$id" "$b") >"$T/cap-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/cap-ready-$rt"
    c0=$(kmem "$CG_PARENT/b-cap-$rt"); r0=$(kmem "$rtcg")
    touch "$T/ctl/cap-start-$rt"
    wait_file "$T/ctl/capped-$rt"
    c1=$(kmem "$CG_PARENT/b-cap-$rt"); r1=$(kmem "$rtcg")
    touch "$T/ctl/cap-go-$rt"; wait $bg
    t_contains "$rt cap: 64 mounts, then ENOSPC (fuse.max_mounts)" "$(cat "$T/cap-$rt.out")" "mounts 70 ok 64 first-error ENOSPC"
    echo "# $rt: kernel memory for 64 FUSE mounts: container +$(( (c1 - c0) / 1024 )) KiB, runtime's cgroup +$(( (r1 - r0) / 1024 )) KiB"
    t_ok "$rt: the container's memory cgroup pays for its mounts (+$(( (c1 - c0) / 1024 )) KiB), the runtime's does not (+$(( (r1 - r0) / 1024 )) KiB)" \
        test $(( c1 - c0 )) -gt $(( 4 * (r1 - r0) + 64 * 2048 ))
done

# 5. 20 execs in a row, each ending before the next, each mounting.
for rt in $(cgroup_free_rts); do
    id=execs-$rt-$$
    b=$T/b-execs-$rt
    make_bundle "$b" "touch /ctl/execs-$rt; while [ ! -e /ctl/execs-done-$rt ]; do sleep 0.1; done"
    run_shim "$rt" "$id" "$b" >/dev/null 2>&1 & bg=$!
    wait_file "$T/ctl/execs-$rt"
    ok=0
    for i in $(seq 1 20); do
        # into a file: an exec whose mount never returns would hold a pipe open
        (cd "$b" && RESVIEW_CONFIG=$T/config.json.$rt timeout -s KILL 20 "$RUNTIME" --root "$T/$rt-root" exec "$id" \
            /bin/sh -c 'bindfs --no-allow-other /src /mnt/fuse && cat /mnt/fuse/hello && umount /mnt/fuse') \
            >"$T/exec.out" 2>&1
        r=$(cat "$T/exec.out")
        [ "$r" = "hello through fuse" ] || { echo "# exec $i: $r"; break; }
        ok=$((ok + 1))
    done
    touch "$T/ctl/execs-done-$rt"; wait $bg
    t_eq "$rt: 20 execs in a row, each ending before the next, each mounts and unmounts" "$ok" "20"
done
# 6. A tenant's inode lock, and the node's table.
LOCKER='fuse-hang --hang read /mnt/q >/tmp/q.out 2>&1 & Q=$!
for i in $(seq 1 100); do grep -q ready /tmp/q.out && break; sleep 0.1; done
mkdir -p /mnt/lk; fuse-probe lockdir /mnt/q/f /mnt/lk >/tmp/lk.out; sleep 0.3
fuse-probe mount /mnt/lk >/tmp/lkm.out 2>&1 &
touch /ctl/locked-$RT; while [ ! -e /ctl/locked-go-$RT ]; do sleep 0.1; done
echo "before the kill: $(cat /tmp/lkm.out)"; kill -9 $Q
for i in $(seq 1 50); do [ -s /tmp/lkm.out ] && break; sleep 0.1; done
echo "tenant: $(cat /tmp/lkm.out) $(cat /tmp/lk.out | tail -1)"'
OTHER='echo "other: $(fuse-probe mount /mnt/tmp)"'
for rt in runc crun; do
    id=locker-$rt-$$
    b=$T/b-locker-$rt
    make_bundle "$b" "RT=$rt; $LOCKER"
    run_shim "$rt" "$id" "$b" >"$T/locker-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/locked-$rt"
    # the tenant's worker waits in move_mount (replaced after 2 s)
    stuck() { grep "id=$id" "$T/resview.log" | grep -q "inside one request"; }
    t_ok "$rt locked: the tenant's mount waits for the inode lock it holds itself" wait_for 20 stuck
    b2=$T/b-other-$rt
    make_bundle "$b2" "$OTHER"
    out=$(run_shim "$rt" "other-$rt-$$" "$b2" 2>&1)
    t_contains "$rt locked: another container's FUSE mount meanwhile is served (the node's table is not held)" \
        "$out" "other: mount ok"
    echo "# $rt: $out"
    touch "$T/ctl/locked-go-$rt"; wait $bg
    out=$(cat "$T/locker-$rt.out")
    t_ok "$rt locked: until then the tenant's own call waits" grep -qx "before the kill: " <<<"$out"
    t_contains "$rt locked: the daemon killed, the tenant's mount completes" "$out" "tenant: mount ok"
    t_eq "$rt locked: nothing of ours in D state" "$(d_state)" "0"
done
# 7. Who asks: a user of the container against root's files.
for rt in $(cgroup_free_rts); do
    b=$T/b-users-$rt
    make_bundle "$b" "$FUSE_USERS"
    fuse_users_prep "$b/rootfs" 0
    check_fuse_users "$rt users" "$(run_shim "$rt" "users-$rt-$$" "$b" 2>&1)" yes
done
t_eq "no broker of this test is left" "$(pgrep -fc "resview-fuse-broker .*$T/")" "0"
