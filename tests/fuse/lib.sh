# tests/fuse/lib.sh - shared by the FUSE end-to-end tests (tests/e2e/3*-fuse*.sh).
# Source after tests/lib/common.sh.
#   fuse_probe_build         build tests/fuse/fuse-probe.c static into $T/fuse-probe
#   fuse_rootfs DIR          busybox rootfs + bindfs with its libraries + the probe
#   $SCRIPT                  what the container runs (FUSE mount, probes)
#   cap_hex BIT...           a CapEff mask as /proc/self/status prints it
#   check_fuse_output LABEL OUTPUT   assertions on a FUSE container's output;
#                            expects $CAP_FUSE (the CapEff it must have)

fuse_probe_build() {
    gcc -static -O2 -Wall -Wextra -Werror -o "$T/fuse-probe" "$TOP/tests/fuse/fuse-probe.c" || { echo "not ok - build fuse-probe"; exit 1; }
}

fuse_rootfs() {
    local d=$1 lib
    rv_rootfs "$d"
    mkdir -p "$d/src" "$d/mnt/fuse" "$d/mnt/tmp"
    echo "hello through fuse" >"$d/src/hello"
    cp /usr/bin/bindfs "$d/bin/bindfs"
    for lib in $(ldd /usr/bin/bindfs | grep -o '/[^ ]*'); do
        mkdir -p "$d$(dirname "$lib")"
        cp -L "$lib" "$d$lib"
    done
    cp "$T/fuse-probe" "$d/bin/fuse-probe"
}

# What the container runs.
SCRIPT='echo "capeff $(grep CapEff /proc/self/status | awk "{print \$2}")"
for d in /dev/*; do echo "dev $d"; done
if bindfs /src /mnt/fuse; then
  echo "read $(cat /mnt/fuse/hello)"
  grep " /mnt/fuse " /proc/self/mounts | sed "s/^/mounted /"
  umount /mnt/fuse && echo "umount ok"
  grep -q " /mnt/fuse " /proc/self/mounts || echo "gone ok"
else
  echo "bindfs failed"
fi
fuse-probe denied
fuse-probe mknod /tmp/nv0 195 0
fuse-probe mount-tmpfs /mnt/tmp'

cap_hex() { local m=0 b; for b in "$@"; do m=$((m | (1 << b))); done; printf '%016x' "$m"; }

# Assertions on what the FUSE container printed.
check_fuse_output() { # LABEL OUTPUT
    local l=$1 out=$2
    t_eq "$l: CapEff = the engine's capabilities + CAP_SYS_ADMIN, nothing else" \
        "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_FUSE"
    t_contains "$l: /dev/fuse present" "$out" "dev /dev/fuse"
    t_not_contains "$l: host GPU node /dev/nvidia0 absent" "$out" "dev /dev/nvidia"
    t_contains "$l: FUSE mount read a file through bindfs" "$out" "read hello through fuse"
    t_eq "$l: the mount is a FUSE mount, nosuid,nodev" \
        "$(grep -cE '^mounted [^ ]+ /mnt/fuse fuse(\.[a-z]+)? rw,nosuid,nodev' <<<"$out")" "1"
    t_contains "$l: unmounted" "$out" "umount ok"
    t_contains "$l: the mount is gone" "$out" "gone ok"
    t_contains "$l: open of c 195:0 made with mknod fails (device cgroup)" "$out" "open EPERM"
    t_contains "$l: bpf denied" "$out" "bpf EPERM"
    t_contains "$l: keyctl denied" "$out" "keyctl EPERM"
    t_contains "$l: setns denied" "$out" "setns EPERM"
    t_contains "$l: open_by_handle_at denied" "$out" "open_by_handle_at EPERM"
    t_contains "$l: unshare(CLONE_NEWUSER) denied" "$out" "unshare-newuser EPERM"
    t_contains "$l: fsopen answers ENOSYS" "$out" "fsopen ENOSYS"
    t_contains "$l: open_tree answers ENOSYS" "$out" "open_tree ENOSYS"
    t_contains "$l: mount MS_BIND over /proc denied" "$out" "mount-bind-proc EPERM"
    t_contains "$l: mount MS_REMOUNT of /proc denied" "$out" "mount-remount-proc EPERM"
    t_contains "$l: mount MS_MOVE of /proc denied" "$out" "mount-move-proc EPERM"
    t_contains "$l: mount MS_PRIVATE of / denied" "$out" "mount-private-root EPERM"
}
