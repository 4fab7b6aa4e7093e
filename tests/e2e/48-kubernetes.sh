#!/bin/bash
# 48-kubernetes.sh - the DaemonSet of hooks/kubernetes/ on a node, with
# nothing done by hand. No kubelet exists here: tests/cri/kubelet.py reads the
# manifests (daemonset.yaml, kustomization.yaml's values and image,
# runtimeclass.yaml) and makes the CRI calls the kubelet makes for them.
#
# Two containerds, as the issue asks:
#   A  the kubelet's runtime that runs the agent pod (the node image imported
#      from `make image`); privileged, hostPID, hostPath volumes mapped under
#      a "node root" $NODE, Bidirectional propagation for real;
#   B  the node's containerd, the one the agent configures and restarts. It
#      runs chrooted in $NODE inside a mount namespace of its own ("the
#      node"), where $NODE/etc/containerd, $NODE/opt/resview, … are at their
#      real paths, so the paths the agent writes are the paths B and its
#      shims use. Its config.toml is $NODE/etc/containerd/config.toml.
# What stands in for systemd: pid 1 of this machine is not systemd (it is the
# VM's init, whose namespaces even root may not enter), and the host's own
# containerd must not be touched. The node has an init of its own instead (a
# process in the node's namespace and root), named to the agent as the host
# by RESVIEW_NODE_HOST_PID, the one value the test sets beside the manifest's;
# in the node's PATH, /usr/local/sbin/systemctl is a script that implements
# `systemctl restart containerd` by stopping B and starting it again, and
# counts the restarts. The agent runs in the manifest's default restart mode,
# systemd, and enters the node exactly as it enters pid 1 on a real host
# (src/hostexec.c: namespaces, root, cgroups).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3   # Debian's grpcio and yaml live there
K8S=$TOP/hooks/kubernetes
IMG=resview.test/busybox:1
NODE=$T/node
KUBELET="$PY $TOP/tests/cri/kubelet.py $T"
BSOCK=$NODE/run/containerd/containerd.sock

# --- the node image and the kubelet's containerd (A) -------------------------
make -s --no-print-directory -C "$TOP" BUILD="$BUILD" image >"$T/image.log" 2>&1 ||
    { echo "not ok - make image"; sed 's/^/#   /' "$T/image.log" | tail -5; exit 1; }
NODE_IMG=$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' \
           < <(tar -xOf "$BUILD/resview-node.tar" index.json))
mkdir -p "$T/ctd"
ctd_start "$(ctd_cri_toml "$IMG")" || exit 1
rv_image_tar "$T/layer.tar"
$PY "$K8S/image/oci-image.py" "$T/layer.tar" "$T/busybox.tar" "$IMG" /bin/sleep 2147483647
ctr --address "$CTD_SOCK" -n k8s.io images import "$T/busybox.tar" >/dev/null 2>&1
ctr --address "$CTD_SOCK" -n k8s.io images import "$BUILD/resview-node.tar" >/dev/null 2>&1
t_contains "the node image imports into containerd (ctr images import)" \
    "$(ctr --address "$CTD_SOCK" -n k8s.io images ls -q)" "$NODE_IMG"
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"
t_ok "cri.proto matches the CRI API compiled into containerd" $PY "$TOP/tests/cri/check-proto.py" "$T" "$(command -v containerd)"

# --- the node: its root, its mount namespace, its containerd (B) -------------
mkdir -p "$NODE"/{etc/containerd,run,var/lib,var/log,opt,proc,sys,dev,tmp,usr}
for d in bin sbin lib lib64; do
    if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$NODE/$d"; else mkdir -p "$NODE/$d"; fi
done
touch "$NODE/.node-root"
cp /etc/passwd /etc/group /etc/nsswitch.conf /etc/hosts /etc/hostname /etc/resolv.conf "$NODE/etc/" 2>/dev/null
[ -e /etc/ld.so.cache ] && cp /etc/ld.so.cache "$NODE/etc/"
# / is a shared mount on a systemd host; the node root is one here
mount --bind "$NODE" "$NODE" && mount --make-shared "$NODE"
t_cleanup "umount -l '$NODE'"
binds=""
for d in usr proc sys dev tmp bin sbin lib lib64; do
    [ -L "/$d" ] || binds="$binds mount --rbind /$d '$NODE/$d';"
