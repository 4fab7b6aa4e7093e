# engines.sh - start and stop real engines on private sockets and directories
# under $T, for the engine tests (tests/e2e/4*.sh). Source after common.sh.
#
#   ctd_start [EXTRA_TOML]   containerd with root/state/socket under $T/ctd
#                            (CRI disabled unless EXTRA_TOML configures it)
#   ctd_cri_toml [IMAGE]     the CRI plugin's TOML as a node has it, offline
#   ctd_restartable          containerd with CRI, (re)started by $T/ctd-restart
#   ctd_version              the installed containerd's version ("2.1.9"; "" none)
#   dockerd_start DAEMON_JSON   dockerd on $T/docker.sock using that containerd
#   rv_image_tar FILE        a busybox rootfs as a tar (for docker import / OCI layout)
# Every daemon is stopped at exit (and the shims it started, and its mounts).

CTD_SOCK=$T/ctd/ctd.sock
DOCKER_SOCK=$T/docker.sock
DOCKER=/usr/bin/docker

# wait_for CMD... : retry for up to 30 s (a readiness poll, not a timing assertion)
wait_for() {
    local i
    for i in $(seq 1 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

ctd_version() { local v; v=$(containerd --version 2>/dev/null | awk '{print $3}'); echo "${v#v}"; }

# Kill the processes started by this test's daemons (shims), by pid.
_kill_ours() {
    local pat=$1 pid
    for pid in $(pgrep -f -- "$pat"); do
        [ "$pid" != "$$" ] && kill -9 "$pid" 2>/dev/null
    done
}

_stop_pid() {
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
}

# The config.toml ctd_start uses (CRI disabled unless EXTRA_TOML configures it).
ctd_config() {
    local extra=${1:-}
    echo 'version = 2'
    echo "root = \"$T/ctd/root\""
    echo "state = \"$T/ctd/state\""
    [ -n "$extra" ] || echo 'disabled_plugins = ["io.containerd.grpc.v1.cri"]'
    echo '[grpc]'
    echo "  address = \"$CTD_SOCK\""
    echo '[ttrpc]'
    echo "  address = \"$CTD_SOCK.ttrpc\""
    echo '[debug]'
    echo '  level = "info"'
    echo '[plugins."io.containerd.internal.v1.opt"]'
    echo "  path = \"$T/ctd/opt\""
    [ -z "$extra" ] || printf '%s\n' "$extra"
}

# The CRI plugin as a node has it, offline: host-network pods need no CNI;
# restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE); a runc entry with
# a private Root. SANDBOX_IMAGE: the pause image (the tests' busybox).
ctd_cri_toml() {
    local img=${1:-resview.test/busybox:1}
    mkdir -p "$T/cni"
    cat <<EOF
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$img"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$T/cni"
    conf_dir = "$T/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$T/ctd/runc-root"
        SystemdCgroup = $SYSTEMD_CGROUP
EOF
}

CTD_PID=""
ctd_start() {
    local extra=${1:-}
    mkdir -p "$T/ctd"
    ctd_config "$extra" >"$T/ctd/config.toml.base"
    [ -e "$T/ctd/config.toml" ] || cp "$T/ctd/config.toml.base" "$T/ctd/config.toml"
    RESVIEW_CONFIG=$T/config.json containerd --config "$T/ctd/config.toml" >"$T/ctd/log" 2>&1 &
    CTD_PID=$!
    t_cleanup "ctd_stop"
    wait_for ctr --address "$CTD_SOCK" version || { echo "containerd did not start:"; tail -20 "$T/ctd/log"; return 1; }
}

# ctd_restartable: containerd with CRI on $T/ctd/config.toml, started and
# restarted by the script $T/ctd-restart, as a node's init restarts it: the
# restart command the node agent (`resview node`) runs in the tests. Each run
# of the script is a line in $T/ctd-restarts; while $T/ctd-noop exists the
# script only pretends (a restart that changes nothing).
ctd_restartable() {
    mkdir -p "$T/ctd"
    ctd_config "$(ctd_cri_toml)" >"$T/ctd/config.toml"
    cat >"$T/ctd-restart" <<EOF
#!/bin/sh
echo restart >>"$T/ctd-restarts"
[ -e "$T/ctd-noop" ] && exit 0
p=\$(cat "$T/ctd.pid" 2>/dev/null) && kill "\$p" && while kill -0 "\$p" 2>/dev/null; do sleep 0.05; done
containerd --config "$T/ctd/config.toml" >>"$T/ctd/log" 2>&1 </dev/null &
echo \$! >"$T/ctd.pid"
EOF
    chmod +x "$T/ctd-restart"
    "$T/ctd-restart" && : >"$T/ctd-restarts"
    t_cleanup 'kill $(cat "$T/ctd.pid"); _kill_ours "-address $CTD_SOCK"'
    wait_for ctr --address "$CTD_SOCK" version || { echo "containerd did not start:"; tail -20 "$T/ctd/log"; return 1; }
}
ctd_stop() {
    [ -n "$CTD_PID" ] || return 0
    # containers first (their shims outlive containerd otherwise)
    for ns in $(ctr --address "$CTD_SOCK" namespaces ls -q 2>/dev/null); do
        for c in $(ctr --address "$CTD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
            ctr --address "$CTD_SOCK" -n "$ns" tasks kill -s KILL "$c" >/dev/null 2>&1
        done
    done
    _stop_pid "$CTD_PID"
    _kill_ours "-address $CTD_SOCK"
    CTD_PID=""
}

DOCKERD_PID=""
dockerd_start() {
    local cfg=$1
    mkdir -p "$T/docker-data" "$T/dx"
    dockerd --data-root "$T/docker-data" --exec-root "$T/dx" --host "unix://$DOCKER_SOCK" \
        --pidfile "$T/docker.pid" --containerd "$CTD_SOCK" --iptables=false --bridge=none \
        --ip-masq=false --config-file "$cfg" >"$T/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    t_cleanup "dockerd_stop"
    wait_for "$DOCKER" -H "unix://$DOCKER_SOCK" version || { echo "dockerd did not start:"; tail -20 "$T/dockerd.log"; return 1; }
}
dockerd_stop() {
    [ -n "$DOCKERD_PID" ] || return 0
    local ids
    ids=$("$DOCKER" -H "unix://$DOCKER_SOCK" ps -aq 2>/dev/null)
    [ -z "$ids" ] || "$DOCKER" -H "unix://$DOCKER_SOCK" rm -f $ids >/dev/null 2>&1
    _stop_pid "$DOCKERD_PID"
    DOCKERD_PID=""
}
dk() { "$DOCKER" -H "unix://$DOCKER_SOCK" "$@"; }

# A busybox rootfs as a tar file.
rv_image_tar() {
    local out=$1 d=$T/image-rootfs
    [ -d "$d" ] || rv_rootfs "$d"
    tar -C "$d" -cf "$out" .
}
