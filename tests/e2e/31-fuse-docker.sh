#!/bin/bash
# FUSE through a real dockerd (Debian's docker.io, private sockets and
# directories), with docker's own default seccomp profile as docker resolves
# it for the container: `docker run --runtime resview -e RESVIEW_FUSE=1`
# mounts a real FUSE file system, and everything docker's profile denied
# stays denied. Also: without the request; with --security-opt
# seccomp=unconfined (the spec has no profile: profiles/seccomp.json); and a
# privileged container (left alone, with a warning).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
source "$TOP/tests/fuse/lib.sh"

for tool in dockerd containerd bindfs gcc; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; exit 1; }
done
fuse_probe_build || exit 1

# Stand-in GPU nodes on the host, only where absent; removed at exit.
for n in nvidia0:195:0 nvidiactl:195:255; do
    IFS=: read -r name maj min <<<"$n"
    if [ ! -e "/dev/$name" ]; then
        mknod "/dev/$name" c "$maj" "$min" && t_cleanup "rm -f /dev/$name"
    fi
done

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {seccomp_profile: $p}}')"
jq -n --arg rt "$RUNTIME" '{"log-level": "warn", "storage-driver": "overlay2",
    runtimes: {resview: {path: $rt}}}' >"$T/daemon.json"
ctd_start || exit 1
dockerd_start "$T/daemon.json" || exit 1
fuse_rootfs "$T/fuse-rootfs"
tar -C "$T/fuse-rootfs" -cf "$T/fuse.tar" .
dk import "$T/fuse.tar" rvtest:fuse >/dev/null || { echo "not ok - docker import"; exit 1; }

run() { dk run --rm --cgroup-parent "$CG_PARENT" --runtime resview "$@"; }

# docker's default capabilities: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID
# SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP.
CAPS_DOCKER=(0 1 3 4 5 6 7 8 10 13 18 27 29 31)
CAP_DOCKER=$(cap_hex "${CAPS_DOCKER[@]}")
CAP_FUSE=$(cap_hex "${CAPS_DOCKER[@]}" 21)

# 1. docker's default profile + the request through the env (docker 20.10 has
# no annotations). open_by_handle_at: docker grants it only with
# CAP_DAC_READ_SEARCH, which this container lacks (so EPERM may be the
# capability as well as the filter); every other probe is filter-specific.
out=$(run -e RESVIEW_FUSE=1 rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
check_fuse_output "docker default profile" "$out"
t_contains "docker default profile: the shim edited docker's profile (log)" \
    "$(cat "$T/resview.log" 2>/dev/null)" "seccomp additions (engine profile)"

# 2. No request: docker as usual.
out=$(run rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
t_eq "docker, no request: CapEff = docker's defaults" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_DOCKER"
t_not_contains "docker, no request: no /dev/fuse" "$out" "dev /dev/fuse"
t_contains "docker, no request: bindfs cannot mount" "$out" "bindfs failed"
t_contains "docker, no request: mount denied" "$out" "mount-tmpfs EPERM"

# 3. seccomp=unconfined: the spec has no profile, the request gets
# profiles/seccomp.json plus the additions (a FUSE grant is never unconfined).
out=$(run --security-opt seccomp=unconfined -e RESVIEW_FUSE=1 rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
check_fuse_output "docker seccomp=unconfined" "$out"
t_contains "docker seccomp=unconfined: the shim used profiles/seccomp.json (log)" \
    "$(cat "$T/resview.log" 2>/dev/null)" "seccomp additions ($TOP/profiles/seccomp.json)"

# 4. A privileged container (CAP_SYS_ADMIN and every device): left alone,
# with a warning. `docker run --privileged` itself cannot start on this
# machine with any runtime (root here lacks CAP_SYS_RESOURCE and --privileged
# ignores --cap-drop), so the same two properties are asked for explicitly.
# Such a container reaches the host's GPU (c 195:0): its open passes the
# device cgroup and gets to the driver (ENXIO: no NVIDIA driver here), where
# the FUSE grant's open stops at the cgroup (EPERM). What the grant avoids.
out=$(run --cap-add ALL --cap-drop SYS_RESOURCE --device-cgroup-rule 'a *:* rwm' -e RESVIEW_FUSE=1 \
    rvtest:fuse /bin/sh -c 'fuse-probe mknod /tmp/nv0 195 0; ls /dev' 2>&1)
t_contains "privileged-like + request: left alone, warning in the log" \
    "$(cat "$T/resview.log" 2>/dev/null)" "privileged (CAP_SYS_ADMIN and every device): FUSE request ignored"
t_not_contains "privileged-like + request: no /dev/fuse added (spec left alone)" "$out" "fuse"
t_contains "privileged-like: open of c 195:0 passes the device cgroup (reaches the driver: ENXIO)" "$out" "open ENXIO"
