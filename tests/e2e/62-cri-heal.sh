#!/bin/bash
# 62-cri-heal.sh - the node agent's healing without NRI (`resview node
# heal`: what the agent runs every RESVIEW_NODE_HEAL_S while the plugin is
# not registered) against the host's real containerd (1.6: a CRI, no NRI:
# the plugin cannot register) on a private socket, with a private LXCFS: a
# pod of the default runtime (runc, no resview) gets its views (a process
# inside reads its memory limit from /proc/meminfo), named once in the log
# as started without resview's variables and by doctor; a second pass does
# nothing; a pod opted out (resview.io/lxcfs: "false") is left alone; a CRI
# socket that never answers ends the pass within its bound; the agent itself
# (`resview node run`, NRI mode, RESVIEW_NODE_HEAL_S=1, its own LXCFS) heals a
# later pod from its loop while its plugin cannot register.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3   # Debian's grpcio lives there

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
host_mem=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)
IMG=resview.test/busybox:1
CTD_SOCK=$T/ctd/ctd.sock
ctd_start "$(ctd_cri_toml "$IMG")" || exit 1
rv_image_tar "$T/layer.tar"
$PY "$TOP/hooks/kubernetes/image/oci-image.py" "$T/layer.tar" "$T/oci.tar" "$IMG" /bin/sleep 2147483647
ctr --address "$CTD_SOCK" -n k8s.io images import "$T/oci.tar" >/dev/null 2>&1
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"

# start.py NAME POD_ANNOTATIONS_JSON: a pod of the default runtime, one
# container (sleep, 512 MiB) left running; its id on stdout
cat >"$T/start.py" <<PYEOF
import json, sys
sys.path.insert(0, "$T")
import grpc, cri_pb2 as pb, cri_pb2_grpc as pbg
rt = pbg.RuntimeServiceStub(grpc.insecure_channel("unix://$CTD_SOCK"))
name, ann = sys.argv[1], json.loads(sys.argv[2])
pod = pb.PodSandboxConfig(metadata=pb.PodSandboxMetadata(name=name, uid="uid-" + name, namespace="default"),
    log_directory="$T/podlogs", annotations=ann,
    linux=pb.LinuxPodSandboxConfig(cgroup_parent=sys.argv[3], security_context=pb.LinuxSandboxSecurityContext(
        namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER))))
pid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod), timeout=120).pod_sandbox_id
cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c"), image=pb.ImageSpec(image="$IMG"),
    command=["/bin/sleep", "3600"], log_path=name + ".log",
    linux=pb.LinuxContainerConfig(resources=pb.LinuxContainerResources(memory_limit_in_bytes=536870912)))
cfg.linux.security_context.namespace_options.CopyFrom(pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER))
for kv in sys.argv[4:]:
    cfg.envs.append(pb.KeyValue(key=kv.split("=")[0], value=kv.split("=", 1)[1]))
cid = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pid, config=cfg, sandbox_config=pod),
                         timeout=120).container_id
rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=120)
print(cid)
PYEOF
mkdir -p "$T/podlogs"
mem_of() { ctr --address "$CTD_SOCK" -n k8s.io task exec --exec-id "m$RANDOM" "$1" grep MemTotal /proc/meminfo 2>&1 |
    awk '{print $2}'; }
heal() {
    RESVIEW_CONFIG=$T/config.json RESVIEW_NODE_MODE=nri RESVIEW_NODE_NRI_SOCKET=$T/nri.sock \
        RESVIEW_NODE_CRI_SOCKET=${1:-$CTD_SOCK} "$CLI" node heal 2>&1
}

