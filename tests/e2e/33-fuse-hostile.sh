#!/bin/bash
# A hostile tenant against its FUSE broker (profiles/README.md "What the broker does", tests/README.md "Hostile tenants"), under
# runc and crun: a static probe inside the container tries every other file
# system type, bind/move/remount/propagation flags, unmounting every mount the
# runtime made (/proc, masked and read-only paths), targets in /, /proc, /sys,
# /dev, symlinks out of the rootfs and through /proc magic links, fd= that is
# not /dev/fuse, another user's user_id, allow_other, unterminated, oversized
# and unmapped strings, strings flipped by another thread during the call. Each
# gets an error, the container's mount table and the host's stay as they
# were, and the broker keeps serving (a bindfs mount works afterwards). Then:
# 10,000 mounts in a loop (no leak in the broker), 50 containers mounting at
# once, the broker killed (existing mounts keep working, new calls ENOSYS,
# other containers unaffected), and resview replaced on disk while a FUSE
# container runs (it keeps its broker; a killed worker is replaced).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"

for tool in bindfs gcc runc crun jq; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; exit 1; }
done
fuse_probe_build || exit 1
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}, log: {level: "info"}}')"
mkdir -p "$T/hostdir" && echo "host file" >"$T/hostdir/file"
host_before=$(fuse_host_mounts)

