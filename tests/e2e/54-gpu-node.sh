#!/bin/bash
# 54-gpu-node.sh - GPU nodes: resview beside NVIDIA's runtime and the GPU
# operator's toolkit, with stand-ins for both (NVIDIA's software is not in
# Debian): tests/lib/fake-nvidia-runtime acts as nvidia-container-runtime does
# at the OCI level (its prestart hook, the device nodes of the GPUs asked for,
# then runc); tests/lib/fake-nvidia-toolkit edits containerd's configuration
# as the toolkit 1.13 (whole-file rewrite) and 1.18 (drop-in + imports) do,
# then restarts containerd (tests/samples/nvidia/README.md).
#
# 1. The shim alone: gpu.runtime chains a container that asks for a GPU (and
#    only it) through NVIDIA's runtime; gpu.containers=all chains every one;
#    a FUSE container that asked for one GPU sees that GPU's device node and
#    no other (stand-in nodes made with mknod c 195 N); `resview env` says
#    which source counted.
# 2. The node agent (`resview node run`, directly, private paths, as in
#    49-node-agent.sh) with resview as containerd's default, against a real
#    containerd with CRI, pods made by tests/cri/kubelet.py, in every order:
#    resview first, then the toolkit 1.13 (whole-file rewrite) restarted and
#    uninstalled; the toolkit 1.18 (drop-in + imports) installed beside
#    resview, restarted; resview uninstalled while the toolkit stays; the
#    toolkit first, then resview; the toolkit restarted and uninstalled then.
#    In each: a GPU pod gets its GPU and its views, a plain pod its views, and
#    containerd's restarts are counted: one per change (the toolkit's own, or
#    resview's install/uninstall), never a second one. The toolkit 1.13 on its
#    defaults (it makes `nvidia` the default and its runtime runs runc next):
#    resview puts its runtime first in NVIDIA's runtimes instead of taking the
#    default back, and puts NVIDIA's file back byte for byte when that is no
#    longer needed (the toolkit's cleanup) and at its uninstall.
# Runs in a mount namespace of its own: the agent's configuration has no
# state_dir or log file, so /run/resview and /var/log are private tmpfs here.
# Two scripts, each about 700 s on an emulated guest (run-e2e's limit there: 1800 s): this one
# (RV54_PART=toolkit113) runs 1 and 2a to 2c (the toolkit 1.13's whole-file
# rewrite), 54-gpu-node-dropin.sh (RV54_PART=dropin) 2d to 2g (the toolkit
# 1.18's drop-in); both begin with resview installed first.
PART=${RV54_PART:-toolkit113}
case $PART in toolkit113|dropin) ;; *) echo "not ok - RV54_PART: toolkit113 or dropin, not $PART"; exit 1;; esac
if [ -z "${RV54_NS:-}" ]; then
    exec unshare --mount --propagation private env RV54_NS=1 bash "$0" "$@"
fi
mount -t tmpfs none /run/resview 2>/dev/null || { mkdir -p /run/resview && mount -t tmpfs none /run/resview; }
mount -t tmpfs none /var/log
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3   # Debian's grpcio and yaml live there
IMG=resview.test/busybox:1
TK=$TOP/tests/lib/fake-nvidia-toolkit
NVDIR=$T/nvidia/toolkit          # what the GPU operator calls /usr/local/nvidia/toolkit
NVLOG=$T/nvidia.log
: >"$NVLOG"

# stand-in GPUs: three device nodes and the control node, major 195 as NVIDIA's
mkdir -p "$T/gpudev" "$NVDIR"
for n in 0 1 2; do mknod "$T/gpudev/nvidia$n" c 195 $n; done
mknod "$T/gpudev/nvidiactl" c 195 255
for b in nvidia-container-runtime nvidia-container-runtime.cdi nvidia-container-runtime.legacy \
         nvidia-container-runtime.experimental; do
    cp "$TOP/tests/lib/fake-nvidia-runtime" "$NVDIR/$b"
done
# its `runtimes`: FAKE_NVIDIA_RUNTIMES when a test sets it, else the configuration the toolkit writes
printf 'FAKE_NVIDIA_LOG=%s\nFAKE_NVIDIA_DEV_DIR=%s\nFAKE_NVIDIA_RUNTIMES=${FAKE_NVIDIA_RUNTIMES:-}\n' "$NVLOG" "$T/gpudev" >"$NVDIR/fake-nvidia.env"
NVRT=$NVDIR/nvidia-container-runtime

if [ "$PART" = toolkit113 ]; then
# --- 1. the shim ---------------------------------------------------------------
rv_config "$T/gpu.json" "$(jq -n --arg r "$NVRT" --arg p "$TOP/profiles/seccomp.json" \
    '{gpu: {runtime: $r}, fuse: {allowed: true, seccomp_profile: $p}}')"
