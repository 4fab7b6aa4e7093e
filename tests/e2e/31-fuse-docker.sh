#!/bin/bash
# FUSE through a real dockerd (Debian's docker.io 20.10, private sockets and
# directories), with docker's own default seccomp profile as docker resolves
# it for the container. docker 20.10 passes no annotations, so the operator
# registers the FUSE runtime name: `docker run --runtime resview-fuse` mounts
# real FUSE file systems (bindfs; sshfs and s3fs against servers this test
# starts on loopback) with docker's capabilities and nothing more, and
# everything docker's profile denied stays denied; `docker exec` into it
# mounts too (runc hands the broker one notify fd per exec). The image's
# own RESVIEW_FUSE=1 is refused. Also: without the request; with
# --security-opt seccomp=unconfined (the spec has no profile:
# profiles/seccomp.json); a privileged container (left alone, with a warning).
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

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}}')"
mkdir -p "$T/bin" && ln -s "$RUNTIME" "$T/bin/resview-runtime-fuse"
jq -n --arg rt "$RUNTIME" --arg f "$T/bin/resview-runtime-fuse" '{"log-level": "warn", "storage-driver": "overlay2",
    runtimes: {resview: {path: $rt}, "resview-fuse": {path: $f}}}' >"$T/daemon.json"
ctd_start || exit 1
dockerd_start "$T/daemon.json" || exit 1
sshd_start || exit 1
s3rver_start || exit 1
fuse_clients_rootfs "$T/fuse-rootfs"
tar -C "$T/fuse-rootfs" -cf "$T/fuse.tar" .
dk import "$T/fuse.tar" rvtest:fuse >/dev/null || { echo "not ok - docker import"; exit 1; }

run() { dk run --rm --cgroup-parent "$ENGINE_CG_PARENT" --runtime resview "$@"; }
runf() { dk run --rm --cgroup-parent "$ENGINE_CG_PARENT" --runtime resview-fuse "$@"; }

# docker's default capabilities: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID
# SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP.
CAPS_DOCKER=(0 1 3 4 5 6 7 8 10 13 18 27 29 31)
CAP_ENGINE=$(cap_hex "${CAPS_DOCKER[@]}")

# 1. docker's default profile, the FUSE runtime name. open_by_handle_at:
# docker grants it only with CAP_DAC_READ_SEARCH, which this container lacks
# (so EPERM may be the capability as well as the filter); every other probe is
# filter-specific.
out=$(runf rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
check_fuse_output "docker --runtime resview-fuse" "$out"
t_contains "docker --runtime resview-fuse: the shim edited docker's profile (log)" \
    "$(cat "$T/resview.log" 2>/dev/null)" "mount calls to the broker (engine profile)"

# docker exec: runc hands the broker the exec'd process's own notify fd.
cid=$(dk run -d --cgroup-parent "$ENGINE_CG_PARENT" --runtime resview-fuse rvtest:fuse sleep 60)
out=$(dk exec "$cid" /bin/sh -c 'bindfs --no-allow-other /src /mnt/fuse && cat /mnt/fuse/hello && umount /mnt/fuse && echo "exec umount ok"' 2>&1)
t_contains "docker exec into a FUSE container: bindfs mounts, reads" "$out" "hello through fuse"
t_contains "docker exec into a FUSE container: and unmounts" "$out" "exec umount ok"
dk rm -f "$cid" >/dev/null

# Two more clients, on the host network: sshfs and s3fs against servers on loopback.
for c in sshfs s3fs; do
    out=$(runf --network host rvtest:fuse /bin/sh -c "$(client_script "$c" "/mnt/$c")" 2>&1)
    check_client "docker --runtime resview-fuse, $c" "$c" "$out"
done

# The image's own RESVIEW_FUSE=1 is not the operator's word: refused, saying how to ask.
out=$(run -e RESVIEW_FUSE=1 rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
t_contains "docker -e RESVIEW_FUSE=1: refused, saying how to ask" "$out" "ask with the annotation resview.io/fuse=\"true\" or the runtime resview-runtime-fuse"
t_not_contains "docker -e RESVIEW_FUSE=1: the container never ran" "$out" "capeff"

# 2. No request: docker as usual.
out=$(run rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
t_eq "docker, no request: CapEff = docker's defaults" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
t_not_contains "docker, no request: no /dev/fuse" "$out" "dev /dev/fuse"
t_contains "docker, no request: bindfs cannot mount" "$out" "bindfs failed"
t_contains "docker, no request: mount denied" "$out" "mount-tmpfs EPERM"

# 3. seccomp=unconfined: the spec has no profile, the request gets
# profiles/seccomp.json plus the additions (a FUSE grant is never unconfined).
out=$(runf --security-opt seccomp=unconfined rvtest:fuse /bin/sh -c "$SCRIPT" 2>&1)
check_fuse_output "docker seccomp=unconfined" "$out"
t_contains "docker seccomp=unconfined: the shim used the default profile (log)" \
    "$(cat "$T/resview.log" 2>/dev/null)" "the spec had no seccomp profile: default profile"

# 4. A privileged container (CAP_SYS_ADMIN and every device): left alone,
# with a warning. `docker run --privileged` itself cannot start on this
# machine with any runtime (root here lacks CAP_SYS_RESOURCE and --privileged
# ignores --cap-drop), so the same two properties are asked for explicitly.
# Such a container reaches the host's GPU (c 195:0): its open passes the
# device cgroup and gets to the driver (ENXIO: no NVIDIA driver here), where
# the FUSE grant's open stops at the cgroup (EPERM). What the grant avoids.
out=$(runf --cap-add ALL --cap-drop SYS_RESOURCE --device-cgroup-rule 'a *:* rwm' \
    rvtest:fuse /bin/sh -c 'fuse-probe mknod /tmp/nv0 195 0; ls /dev' 2>&1)
t_contains "privileged-like + request: left alone, warning in the log" \
    "$(cat "$T/resview.log" 2>/dev/null)" "privileged (CAP_SYS_ADMIN and every device): FUSE request ignored"
t_not_contains "privileged-like + request: no /dev/fuse added (spec left alone)" "$out" "fuse"
t_contains "privileged-like: open of c 195:0 passes the device cgroup (reaches the driver: ENXIO)" "$out" "open ENXIO"
