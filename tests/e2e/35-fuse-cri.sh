#!/bin/bash
# FUSE through containerd's CRI API (what the kubelet calls), with a Python
# CRI client (tests/cri/cri-run.py), containerd started on private sockets:
# - runtime handler `resview` and the pod annotation resview.io/fuse: "true"
#   (passed by pod_annotations): bindfs and s3fs (against an S3 server on
#   loopback; the pod uses the host network) mount, read, write, unmount with
#   no capability added;
# - fuse.namespaces: a pod of a namespace not listed is refused with one line
#   (the namespace comes from containerd's own sandbox-namespace annotation);
# - the FUSE runtime name as a handler (`resview-fuse`, what a RuntimeClass
#   names): FUSE without any annotation (sshfs against an sshd on loopback).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
source "$TOP/tests/fuse/lib.sh"
PY=/usr/bin/python3   # Debian's grpcio lives there

for tool in containerd ctr bindfs sshfs s3fs npm jq; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; exit 1; }
done
fuse_probe_build || exit 1
sshd_start || exit 1
s3rver_start || exit 1
# CRI pods run without seccomp by default: FUSE then uses the shipped profile.
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" \
    '{fuse: {allowed: true, namespaces: ["team-a"], seccomp_profile: $p}}')"
mkdir -p "$T/bin" && ln -s "$RUNTIME" "$T/bin/resview-runtime-fuse"
IMG=resview.test/fuse:1

mkdir -p "$T/ctd" "$T/cni" "$T/podlogs"
runtime_entry() { # NAME BINARY
    printf '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n' "$1"
    printf '      runtime_type = "io.containerd.runc.v2"\n'
    printf '      pod_annotations = ["resview.io/*"]\n'
    printf '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n' "$1"
    printf '        BinaryName = "%s"\n        Root = "%s"\n        SystemdCgroup = false\n' "$2" "$T/ctd/runc-root"
}
ctd_cri="[plugins.\"io.containerd.grpc.v1.cri\"]
  sandbox_image = \"$IMG\"
  restrict_oom_score_adj = true
  stream_server_address = \"127.0.0.1\"
  stream_server_port = \"0\"
  [plugins.\"io.containerd.grpc.v1.cri\".cni]
    bin_dir = \"$T/cni\"
    conf_dir = \"$T/cni\"
  [plugins.\"io.containerd.grpc.v1.cri\".containerd]
    default_runtime_name = \"runc\"
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]
      runtime_type = \"io.containerd.runc.v2\"
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]
        Root = \"$T/ctd/runc-root\"
        SystemdCgroup = false
$(runtime_entry resview "$RUNTIME")
$(runtime_entry resview-fuse "$T/bin/resview-runtime-fuse")"
ctd_start "$ctd_cri" || exit 1

fuse_clients_rootfs "$T/rootfs"
tar -C "$T/rootfs" -cf "$T/layer.tar" .
$PY "$TOP/hooks/kubernetes/image/oci-image.py" "$T/layer.tar" "$T/oci.tar" "$IMG" /bin/sleep 2147483647
ctr --address "$CTD_SOCK" -n k8s.io images import "$T/oci.tar" >/dev/null 2>&1
t_contains "image with the FUSE clients imported offline" "$(ctr --address "$CTD_SOCK" -n k8s.io images ls -q)" "$IMG"
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"

scenario() { # NAME NAMESPACE HANDLER POD_ANNOTATIONS_JSON CONTAINERS_JSON
    mkdir -p "$T/podlogs/$1"
    jq -n --arg sock "$CTD_SOCK" --arg name "$1" --arg ns "$2" --arg h "$3" --arg logs "$T/podlogs/$1" \
        --arg cg "$(pod_cgroup "$1")" --argjson pa "$4" --argjson cs "$5" \
        '{socket: $sock, handler: $h,
          pod: {name: $name, uid: ("uid-" + $name), namespace: $ns, log_dir: $logs,
                cgroup_parent: $cg, annotations: $pa}, containers: $cs}' >"$T/$1.json"
}
container() { # NAME CLIENT
    jq -n --arg n "$1" --arg img "$IMG" --arg s "$(client_script "$2" "/mnt/$1")" \
        '{name: $n, image: $img, command: ["/bin/sh", "-c", $s]}'
}

# containerd's default capabilities for a CRI container.
CAP_ENGINE=$(cap_hex 0 1 3 4 5 6 7 8 10 13 18 27 29 31)

scenario fuse1 team-a resview '{"resview.io/fuse": "true"}' "$(jq -s . <(container bindfs bindfs) <(container s3fs s3fs))"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/fuse1.json" 2>"$T/cri.err")
[ -s "$T/cri.err" ] && sed 's/^/#   /' "$T/cri.err" | tail -5
check_client "CRI handler resview, pod annotation, bindfs" bindfs "$(jq -r '.bindfs.log' <<<"$res")"
check_client "CRI handler resview, pod annotation, s3fs" s3fs "$(jq -r '.s3fs.log' <<<"$res")"

scenario fuse2 team-b resview '{"resview.io/fuse": "true"}' "[$(container bindfs bindfs)]"
$PY "$TOP/tests/cri/cri-run.py" "$T" "$T/fuse2.json" >/dev/null 2>"$T/cri2.err"
t_contains "CRI, namespace team-b not in fuse.namespaces: CreateContainer refused, saying why" \
    "$(cat "$T/cri2.err")" "the Kubernetes namespace \`team-b\` is not in fuse.namespaces"

scenario fuse3 team-a resview-fuse '{}' "[$(container sshfs sshfs)]"
res=$($PY "$TOP/tests/cri/cri-run.py" "$T" "$T/fuse3.json" 2>"$T/cri3.err")
[ -s "$T/cri3.err" ] && sed 's/^/#   /' "$T/cri3.err" | tail -5
check_client "CRI handler resview-fuse (a RuntimeClass), no annotation, sshfs" sshfs "$(jq -r '.sshfs.log' <<<"$res")"
t_eq "no broker of this test is left" "$(pgrep -fc "resview-fuse-broker .*$T/")" "0"
