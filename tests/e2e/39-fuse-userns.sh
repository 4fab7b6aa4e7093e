#!/bin/bash
# User-namespaced containers (Kubernetes hostUsers: false, podman --userns)
# through resview-runtime, with real runc and crun and podman --userns=auto:
# ids 0-65535 mapped to 100000+, a rootfs chowned to them, no capability added.
# - views and variables: /proc/meminfo through LXCFS shows the 512 MiB limit,
#   GOMAXPROCS and SLURM_MEM_PER_NODE are the limits;
# - FUSE, made by the broker as the container's own user namespace: bindfs
#   and sshfs mount, read, write and unmount (umount, fusermount3 -u); the
#   mount is nosuid,nodev; allow_other is served to the container's root
#   without fuse.allow_other, since the kernel lets no process outside the
#   namespace use the mount: host root gets EACCES, without the daemon being
#   asked; uid 1000 of the namespace gets no allow_other, and may not mount
#   over root's files (fusermount's rule), only where it may write;
# - the broker's rules hold as for any container: fuse.max_mounts counts a
#   mount detached with umount -l while an fd keeps it; a tmpfs is refused;
#   the container's FUSE connections are aborted when it ends;
# - LXCFS restarted under running user-namespaced containers: repair heals
#   their views;
# - a host /dev/fuse of mode 0600 (a host without udev): the shim says why
#   FUSE clients cannot open it; the container still starts.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"
export LXCFS_DIR=$T/lxcfs

for tool in sshfs ssh-keygen podman; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; exit 1; }
done
fuse_tenant_prep || exit 1
chmod 0755 "$T"    # the container's root (host uid 100000) walks to its bundle
MAP=100000
sshd_start || exit 1

# /dev/fuse as udev makes it (0666); restored at exit
fuse_mode=$(stat -c %a /dev/fuse)
t_cleanup "chmod $fuse_mode /dev/fuse"
chmod 0666 /dev/fuse

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}}')"
rv_config "$T/config-cap.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, max_mounts: 2, seccomp_profile: $p}}')"

# A bundle in its own user namespace: runc's defaults (3 capabilities), 1 CPU
# and 512 MiB, the host network (sshd on loopback) and so /sys bound, as a
# runtime cannot mount sysfs without a network namespace of its own.
userns_bundle() { # DIR SCRIPT
    local b=$1
    mkdir -p "$b"
    [ -d "$b/rootfs" ] || fuse_clients_rootfs "$b/rootfs"
    rv_bundle "$b"
    jq --arg s "$2" --argjson m "$MAP" '
        .root.readonly = false | .process.args = ["/bin/sh", "-c", $s]
        | .annotations["resview.io/fuse"] = "true"
        | .linux.resources.memory = {limit: 536870912}
        | .linux.resources.cpu = {quota: 100000, period: 100000}
        | .linux.namespaces = [.linux.namespaces[] | select(.type != "network")] + [{type: "user"}]
        | .linux.uidMappings = [{containerID: 0, hostID: $m, size: 65536}]
        | .linux.gidMappings = [{containerID: 0, hostID: $m, size: 65536}]
        | .mounts |= map(select(.type != "cgroup")
            | if .destination == "/sys" then {destination: "/sys", type: "bind", source: "/sys",
                options: ["rbind", "nosuid", "noexec", "nodev", "ro"]} else . end)' \
        "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
    chown -R "$MAP:$MAP" "$b/rootfs"
}
fusectl_count() { ls /sys/fs/fuse/connections | wc -l; }

VIEWS='echo "memtotal $(awk "/^MemTotal/ {print \$2}" /proc/meminfo)"
echo "gomaxprocs $GOMAXPROCS"; echo "slurm_mem $SLURM_MEM_PER_NODE"; echo "uidmap $(cat /proc/self/uid_map | tr -s " ")"'
SSHFS=$(client_script sshfs /mnt/ssh)
# places: as for any container, never proc, sysfs or a spec tmpfs
PLACES='for t in /proc/sys /sys/kernel /dev/shm; do bindfs --no-allow-other /src $t 2>/dev/null
grep -q " $t fuse" /proc/self/mounts && echo "place $t mounted" || echo "place $t refused"; done'
# a user namespace the tenant makes below its own (podman's profile allows it)
NESTED='echo "nested-userns $(busybox unshare -U -r sh -c "echo made" 2>&1 | tr "\n" " ")"
busybox unshare -U -r sh -c "bindfs --no-allow-other /src /mnt/fuse" 2>/dev/null
grep -q " /mnt/fuse " /proc/self/mounts && echo "nested mounted" || echo "nested refused"'

