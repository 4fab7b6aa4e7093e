#!/bin/bash
# 43-podman-rootless.sh - podman run by a user (rootless): a user made here
# (useradd, its /etc/subuid and /etc/subgid ranges; on a systemd host linger,
# so that user@UID.service runs, and its cgroup delegation) runs `podman run
# --runtime resview-runtime` with runc and crun. The runtime and the hook are
# uid 0 of the user's user namespace, not root on the host:
#  - the variables and the LXCFS views (LXCFS run by root) reach the process,
#    an exec session gets the variables; `--hooks-dir` (views only) too;
#  - state and log go to $XDG_RUNTIME_DIR/resview (the configured ones are
#    root's), the views record to root's users/, and a root `resview repair`
#    heals the views after LXCFS restarts;
#  - a FUSE request is refused in one line, the container does not start.
# On cgroup v1 rootless podman ignores --cpus and --memory, and crun 1.8
# refuses the hybrid host (tests/lib/crun-v1 cannot hide its cgroup2 mount
# inside the user's namespace): there the values are the host's, runc only.
# Without newuidmap (this host) podman maps the user's uid alone. Everything
# made is removed at exit.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"

RU=rvrl$(tr -dc 'a-z0-9' <<<"${T##*.}" | tr 'A-Z' 'a-z')
useradd -m -d "$T/home" -s /bin/sh "$RU" || { echo "not ok - useradd $RU"; exit 1; }
RUID=$(id -u "$RU")
XDG=/run/user/$RUID
t_cleanup "userdel -r -f $RU; sed -i '/^$RU:/d' /etc/subuid /etc/subgid; rm -rf $XDG"
chmod 711 "$T"
if command -v newuidmap >/dev/null; then
    grep -q "^$RU:[0-9]*:65536$" /etc/subuid || echo "$RU:$((300000 + RUID * 65536)):65536" >>/etc/subuid
    grep -q "^$RU:[0-9]*:65536$" /etc/subgid || echo "$RU:$((300000 + RUID * 65536)):65536" >>/etc/subgid
else
    sed -i "/^$RU:/d" /etc/subuid /etc/subgid   # podman maps the user's uid alone
fi
LXCFS_DIR=$T/lxcfs
# before the user's first podman command: its namespace is made then
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
if [ "$ENGINE_CGROUPS" = systemd ]; then
    mkdir -p "/etc/systemd/system/user@$RUID.service.d"
    printf '[Service]\nDelegate=cpu cpuset io memory pids\n' >"/etc/systemd/system/user@$RUID.service.d/resview-test.conf"
    systemctl daemon-reload
    loginctl enable-linger "$RU"
    t_cleanup "loginctl disable-linger $RU; systemctl stop user@$RUID.service; rm -rf /etc/systemd/system/user@$RUID.service.d; systemctl daemon-reload"
    wait_for test -S "$XDG/bus" || echo "# no user bus at $XDG/bus"
    RUNTIMES="runc crun"
else
    install -d -o "$RU" -g "$RU" -m 700 "$XDG"
    RUNTIMES=runc
fi
pm() {
    (cd "$T/home" && runuser -u "$RU" -- env -i HOME="$T/home" PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        XDG_RUNTIME_DIR="$XDG" DBUS_SESSION_BUS_ADDRESS="unix:path=$XDG/bus" \
        podman --cgroup-manager "$ENGINE_CGROUPS" "$@")
}
t_cleanup "pm rm -af -t 0; pm system reset -f"
rv_image_tar "$T/img.tar"
chmod 644 "$T/img.tar"
pm import "$T/img.tar" localhost/rvtest:busybox >/dev/null

# root's log file and state_dir, as on a node; root's repair makes users/
rv_config "$T/config.json" '{"fuse": {"allowed": true}}'
RESVIEW_CONFIG=$T/config.json "$CLI" repair >/dev/null 2>&1
for r in $RUNTIMES; do
    jq --arg r "$r" '.runtimes = [$r]' "$T/config.json" >"$T/config-$r.json"
    # podman and conmon do not pass their environment on to the runtime
    printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$T/config-$r.json" "$RUNTIME" >"$T/rt-$r"
    chmod 755 "$T/rt-$r"
done
chmod 644 "$T"/config*.json
run() { pm run --rm --network none "$@"; }
probe='env; grep MemTotal /proc/meminfo; echo cpuinfo=$(grep -c ^processor /proc/cpuinfo); echo lxcfs=$(grep -c " - fuse.lxcfs " /proc/self/mountinfo)'
if cg_is_v2; then want_cpus=1 want_mem="MemTotal:         524288 kB"
else want_cpus=$(nproc) want_mem="lxcfs=9"; fi

