#!/bin/bash
# 42-containerd.sh - containerd (Debian) on a private socket: `ctr run
# --runc-binary resview-runtime`, and the runtime entry written by `resview
# configure --engine=containerd` exercised through the CRI API with
# runtime_handler "resview" by a real gRPC client (tests/cri/cri-run.py), so
# that containerd's use of BinaryName and of pod_annotations /
# container_annotations is proven.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3   # Debian's grpcio lives there

# CRI pods run without seccomp by default: FUSE then uses the shipped profile
rv_config "$T/config.json" "{\"fuse\": {\"allowed\": true, \"seccomp_profile\": \"$TOP/profiles/seccomp.json\"}}"
IMG=resview.test/busybox:1

# The CRI plugin as a node would have it (runc entry with options), offline.
mkdir -p "$T/ctd" "$T/cni" "$T/podlogs"
ctd_cri=$(ctd_cri_toml "$IMG")
# write the file ctd_start would write, then register resview in it
CTD_SOCK=$T/ctd/ctd.sock
ctd_start "$ctd_cri" >/dev/null 2>&1; ctd_stop
cp "$T/ctd/config.toml.base" "$T/ctd/config.toml"
cp "$T/ctd/config.toml" "$T/ctd/config.toml.orig"
t_ok "configure --engine=containerd on the test config.toml" \
    "$CLI" configure --engine=containerd --config "$T/ctd/config.toml" --runtime-path "$RUNTIME"
t_contains "runc options copied (Root)" "$(cat "$T/ctd/config.toml")" "Root = \"$T/ctd/runc-root\""
ctd_start "$ctd_cri" || exit 1
t_contains "containerd loaded the resview runtime entry" \
    "$(ctr --address "$CTD_SOCK" plugins ls 2>/dev/null | grep cri)" "ok"

# image: busybox rootfs, entrypoint sleeps (it is also the sandbox image)
rv_image_tar "$T/layer.tar"
$PY "$TOP/hooks/kubernetes/image/oci-image.py" "$T/layer.tar" "$T/oci.tar" "$IMG" /bin/sleep 2147483647
for ns in k8s.io default; do
    ctr --address "$CTD_SOCK" -n $ns images import "$T/oci.tar" >/dev/null 2>&1
done
t_contains "image imported offline" "$(ctr --address "$CTD_SOCK" -n k8s.io images ls -q)" "$IMG"

# 1. ctr run --runc-binary
out=$(ctr --address "$CTD_SOCK" run --rm --runc-binary "$RUNTIME" --cpus 1.5 --memory-limit 536870912 \
      --cgroup "$CG_PARENT/ctr1" "$IMG" ctr1 /bin/env 2>&1)
t_contains "ctr run --runc-binary resview-runtime --cpus 1.5: GOMAXPROCS=2" "$out" "GOMAXPROCS=2"
t_contains "ctr run --runc-binary: SLURM_MEM_PER_NODE=512" "$out" "SLURM_MEM_PER_NODE=512"

# 2. CRI with runtime_handler "resview"
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"
t_ok "cri.proto matches the CRI API compiled into containerd" $PY "$TOP/tests/cri/check-proto.py" "$T" "$(command -v containerd)"

scenario() { # NAME POD_ANNOTATIONS_JSON CONTAINERS_JSON [HANDLER]
    jq -n --arg sock "$CTD_SOCK" --arg name "$1" --arg logs "$T/podlogs/$1" --arg cg "$(pod_cgroup "$1")" \
        --argjson pa "$2" --argjson cs "$3" --arg h "${4-resview}" \
        '{socket: $sock, handler: $h,
          pod: {name: $name, uid: ("uid-" + $name), namespace: "default", log_dir: $logs,
                cgroup_parent: $cg, annotations: $pa}, containers: $cs}'
}
cnt='[{"name": "plain", "image": "'$IMG'", "command": ["/bin/env"],
       "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912},
      {"name": "optout", "image": "'$IMG'", "command": ["/bin/env"],
       "cpu_period": 100000, "cpu_quota": 150000, "annotations": {"resview.io/env": "false"}}]'
cnt=$(jq --arg img "$IMG" '. + [{name: "fuse", image: $img, annotations: {"resview.io/fuse": "true"},
    command: ["/bin/sh", "-c", "test -c /dev/fuse && echo has-fuse; c=$(grep CapEff /proc/self/status | awk \"{print \\$2}\"); echo sysadmin=$(( 0x$c >> 21 & 1 ))"]}]' <<<"$cnt")