# allow_other (bindfs asks for it as root): served; then the host looks in
AO='mkdir -p /mnt/ao; bindfs /src /mnt/ao && grep " /mnt/ao " /proc/self/mounts | sed "s/^/ao-mounted /"
echo "ao-read $(cat /mnt/ao/hello)"; touch /ao-ready
for i in $(seq 1 200); do [ -e /ao-done ] && break; sleep 0.05; done; umount /mnt/ao && echo "ao-umount ok"'
# the cap: 2 held; one detached with umount -l while an fd keeps it still counts
CAP='mkdir -p /mnt/a /mnt/b /mnt/c
bindfs --no-allow-other /src /mnt/a && bindfs --no-allow-other /src /mnt/b && echo "cap two ok"
exec 3</mnt/a/hello; umount -l /mnt/a && echo "cap detached"
bindfs --no-allow-other /src /mnt/c 2>&1 | sed "s/^/cap third: /"
grep -q " /mnt/c " /proc/self/mounts || echo "cap third refused"
exec 3<&-; sleep 0.2
bindfs --no-allow-other /src /mnt/c && echo "cap freed ok"'

for rt in runc crun; do
    # 2. views, variables, bindfs (umount and fusermount3 -u), the probes, sshfs
    b=$T/b-fuse-$rt
    userns_bundle "$b" "$VIEWS