done
mkdir -p "$T/node-sbin"
binds="$binds mount --bind '$T/node-sbin' '$NODE/usr/local/sbin';"
# the node's "init": a process whose mount namespace and root (pivot_root) are the node's
mkdir -p "$NODE/.oldroot"
unshare --mount --propagation slave sh -c "$binds cd '$NODE' && pivot_root . .oldroot && umount -l /.oldroot &&
    exec /bin/sleep 2147483647" &
NODE_INIT=$!
t_cleanup "kill $NODE_INIT"
wait_for test -e "/proc/$NODE_INIT/root/.node-root" -a -x "/proc/$NODE_INIT/root/usr/bin/containerd" ||
    { echo "not ok - the node namespace"; exit 1; }

cat >"$NODE/etc/containerd/config.toml" <<EOF
# the node's containerd (as \`containerd config default\` would have it, trimmed)
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMG"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOF
cp "$NODE/etc/containerd/config.toml" "$T/config.toml.orig"
cat >"$T/node-containerd" <<EOF
#!/bin/sh
# start|stop the node's containerd (B), inside the node
case \$1 in
stop)
    p=\$(cat "$T/nodectd.pid" 2>/dev/null) || exit 0
    kill "\$p" 2>/dev/null
    for i in \$(seq 100); do kill -0 "\$p" 2>/dev/null || exit 0; sleep 0.1; done
    kill -9 "\$p" ;;
start)
    setsid nsenter --target $NODE_INIT --mount --root --wd containerd \\
        --config /etc/containerd/config.toml >>"$T/nodectd.log" 2>&1 </dev/null &
    echo \$! >"$T/nodectd.pid" ;;
esac
EOF
cat >"$T/node-sbin/systemctl" <<EOF
#!/bin/sh
# stands in for systemd's systemctl on the test node (see the top of 48-kubernetes.sh)
[ "\$*" = "restart containerd" ] || { echo "systemctl (test stand-in): only restart containerd" >&2; exit 1; }
echo "restart in \$(grep -m1 cpu /proc/self/cgroup), root \$(ls /.node-root)" >>"$T/restarts"
"$T/node-containerd" stop
"$T/node-containerd" start
EOF
chmod +x "$T/node-containerd" "$T/node-sbin/systemctl"
: >"$T/restarts"
bctr() { ctr --address "$BSOCK" "$@"; }
node_ctd_boot() {
    "$T/node-containerd" start
    wait_for bctr version || { echo "# node containerd did not start:"; tail -5 "$T/nodectd.log"; return 1; }
    bctr -n k8s.io images import "$T/busybox.tar" >/dev/null 2>&1
}
node_ctd_kill_all() {   # every container of the node's containerd, then containerd
    local c p
    for c in $(bctr -n k8s.io tasks ls -q 2>/dev/null); do bctr -n k8s.io tasks kill -s KILL "$c" >/dev/null 2>&1; done
    sleep 0.5
    "$T/node-containerd" stop
    # shims left over: those of the node (their root is the node's), never another containerd's
    for p in $(pgrep -f containerd-shim); do
        [ -e "/proc/$p/root/.node-root" ] && kill -9 "$p" 2>/dev/null
    done
}
t_cleanup "node_ctd_kill_all"
node_ctd_boot || exit 1
restarts() { wc -l <"$T/restarts"; }