rv_config "$T/config-plain.json"
rv_config "$T/gpuall.json" "$(jq -n --arg r "$NVRT" '{gpu: {runtime: $r, containers: "all"}}')"
show='ls /dev; echo GPUS=$SLURM_GPUS_ON_NODE; echo EDIT=$NVIDIA_FAKE_EDIT'
rv_bundle "$T/b-gpu" '.process.args = ["/bin/sh", "-c", "'"$show"'"] | .process.env += ["NVIDIA_VISIBLE_DEVICES=1"]'
rv_bundle "$T/b-plain" '.process.args = ["/bin/sh", "-c", "'"$show"'"]'
out=$(cd "$T/b-gpu" && RESVIEW_CONFIG=$T/gpu.json "$RUNTIME" --root "$T/runc-root" run g1 2>&1)
t_contains "shim: a container asking for GPU 1 goes through NVIDIA's runtime" "$(cat "$NVLOG")" "runtime run NVIDIA_VISIBLE_DEVICES=1"
t_contains "…which added its edit" "$out" "EDIT=1"
t_contains "…and GPU 1's device node" "$out" "nvidia1"
t_not_contains "…and no other GPU's" "$out" "nvidia0"
t_contains "…SLURM_GPUS_ON_NODE=1" "$out" "GPUS=1"
t_contains "shim log: why it chained" "$(cat "$T/resview.log")" "(gpu.runtime), for NVIDIA_VISIBLE_DEVICES=1"
: >"$NVLOG"
out=$(cd "$T/b-plain" && RESVIEW_CONFIG=$T/gpu.json "$RUNTIME" --root "$T/runc-root" run p1 2>&1)
t_eq "shim: a plain container does not go through NVIDIA's runtime" "$(grep -c '^runtime' "$NVLOG")" "0"
t_contains "…and runs (runc)" "$out" "GPUS="
out=$(cd "$T/b-plain" && RESVIEW_CONFIG=$T/gpuall.json "$RUNTIME" --root "$T/runc-root" run p2 2>&1)
t_eq "shim: gpu.containers=all: every container goes through it" "$(grep -c '^runtime run' "$NVLOG")" "1"
t_contains "…and gets no GPU it did not ask for" "$out" "GPUS="
t_not_contains "…no device node" "$out" "nvidia"
# NVIDIA's runtime configured to call resview next (the other order, both at once): no loop
# (a bundle of its own: a run leaves NVIDIA's hook in config.json, which says NVIDIA's runtime ran)
rv_bundle "$T/b-gpu3" '.process.args = ["/bin/sh", "-c", "'"$show"'"] | .process.env += ["NVIDIA_VISIBLE_DEVICES=1"]'
: >"$NVLOG"
out=$(cd "$T/b-gpu3" && FAKE_NVIDIA_RUNTIMES=$RUNTIME:runc RESVIEW_CONFIG=$T/gpu.json "$RUNTIME" --root "$T/runc-root" run g3 2>&1)
t_eq "shim: NVIDIA's runtime names resview next: called once, no loop" "$(grep -c '^runtime run' "$NVLOG")" "1"
t_contains "…and the container runs with its GPU" "$out" "nvidia1"
# gone: the container starts without NVIDIA's runtime, with a warning
rv_config "$T/gone.json" '{"gpu": {"runtime": "/nonexistent/nvidia-container-runtime"}}'
out=$(cd "$T/b-gpu" && RESVIEW_CONFIG=$T/gone.json "$RUNTIME" --root "$T/runc-root" run g2 2>&1); rc=$?
t_eq "shim: gpu.runtime gone: the container still starts" "$rc" "0"
t_contains "…with a warning in the log" "$(cat "$T/resview.log")" "without NVIDIA's runtime"

# FUSE and a GPU (the s3fs case): exactly that GPU's device node
rv_bundle "$T/b-fuse" '.process.args = ["/bin/sh", "-c", "'"$show"'; test -c /dev/fuse && echo has-fuse"]
    | .process.env += ["NVIDIA_VISIBLE_DEVICES=0"] | .annotations["resview.io/fuse"] = "true"'
: >"$NVLOG"
out=$(cd "$T/b-fuse" && RESVIEW_CONFIG=$T/gpu.json "$RUNTIME" --root "$T/runc-root" run f1 2>&1)
t_contains "FUSE + GPU 0: /dev/fuse" "$out" "has-fuse"
t_contains "…GPU 0's device node" "$out" "nvidia0"
t_not_contains "…not GPU 1's" "$out" "nvidia1"
t_not_contains "…not GPU 2's" "$out" "nvidia2"
t_contains "…through NVIDIA's runtime" "$(cat "$NVLOG")" "runtime run NVIDIA_VISIBLE_DEVICES=0"
t_eq "…the device cgroup allows GPU 0 alone among the GPUs" \
    "$(jq -c '[.linux.resources.devices[] | select(.major == 195 and .allow) | .minor] | sort' "$T/b-fuse/config.json")" "[0,255]"
t_eq "…and no rule allows every char device" \
    "$(jq -c '[.linux.resources.devices[] | select(.allow and (.major == null or .major == -1) and (.type == "c" or .type == "a" or .type == null))] | length' "$T/b-fuse/config.json")" "0"
