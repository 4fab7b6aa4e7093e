#!/bin/bash
# Build the cgroup v2 test guest (tests/README.md "On cgroup v1 and v2"): Debian 12 from Debian's
# archive (debootstrap), Debian's own kernel, systemd on the unified hierarchy,
# and the packages the e2e suites need (tests/deps.d/*.txt less the build and
# fuzzing tools). Cached in build/v2/ and rebuilt when this script or a package
# list changes. Run as root on the host; the build inside an emulated guest
# would be ten times slower.
# Usage: image.sh [DIR]   (default build/v2); prints nothing when up to date.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-build/v2}
# the host's own Debian mirror (its apt sources), as `make deps` uses
host_mirror() {
    { sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources
      awk '$1 == "deb" && $3 == "bookworm" {print $2}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
    } 2>/dev/null | tr ' ' '\n' | grep -v -e security -e '^$' | head -n 1
}
MIRROR=${RESVIEW_V2_MIRROR:-$(host_mirror || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# host-only packages: building, fuzzing, valgrind, the guest's own tools
SKIP='^(lib.*-dev|musl-tools|dpkg-dev|gperf|clang|valgrind|qemu-.*|debootstrap|e2fsprogs|npm|skopeo|binutils)$'
EXTRA="linux-image-amd64 systemd-sysv udev kmod dbus iproute2 procps libjansson4 libseccomp2
       libmount1 gcc libc6-dev nodejs make ca-certificates uidmap slirp4netns dbus-user-session apparmor"
pkgs=$(sed 's/#.*//' tests/deps.d/*.txt | tr -s ' \t' '\n' | grep -v '^$' | grep -Ev "$SKIP" | sort -u | tr '\n' ' ')
pkgs=$(echo $pkgs $EXTRA)
stamp=$( (cat "$0" tests/v2/guest/*; echo "$pkgs") | sha256sum | cut -c1-16)
[ -f "$DIR/stamp" ] && [ "$(cat "$DIR/stamp")" = "$stamp" ] && [ -f "$DIR/root.img" ] && exit 0

echo "v2: building the guest image in $DIR (debootstrap from $MIRROR)" >&2
mkdir -p "$DIR"
rm -f "$DIR/stamp" "$DIR/root.img"
root=$DIR/root
cleanup() {
    for m in dev/pts dev proc sys; do umount "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup
rm -rf "$root"
debootstrap --variant=minbase --include=linux-image-amd64,systemd-sysv,udev,kmod \
    bookworm "$root" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 ||
    { tail -n 20 "$DIR/debootstrap.log" >&2; exit 1; }
# services stay down while packages are installed
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
echo "deb $MIRROR bookworm main" >"$root/etc/apt/sources.list"
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs" \
    >"$DIR/apt.log" 2>&1 || { tail -n 20 "$DIR/apt.log" >&2; exit 1; }
chroot "$root" apt-get clean
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
cp "$root"/boot/vmlinuz-* "$DIR/vmlinuz"
basename "$root"/boot/vmlinuz-* | sed 's/^vmlinuz-//' >"$DIR/kernel"
cp "$root"/boot/initrd.img-* "$DIR/initrd.img"

# The root file system: an ext4 image (overlayfs, which the engines need,
# does not stack on 9p); the run boots it with snapshot=on, so it stays clean.
size=$(( $(du -sm "$root" | cut -f1) + 3072 ))
mkfs.ext4 -q -F -L resview-v2 -d "$root" "$DIR/root.img" "${size}M"
rm -rf "$root"
echo "$stamp" >"$DIR/stamp"