for r in $RUNTIMES; do
    out=$(run --runtime "$T/rt-$r" --cpus 1 --memory 512m localhost/rvtest:busybox /bin/sh -c "$probe" 2>&1)
    t_contains "$r rootless: the container ran" "$out" "PATH="
    t_contains "$r rootless: GOMAXPROCS=$want_cpus" "$out" "GOMAXPROCS=$want_cpus"
    t_contains "$r rootless: OMP_NUM_THREADS=$want_cpus" "$out" "OMP_NUM_THREADS=$want_cpus"
    if cg_is_v2; then
        t_contains "$r rootless: SLURM_MEM_PER_NODE=512" "$out" "SLURM_MEM_PER_NODE=512"
        t_contains "$r rootless: LXCFS /proc/cpuinfo shows 1 CPU" "$out" "cpuinfo=1"
    fi
    t_contains "$r rootless: LXCFS views ($want_mem)" "$out" "$want_mem"
done
t_ok "state and log in \$XDG_RUNTIME_DIR/resview, the user's" \
    sh -c "[ \"\$(stat -c %U $XDG/resview $XDG/resview/resview.log | sort -u)\" = $RU ] && grep -q 'create: cpus=' $XDG/resview/resview.log"
t_ok "root's log file untouched" test ! -e "$T/resview.log"
rec=$(ls "$T/state/users" | head -n 1)
t_eq "the views recorded in root's users/, as the user" "$(stat -c %U "$T/state/users/$rec" 2>&1)" "$RU"

# views alone through hooks.d, as the user
mkdir -p "$T/hooks.d"
jq --arg h "$HOOK" --arg c "RESVIEW_CONFIG=$T/config.json" '.hook.path = $h | .hook.env = [$c]' \
    "$TOP/hooks/oci/resview-lxcfs.json" >"$T/hooks.d/resview-lxcfs.json"
out=$(run --runtime runc --hooks-dir "$T/hooks.d" --memory 512m localhost/rvtest:busybox /bin/sh -c "$probe" 2>&1)
t_contains "--hooks-dir rootless, plain runc: LXCFS views ($want_mem)" "$out" "$want_mem"
t_not_contains "--hooks-dir: no variables (views only)" "$out" "GOMAXPROCS"

# an exec session, and root's repair after LXCFS restarts
pm run -d --name rl1 --network none --runtime "$T/rt-runc" --cpus 1 --memory 512m \
    localhost/rvtest:busybox sleep 600 >/dev/null
out=$(pm exec rl1 env 2>&1)
t_contains "exec session: GOMAXPROCS=$want_cpus" "$out" "GOMAXPROCS=$want_cpus"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" repair 2>&1)
# The container's root as its mount table says: a directory of the user's
# storage (vfs: a bind of a local file system), or the user's own overlay
# (native rootless overlay) or fuse-overlayfs, through which root looks
# nothing up (hooks/slurm/README.md "enroot run by a user (pyxis)").
rl1_pid=$(pm inspect -f '{{.State.Pid}}' rl1 2>/dev/null)
root_type=$(awk '$5 == "/" { for (i = 7; i <= NF && $i != "-"; i++); print $(i + 1) }' "/proc/$rl1_pid/mountinfo" 2>/dev/null | tail -n 1)
case $root_type in
overlay|fuse*)
    t_contains "root's repair refuses the rootless container on the user's $root_type (looks nothing up there)" \
        "$out" "refused  user $RUID's container" ;;
*)
    t_contains "root's repair heals the rootless container's views (its root: $root_type)" "$out" "repaired user $RUID's container"
    t_contains "... which reads them again" "$(pm exec rl1 grep -c ^processor /proc/cpuinfo 2>&1; pm exec rl1 grep MemTotal /proc/meminfo 2>&1)" \
        "$(cg_is_v2 && echo 524288 || grep MemTotal /proc/meminfo | awk '{print $2}')" ;;
esac
pm rm -f -t 0 rl1 >/dev/null 2>&1

# FUSE: refused in one line, the container does not start
out=$(run --runtime "$T/rt-runc" --annotation resview.io/fuse=true localhost/rvtest:busybox /bin/echo started 2>&1); rc=$?
t_contains "FUSE rootless: refused, saying why" "$out" "FUSE: refused: the runtime is not root on the host"
t_eq "FUSE rootless: the container did not start" "$rc:$(grep -c started <<<"$out")" "126:0"