t_eq "…no capability added (CAP_SYS_ADMIN)" "$(jq -c '.process.capabilities.effective | index("CAP_SYS_ADMIN")' "$T/b-fuse/config.json")" "null"

# resview env: which source counted
jq '.annotations = {"cdi.k8s.io/nvidia-device-plugin_GPU-a": "k8s.device-plugin.nvidia.com/gpu=GPU-a"}' \
    "$T/b-plain/config.json" >"$T/cdi.json"
out=$("$CLI" env --spec "$T/cdi.json" 2>&1)
t_contains "resview env: gpus = 1 from the CDI annotation" "$out" "gpus    = 1	(CDI annotations: 1)"
jq '.process.env += ["NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"]
    | .mounts += [{destination: "/var/run/nvidia-container-devices/GPU-a", source: "/dev/null", type: "bind", options: ["bind"]},
                  {destination: "/var/run/nvidia-container-devices/GPU-b", source: "/dev/null", type: "bind", options: ["bind"]}]' \
    "$T/b-plain/config.json" >"$T/vm.json"
out=$("$CLI" env --spec "$T/vm.json" 2>&1)
t_contains "resview env: gpus = 2 from the device plugin's volume mounts" "$out" "gpus    = 2	(device plugin volume mounts"
t_contains "…SLURM_GPUS_PER_NODE=2" "$out" "SLURM_GPUS_PER_NODE=2"
# the same through the shim (it loads mounts only for this strategy)
rv_bundle "$T/b-vm" '.process.args = ["/bin/sh", "-c", "echo GPUS=$SLURM_GPUS_ON_NODE"]
    | .process.env += ["NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"]
    | .mounts += [{destination: "/var/run/nvidia-container-devices/GPU-a", source: "/dev/null", type: "bind", options: ["bind"]},
                  {destination: "/var/run/nvidia-container-devices/GPU-b", source: "/dev/null", type: "bind", options: ["bind"]}]'
out=$(cd "$T/b-vm" && RESVIEW_CONFIG=$T/config-plain.json "$RUNTIME" --root "$T/runc-root" run vm1 2>&1)
t_contains "shim: volume mounts of two GPUs: SLURM_GPUS_ON_NODE=2" "$out" "GPUS=2"
out=$(RESVIEW_CONFIG=$T/gpu.json "$CLI" env --spec "$T/vm.json" 2>&1)
t_contains "resview env: which runtime comes next, and why" "$out" "next    = $NVRT	(NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices: gpu.runtime)"

fi   # the shim
# --- 2. the node agent, containerd, the toolkit ---------------------------------
ctd_restartable || { echo "not ok - containerd did not start"; exit 1; }
CFG=$T/ctd/config.toml
# the restart script as a node's init runs it: containerd gets resview's configuration
sed -i "2i export RESVIEW_CONFIG=$T/etc/config.json" "$T/ctd-restart"
# the toolkit 1.18 on containerd 2.x: a node whose config.toml is version 3, as
# `containerd config migrate` writes it from the version 2 file (the toolkit 1.13
# knows version 2 only: its part keeps that file, which containerd 2.x migrates
# when it loads it)
CTD_MAJOR=$(ctd_version | cut -d. -f1)
if [ "$PART" = dropin ] && [ "${CTD_MAJOR:-1}" -ge 2 ]; then
    containerd --config "$CFG" config migrate >"$CFG.v3" 2>"$T/migrate.err" && grep -q '^version = 3' "$CFG.v3" ||
        { echo "not ok - containerd config migrate"; sed 's/^/#   /' "$T/migrate.err"; exit 1; }
    mv "$CFG.v3" "$CFG"
    echo "# containerd $CTD_MAJOR.x: config.toml migrated to version 3"