id=$($PY "$T/start.py" plain '{}' "$(pod_cgroup plain)" 2>"$T/start.err")
out=$($PY "$T/start.py" optout '{"resview.io/lxcfs": "false"}' "$(pod_cgroup optout)" 2>>"$T/start.err")
optenv=$($PY "$T/start.py" optenv '{}' "$(pod_cgroup optenv)" RESVIEW_LXCFS=0 2>>"$T/start.err")
[ -n "$id" ] && [ -n "$out" ] && [ -n "$optenv" ] || { echo "not ok - CRI pods: $(tail -5 "$T/start.err")"; exit 1; }
t_eq "a pod of the default runtime (no resview) reads the host's MemTotal" "$(mem_of "$id")" "$host_mem"

t0=$(date +%s%N)
t_eq "node heal: one container given views through the CRI" "$(heal)" "1 container given views"
t_eq "its process reads its limit from LXCFS's /proc/meminfo" "$(mem_of "$id")" "524288"
t_eq "the opted-out pod is left alone" "$(mem_of "$out")" "$host_mem"
t_eq "a container opted out by its variable (RESVIEW_LXCFS=0) is left alone" "$(mem_of "$optenv")" "$host_mem"
said=$(grep -F "$id" "$T/resview.log" | grep -c "started without resview's variables (created while the NRI plugin could not register); re-create it to get them")
t_eq "the log names it once: started without variables" "$said" "1"
t_eq "the opted-out one is not named" "$(grep -cF "$out" "$T/resview.log")" "0"
t_contains "doctor names it" "$(RESVIEW_CONFIG=$T/config.json "$CLI" doctor --nri-socket "$T/nri.sock" 2>&1)" \
    "NRI: container $id"
t_eq "a second pass does nothing" "$(heal)" "0 containers given views"
t_eq "and says nothing again" "$(grep -F "$id" "$T/resview.log" | grep -c "started without resview's variables")" "1"
echo "# two passes: $(( ($(date +%s%N) - t0) / 1000000 )) ms"

# a CRI socket that accepts and never answers: the pass ends within its bound
$PY -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
c = s.accept(); time.sleep(120)' "$T/hung.sock" &
HUNG=$!
t_cleanup "kill $HUNG"
wait_for test -S "$T/hung.sock"   # engines.sh's wait_for: up to 30 s
t0=$(date +%s)
r=$(timeout 30 bash -c "$(declare -f heal); T=$T CLI=$CLI CTD_SOCK=$CTD_SOCK heal $T/hung.sock"; echo "rc=$?")
t_contains "a hung CRI socket: the pass fails" "$r" "rc=1"
t_ok "within its bound (5 s, not the test's 30 s timeout)" test $(( $(date +%s) - t0 )) -le 8

# the agent itself (NRI mode, its plugin unable to register: no NRI socket): its loop heals a later pod
late=$($PY "$T/start.py" late '{}' "$(pod_cgroup late)" 2>>"$T/start.err")
mkdir -p "$T/payload/bin"
cp "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook" "$T/payload/bin/"
jq --arg lx "$T/lxcfs2" '.lxcfs.root = $lx' "$T/config.json" >"$T/agent.json"
RESVIEW_CONFIG=$T/agent.json RESVIEW_NODE_HEAL_S=1 "$CLI" node run --nri --nri-socket "$T/nri.sock" \
    --cri-socket "$CTD_SOCK" --prefix "$T/opt" --payload "$T/payload" --lock "$T/run/node.lock" --host-pid $$ \
    --resview-config "$T/agent.json" --lxcfs-dir "$T/lxcfs2" >"$T/agent.out" 2>&1 &
AGENT=$!
t_cleanup "kill $AGENT"
late_healed() { [ "$(mem_of "$late")" = 524288 ]; }
wait_for late_healed
t_eq "the agent's loop: a later pod gets its views (its LXCFS)" "$(mem_of "$late")" "524288"
t_contains "the agent says it" "$(grep '^[0-9]' "$T/agent.out")" "1 container started without resview's variables"
t_eq "the log names the later one once" "$(grep -F "$late" "$T/resview.log" | grep -c "started without resview's variables")" "1"
t_eq "and the first one still once" "$(grep -F "$id" "$T/resview.log" | grep -c "started without resview's variables")" "1"
