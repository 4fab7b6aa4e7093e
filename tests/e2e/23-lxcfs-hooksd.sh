#!/bin/bash
# The shipped integration files: hooks/oci (podman via hooks.d, no shim, runc
# and crun; opt-out by annotation) and the systemd units under hooks/systemd.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json"
host_mem=$(grep MemTotal /proc/meminfo)

# The shipped hooks.d file, pointed at this build and this test's config.
t_eq "hooks.d file: oci-hooks 1.0.0, prestart, always" \
    "$(jq -c '[.version, .stages, .when, .hook.args]' "$TOP/hooks/oci/resview-lxcfs.json")" \
    '["1.0.0",["prestart"],{"always":true},["resview-hook"]]'
mkdir -p "$T/hooks.d"
jq --arg h "$HOOK" --arg c "$T/config.json" '.hook.path = $h | .hook.env = ["RESVIEW_CONFIG=" + $c]' \
    "$TOP/hooks/oci/resview-lxcfs.json" >"$T/hooks.d/resview-lxcfs.json"
rv_rootfs "$T/rootfs"
P=(podman --root "$T/storage" --runroot "$T/run" --hooks-dir "$T/hooks.d" --cgroup-manager "$ENGINE_CGROUPS"
   --events-backend file --tmpdir "$T/ptmp")
RUN=(run --rm --cgroup-parent "$ENGINE_CG_PARENT" --memory 512m --cpus 1 --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network none)
t_cleanup "${P[*]} rm -af; ${P[*]} rmi -af"
tar -C "$T/rootfs" -c . | "${P[@]}" import - localhost/rv-lxcfs:latest >/dev/null 2>&1
for rt in runc "$CRUN_V1"; do
    name=$(basename "$rt")
    out=$("${P[@]}" --runtime "$rt" "${RUN[@]}" localhost/rv-lxcfs sh -c 'grep MemTotal /proc/meminfo; grep -c ^processor /proc/cpuinfo' 2>&1)
    t_eq "podman + hooks.d ($name), no shim: the container's own values" "$out" $'MemTotal:         524288 kB\n1'
done
out=$("${P[@]}" --runtime runc "${RUN[@]}" --annotation resview.io/lxcfs=false localhost/rv-lxcfs grep MemTotal /proc/meminfo 2>&1)
t_eq "podman + hooks.d: opt-out annotation gives host values" "$out" "$host_mem"

# systemd units: valid for systemd (paths pointed at this build).
mkdir -p "$T/units/lxcfs.service.d"
sed "s|/usr/bin/resview|$CLI|" "$TOP/hooks/systemd/resview-watch.service" >"$T/units/resview-watch.service"
# (--man=no: its Documentation=, resview(8), comes with the package)
t_ok "resview-watch.service verifies" systemd-analyze verify --man=no "$T/units/resview-watch.service"
t_contains "lxcfs drop-in repairs after LXCFS starts" "$(cat "$TOP/hooks/systemd/lxcfs.service.d/resview-repair.conf")" "ExecStartPost=-/usr/local/bin/resview repair --wait"
# The drop-in's command works as written (with this build's path).
cmd=$(sed -n 's|^ExecStartPost=-/usr/local/bin/resview ||p' "$TOP/hooks/systemd/lxcfs.service.d/resview-repair.conf")
out=$(RESVIEW_CONFIG=$T/config.json $CLI $cmd 2>&1); rc=$?
t_eq "drop-in command runs: exit 0" "$rc" "0"
t_contains "drop-in command runs: summary" "$out" "scanned"