$SCRIPT
$PLACES
echo ---ssh
$SSHFS"
    out=$(run_shim "$rt" "fuse-$rt-$$" "$b" 2>&1)
    l="$rt userns"
    t_eq "$l: the container is in its own user namespace (0 $MAP 65536)" "$(sed -n 's/^uidmap //p' <<<"$out")" " 0 $MAP 65536"
    t_eq "$l: /proc/meminfo through LXCFS shows the 512 MiB limit" "$(sed -n 's/^memtotal //p' <<<"$out")" "524288"
    t_eq "$l: GOMAXPROCS is the CPU limit" "$(sed -n 's/^gomaxprocs //p' <<<"$out")" "1"
    t_eq "$l: SLURM_MEM_PER_NODE is the memory limit" "$(sed -n 's/^slurm_mem //p' <<<"$out")" "512"
    t_eq "$l: CapEff = runc's defaults, nothing added" "$(sed -n 's/^capeff //p' <<<"$out" | head -1)" "$(cap_hex 29 5 10)"
    t_contains "$l: bindfs read a file" "$out" "read hello through fuse"
    t_contains "$l: bindfs wrote a file (as the container's root)" "$out" "wrote written"
    t_eq "$l: the file it wrote belongs to the container's root on the host" "$(stat -c %u "$b/rootfs/src/new")" "$MAP"
    t_eq "$l: a FUSE mount, nosuid,nodev, user_id 0 as the namespace sees it" \
        "$(grep -cE '^mounted [^ ]+ /mnt/fuse fuse(\.[a-z]+)? rw,nosuid,nodev,.*user_id=0,group_id=0' <<<"$out")" "1"
    t_contains "$l: unmounted with umount" "$out" "umount ok"
    t_contains "$l: the mount is gone" "$out" "gone ok"
    t_contains "$l: mounted again, unmounted with fusermount3 -u" "$out" "fusermount ok"
    t_contains "$l: gone again" "$out" "gone again ok"
    for p in bpf keyctl setns open_by_handle_at unshare-newuser; do
        t_contains "$l: $p denied" "$out" "$p EPERM"
    done
    t_contains "$l: fsopen answers ENOSYS" "$out" "fsopen ENOSYS"
    t_contains "$l: a tmpfs mount is refused" "$out" "mount-tmpfs EPERM"
    for p in /proc/sys /sys/kernel /dev/shm; do
        t_contains "$l: no FUSE mount on $p" "$out" "place $p refused"
    done
    CAP_ENGINE=$(cap_hex 29 5 10) check_client "$l sshfs" sshfs "$(sed -n '/^---ssh$/,$p' <<<"$out")"

    # the rest of the loop (1, 3, 3b, 4): device node modes, allow_other, users, the cap: no cgroup in them
    in_v2_share && continue

    # 1. /dev/fuse 0600 on the host: runc binds that node in, crun 1.8 makes
    # its own; the shim says so, and the container starts either way
    chmod 0600 /dev/fuse
    b=$T/b-mode-$rt
    userns_bundle "$b" "bindfs --no-allow-other /src /mnt/fuse 2>&1 && echo mounted; echo started"
    out=$(run_shim "$rt" "mode-$rt-$$" "$b" 2>&1); rc=$?
    chmod 0666 /dev/fuse
    t_eq "$rt /dev/fuse 0600: the container starts and ends well" "$rc:$(tail -n 1 <<<"$out")" "0:started"
    case $rt in
    runc) t_contains "runc /dev/fuse 0600: its FUSE client cannot open the bound node" "$out" \
              "failed to open /dev/fuse: Permission denied" ;;
    crun) t_contains "crun /dev/fuse 0600: crun's own node opens" "$out" "mounted" ;;
    esac
    t_ok "$rt /dev/fuse 0600: the shim's log says so" \
        grep -q "mode-$rt-$$: fuse: the container has its own user namespace, and the host's /dev/fuse is mode 0600" "$T/resview.log"

    # 3. allow_other without fuse.allow_other: the namespace's alone
    b=$T/b-ao-$rt
    userns_bundle "$b" "$AO"
    rm -f "$b/rootfs/ao-ready" "$b/rootfs/ao-done"
    run_shim "$rt" "ao-$rt-$$" "$b" >"$T/ao-$rt.out" 2>&1 &
    shim=$!
    for _ in $(seq 1 200); do [ -e "$b/rootfs/ao-ready" ] && break; sleep 0.05; done
    root=$T/runc-root; [ "$rt" = crun ] && root=$T/crun-root
    pid=$(RESVIEW_CONFIG=$T/config.json.$rt "$RUNTIME" --root "$root" state "ao-$rt-$$" | jq -r .pid)
    host=$(timeout 10 cat "/proc/$pid/root/mnt/ao/hello" 2>&1); hrc=$?
    touch "$b/rootfs/ao-done"
    wait "$shim"
    out=$(cat "$T/ao-$rt.out")
    t_contains "$rt allow_other: mounted with allow_other" "$out" "allow_other"
    t_contains "$rt allow_other: read inside" "$out" "ao-read hello through fuse"
    t_ok "$rt allow_other: host root cannot read it (exit $hrc, at once)" test "$hrc" -ne 0 -a "$hrc" -ne 124
    t_contains "$rt allow_other: host root gets EACCES" "$host" "Permission denied"
    t_contains "$rt allow_other: unmounted" "$out" "ao-umount ok"

    # 3b. who asks: uid 1000 of the namespace against root's files (runc's
    # defaults and CAP_SETUID/CAP_SETGID, so that the script can be uid 1000)
    b=$T/b-users-$rt
    userns_bundle "$b" "$FUSE_USERS"
    fuse_users_prep "$b/rootfs" "$MAP"
    jq '.process.capabilities |= with_entries(if .key == "bounding" or .key == "effective" or .key == "permitted"
        then .value += ["CAP_SETUID", "CAP_SETGID"] else . end)' "$b/config.json" >"$b/c.new" &&
        mv "$b/c.new" "$b/config.json"
    check_fuse_users "$rt userns users" "$(run_shim "$rt" "users-$rt-$$" "$b" 2>&1)" no

    # 4. the cap, a detached mount held by an fd included; the end aborts what is left
    b=$T/b-cap-$rt
    userns_bundle "$b" "$CAP"
    before=$(fusectl_count)
    out=$(run_shim "$rt" "cap-$rt-$$" "$b" "$T/config-cap.json" 2>&1)
    t_contains "$rt cap 2: two mounts" "$out" "cap two ok"
    t_contains "$rt cap 2: one detached (umount -l) with an fd on it" "$out" "cap detached"
    t_contains "$rt cap 2: the third refused while the detached one is held" "$out" "cap third refused"
    t_contains "$rt cap 2: once the fd is closed, a mount again" "$out" "cap freed ok"
    t_ok "$rt cap 2: the log says the cap once" \
        grep -q "cap-$rt-$$: fuse broker: the container holds 2 FUSE file systems" "$T/resview.log"
    t_ok "$rt cap 2: the broker aborted the 2 left at the end" \
        grep -q "cap-$rt-$$: fuse broker: container gone, exiting: 2 FUSE mounts of its own were left (their connections aborted)" "$T/resview.log"
    t_eq "$rt cap 2: no FUSE connection of the container left on the host" "$(fusectl_count)" "$before"
