#!/bin/bash
# 43-podman.sh - podman (Debian) with private storage: `--runtime
# resview-runtime`, and the `resview` runtime registered in a containers.conf
# by `resview configure --engine=podman` (podman run --runtime resview).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"

LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json" '{"fuse": {"allowed": true}}'
# podman and conmon do not pass their environment on to the runtime: this
# wrapper hands the test configuration to the shim.
printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$T/config.json" "$RUNTIME" >"$T/resview-runtime"
chmod +x "$T/resview-runtime"
RUNTIME=$T/resview-runtime

cat >"$T/containers.conf" <<CONF
# test containers.conf
[engine]
cgroup_manager = "$ENGINE_CGROUPS"
events_logger = "file"
events_logfile_path = "$T/podman-events.log"

[engine.runtimes]
runc = ["/usr/sbin/runc", "/usr/bin/runc"]
CONF
cp "$T/containers.conf" "$T/containers.conf.orig"
export CONTAINERS_CONF=$T/containers.conf
pm() {
    podman --root "$T/pm-root" --runroot "$T/pm-run" --tmpdir "$T/pm-tmp" --cgroup-manager "$ENGINE_CGROUPS" "$@"
}
t_cleanup "pm rm -af -t 0"   # (not `system reset`: it also clears host-wide network files)
run() {
    pm run --rm --network none --cgroup-parent "$ENGINE_CG_PARENT" \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$@"
}
rv_image_tar "$T/img.tar"
pm import "$T/img.tar" localhost/rvtest:busybox >/dev/null

out=$(run --runtime "$RUNTIME" --cpus 1.5 -m 512m localhost/rvtest:busybox /bin/env 2>&1)
t_contains "podman --runtime resview-runtime --cpus 1.5: GOMAXPROCS=2" "$out" "GOMAXPROCS=2"
t_contains "podman --runtime: SLURM_MEM_PER_NODE=512" "$out" "SLURM_MEM_PER_NODE=512"

t_ok "configure --engine=podman" "$CLI" configure --engine=podman --config "$T/containers.conf" --runtime-path "$RUNTIME"
out=$(run --runtime resview --cpus 1 -m 256m localhost/rvtest:busybox /bin/sh -c \
      'env; grep -c ^processor /proc/cpuinfo; grep MemTotal /proc/meminfo' 2>&1)
t_contains "podman run --runtime resview (containers.conf): GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
t_contains "LXCFS view inside podman: MemTotal 262144 kB" "$out" "262144 kB"
out=$(run --annotation resview.io/env=false --runtime resview localhost/rvtest:busybox /bin/env 2>&1)
t_not_contains "podman --annotation resview.io/env=false reaches the shim" "$out" "GOMAXPROCS"
t_contains "(that container ran)" "$out" "PATH="

probe='test -c /dev/fuse && echo has-fuse; c=$(grep CapEff /proc/self/status | awk "{print \$2}"); echo sysadmin=$(( 0x$c >> 21 & 1 ))'
out=$(run --annotation resview.io/fuse=true --runtime resview localhost/rvtest:busybox /bin/sh -c "$probe" 2>&1)
t_contains "podman --annotation resview.io/fuse=true: /dev/fuse" "$out" "has-fuse"
t_contains "podman --annotation resview.io/fuse=true: no capability added (the broker mounts)" "$out" "sysadmin=0"
out=$(run --runtime resview localhost/rvtest:busybox /bin/sh -c "$probe" 2>&1)
t_contains "podman without the request: no CAP_SYS_ADMIN" "$out" "sysadmin=0"

t_ok "configure --set-as-default" "$CLI" configure --engine=podman --config "$T/containers.conf" --runtime-path "$RUNTIME" --set-as-default
out=$(run --cpus 1.5 localhost/rvtest:busybox /bin/env 2>&1)
t_contains "default runtime resview: podman run without --runtime gets GOMAXPROCS=2" "$out" "GOMAXPROCS=2"

t_ok "configure --uninstall" "$CLI" configure --engine=podman --config "$T/containers.conf" --uninstall
t_ok "containers.conf restored byte for byte" cmp "$T/containers.conf" "$T/containers.conf.orig"
out=$(run --runtime runc --cpus 1.5 localhost/rvtest:busybox /bin/env 2>&1)
t_not_contains "after uninstall: plain runc again" "$out" "GOMAXPROCS"
t_contains "(that container ran)" "$out" "PATH="

# LXCFS views alone through a hooks.d file (hooks/oci/, when in the tree)
if ls "$TOP"/hooks/oci/*.json >/dev/null 2>&1; then
    mkdir -p "$T/hooks.d"
    for f in "$TOP"/hooks/oci/*.json; do
        jq --arg h "$HOOK" --arg c "RESVIEW_CONFIG=$T/config.json" '.hook.path = $h | .hook.env = [$c]' \
            "$f" >"$T/hooks.d/$(basename "$f")"
    done
    out=$(run --runtime runc --hooks-dir "$T/hooks.d" -m 256m localhost/rvtest:busybox /bin/grep MemTotal /proc/meminfo 2>&1)
    t_contains "podman --hooks-dir (hooks/oci) with plain runc: LXCFS MemTotal 262144 kB" "$out" "262144 kB"
fi

# the hooks.d file that `configure --engine=podman` writes beside containers.conf
RESVIEW_CONFIG=$T/config.json "$CLI" configure --engine=podman --config "$T/containers.conf" \
    --runtime-path "$RUNTIME" --hook-path "$HOOK" --hooks-dir "$T/hooks-cfg" >/dev/null
t_eq "configure --engine=podman writes the hooks.d file" "$(jq -r .hook.path "$T/hooks-cfg/resview-lxcfs.json")" "$HOOK"
out=$(run --runtime runc --hooks-dir "$T/hooks-cfg" -m 256m localhost/rvtest:busybox /bin/grep MemTotal /proc/meminfo 2>&1)
t_contains "podman with that hooks.d file and plain runc: LXCFS MemTotal 262144 kB" "$out" "262144 kB"
"$CLI" configure --engine=podman --config "$T/containers.conf" --hooks-dir "$T/hooks-cfg" --uninstall >/dev/null
t_ok "configure --uninstall removes the hooks.d file" test ! -e "$T/hooks-cfg/resview-lxcfs.json"
t_ok "and restores containers.conf byte for byte" cmp "$T/containers.conf" "$T/containers.conf.orig"
