#!/bin/bash
# FUSE through podman (Debian's podman, private storage) with
# `--annotation resview.io/fuse=true`, podman's own default seccomp profile
# (containers-common, resolved by podman for the container), runc and crun
# underneath: real FUSE mounts (bindfs; rclone; s3fs against an S3 server this
# test starts on loopback) with podman's capabilities and nothing more,
# and everything podman's profile denied stays denied. Podman's profile
# differs from docker's: its default action is ENOSYS (errnoRet 38), and it
# allows mount, keyctl, setns and unshare for every container (the kernel's
# capability checks guard them). Mount calls go to the broker as always;
# keyctl, setns and unshare stay what podman makes them: the same with and
# without the request (the test shows both). `podman exec` mounts too.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"

for tool in podman bindfs gcc; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; exit 1; }
done
fuse_probe_build || exit 1

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}}')"
podman_private "$T/config.json"
# podman's default ulimits exceed what this machine allows; MKNOD so that the
# device cgroup, not a missing capability, stops the GPU node.
run() {
    pm run --rm --network none --cgroup-parent "$ENGINE_CG_PARENT" --runtime "$T/rv-runtime" \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --cap-add MKNOD "$@"
}
s3rver_start || exit 1
mkdir -p "$T/ssh" && ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/id"   # the rootfs carries a key
fuse_clients_rootfs "$T/fuse-rootfs"
tar -C "$T/fuse-rootfs" -cf "$T/fuse.tar" .
pm import "$T/fuse.tar" localhost/rvtest:fuse >/dev/null || { echo "not ok - podman import"; exit 1; }

# Without the request: podman as usual (and the capabilities it gives).
out=$(run localhost/rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
cap_engine=$(sed -n 's/^capeff //p' <<<"$out")
t_ok "podman, no request: the container ran" test -n "$cap_engine"
t_eq "podman, no request: no CAP_SYS_ADMIN" "$(( 0x${cap_engine:-0} >> 21 & 1 ))" "0"
t_not_contains "podman, no request: no /dev/fuse" "$out" "dev /dev/fuse"
# denied by the kernel: EPERM (no CAP_SYS_ADMIN), or EACCES where the kernel has
# AppArmor on (the v2 guest): podman's profile, containers-default, refuses it first
tmpfs_denied() { grep -xE 'mount-tmpfs (EPERM|EACCES)' <<<"$out" || { grep '^mount-tmpfs' <<<"$out"; false; }; }
t_ok "podman, no request: mount denied" tmpfs_denied

# The request as an annotation, under runc and crun.
CAP_ENGINE=$cap_engine
plain=$out
jq --arg c "$CRUN_V1" '.runtimes = [$c]' "$T/config.json" >"$T/config-crun.json"
printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$T/config-crun.json" "$RUNTIME" >"$T/rv-runtime-crun"
chmod +x "$T/rv-runtime-crun"
for next in runc crun; do
    rtw=$T/rv-runtime; [ "$next" = crun ] && rtw=$T/rv-runtime-crun
    out=$(pm run --rm --network none --cgroup-parent "$ENGINE_CG_PARENT" --runtime "$rtw" \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --cap-add MKNOD \
        --annotation resview.io/fuse=true localhost/rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
    l="podman --annotation ($next)"
    t_eq "$l: CapEff = podman's capabilities, nothing added" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_contains "$l: /dev/fuse present" "$out" "dev /dev/fuse"
    t_not_contains "$l: no other device added (no nvidia)" "$out" "dev /dev/nvidia"
    t_contains "$l: bindfs read a file" "$out" "read hello through fuse"
    t_contains "$l: bindfs wrote a file" "$out" "wrote written"
    t_eq "$l: the mount is a FUSE mount, nosuid,nodev" \
        "$(grep -cE '^mounted [^ ]+ /mnt/fuse fuse(\.[a-z]+)? rw,nosuid,nodev' <<<"$out")" "1"
    t_contains "$l: unmounted with umount" "$out" "umount ok"
    t_contains "$l: unmounted with fusermount3 -u" "$out" "fusermount ok"
    t_contains "$l: open of c 195:0 made with mknod fails (device cgroup)" "$out" "open EPERM"
    t_contains "$l: bpf denied" "$out" "bpf EPERM"
    t_contains "$l: fsopen answers ENOSYS" "$out" "fsopen ENOSYS"
    t_contains "$l: open_tree answers ENOSYS" "$out" "open_tree ENOSYS"
    t_contains "$l: a tmpfs mount is refused by the broker" "$out" "mount-tmpfs EPERM"
    for c in keyctl setns unshare-newuser open_by_handle_at; do
        t_eq "$l: $c as podman's profile makes it, with or without the request" \
            "$(grep "^$c " <<<"$out")" "$(grep "^$c " <<<"$plain")"
    done
done
t_contains "podman: the shim edited podman's profile (log)" \
    "$(cat "$T/resview.log" 2>/dev/null)" "mount calls to the broker (engine profile)"

# Two more clients: rclone mount, and s3fs against an S3 server on loopback
# (host network); --cap-add MKNOD as CAP_ENGINE was taken with (podman 4.3
# gives MKNOD by default, podman 5 no longer)
for c in rclone s3fs; do
    out=$(pm run --rm --network host --cgroup-parent "$ENGINE_CG_PARENT" --runtime "$T/rv-runtime" \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --cap-add MKNOD --annotation resview.io/fuse=true \
        localhost/rvtest:fuse /bin/sh -c "$(client_script "$c" "/mnt/$c")" 2>&1)
    check_client "podman --annotation, $c" "$c" "$out"
done

# podman exec: the exec'd process's own notify fd reaches the broker.
pm run -d --name "fx-$$" --network none --cgroup-parent "$ENGINE_CG_PARENT" --runtime "$T/rv-runtime" \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --annotation resview.io/fuse=true \
    localhost/rvtest:fuse sleep 60 >/dev/null
out=$(pm exec "fx-$$" /bin/sh -c 'bindfs --no-allow-other /src /mnt/fuse && cat /mnt/fuse/hello && fusermount3 -u /mnt/fuse && echo "exec unmounted"' 2>&1)
t_contains "podman exec into a FUSE container: bindfs mounts, reads" "$out" "hello through fuse"
t_contains "podman exec into a FUSE container: fusermount3 -u" "$out" "exec unmounted"
pm rm -f -t 0 "fx-$$" >/dev/null 2>&1