done

# 5. LXCFS restarted under running user-namespaced containers: repair heals them
heal_pids=""
for rt in runc crun; do
    b=$T/b-heal-$rt
    userns_bundle "$b" "sleep 3600"
    run_shim "$rt" "heal-$rt-$$" "$b" >/dev/null 2>&1 &
    heal_pids+=" $!"
done
rtc() { if [ "$1" = crun ]; then "$CRUN_V1" --root "$T/crun-root" "${@:2}"; else runc --root "$T/runc-root" "${@:2}"; fi; }
meminfo_in() { rtc "$1" exec "heal-$1-$$" awk '/^MemTotal/ {print $2}' /proc/meminfo 2>&1; }
for _ in $(seq 1 100); do
    [ "$(meminfo_in runc)" = 524288 ] && [ "$(meminfo_in crun)" = 524288 ] && break; sleep 0.1
done
lxcfs_stop "$LXCFS_DIR"
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not come back"; exit 1; }
for rt in runc crun; do
    t_ok "$rt userns, LXCFS restarted: the view is stale" test "$(meminfo_in "$rt")" != 524288
done
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" repair 2>&1); rc=$?
t_eq "repair: exit 0" "$rc" "0"
t_contains "repair: both user-namespaced containers repaired" "$out" "repaired 2, failed 0"
for rt in runc crun; do
    t_eq "$rt userns, after repair: /proc/meminfo shows 512 MiB again" "$(meminfo_in "$rt")" "524288"
    rtc "$rt" kill "heal-$rt-$$" KILL
done
wait $heal_pids

# 6. podman --userns=auto through resview (ids from the "containers" entries;
#    podman 5.8 reads them through libsubid, which needs that user to exist)
id containers >/dev/null 2>&1 ||
    { useradd --system --no-create-home --shell /usr/sbin/nologin containers && t_cleanup "userdel containers"; }
for f in /etc/subuid /etc/subgid; do
    [ -e "$f" ] || { touch "$f"; t_cleanup "rm -f $f"; }
    grep -q '^containers:' "$f" || { echo "containers:300000:1000000" >>"$f"; t_cleanup "sed -i '/^containers:300000:1000000\$/d' $f"; }
done
podman_private "$T/config.json"
fuse_rootfs "$T/pm-rootfs"
tar -C "$T/pm-rootfs" -cf "$T/pm.tar" .
pm import "$T/pm.tar" localhost/rvtest:userns >/dev/null || { echo "not ok - podman import"; exit 1; }
out=$(pm run --rm --network none --userns=auto --cgroup-parent "$ENGINE_CG_PARENT" --runtime "$T/rv-runtime" \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --memory 512m --cpus 1 \
    --annotation resview.io/fuse=true localhost/rvtest:userns /bin/sh -c "$VIEWS
$SCRIPT
$NESTED" 2>&1)
l="podman --userns=auto"
t_ok "$l: in a user namespace of its own (ids from 300000)" grep -qE '^uidmap +0 3[0-9]{5} [0-9]+ *$' <<<"$out"
t_eq "$l: /proc/meminfo shows 512 MiB" "$(sed -n 's/^memtotal //p' <<<"$out")" "524288"
t_eq "$l: GOMAXPROCS 1" "$(sed -n 's/^gomaxprocs //p' <<<"$out")" "1"
t_contains "$l: bindfs read a file" "$out" "read hello through fuse"
t_contains "$l: bindfs wrote a file" "$out" "wrote written"
t_contains "$l: unmounted with umount" "$out" "umount ok"
t_contains "$l: mounted again, unmounted with fusermount3 -u" "$out" "fusermount ok"
t_contains "$l: from a user namespace the tenant made below its own: refused" "$out" "nested refused"
# the request reaches the broker only where the engine lets the tenant make that namespace
if grep -q "^nested-userns made" <<<"$out"; then
    t_ok "$l: the broker says why" grep -q "the caller is in a user namespace neither the host's nor the container's" "$T/resview.log"
else
    t_ok "$l: (no nested user namespace here: $(sed -n 's/^nested-userns //p' <<<"$out"))" true
fi
t_eq "$l: no CAP_SYS_ADMIN" "$(( 0x$(sed -n 's/^capeff //p' <<<"$out" | head -1) >> 21 & 1 ))" "0"
t_eq "no broker of this test is left" "$(pgrep -fc "resview-fuse-broker .*$T/")" "0"
