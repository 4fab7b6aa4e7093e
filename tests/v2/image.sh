#!/bin/bash
# Build a cgroup v2 test guest (tests/README.md "On cgroup v1 and v2"): a Debian
# suite from Debian's archive (debootstrap), Debian's own kernel, systemd on the
# unified hierarchy, and the packages the e2e suites need (tests/deps.d/*.txt
# less the build and fuzzing tools). RESVIEW_V2_SUITE picks the suite:
# bookworm (Debian 12), trixie (Debian 13) or sid (unstable: today's newest
# engines); the default is make check's guest (tests/v2/suite). Cached in
# build/v2/SUITE/ and rebuilt when this script, the guest's files, the suite or a
# package list changes. Run as root on the host; the build inside an emulated
# guest would be ten times slower.
# Usage: image.sh [DIR]   (default build/v2/SUITE); prints nothing when up to date.
set -euo pipefail
cd "$(dirname "$0")/../.."
SUITE=${RESVIEW_V2_SUITE:-$(cat tests/v2/suite)}
case $SUITE in bookworm | trixie | sid) ;; *) echo "v2: RESVIEW_V2_SUITE: bookworm, trixie or sid, not $SUITE" >&2; exit 1 ;; esac
DIR=${1:-build/v2/$SUITE}
# the Debian archive the host's apt is configured with (`apt-get indextargets`),
# or RESVIEW_V2_MIRROR (an archive's root URL)
host_mirror() {
    apt-get indextargets --format '$(REPO_URI)' 'Target-Of: deb' 'Origin: Debian' 2>/dev/null |
        grep -v -- '-security' | sort -u | head -n 1
}
MIRROR=${RESVIEW_V2_MIRROR:-$(host_mirror || true)}
[ -n "$MIRROR" ] || { echo "v2: apt knows no Debian archive here: set RESVIEW_V2_MIRROR=URL (a Debian archive's root)" >&2; exit 1; }
# host-only packages: building, fuzzing, valgrind, the guest's own tools, the
# package's lint and man pages (the guest installs the .deb, never builds it),
# Prometheus (60-metrics runs on the host only)
SKIP='^(lib.*-dev|musl-tools|dpkg-dev|gperf|protobuf-c-compiler|clang|valgrind|qemu-.*|debootstrap|e2fsprogs|npm|skopeo|binutils|lintian|go-md2man|man-db|groff-base|prometheus)$'
EXTRA="linux-image-amd64 systemd-sysv udev kmod dbus iproute2 procps libjansson4 libseccomp2
       libmount1 gcc libc6-dev nodejs make ca-certificates uidmap slirp4netns dbus-user-session apparmor"