# --- pods as the kubelet runs them --------------------------------------------
# run_pod NAME SOCKET MANIFEST [ENV_JSON] -> {"pod":…, "containers":{…}} in $T/NAME.json
run_pod() {
    local name=$1 sock=$2 manifest=$3 env=${4:-'{}'}
    mkdir -p "$T/logs/$name"
    jq -n --arg sock "$sock" --arg m "$manifest" --arg k "$K8S" --arg rc "$K8S/runtimeclass.yaml" \
        --arg root "$NODE" --arg name "$name" --arg logs "$T/logs/$name" --arg cg "$CG_PARENT/$name" \
        --argjson env "$env" \
        '{socket: $sock, manifest: $m, kustomization: $k, runtimeclasses: $rc, node_root: $root,
          name: $name, uid: ("uid-" + $name), log_dir: $logs, cgroup_parent: $cg, env: $env}' >"$T/$name.scenario"
    $KUBELET run-pod "$T/$name.scenario" >"$T/$name.json" 2>"$T/$name.err"
}
cid() { jq -r ".containers.$2" "$T/$1.json"; }
pid_of() { jq -r '.pod' "$T/$1.json"; }
kexec() { local sock=$1 id=$2; shift 2; $KUBELET exec "$sock" "$id" -- "$@"; }
delete_pod() { # NAME SOCKET GRACE
    $KUBELET stop-pod "$2" "$(pid_of "$1")" "$3" $(jq -r '.containers[]' "$T/$1.json") 2>>"$T/$1.err"
}
kill_agent() { # NAME: every process of the agent SIGKILLed at once, LXCFS first (the node's
    # OOM killer, a forced delete), so LXCFS cannot unmount; then the pod is deleted
    kill -9 "$(cat "$NODE/var/lib/resview/lxcfs.pid")" \
        $(cat "/sys/fs/cgroup/pids$CG_PARENT/$1/$(cid "$1" agent)/cgroup.procs") 2>/dev/null
    delete_pod "$1" "$CTD_SOCK" 0
}
AGENT_ENV="{\"RESVIEW_NODE_HOST_PID\": \"$NODE_INIT\"}"
agent_log() { cat "$T/logs/$1/agent.log" 2>/dev/null | cut -d' ' -f4-; }
wait_ready() { # NAME: the readiness probe of the manifest, as the kubelet polls it (up to 120 s)
    local i
    for i in $(seq 240); do
        $KUBELET probe "$CTD_SOCK" "$(cid "$1" agent)" "$K8S/daemonset.yaml" >"$T/$1.probe" 2>&1 && return 0
        sleep 0.5
    done
    echo "# not ready:"; sed 's/^/#   /' "$T/$1.probe"; agent_log "$1" | tail -15 | sed 's/^/#   log: /'
    return 1
}

WORKLOAD=$T/workload.yaml
cat >"$WORKLOAD" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: work
spec:
  runtimeClassName: resview
  containers:
    - name: main
      image: $IMG
      command: ["/bin/sh", "-c", "exec sleep 2147483647"]
      resources:
        limits:
          cpu: "1"
          memory: 512Mi
EOF
meminfo() { kexec "$BSOCK" "$(cid "$1" main)" grep MemTotal /proc/meminfo 2>&1 | tr -s ' '; }
views_ok() { [ "$(meminfo "$1")" = "MemTotal: 524288 kB" ]; }
wait_views() { local i; for i in $(seq 100); do views_ok "$1" && return 0; sleep 0.1; done; return 1; }
started() { $KUBELET status "$BSOCK" "$(cid "$1" main)" | jq -r '"\(.state) \(.started_at)"'; }

# --- 1. install: the agent comes up with nothing done by hand -----------------
t0=$(date +%s%N)
run_pod agent1 "$CTD_SOCK" "$K8S/daemonset.yaml" "$AGENT_ENV"
t_eq "agent pod created from daemonset.yaml (privileged, hostPID, hostPath volumes, Bidirectional)" \
    "$(cat "$T/agent1.err")" ""
wait_ready agent1 >"$T/ready.out" 2>&1; r=$?
t_eq "agent ready (readiness probe of the manifest)" "$r$(cat "$T/ready.out")" "0"
[ "$r" = 0 ] || exit 1
echo "# agent ready after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
t_eq "node containerd restarted exactly once" "$(restarts)" "1"
t_not_contains "the restart ran outside the agent pod's cgroup (containerd must not die with the pod)" \
    "$(cat "$T/restarts")" "$CG_PARENT/agent1"