scenario pod1 '{}' "$cnt" >"$T/pod1.json"
mkdir -p "$T/podlogs/pod1"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/pod1.json" 2>"$T/cri.err")
t_eq "CRI: RunPodSandbox/CreateContainer/StartContainer with handler resview" \
    "$(jq -r '.plain.exit_code' <<<"$res" 2>/dev/null)" "0"
[ -s "$T/cri.err" ] && sed 's/^/#   /' "$T/cri.err" | tail -5
plain=$(jq -r '.plain.log' <<<"$res" 2>/dev/null)
t_contains "CRI container through BinaryName=resview-runtime: GOMAXPROCS=2" "$plain" "GOMAXPROCS=2"
t_contains "CRI container: SLURM_MEM_PER_NODE=512" "$plain" "SLURM_MEM_PER_NODE=512"
t_contains "the shim logged that container" "$(cat "$T/resview.log")" "$(jq -r '.plain.id' <<<"$res")"
t_not_contains "container annotation resview.io/env=false passed through (container_annotations)" \
    "$(jq -r '.optout.log' <<<"$res")" "GOMAXPROCS"
t_contains "that container did run" "$(jq -r '.optout.log' <<<"$res")" "PATH="
t_contains "CRI annotation resview.io/fuse=true: /dev/fuse" "$(jq -r '.fuse.log' <<<"$res")" "has-fuse"
t_contains "CRI annotation resview.io/fuse=true: no capability added (the broker mounts)" "$(jq -r '.fuse.log' <<<"$res")" "sysadmin=0"

# In-place resize: UpdateContainerResources from 2 CPUs / 2 GiB to 1 CPU / 512 MiB,
# as the kubelet asks it; a new exec session gets the new values (no LXCFS
# here: the views follow the cgroup by themselves, 38-resize and 41-docker).
rsz='[{"name": "r", "image": "'$IMG'", "command": ["/bin/sleep", "300"],
       "cpu_period": 100000, "cpu_quota": 200000, "memory": 2147483648,
       "update": {"cpu_period": 100000, "cpu_quota": 100000, "memory": 536870912,
                  "exec": ["/bin/sh", "-c", "env; grep MemTotal /proc/meminfo"]}}]'
scenario resize '{}' "$rsz" >"$T/resize.json"
mkdir -p "$T/podlogs/resize"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/resize.json" 2>>"$T/cri.err")
ex=$(jq -r '.r.exec_log' <<<"$res" 2>/dev/null)
t_contains "CRI UpdateContainerResources to 1 CPU / 512 MiB: a new exec reads GOMAXPROCS=1" "$ex" "GOMAXPROCS=1"
t_contains "CRI resize: ... SLURM_MEM_PER_NODE=512" "$ex" "SLURM_MEM_PER_NODE=512"

scenario pod2 '{"resview.io/env": "false"}' \
    '[{"name": "c", "image": "'$IMG'", "command": ["/bin/env"], "cpu_period": 100000, "cpu_quota": 150000}]' >"$T/pod2.json"
mkdir -p "$T/podlogs/pod2"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/pod2.json" 2>>"$T/cri.err")
t_contains "pod annotation: that container ran" "$(jq -r '.c.log' <<<"$res")" "PATH="
t_not_contains "pod annotation resview.io/env=false passed through (pod_annotations)" \
    "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS"

# --set-as-default: containerd reads default_runtime_name = "resview" (changed in place)
ctd_stop
t_ok "configure --set-as-default" "$CLI" configure --engine=containerd --config "$T/ctd/config.toml" \
    --runtime-path "$RUNTIME" --set-as-default
t_ok "default_runtime_name changed in place, old line kept" grep -qE \
    'default_runtime_name = "resview"  # resview-was [0-9a-f]{16}:     default_runtime_name = "runc"$' "$T/ctd/config.toml"
ctd_start "$ctd_cri" || exit 1
scenario pod3 '{}' '[{"name": "c", "image": "'$IMG'", "command": ["/bin/env"], "cpu_period": 100000, "cpu_quota": 150000}]' "" >"$T/pod3.json"
mkdir -p "$T/podlogs/pod3"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/pod3.json" 2>>"$T/cri.err")
t_contains "no runtime handler: the default (resview) runs it: GOMAXPROCS=2" "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS=2"

ctd_stop
t_ok "configure --uninstall" "$CLI" configure --engine=containerd --config "$T/ctd/config.toml" --uninstall
t_ok "config.toml restored byte for byte" cmp "$T/ctd/config.toml" "$T/ctd/config.toml.orig"