fi
"$T/ctd-restart"; : >"$T/ctd-restarts"
wait_for ctr --address "$CTD_SOCK" version || { echo "not ok - containerd restart"; exit 1; }
restarts() { wc -l <"$T/ctd-restarts"; }
R0=0
mark() { R0=$(restarts); }
delta() { echo $(( $(restarts) - R0 )); }
rv_image_tar "$T/layer.tar"
$PY "$TOP/hooks/kubernetes/image/oci-image.py" "$T/layer.tar" "$T/oci.tar" "$IMG" /bin/sleep 2147483647
ctr --address "$CTD_SOCK" -n k8s.io images import "$T/oci.tar" >/dev/null 2>&1
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"
mkdir -p "$T/payload/bin" "$T/payload/share/resview" "$T/etc"
cp "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook" "$T/payload/bin/"
cp "$TOP/profiles/seccomp.json" "$T/payload/share/resview/"
LX=$T/lxcfs-parent/lxcfs
AGENT=""
agent_start() { # LOGFILE [ENV...]
    local log=$1; shift
    env RESVIEW_NODE_SET_AS_DEFAULT=true "$@" setsid "$CLI" node run \
        --restart "command:$T/ctd-restart" --host-pid $$ --containerd-config "$CFG" --cri-socket "$CTD_SOCK" \
        --prefix "$T/opt" --payload "$T/payload" --lxcfs-dir "$LX" --resview-config "$T/etc/config.json" \
        --lock "$T/run/node.lock" >"$log" 2>&1 &
    AGENT=$!
}
agent_stop() {
    [ -n "$AGENT" ] || return 0
    kill "$AGENT" 2>/dev/null; wait "$AGENT" 2>/dev/null; AGENT=""
}
t_cleanup 'agent_stop; umount -l "$LX"'
# wait until the agent's log has had COUNT lines matching TEXT (30 s)
log_count() { grep -c -- "$2" "$1" 2>/dev/null; }
wait_log() { # LOG TEXT COUNT
    local i
    for i in $(seq 1 300); do [ "$(log_count "$1" "$2")" -ge "$3" ] && return 0; sleep 0.1; done
    echo "# waited for $3 x '$2' in $1:"; tail -5 "$1" | sed 's/^/#   /'; return 1
}
# a settled node: nothing restarts containerd for 4 s
settled() { local n; n=$(restarts); sleep 4; [ "$(restarts)" = "$n" ]; }
# wait until containerd was restarted N times in all (30 s)
wait_restarts() { local i; for i in $(seq 1 300); do [ "$(delta)" -ge "$1" ] && return 0; sleep 0.1; done; return 1; }

POD_N=0
# run_pod NAME ENV_JSON [HANDLER]: a pod (1 CPU, 256 MiB) as the kubelet makes it; prints its container id
run_pod() {
    local name env=$2
    POD_N=$(( $(cat "$T/podn" 2>/dev/null || echo 0) + 1 )); echo $POD_N >"$T/podn"   # run in $( )
    name=$1-$POD_N
    jq -n --arg img "$IMG" --arg name "$name" --argjson env "$env" '{apiVersion: "v1", kind: "Pod",
        metadata: {name: $name}, spec: {containers: [{name: "main", image: $img, command: ["/bin/sleep", "3600"],
        env: $env, resources: {limits: {cpu: "1", memory: "256Mi"}}}]}}' >"$T/$name.yaml"
    jq -n --arg sock "$CTD_SOCK" --arg m "$T/$name.yaml" --arg name "$name" --arg logs "$T/podlogs/$name" \
        --arg cg "$(pod_cgroup "$name")" '{socket: $sock, manifest: $m, name: $name, uid: ("uid-" + $name),
        log_dir: $logs, cgroup_parent: $cg, node_root: ""}' >"$T/$name.scenario"
    mkdir -p "$T/podlogs/$name"
    $PY "$TOP/tests/cri/kubelet.py" "$T" run-pod "$T/$name.scenario" 2>"$T/$name.err" >"$T/$name.ids"
    jq -r '"\(.pod) \(.containers.main)"' "$T/$name.ids" >>"$T/pods"
    jq -r '.containers.main' "$T/$name.ids"
    [ -s "$T/$name.ids" ] || sed 's/^/# run-pod: /' "$T/$name.err" >&2
}
stop_pods() {
    local pod cid
    while read -r pod cid; do
        $PY "$TOP/tests/cri/kubelet.py" "$T" stop-pod "$CTD_SOCK" "$pod" 0 "$cid" >/dev/null 2>&1
    done <"$T/pods"
    : >"$T/pods"
}
: >"$T/pods"
pexec() { $PY "$TOP/tests/cri/kubelet.py" "$T" exec "$CTD_SOCK" "$@" 2>&1; }
GPU_ENV='[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "1"}]'
# check_pods WHAT GPU(yes|no) [VIA]: a GPU pod (NVIDIA_VISIBLE_DEVICES=1, as
# the device plugin sets it) and a plain pod, both through containerd's
# default. VIA=nvidia: that default is NVIDIA's runtime, which runs resview
# next (so it runs for the plain pod too, once for each pod).
check_pods() {
    local what=$1 gpu=$2 via=${3:-resview} id out
    : >"$NVLOG"
    id=$(run_pod gpu "$GPU_ENV")
    out=$(pexec "$id" -- /bin/sh -c 'ls /dev; grep MemTotal /proc/meminfo; env')
    if [ "$gpu" = yes ]; then
        t_contains "$what: GPU pod: through NVIDIA's runtime" "$(cat "$NVLOG")" "runtime create NVIDIA_VISIBLE_DEVICES=1"
        t_eq "$what: GPU pod: NVIDIA's runtime run once for its container, no loop" \
            "$(grep -c '^runtime create NVIDIA_VISIBLE_DEVICES=1' "$NVLOG")" "1"
        t_contains "$what: GPU pod: its GPU's device node" "$out" "nvidia1"
        t_not_contains "$what: GPU pod: no other GPU" "$out" "nvidia0"
        t_contains "$what: GPU pod: SLURM_GPUS_ON_NODE=1" "$out" "SLURM_GPUS_ON_NODE=1"
    else
        t_eq "$what: GPU pod: no NVIDIA runtime on the node, none called" "$(grep -c '^runtime' "$NVLOG")" "0"
    fi
    t_contains "$what: GPU pod: its views (MemTotal 256 MiB)" "$out" "262144 kB"
    t_contains "$what: GPU pod: GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
    : >"$NVLOG"
    id=$(run_pod plain '[]')
    out=$(pexec "$id" -- /bin/sh -c 'ls /dev; grep MemTotal /proc/meminfo; env')
    if [ "$via" = nvidia ]; then
        t_eq "$what: plain pod: through NVIDIA's runtime (the default), once for the sandbox and once for the container" \
            "$(grep -c '^runtime create' "$NVLOG")" "2"
    else
        t_eq "$what: plain pod: NVIDIA's runtime not called" "$(grep -c '^runtime' "$NVLOG")" "0"
    fi
    t_contains "$what: plain pod: its views (MemTotal 256 MiB)" "$out" "262144 kB"
    t_not_contains "$what: plain pod: no GPU" "$out" "nvidia"
}
cri_default() { $PY - "$T" "$CTD_SOCK" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import grpc, cri_pb2 as pb, cri_pb2_grpc as pbg
st = pbg.RuntimeServiceStub(grpc.insecure_channel("unix://" + sys.argv[2])).Status(pb.StatusRequest(verbose=True), timeout=10)
print(json.loads(st.info["config"])["containerd"]["defaultRuntimeName"])
PY
}
export RUNTIME_DIR=$NVDIR RESTART_CMD=$T/ctd-restart CONTAINERD_BIN=containerd
RVRT=$T/opt/current/bin/resview-runtime      # resview's BinaryName on this "node"
NVCONF=$NVDIR/.config/nvidia-container-runtime/config.toml
ALOG=""
# toolkit WHAT ARGS...: one change by the toolkit (its restart included); the
# agent ($ALOG) reads containerd's files again and is ready again; then the
# node settles (nothing restarts containerd for 4 s) and containerd was
# restarted exactly once, by the toolkit
# (HELD=1: the agent is stopped while the toolkit writes and restarts, as a
# real toolkit's restart is done before the agent looks, a second later; the
# stand-in's, waiting for containerd to exit, can take longer on a busy
# machine: the agent then writes resview's default before containerd reads
# config.toml, and containerd comes back with resview as its default - valid
# too, but not the case under test)
toolkit() {
    local what=$1 n; shift
    mark
    n=$(log_count "$ALOG" "node ready in")
    [ -z "${HELD:-}" ] || kill -STOP "$AGENT"
    "$TK" "$@"
    [ -z "${HELD:-}" ] || kill -CONT "$AGENT"
    [ -z "$ALOG" ] || wait_log "$ALOG" "node ready in" $((n + 1))
    t_ok "$what: a settled node" settled
    t_eq "$what: containerd restarted once, by the toolkit ($(delta) in all)" "$(delta)" "1"
}