t_contains "…in the node's root (as systemctl runs on the host)" "$(cat "$T/restarts")" "root /.node-root"
t_contains "config.toml has the resview runtime entry" "$(cat "$NODE/etc/containerd/config.toml")" \
    'BinaryName = "/opt/resview/current/bin/resview-runtime"'
t_ok "containerd's original config kept as backup, byte for byte" \
    cmp "$NODE/etc/containerd/config.toml.resview-backup" "$T/config.toml.orig"
cur=$(readlink "$NODE/opt/resview/current")
t_contains "binaries in a versioned directory, /opt/resview/current points to it" "$cur" "versions/0."
t_ok "resview-runtime and resview-hook installed" test -x "$NODE/opt/resview/current/bin/resview-runtime" -a \
    -x "$NODE/opt/resview/current/bin/resview-hook"
t_contains "/etc/resview/config.json names the agent's LXCFS mount" "$(cat "$NODE/etc/resview/config.json")" \
    '"root": "/var/lib/resview/lxcfs"'
t_contains "LXCFS (the image's) is mounted on the host below the Bidirectional volume" \
    "$(grep -F " $NODE/var/lib/resview/lxcfs " /proc/self/mountinfo)" "fuse.lxcfs"
cp "$NODE/etc/containerd/config.toml" "$T/config.toml.installed"

# --- 2. a pod with runtimeClassName resview, 1 CPU / 512 MiB -----------------
run_pod w1 "$BSOCK" "$WORKLOAD"
t_eq "workload pod (runtimeClassName: resview) created" "$(cat "$T/w1.err")" ""
run_pod w2 "$BSOCK" "$WORKLOAD"
t_eq "/proc/meminfo: MemTotal 512 MiB" "$(meminfo w1)" "MemTotal: 524288 kB"
t_eq "/proc/cpuinfo: 1 processor" "$(kexec "$BSOCK" "$(cid w1 main)" grep -c ^processor /proc/cpuinfo)" "1"
t_contains "main process has GOMAXPROCS=1" \
    "$(kexec "$BSOCK" "$(cid w1 main)" cat /proc/1/environ | tr '\0' '\n')" "GOMAXPROCS=1"
t_ok "second workload pod sees its view too" views_ok w2
w1_started=$(started w1); w2_started=$(started w2)

# --- 3. rollout: the agent pod is killed and re-created (a new LXCFS) ---------
kill_agent agent1      # LXCFS leaves a dead FUSE mount behind
out=$($KUBELET hostpath "$NODE/var/lib/resview/lxcfs" Directory 2>&1)
t_contains "the old LXCFS left a dead mount (as a crashed LXCFS pod does)" "$out" "Transport endpoint is not connected"
t_contains "running pods' views are dead meanwhile" "$(meminfo w1)" "Transport endpoint is not connected"
run_pod agent2 "$CTD_SOCK" "$K8S/daemonset.yaml" "$AGENT_ENV"
t_eq "new agent pod starts: its volume is the parent directory, no ContainerCreating hang" "$(cat "$T/agent2.err")" ""
t_ok "new agent ready" wait_ready agent2
t_contains "the new agent detached the dead mount" "$(agent_log agent2)" "detached a mount left on"
t_eq "node containerd not restarted again" "$(restarts)" "1"
t_ok "config.toml unchanged by the rollout" cmp "$NODE/etc/containerd/config.toml" "$T/config.toml.installed"
t_ok "workload 1 sees its views again (healed by watch)" wait_views w1
t_ok "workload 2 sees its views again" wait_views w2
t_eq "workload 1 not restarted (same container, running since the same time)" "$(started w1)" "$w1_started"
t_eq "workload 2 not restarted" "$(started w2)" "$w2_started"

# --- 4. resview's files gone or disabled: the shim passes through to runc -----
mv "$NODE/etc/resview/config.json" "$T/config.json.saved"
run_pod w3 "$BSOCK" "$WORKLOAD"
t_eq "no /etc/resview/config.json: the pod starts (defaults)" "$(jq -r '.state' < <($KUBELET status "$BSOCK" "$(cid w3 main)"))" "CONTAINER_RUNNING"
mv "$T/config.json.saved" "$NODE/etc/resview/config.json"
hook=$NODE/opt/resview/$cur/bin/resview-hook
mv "$hook" "$hook.gone"
run_pod w4 "$BSOCK" "$WORKLOAD"
t_eq "resview-hook gone: the pod still starts" "$(cat "$T/w4.err")$(jq -r '.state' < <($KUBELET status "$BSOCK" "$(cid w4 main)" 2>&1))" \
    "CONTAINER_RUNNING"