make_bundle() { # DIR SCRIPT [ROOTFS]
    local b=$1 s=$2
    mkdir -p "$b"
    [ -n "${3:-}" ] || [ -d "$b/rootfs" ] || fuse_rootfs "$b/rootfs"
    rv_bundle "$b"
    jq --arg s "$s" --arg r "${3:-rootfs}" '.root.readonly = ($r != "rootfs") | .root.path = $r
        | .process.args = ["/bin/sh", "-c", $s]
        | .annotations["resview.io/lxcfs"] = "false" | .annotations["resview.io/fuse"] = "true"' \
        "$b/config.json" >"$b/c.new" && mv "$b/c.new" "$b/config.json"
}
add_ctl() { # DIR: the host's $T/ctl as /ctl in the container
    jq --arg c "$T/ctl" '.mounts += [{destination: "/ctl", type: "bind", source: $c, options: ["rbind", "rw"]}]' \
        "$1/config.json" >"$1/c.new" && mv "$1/c.new" "$1/config.json"
}
# The broker of a container: its supervisor (the oldest) and its worker.
broker_of() { pgrep -o -f "resview-fuse-broker --id $1 "; }
broker_fds() { local p n=0; for p in $(pgrep -f "resview-fuse-broker --id $1 "); do n=$((n + $(ls "/proc/$p/fd" | wc -l))); done; echo $n; }
broker_rss() { local p n=0; for p in $(pgrep -f "resview-fuse-broker --id $1 "); do n=$((n + $(awk '/VmRSS/ {print $2}' "/proc/$p/status"))); done; echo $n; }
wait_file() { local i; for i in $(seq 1 300); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

HOSTILE='awk "{print \$5}" /proc/self/mountinfo | sort >/tmp/before
fuse-probe fstypes /mnt/fuse
fuse-probe flags /mnt/fuse
fuse-probe badfd /mnt/fuse
fuse-probe options /mnt/fuse
fuse-probe umount $(cat /tmp/before)
fuse-probe strings /mnt/fuse
fuse-probe race /mnt/fuse 200
for t in / /proc /proc/sys /sys /sys/fs/cgroup /dev /dev/shm /mnt/escape /mnt/up /mnt/magic; do echo "place $t $(fuse-probe mount $t)"; done
awk "{print \$5}" /proc/self/mountinfo | sort >/tmp/after
cmp -s /tmp/before /tmp/after && echo "mount table unchanged"
echo "mount points $(wc -l </tmp/before)"
bindfs --no-allow-other /src /mnt/fuse && echo "still served: $(cat /mnt/fuse/hello)" && umount /mnt/fuse'

for rt in runc crun; do
    b=$T/b-hostile-$rt
    make_bundle "$b" "$HOSTILE"
    ln -s "$T/hostdir" "$b/rootfs/mnt/escape"
    ln -s ../../../../../../../.. "$b/rootfs/mnt/up"
    ln -s /proc/1/root/mnt/fuse "$b/rootfs/mnt/magic"
    out=$(run_shim "$rt" "hostile-$rt-$$" "$b" 2>&1)
    l="$rt hostile"
    t_eq "$l: every other file system type: EPERM" \
        "$(grep '^fstype ' <<<"$out" | grep -vc ' EPERM$')/$(grep -c '^fstype ' <<<"$out")" "0/$(( $(grep -c . /proc/filesystems) ))"
    t_eq "$l: bind, move, remount, rec, propagation, mandlock, unknown flags: EPERM" \
        "$(grep -E '^(flag |mount-)' <<<"$out" | grep -vc ' EPERM$')/$(grep -cE '^(flag |mount-)' <<<"$out")" "0/17"
    t_eq "$l: fd= a pipe, /dev/null, a file, a socket, a closed or negative number: EINVAL" \
        "$(grep '^badfd ' <<<"$out" | grep -vc ' EINVAL$')/$(grep -c '^badfd ' <<<"$out")" "0/6"
    t_eq "$l: allow_other, another user's user_id, a target that is a device: EPERM" \
        "$(grep -E '^opt (allow_other|other-user_id|devnull-target) ' <<<"$out" | grep -c ' EPERM$')" "3"
    t_eq "$l: blksize, an LSM context, no fd=: EINVAL; a file root on a directory: ENOTDIR" \
        "$(grep -E '^opt (blksize|context|no-fd|rootmode-file-on-dir) ' <<<"$out" | awk '{print $3}' | tr '\n' ' ')" \
        "EINVAL EINVAL ENOTDIR EINVAL "
    n=$(sed -n 's/^mount points //p' <<<"$out")
    t_eq "$l: unmounting each of the $n mounts the runtime made (/proc, masked, read-only paths), plain and lazy: EPERM" \
        "$(grep '^umount' <<<"$out" | grep -c ' EPERM$')" "$(( 2 * ${n:-0} ))"
    t_contains "$l: the container's mount table is unchanged" "$out" "mount table unchanged"
    t_eq "$l: unterminated and oversized strings" \
        "$(grep '^str ' <<<"$out" | awk '{print $2 "=" $3}' | tr '\n' ' ')" \
        "target-unterminated=ENAMETOOLONG fstype-unterminated=EFAULT target-oversized=ENAMETOOLONG fstype-oversized=EINVAL source-oversized=EINVAL data-unterminated=EINVAL "
    t_eq "$l: NULL, unmapped and kernel pointers" \
        "$(grep '^ptr ' <<<"$out" | awk '{print $2 "=" $3}' | tr '\n' ' ')" \
        "target-null=EFAULT fstype-null=EINVAL data-null=EINVAL target-1=EFAULT fstype-unmapped=EFAULT data-unmapped=EFAULT source-kernel=EFAULT umount-unmapped=EFAULT "
    race=$(grep '^race ' <<<"$out")
    t_contains "$l: strings flipped by another thread: never another type or target" "$race" " bad 0"
    t_ok "$l: ... and both outcomes happened ($race)" grep -qE 'mounted [1-9][0-9]* refused [1-9]' <<<"$race"
    t_eq "$l: a FUSE mount on /, /proc, /proc/sys, /sys, a cgroup fs, /dev, /dev/shm: EPERM" \
        "$(grep -E '^place /(|proc|proc/sys|sys|sys/fs/cgroup|dev|dev/shm) ' <<<"$out" | grep -c 'EPERM$')" "7"
    t_eq "$l: a symlink to a host path resolves inside the container (ENOENT there)" \
        "$(grep '^place /mnt/escape ' <<<"$out")" "place /mnt/escape mount ENOENT"
    t_eq "$l: a symlink up and out of the rootfs stops at its root (refused there)" \
        "$(grep '^place /mnt/up ' <<<"$out")" "place /mnt/up mount EPERM"
    t_eq "$l: a symlink through /proc (a magic link): EPERM, nothing looked up in /proc" \
        "$(grep '^place /mnt/magic ' <<<"$out")" "place /mnt/magic mount EPERM"
    t_contains "$l: the broker still serves: bindfs mounts afterwards" "$out" "still served: hello through fuse"
    t_eq "$l: no FUSE mount appeared on the host" "$(fuse_host_mounts)" "$host_before"
    t_eq "$l: the host directory behind the symlink is untouched" "$(ls "$T/hostdir"):$(cat "$T/hostdir/file")" "file:host file"
done

# 10,000 mounts in a loop: each a FUSE mount and its umount; the broker's
# descriptors and memory do not grow.
mkdir -p "$T/ctl"
b=$T/b-loop
make_bundle "$b" 'fuse-probe loop /mnt/fuse 100; touch /ctl/warm; while [ ! -e /ctl/go ]; do sleep 0.1; done
fuse-probe loop /mnt/fuse 10000; touch /ctl/done; while [ ! -e /ctl/end ]; do sleep 0.1; done'
add_ctl "$b"
run_shim runc "loop-$$" "$b" >"$T/loop.out" 2>&1 &
wait_file "$T/ctl/warm"
fds0=$(broker_fds "loop-$$"); rss0=$(broker_rss "loop-$$")
touch "$T/ctl/go"
for _ in $(seq 1 3000); do [ -e "$T/ctl/done" ] && break; sleep 0.2; done
fds1=$(broker_fds "loop-$$"); rss1=$(broker_rss "loop-$$")
touch "$T/ctl/end"; wait
t_contains "10,000 mount+umount pairs in a loop: every one succeeded" "$(cat "$T/loop.out")" "loop 10000 ok 10000"
t_eq "10,000 mounts: the broker (supervisor and worker) holds as many descriptors as before" "$fds1" "$fds0"
t_ok "10,000 mounts: the broker's RSS grew by less than 1 MiB ($rss0 -> $rss1 KiB)" test "$(( rss1 - rss0 ))" -lt 1024
echo "# $(grep loop-time "$T/loop.out")"

# 50 containers mounting at once, each with its broker, one shared read-only rootfs.
fuse_rootfs "$T/shared-rootfs"
for i in $(seq 1 50); do
    make_bundle "$T/par/$i" 'fuse-probe loop /mnt/fuse 3' "$T/shared-rootfs"
done
jq '.runtimes = ["runc"]' "$T/config.json" >"$T/config-runc.json"
for i in $(seq 1 50); do
    (cd "$T/par/$i" && RESVIEW_CONFIG=$T/config-runc.json "$RUNTIME" --root "$T/runc-root" run "par-$i-$$") \
        >"$T/par/$i.out" 2>&1 &
done
wait
t_eq "50 containers at once: each mounted and unmounted 3 times" "$(cat "$T"/par/*.out | grep -c '^loop 3 ok 3$')" "50"
for f in $(grep -L '^loop 3 ok 3$' "$T"/par/*.out); do sed "s|^|#   $(basename "$f"): |" "$f"; done
sleep 1.5
t_eq "50 containers at once: every broker has exited with its container" "$(pgrep -fc "resview-fuse-broker --id par-")" "0"

# The broker killed while its container runs; another container and resview
# replaced on disk meanwhile.
rm -f "$T/ctl/"*
mkdir -p "$T/v1" && cp "$RUNTIME" "$T/v1/resview-runtime"
b=$T/b-kill
make_bundle "$b" 'bindfs --no-allow-other /src /mnt/fuse && touch /ctl/mounted
while [ ! -e /ctl/go ]; do sleep 0.1; done
echo "read $(cat /mnt/fuse/hello)"
fuse-probe mount /mnt/tmp
umount /mnt/fuse 2>&1; echo "umount rc=$?"
echo "still mounted $(grep -c " /mnt/fuse " /proc/self/mounts)"'
add_ctl "$b"
b2=$T/b-upgrade
make_bundle "$b2" 'fuse-probe mount /mnt/fuse; touch /ctl/up-mounted; while [ ! -e /ctl/up-go ]; do sleep 0.1; done
fuse-probe mount /mnt/tmp; umount /mnt/fuse && echo "umount ok"'
add_ctl "$b2"
RUNTIME=$T/v1/resview-runtime run_shim runc "kill-$$" "$b" >"$T/kill.out" 2>&1 &
RUNTIME=$T/v1/resview-runtime run_shim crun "up-$$" "$b2" >"$T/up.out" 2>&1 &
wait_file "$T/ctl/mounted" && wait_file "$T/ctl/up-mounted"
kp=$(broker_of "kill-$$"); up=$(broker_of "up-$$")
ksock=$(jq -r .linux.seccomp.listenerPath "$b/config.json")
kill -9 "$kp"
# resview upgraded on disk: a new file under the same name
rm "$T/v1/resview-runtime" && cp "$RUNTIME" "$T/v1/resview-runtime"
up_exe=$(readlink "/proc/$up/exe")
# its worker killed alone: the supervisor starts another (from its own memory)
kill -9 "$(pgrep -n -f "resview-fuse-broker --id up-$$ ")"
other=$(make_bundle "$T/b-other" 'fuse-probe mount /mnt/fuse'; RUNTIME=$T/v1/resview-runtime run_shim runc "other-$$" "$T/b-other" 2>&1)
t_ok "broker killed: the next broker to start removed the dead one's socket" test ! -e "$ksock"
# an exec into the container whose broker was killed: runc must hand the new
# process's notify fd to someone; the shim starts another broker on the same socket
ex=$(cd "$b" && RESVIEW_CONFIG=$T/config.json.runc "$T/v1/resview-runtime" --root "$T/runc-root" exec "kill-$$" \
    /bin/sh -c 'mkdir -p /mnt/x && fuse-probe mount /mnt/x && umount /mnt/x && echo "exec umount ok"' 2>&1)
t_ok "broker killed, then an exec: the socket name the container knows is served again" test -S "$ksock"
touch "$T/ctl/go" "$T/ctl/up-go"
wait
out=$(cat "$T/kill.out")
t_contains "broker killed: the existing FUSE mount still reads" "$out" "read hello through fuse"
t_contains "broker killed: a new mount call gets ENOSYS" "$out" "mount ENOSYS"
t_contains "broker killed: umount gets ENOSYS too" "$out" "Function not implemented"
t_contains "broker killed: the mount stays" "$out" "still mounted 1"
t_contains "broker killed: another container (its own broker) mounts" "$other" "mount ok"
t_contains "broker killed: an exec into that container works, and mounts through a new broker" "$ex" "mount ok"
t_contains "broker killed: ... and unmounts" "$ex" "exec umount ok"
t_contains "broker killed: the new broker is logged" "$(cat "$T/resview.log")" "the container's broker was gone: another one started on $ksock"
t_contains "resview replaced on disk: the running container's broker (old binary) still serves it" \
    "$(cat "$T/up.out")" "umount ok"
t_eq "resview replaced on disk: that broker runs the old, deleted file" "$up_exe" "$T/v1/resview-runtime (deleted)"
t_eq "resview replaced on disk, its worker killed: the running container mounted again through it" \
    "$(grep -c '^mount ok' "$T/up.out")" "2"
t_eq "no broker of this test is left" "$(pgrep -fc "resview-fuse-broker .*$T/")" "0"