# what the toolkit 1.13 writes from this config.toml, made aside (its output
# depends on its input alone): to compare with after resview's changes
aside113() { # NAME: $T/NAME.toml and $T/NAME-nv/.config/nvidia-container-runtime/config.toml
    cp "$CFG" "$T/$1.toml"
    RUNTIME_DIR=$T/$1-nv RESTART_CMD="" "$TK" setup 1.13 "$T/$1.toml"
    sed -i "s#$T/$1-nv/#$NVDIR/#" "$T/$1.toml"   # its entries name NVIDIA's runtime where it is
}
first_runtime() { python3 -c 'import sys, tomllib
print(tomllib.load(open(sys.argv[1], "rb"))["nvidia-container-runtime"]["runtimes"][0])' "$1"; }
# config.toml as the toolkit wrote it, less resview's two tables (its unmarked
# entry, which the toolkit copied from the file it loaded)
without_resview() { awk '/^ *\[.*runtimes\.resview(\.options)?\]$/ {skip = 1; next} /^ *\[/ {skip = 0} !skip' "$1"; }
# 2a. resview first (both parts), then the toolkit 1.13 on its defaults
mark
ALOG=$T/agent1.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_eq "resview first: containerd restarted once" "$(delta)" "1"
t_contains "…no NVIDIA runtime yet" "$(cat "$ALOG")" "gpu: no NVIDIA runtime"
t_not_contains "…config.json without gpu" "$(cat "$T/etc/config.json")" "gpu"

if [ "$PART" = toolkit113 ]; then
aside113 tk113a
mark
kill -STOP "$AGENT"   # as HELD=1 in toolkit() below
$TK setup 1.13 "$CFG"
kill -CONT "$AGENT"
t_ok "toolkit 1.13 installs: its own restart" test "$(delta)" -ge 1
wait_log "$ALOG" "gpu: NVIDIA's runtime" 1 && wait_log "$ALOG" "node ready in" 2
t_ok "…the agent saw it: a settled node" settled
t_eq "…one restart, the toolkit's: resview does not take the default back" "$(delta)" "1"
t_eq "…the running containerd's default is nvidia" "$(cri_default)" "nvidia"
t_eq "…NVIDIA's runtime runs resview next: resview put first in its runtimes" "$(first_runtime "$NVCONF")" "$RVRT"
t_ok "…the rest of NVIDIA's list as the toolkit wrote it (docker-runc, runc)" grep -q "\"$RVRT\", \"docker-runc\", \"runc\"" "$NVCONF"
t_ok "…the toolkit's file kept beside it" cmp "$NVCONF.resview-backup" "$T/tk113a-nv/.config/nvidia-container-runtime/config.toml"
t_contains "…the agent says so" "$(cat "$ALOG")" "put resview's runtime first in its runtimes"
t_contains "…config.toml: resview's default, for containerd's next start" "$(cat "$CFG")" 'default_runtime_name = "resview"  # resview-was'
t_contains "…config.json chains to NVIDIA's runtime" "$(cat "$T/etc/config.json")" "\"runtime\": \"$NVRT\", \"containers\": \"gpu\""
t_contains "…config.toml: the toolkit's entries" "$(cat "$CFG")" "runtimes.nvidia.options]"
check_pods "resview first, toolkit 1.13 second (on its defaults)" yes nvidia
# resview's agent restarted: its edit is in place, nothing restarts containerd
agent_stop
mark
ALOG=$T/agent1a.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_ok "resview's agent restarted beside the toolkit 1.13 on its defaults: a settled node" settled
t_eq "…containerd not restarted" "$(delta)" "0"
t_eq "…NVIDIA's runtime still runs resview next" "$(first_runtime "$NVCONF")" "$RVRT"
# the toolkit 1.13 on its defaults restarted: cleanup (what its uninstall does), then setup
toolkit "toolkit 1.13 on its defaults stops (cleanup)" cleanup 1.13 "$CFG"
t_eq "…resview the default (config.toml's)" "$(cri_default)" "resview"
t_ok "…NVIDIA's runtime configuration put back byte for byte (no longer needed)" \
    cmp "$NVCONF" "$T/tk113a-nv/.config/nvidia-container-runtime/config.toml"
t_ok "…no copy of resview's left" test ! -e "$NVCONF.resview-backup"
check_pods "toolkit 1.13 on its defaults stopped, resview stays" no
aside113 tk113b
HELD=1 toolkit "toolkit 1.13 on its defaults starts again (rewrites NVIDIA's runtime configuration)" setup 1.13 "$CFG"
t_eq "…nvidia the default" "$(cri_default)" "nvidia"
t_eq "…resview first in NVIDIA's runtimes again" "$(first_runtime "$NVCONF")" "$RVRT"
t_ok "…the toolkit's new file kept" cmp "$NVCONF.resview-backup" "$T/tk113b-nv/.config/nvidia-container-runtime/config.toml"
check_pods "toolkit 1.13 on its defaults restarted" yes nvidia

# resview uninstalled while the toolkit 1.13 on its defaults stays, a pod made
# through NVIDIA's runtime and resview living on across it
stop_pods
keep=$(run_pod kept '[]')
agent_stop
mark
ALOG=$T/agent1c.log
agent_start "$ALOG" RESVIEW_NODE_MODE=uninstall
wait_log "$ALOG" "container(s) started through resview still exist" 1
t_eq "resview uninstalled beside the toolkit 1.13: one restart" "$(delta)" "1"
t_contains "…a pod made before keeps its views" "$(pexec "$keep" -- grep MemTotal /proc/meminfo)" "262144 kB"
t_contains "…and the binaries stay for it" "$(cat "$ALOG")" "binaries stay in"
stop_pods   # NVIDIA's runtime now runs runc next: resview is not called to stop it
t_eq "…it is stopped and removed all the same (NVIDIA's runtime, runc)" \
    "$(ctr --address "$CTD_SOCK" -n k8s.io containers ls -q | grep -c "$keep")" "0"
# its records go with watch's sweep (every 60 s); repair does the same at once
RESVIEW_CONFIG=$T/etc/config.json "$CLI" repair >"$T/repair.out" 2>&1
t_contains "…its record dropped (the container is gone)" "$(cat "$T/repair.out")" "dropped"
wait_log "$ALOG" "nothing of resview is left" 1
agent_stop
t_eq "…nvidia the default" "$(cri_default)" "nvidia"
t_ok "…NVIDIA's runtime configuration byte for byte as the toolkit wrote it" \
    cmp "$NVCONF" "$T/tk113b-nv/.config/nvidia-container-runtime/config.toml"
t_ok "…no copy of resview's left" test ! -e "$NVCONF.resview-backup"
t_eq "…config.toml byte for byte the toolkit's, less resview's entry" "$(cat "$CFG"; echo .)" "$(without_resview "$T/tk113b.toml"; echo .)"
t_not_contains "…no resview entry in it" "$(cat "$CFG")" "runtimes.resview"
t_not_contains "…nor resview as its default" "$(cat "$CFG")" '"resview"'

: >"$NVLOG"
id=$(run_pod gpu "$GPU_ENV")
out=$(pexec "$id" -- /bin/sh -c 'ls /dev; env')
t_contains "…a GPU pod: through NVIDIA's runtime" "$(cat "$NVLOG")" "runtime create NVIDIA_VISIBLE_DEVICES=1"
t_contains "…has its GPU" "$out" "nvidia1"
t_not_contains "…and nothing of resview" "$out" "SLURM_GPUS_ON_NODE"
stop_pods
# and installed again (the toolkit first, then resview): one restart, resview the default
mark
ALOG=$T/agent1d.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_ok "toolkit 1.13 on its defaults first, then resview: a settled node" settled
t_eq "…one restart by resview" "$(delta)" "1"
t_eq "…resview the default" "$(cri_default)" "resview"
t_eq "…NVIDIA's runtime configuration not edited (not needed)" "$(first_runtime "$NVCONF")" "docker-runc"
check_pods "toolkit 1.13 on its defaults first, resview second" yes

# 2b. the toolkit restarted (its pod: cleanup, then setup), configured as
# hooks/kubernetes/README.md "GPU nodes" says: CONTAINERD_SET_AS_DEFAULT=false, or its runtime
# running resview next (NVIDIA_CONTAINER_RUNTIME_RUNTIMES)
toolkit "toolkit 1.13 pod stops (cleanup)" cleanup 1.13 "$CFG"
t_eq "…resview the default" "$(cri_default)" "resview"
CONTAINERD_SET_AS_DEFAULT=false toolkit "toolkit 1.13 (CONTAINERD_SET_AS_DEFAULT=false) starts" setup 1.13 "$CFG"
t_eq "…resview still the default" "$(cri_default)" "resview"
check_pods "toolkit 1.13 with CONTAINERD_SET_AS_DEFAULT=false" yes
toolkit "toolkit 1.13 pod stops again" cleanup 1.13 "$CFG"
HELD=1 NVIDIA_CONTAINER_RUNTIME_RUNTIMES=$RVRT,runc toolkit "toolkit 1.13 (its runtime running resview next) starts" setup 1.13 "$CFG"
t_eq "…nvidia the default" "$(cri_default)" "nvidia"
t_contains "…the agent took it as it is" "$(cat "$ALOG")" "its default runtime \`nvidia\` is NVIDIA's, which runs resview next"
check_pods "toolkit 1.13 the default, running resview next" yes nvidia
# resview's agent restarted (a rollout, an upgrade): nothing restarts containerd
agent_stop
mark
ALOG=$T/agent1b.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_ok "resview's agent restarted beside the toolkit: a settled node" settled
t_eq "…containerd not restarted" "$(delta)" "0"
t_contains "…it finds NVIDIA's runtime again" "$(cat "$ALOG")" "gpu: NVIDIA's runtime \`$NVRT\`"

# 2c. the toolkit uninstalled while resview stays
toolkit "toolkit 1.13 uninstalled" cleanup 1.13 "$CFG"
t_not_contains "…config.json no longer chains" "$(cat "$T/etc/config.json")" "gpu"
t_contains "…resview's entry is still in config.toml" "$(cat "$CFG")" "runtimes.resview.options]"
t_eq "…resview still the default" "$(cri_default)" "resview"
check_pods "toolkit uninstalled" no


# 2g. the toolkit 1.13 first, then resview (resview uninstalled first)
agent_stop
stop_pods
mark
ALOG=$T/agent4.log
agent_start "$ALOG" RESVIEW_NODE_MODE=uninstall
wait_log "$ALOG" "nothing of resview is left" 1
agent_stop
t_eq "resview uninstalled: one restart" "$(delta)" "1"
t_eq "…the default is runc again" "$(cri_default)" "runc"
ALOG=""
toolkit "toolkit 1.13 first" setup 1.13 "$CFG"
mark
ALOG=$T/agent5.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_ok "toolkit 1.13 first, resview second: a settled node" settled
t_eq "…one restart by resview" "$(delta)" "1"
t_eq "…resview the default" "$(cri_default)" "resview"
t_contains "…chained to NVIDIA's runtime" "$(cat "$T/etc/config.json")" "\"runtime\": \"$NVRT\""
check_pods "toolkit 1.13 first, resview second" yes
agent_stop
fi   # 2a to 2c, 2g

if [ "$PART" = dropin ]; then
# 2d. the toolkit 1.18 (drop-in), on its defaults, installed beside resview:
# it copies the merged CRI table (resview's entry with it), makes `nvidia` the
# default, and runs containerd's default of the time (resview) next
toolkit "toolkit 1.18 installed beside resview" setup 1.18 "$CFG"
t_ok "…its drop-in" test -f "$T/ctd/config.d/99-nvidia.toml"
t_eq "…its runtime runs resview next" "$(grep -c -- "\"$RVRT\"" "$NVCONF")" "1"
t_eq "…nvidia the default" "$(cri_default)" "nvidia"
t_ok "…no drop-in of resview's (NVIDIA's file has all it needs)" test ! -e "$T/ctd/config.d/99-zz-resview.toml"
check_pods "toolkit 1.18 beside resview" yes nvidia
toolkit "toolkit 1.18 pod stops (cleanup)" cleanup 1.18 "$CFG"
t_eq "…resview the default" "$(cri_default)" "resview"
toolkit "toolkit 1.18 pod starts again" setup 1.18 "$CFG"
t_eq "…nvidia the default, running resview next" "$(cri_default)" "nvidia"
check_pods "toolkit 1.18 restarted beside resview" yes nvidia
cp "$T/ctd/config.d/99-nvidia.toml" "$T/99-nvidia.before"
cp "$NVCONF" "$T/nvconf.before"