t_contains "the agent reports the missing file (not ready)" \
    "$($KUBELET probe "$CTD_SOCK" "$(cid agent2 agent)" "$K8S/daemonset.yaml")" "not ready"
mv "$hook.gone" "$hook"
delete_pod w3 "$BSOCK" 0; delete_pod w4 "$BSOCK" 0

# --- 5. the node reboots: the LXCFS mount vanishes while pods exist ----------
kill_agent agent2
delete_pod w1 "$BSOCK" 0; delete_pod w2 "$BSOCK" 0
node_ctd_kill_all
umount -l "$NODE/var/lib/resview/lxcfs"
rm -rf "$NODE/run/resview" "$NODE/run/containerd"   # /run is a tmpfs
node_ctd_boot || exit 1
run_pod w5 "$BSOCK" "$WORKLOAD"                 # the kubelet starts pods before the agent runs
t_eq "after the reboot a pod starts before LXCFS is back (no 'not a directory')" \
    "$(cat "$T/w5.err")$(jq -r '.state' < <($KUBELET status "$BSOCK" "$(cid w5 main)" 2>&1))" "CONTAINER_RUNNING"
t_contains "…with the host's /proc/meminfo meanwhile" "$(meminfo w5)" "MemTotal:"
w5_started=$(started w5)
restarts_before=$(restarts)
run_pod agent3 "$CTD_SOCK" "$K8S/daemonset.yaml" "$AGENT_ENV"
t_ok "agent ready after the reboot" wait_ready agent3
t_eq "containerd not restarted by the agent after the reboot (it loaded the entry at boot)" \
    "$(restarts)" "$restarts_before"
t_ok "the pod started before LXCFS gets its views, without a restart" wait_views w5
t_eq "…same container, running since the same time" "$(started w5)" "$w5_started"

# --- 6. uninstall: an explicit step -------------------------------------------
delete_pod agent3 "$CTD_SOCK" 30    # graceful: SIGTERM, and nothing on the node changes
t_ok "pod termination changes nothing: config.toml" cmp "$NODE/etc/containerd/config.toml" "$T/config.toml.installed"
t_ok "pod termination changes nothing: binaries" test -x "$NODE/opt/resview/current/bin/resview-runtime"
run_pod agent4 "$CTD_SOCK" "$K8S/daemonset.yaml" \
    "{\"RESVIEW_NODE_HOST_PID\": \"$NODE_INIT\", \"RESVIEW_NODE_MODE\": \"uninstall\"}"
t_ok "uninstall agent ready" wait_ready agent4
t_ok "containerd's config.toml restored byte for byte" cmp "$NODE/etc/containerd/config.toml" "$T/config.toml.orig"
t_eq "containerd restarted once for the uninstall" "$(restarts)" "$((restarts_before + 1))"
t_ok "binaries stay while a container started through resview exists" \
    test -x "$NODE/opt/resview/current/bin/resview-runtime"
t_ok "that container keeps its views" views_ok w5
delete_pod w5 "$BSOCK" 0
for _ in $(seq 300); do agent_log agent4 | grep -q "uninstall: done" && break; sleep 0.1; done
t_contains "once no container uses them, the binaries are removed" "$(agent_log agent4)" "uninstall: done"
t_ok "…/opt/resview is empty" test -z "$(ls -A "$NODE/opt/resview")"
t_ok "…and /etc/resview/config.json, which the agent wrote, is gone" test ! -e "$NODE/etc/resview/config.json"
t_ok "…and the LXCFS mount point and its pid file" test -z "$(ls -A "$NODE/var/lib/resview")"
delete_pod agent4 "$CTD_SOCK" 30