pkgs=$(sed 's/#.*//' tests/deps.d/*.txt | tr -s ' \t' '\n' | grep -v '^$' | grep -Ev "$SKIP" | sort -u | tr '\n' ' ')
pkgs=$(echo $pkgs $EXTRA)
# packages that exist in newer suites only: docker 26+'s CLI (a Recommends of
# docker.io; installs here take none), pivot_root(8) (util-linux-extra)
NEWER="docker-cli util-linux-extra"
stamp=$( (cat "$0" tests/v2/guest/*; echo "$SUITE $pkgs $NEWER") | sha256sum | cut -c1-16)
# one build at a time: make check starts one early (tests/run-all.sh), and
# tests/v2/run.sh's own call waits for it, then finds it up to date
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9
[ -f "$DIR/stamp" ] && [ "$(cat "$DIR/stamp")" = "$stamp" ] && [ -f "$DIR/root.img" ] && exit 0

echo "v2: building the $SUITE guest image in $DIR (debootstrap from $MIRROR)" >&2
# built beside the image in use, which a build that fails leaves as it was
# (tests/v2/run.sh then runs the tests on it and says the build failed)
mkdir -p "$DIR"
new=$DIR/new root=$DIR/root
cleanup() {
    for m in dev/pts dev proc sys; do umount "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup
rm -rf "$root" "$new"
mkdir -p "$new"
# a suite that breaks the build says so in one line, first:
# "v2: the SUITE guest did not build (STEP): the log's error"
broke() {
    local why
    why=$(grep -h '^E: ' "$2" | tail -n 1)
    [ -n "$why" ] || why=$(grep -h -A 1 '^dpkg: error' "$2" "$root/debootstrap/debootstrap.log" 2>/dev/null |
                          tail -n 2 | tr -s '\n ' '  ')
    [ -n "$why" ] || why=$(tail -n 1 "$2")
    echo "v2: the $SUITE guest did not build ($1): $why" >&2
    tail -n 20 "$2" | sed 's/^/#   /' >&2
    exit 1
}
debootstrap --variant=minbase --include=linux-image-amd64,systemd-sysv,udev,kmod \
    "$SUITE" "$root" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 || broke debootstrap "$DIR/debootstrap.log"
# services stay down while packages are installed
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
echo "deb $MIRROR $SUITE main" >"$root/etc/apt/sources.list"
# unstable's Release file on a mirror can be past its Valid-Until
if [ "$SUITE" = sid ]; then
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99resview-v2"
fi
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -qq &&
    for p in $NEWER; do apt-cache show \$p >/dev/null 2>&1 && extra=\"\$extra \$p\"; done;
    apt-get install -y -qq --no-install-recommends $pkgs \$extra" \
    >"$DIR/apt.log" 2>&1 || broke apt-get "$DIR/apt.log"
chroot "$root" apt-get clean
# one kernel, and an initrd that boots from virtio and ext4: initramfs-tools'
# does (MODULES=most), dracut's host-only one (sid's kernel pulls dracut; what
# it makes in a chroot) lacks both
kernel=$(cd "$root/boot" && echo vmlinuz-* | sed 's/vmlinuz-//g')
[ "$(wc -w <<<"$kernel")" = 1 ] || { echo "v2: the $SUITE guest did not build (kernel): kernels: $kernel" >&2; exit 1; }
if [ -x "$root/usr/bin/dracut" ]; then
    echo 'hostonly="no"' >"$root/etc/dracut.conf.d/90-resview-v2.conf"
    chroot "$root" dracut -q -f "/boot/initrd.img-$kernel" "$kernel" >"$DIR/dracut.log" 2>&1 ||
        broke dracut "$DIR/dracut.log"
fi
cleanup
rm -f "$root/usr/sbin/policy-rc.d"

# The guest's side (tests/v2/guest/): the unit that runs the request, no
# services of the suites running by themselves (the tests start their own,
# as on the host), root logs in on the console without a password.
install -m 0755 tests/v2/guest/resview-v2 "$root/usr/local/sbin/resview-v2"
install -m 0644 tests/v2/guest/resview-v2.service "$root/etc/systemd/system/"
chroot "$root" systemctl -q enable resview-v2.service
for u in docker.service docker.socket containerd.service slurmctld.service slurmd.service \
    munge.service ssh.service lxcfs.service podman.service podman.socket apt-daily.timer \
    apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer; do
    chroot "$root" systemctl -q mask "$u" 2>/dev/null || true
done
echo resview-v2 >"$root/etc/hostname"
printf '127.0.0.1 localhost resview-v2\n::1 localhost\n' >"$root/etc/hosts"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$root/etc/fstab"
chroot "$root" passwd -qd root >/dev/null
echo 9p >>"$root/etc/modules"; echo 9pnet_virtio >>"$root/etc/modules"
cp "$root/boot/vmlinuz-$kernel" "$new/vmlinuz"
echo "$kernel" >"$new/kernel"
cp "$root/boot/initrd.img-$kernel" "$new/initrd.img"
# the engines' versions, for the run's report (tests/README.md's table)
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' runc crun containerd docker.io podman lxcfs \
    systemd slurmd linux-image-amd64 >"$new/versions" 2>/dev/null || true

# The root file system: an ext4 image (overlayfs, which the engines need,
# does not stack on 9p); the run boots it with snapshot=on, so it stays clean.
size=$(( $(du -sm "$root" | cut -f1) + 3072 ))
mkfs.ext4 -q -F -L resview-v2 -d "$root" "$new/root.img" "${size}M"
rm -rf "$root"
echo "$stamp" >"$new/stamp"
for f in vmlinuz kernel initrd.img versions root.img stamp; do mv -f "$new/$f" "$DIR/$f"; done
rmdir "$new"