# 2e. resview uninstalled while the toolkit stays (its pods deleted first)
stop_pods
agent_stop
mark
ALOG=$T/agent2.log
agent_start "$ALOG" RESVIEW_NODE_MODE=uninstall
wait_log "$ALOG" "uninstalled from containerd\|makes resview containerd's default" 1
t_ok "resview uninstall: a settled node" settled
t_ok "…NVIDIA's drop-in byte for byte" cmp "$T/ctd/config.d/99-nvidia.toml" "$T/99-nvidia.before"
t_ok "…NVIDIA's runtime configuration byte for byte" cmp "$NVCONF" "$T/nvconf.before"
t_ok "…no drop-in of resview's" test ! -e "$T/ctd/config.d/99-zz-resview.toml"
t_not_contains "…config.toml: no resview entry" "$(cat "$CFG")" "runtimes.resview"
t_not_contains "…config.toml: resview not the default" "$(cat "$CFG")" "\"resview\""
t_eq "…the toolkit's default stays" "$(cri_default)" "nvidia"
t_contains "…NVIDIA's copy of the entry named" "$(cat "$ALOG")" "keeps a \`resview\` runtime entry until the toolkit writes it again"
t_contains "…and NVIDIA's runtime running resview next" "$(cat "$ALOG")" "runs resview's runtime next (\`$NVCONF\`"
wait_log "$ALOG" "nothing of resview is left" 1
t_eq "…restarts: none (NVIDIA's file holds the default; a restart would change nothing)" "$(delta)" "0"
agent_stop
# a GPU pod after it: NVIDIA's runtime finds resview's runtime gone, runs runc
: >"$NVLOG"
id=$(run_pod gpu "$GPU_ENV")
out=$(pexec "$id" -- /bin/sh -c 'ls /dev; env')
t_contains "after resview's uninstall: a GPU pod through NVIDIA's runtime" "$(cat "$NVLOG")" "runtime create NVIDIA_VISIBLE_DEVICES=1"
t_contains "…has its GPU" "$out" "nvidia1"
t_not_contains "…and nothing of resview" "$out" "SLURM_GPUS_ON_NODE"
stop_pods

