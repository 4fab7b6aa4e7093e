# tests/fuse/lib.sh - shared by the FUSE end-to-end tests (tests/e2e/3*-fuse*.sh).
# Source after tests/lib/common.sh.
#   fuse_probe_build         build tests/fuse/fuse-probe.c static into $T/fuse-probe
#   copy_bin ROOTFS BIN...   copy host binaries with their libraries into a rootfs
#   fuse_rootfs DIR          busybox rootfs + bindfs, fusermount3 (with libraries),
#                            the probe, /src/hello, /mnt/fuse, /etc/mtab
#   $SCRIPT                  what the container runs (FUSE mounts, probes)
#   cap_hex BIT...           a CapEff mask as /proc/self/status prints it
#   check_fuse_output LABEL OUTPUT   assertions on a FUSE container's output;
#                            expects $CAP_ENGINE (the CapEff the engine gave)
#   fuse_host_mounts         FUSE mounts in the host's mount table (one line each)

fuse_probe_build() {
    gcc -static -O2 -Wall -Wextra -Werror -pthread -o "$T/fuse-probe" "$TOP/tests/fuse/fuse-probe.c" ||
        { echo "not ok - build fuse-probe"; exit 1; }
}

copy_bin() {
    local d=$1 bin lib; shift
    for bin in "$@"; do
        mkdir -p "$d$(dirname "$bin")"
        cp -L "$bin" "$d$bin"
        for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*'); do
            [ -e "$d$lib" ] && continue
            mkdir -p "$d$(dirname "$lib")"
            cp -L "$lib" "$d$lib"
        done
    done
}

fuse_rootfs() {
    local d=$1
    rv_rootfs "$d"
    mkdir -p "$d/src" "$d/mnt/fuse" "$d/mnt/tmp"
    echo "hello through fuse" >"$d/src/hello"
    copy_bin "$d" /usr/bin/bindfs /usr/bin/fusermount3
    ln -sf /proc/self/mounts "$d/etc/mtab"
    cp "$T/fuse-probe" "$d/bin/fuse-probe"
}

# What the container runs: bindfs (without allow_other, which the default
# configuration refuses) mounted, read, written, unmounted with busybox
# umount; mounted again and unmounted with fusermount3 -u; then the probes.
SCRIPT='echo "capeff $(grep CapEff /proc/self/status | awk "{print \$2}")"
for d in /dev/*; do echo "dev $d"; done
if bindfs --no-allow-other /src /mnt/fuse; then
  echo "read $(cat /mnt/fuse/hello)"
  echo written >/mnt/fuse/new && echo "wrote $(cat /src/new)"
  grep " /mnt/fuse " /proc/self/mounts | sed "s/^/mounted /"
  umount /mnt/fuse && echo "umount ok"
  grep -q " /mnt/fuse " /proc/self/mounts || echo "gone ok"
  bindfs --no-allow-other /src /mnt/fuse && fusermount3 -u /mnt/fuse && echo "fusermount ok"
  grep -q " /mnt/fuse " /proc/self/mounts || echo "gone again ok"
else
  echo "bindfs failed"
fi
fuse-probe denied
fuse-probe mknod /tmp/nv0 195 0
fuse-probe mount-tmpfs /mnt/tmp'

cap_hex() { local m=0 b; for b in "$@"; do m=$((m | (1 << b))); done; printf '%016x' "$m"; }

fuse_host_mounts() { grep -E ' - fuse(\.[^ ]*)? ' /proc/self/mountinfo | grep -v fuse.lxcfs; }

# Assertions on what the FUSE container printed.
check_fuse_output() { # LABEL OUTPUT
    local l=$1 out=$2
    t_eq "$l: CapEff = the engine's capabilities, nothing added" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_contains "$l: /dev/fuse present" "$out" "dev /dev/fuse"
    t_not_contains "$l: host GPU node /dev/nvidia0 absent" "$out" "dev /dev/nvidia"
    t_contains "$l: bindfs read a file" "$out" "read hello through fuse"
    t_contains "$l: bindfs wrote a file" "$out" "wrote written"
    t_eq "$l: the mount is a FUSE mount, nosuid,nodev" \
        "$(grep -cE '^mounted [^ ]+ /mnt/fuse fuse(\.[a-z]+)? rw,nosuid,nodev' <<<"$out")" "1"
    t_contains "$l: unmounted with umount" "$out" "umount ok"
    t_contains "$l: the mount is gone" "$out" "gone ok"
    t_contains "$l: mounted again, unmounted with fusermount3 -u" "$out" "fusermount ok"
    t_contains "$l: gone again" "$out" "gone again ok"
    t_contains "$l: open of c 195:0 made with mknod fails (device cgroup)" "$out" "open EPERM"
    t_contains "$l: bpf denied" "$out" "bpf EPERM"
    t_contains "$l: keyctl denied" "$out" "keyctl EPERM"
    t_contains "$l: setns denied" "$out" "setns EPERM"
    t_contains "$l: open_by_handle_at denied" "$out" "open_by_handle_at EPERM"
    t_contains "$l: unshare(CLONE_NEWUSER) denied" "$out" "unshare-newuser EPERM"
    t_contains "$l: fsopen answers ENOSYS" "$out" "fsopen ENOSYS"
    t_contains "$l: open_tree answers ENOSYS" "$out" "open_tree ENOSYS"
    t_contains "$l: a tmpfs mount is refused (the broker reads the type)" "$out" "mount-tmpfs EPERM"
}