# 2f. the toolkit first (1.18: its pod restarted after resview's uninstall,
# cleanup when it ends, setup when it starts), then resview
ALOG=""
toolkit "toolkit 1.18 restarted without resview: cleanup" cleanup 1.18 "$CFG"
toolkit "…setup" setup 1.18 "$CFG"
t_not_contains "…its drop-in no longer names resview" "$(cat "$T/ctd/config.d/99-nvidia.toml")" "runtimes.resview"
t_not_contains "…nor its runtime's configuration" "$(cat "$NVCONF")" "$RVRT"
mark
ALOG=$T/agent3.log
agent_start "$ALOG"
wait_log "$ALOG" "node ready in" 1
t_ok "resview second: a settled node" settled
t_eq "…one restart by resview" "$(delta)" "1"
t_ok "…its drop-in beside NVIDIA's (which lacks its entry)" test -f "$T/ctd/config.d/99-zz-resview.toml"
t_eq "…resview the default" "$(cri_default)" "resview"
check_pods "toolkit 1.18 first, resview second" yes
# the toolkit restarted now: its cleanup takes NVIDIA's file away (resview's
# copy of it goes too, no restart: the running containerd has what resview
# wants), its setup copies resview's default and runs resview next
toolkit "toolkit 1.18 restarted beside resview: cleanup" cleanup 1.18 "$CFG"
t_ok "…resview's drop-in removed with NVIDIA's" test ! -e "$T/ctd/config.d/99-zz-resview.toml"
toolkit "…setup" setup 1.18 "$CFG"
t_ok "…no drop-in of resview's" test ! -e "$T/ctd/config.d/99-zz-resview.toml"
t_eq "…nvidia the default, running resview next" "$(cri_default)" "nvidia"
check_pods "toolkit 1.18 restarted after resview" yes nvidia
# the toolkit uninstalled: resview the default again, no restart of its own
toolkit "toolkit 1.18 uninstalled" cleanup 1.18 "$CFG"
t_eq "…resview the default" "$(cri_default)" "resview"
check_pods "toolkit 1.18 uninstalled" no
agent_stop

fi   # 2d to 2f
