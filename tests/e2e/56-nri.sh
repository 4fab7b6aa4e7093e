#!/bin/bash
# 56-nri.sh - `resview nri`, the NRI plugin, with a real containerd: NRI on
# (as containerd 2.x ships it) on a private socket, pods created through the
# CRI API with the default runtime (runc: no runtime class, no runtime entry
# of ours), and the plugin's adjustment checked inside the containers: the
# variables (main process and an exec session), /proc/meminfo from LXCFS, the
# opt-outs; doctor's NRI lines (NRI on, the plugin registered; killed: not
# registered); then the plugin killed (containers are created unchanged, none
# blocked), restarted, and containerd restarted under it (it registers again).
# A containerd without NRI (before 1.7: Debian 12's 1.6) is one `ok` line
# saying so: the test needs Debian 13 or later (tests/v2, make e2e-next).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3   # Debian's grpcio lives there

ver=$(ctd_version)
case $ver in
    ""|0.*|1.[0-6].*|1.[0-6]) echo "ok 1 - skipped: containerd ${ver:-(none)} has no NRI (1.7 and later have it, 2.x on by default)"; exit 0 ;;
esac
$PY -c 'import grpc, grpc_tools' 2>/dev/null ||
    { echo "ok 1 - skipped: python3-grpcio and python3-grpc-tools are missing (the CRI client)"; exit 0; }

LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
IMG=resview.test/busybox:1
NRI_SOCK=$T/nri.sock
mkdir -p "$T/nri-plugins" "$T/nri-conf" "$T/podlogs"
# NRI as containerd 2.x has it on by default, on a socket of this test
nri_toml="[plugins.\"io.containerd.nri.v1.nri\"]
  disable = false
  socket_path = \"$NRI_SOCK\"
  plugin_path = \"$T/nri-plugins\"
  plugin_config_path = \"$T/nri-conf\""
# beside runc, a GPU-style runtime handler: NVIDIA's runtime as containerd
# names it (the stand-in tests/lib/fake-nvidia-runtime: it edits the spec
# and execs runc), which resview does not chain in this mode
mkdir -p "$T/nv"
cp "$TOP/tests/lib/fake-nvidia-runtime" "$T/nv/nvidia-container-runtime"
printf 'FAKE_NVIDIA_RUNTIMES=runc\nFAKE_NVIDIA_LOG=%s\n' "$T/nv/log" >"$T/nv/fake-nvidia.env"
nv_toml="[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]
  runtime_type = \"io.containerd.runc.v2\"
  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]
    BinaryName = \"$T/nv/nvidia-container-runtime\"
    Root = \"$T/ctd/nvidia-root\"
    SystemdCgroup = $SYSTEMD_CGROUP"
ctd_start "$(ctd_cri_toml "$IMG")
$nv_toml
$nri_toml" || exit 1
t_contains "containerd $ver loaded NRI" "$(ctr --address "$CTD_SOCK" plugins ls 2>/dev/null | grep nri)" "ok"

rv_image_tar "$T/layer.tar"
$PY "$TOP/hooks/kubernetes/image/oci-image.py" "$T/layer.tar" "$T/oci.tar" "$IMG" /bin/sleep 2147483647
ctr --address "$CTD_SOCK" -n k8s.io images import "$T/oci.tar" >/dev/null 2>&1
$PY -m grpc_tools.protoc -I"$TOP/tests/cri" --python_out="$T" --grpc_python_out="$T" "$TOP/tests/cri/cri.proto"

PLUGIN_PID=""
plugin_start() {
    RESVIEW_CONFIG=$T/config.json "$CLI" nri --socket "$NRI_SOCK" >>"$T/nri.out" 2>&1 &
    PLUGIN_PID=$!
}
plugin_stop() { [ -n "$PLUGIN_PID" ] && kill -9 "$PLUGIN_PID" 2>/dev/null; wait "$PLUGIN_PID" 2>/dev/null; PLUGIN_PID=""; }
t_cleanup plugin_stop
registered() { [ "$(grep -c 'NRI: registered as resview' "$T/resview.log" 2>/dev/null)" -ge "$1" ]; }
plugin_start
t_ok "resview nri registered with containerd (Configure came)" wait_for registered 1
t_contains "the plugin says which runtime" "$(grep 'registered as' "$T/resview.log")" "containerd"
wait_for test -e "$T/state/nri-plugin.json"   # written just after the log line
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" doctor 2>&1)
t_contains "doctor: NRI on (the record's socket accepts)" "$out" \
    "ok    NRI: the runtime's socket \`$NRI_SOCK\` accepts connections (NRI is on)"
t_contains "doctor: resview's plugin registered with containerd" "$out" \
    "ok    NRI: resview's plugin (pid $PLUGIN_PID) registered with containerd"

# scenario NAME CONTAINERS_JSON [POD_ANNOTATIONS [HANDLER]]: by default no
# runtime handler (the default, runc); a PID namespace per container, as the
# kubelet asks for it
scenario() {
    jq -n --arg sock "$CTD_SOCK" --arg name "$1" --arg logs "$T/podlogs/$1" --arg cg "$(pod_cgroup "$1")" \
        --argjson cs "$2" --argjson pa "${3:-{\}}" --arg h "${4:-}" \
        '{socket: $sock, handler: $h,
          pod: {name: $name, uid: ("uid-" + $name), namespace: "default", log_dir: $logs,
                cgroup_parent: $cg, annotations: $pa, pid_per_container: true}, containers: $cs}' >"$T/$1.json"
    mkdir -p "$T/podlogs/$1"
    $PY "$TOP/tests/cri/cri-run.py" "$T" "$T/$1.json" 2>>"$T/cri.err"
}
show='env; grep MemTotal /proc/meminfo; grep -c fuse.lxcfs /proc/self/mountinfo'
# 1.5 CPUs and 512 MiB; the exec session comes after a resize to the same
# values (cri-run.py's "update": UpdateContainerResources, then ExecSync)
main='{"name": "main", "image": "'$IMG'", "command": ["/bin/sh", "-c", "'"$show"'; sleep 300"],
       "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
       "update": {"cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
                  "exec": ["/bin/sh", "-c", "'"$show"'"]}}'
cnt='['"$main"',
      {"name": "noenv", "image": "'$IMG'", "command": ["/bin/sh", "-c", "'"$show"'"],
       "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
       "annotations": {"resview.io/env": "false"}},
      {"name": "noviews", "image": "'$IMG'", "command": ["/bin/sh", "-c", "'"$show"'"],
       "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
       "annotations": {"resview.io/lxcfs": "false"}}]'
res=$(scenario pod1 "$cnt")
log=$(jq -r '.main.log' <<<"$res" 2>/dev/null) ex=$(jq -r '.main.exec_log' <<<"$res" 2>/dev/null)
t_eq "CRI pod with the default runtime (runc), no runtime class: created and run" "$(jq -r '.main.state' <<<"$res" 2>/dev/null)" "2"
[ -s "$T/cri.err" ] && tail -5 "$T/cri.err" | sed 's/^/#   /'
t_contains "main process: GOMAXPROCS=2 (1.5 CPUs, rounded up)" "$log" "GOMAXPROCS=2"
t_contains "main process: OMP_NUM_THREADS=2" "$log" "OMP_NUM_THREADS=2"
t_contains "main process: SLURM_MEM_PER_NODE=512" "$log" "SLURM_MEM_PER_NODE=512"
t_contains "main process: /proc/meminfo from LXCFS (512 MiB)" "$log" "524288 kB"
t_contains "exec session: GOMAXPROCS=2 (containerd builds it from the adjusted spec)" "$ex" "GOMAXPROCS=2"
t_contains "exec session: SLURM_CPUS_PER_TASK=2" "$ex" "SLURM_CPUS_PER_TASK=2"
t_contains "exec session: /proc/meminfo from LXCFS" "$ex" "524288 kB"
t_contains "the plugin logged that container" "$(cat "$T/resview.log")" "$(jq -r '.main.id' <<<"$res")"
t_not_contains "resview.io/env=false: no variables" "$(jq -r '.noenv.log' <<<"$res")" "GOMAXPROCS"
t_contains "resview.io/env=false: the views stay" "$(jq -r '.noenv.log' <<<"$res")" "524288 kB"
t_contains "resview.io/lxcfs=false: the variables stay" "$(jq -r '.noviews.log' <<<"$res")" "GOMAXPROCS=2"
t_not_contains "resview.io/lxcfs=false: no views" "$(jq -r '.noviews.log' <<<"$res")" "524288 kB"
t_contains "the hook recorded the container for repair/watch" \
    "$(ls "$T/state/containers" 2>/dev/null)" "$(jq -r '.main.id' <<<"$res")"

# the pod's annotation counts (containerd passes no pod annotation to a spec
# without pod_annotations: the plugin reads the pod's own)
res=$(scenario pod2 '[{"name": "c", "image": "'$IMG'", "command": ["/bin/sh", "-c", "'"$show"'"],
                       "cpu_period": 100000, "cpu_quota": 150000}]' '{"resview.io/env": "false"}')
t_contains "pod annotation resview.io/env=false: that container ran" "$(jq -r '.c.log' <<<"$res")" "PATH="
t_not_contains "pod annotation resview.io/env=false: no variables" "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS"

one='[{"name": "c", "image": "'$IMG'", "command": ["/bin/sh", "-c", "'"$show"'"],
       "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912}]'
# the GPU-style handler: both edits, NVIDIA's runtime's and the plugin's
log=$(scenario gpu "$one" '{}' nvidia | jq -r '.c.log')
t_contains "runtime handler nvidia: NVIDIA's runtime ran the container" "$(cat "$T/nv/log" 2>/dev/null)" "runtime create"
for want in NVIDIA_FAKE_EDIT=1 GOMAXPROCS=2 "524288 kB"; do
    t_contains "runtime handler nvidia: both edits reach the container: $want" "$log" "$want"
done

# LXCFS restarted under a running pod: `resview repair` heals its views, as
# in the runtime-class mode (the hook recorded it)
heal='[{"name": "c", "image": "'$IMG'", "command": ["/bin/sleep", "300"],
        "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
        "update": {"cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
                   "wait": "'$T/heal-go'", "exec": ["/bin/sh", "-c", "grep MemTotal /proc/meminfo"]}}]'
scenario heal "$heal" >"$T/heal.out" & heal_pid=$!
for _ in $(seq 600); do [ -e "$T/heal-go.started" ] && break; sleep 0.2; done
lxcfs_stop "$LXCFS_DIR"
lxcfs_start "$LXCFS_DIR" || exit 1
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" repair 2>&1)
t_ok "LXCFS restarted: repair heals the pod created through the plugin ($(grep -o "repaired [0-9]*, failed [0-9]*" <<<"$out"))" \
    grep -qE "repaired [1-9][0-9]*, failed 0" <<<"$out"
touch "$T/heal-go"; wait $heal_pid
t_contains "after repair: the running pod's exec reads its limit again" "$(jq -r '.c.exec_log' <"$T/heal.out")" "524288 kB"
# the plugin killed: containers are created, unchanged, without waiting
killed=$PLUGIN_PID
plugin_stop
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" doctor 2>&1)
t_contains "doctor, the plugin killed: not registered, its process gone" "$out" \
    "warn  NRI: resview's plugin is not registered: the plugin (pid $killed) that registered on \`$NRI_SOCK\` is gone"
start=$(date +%s)
res=$(scenario pod3 "$one")
t_contains "plugin gone: the container is created and runs" "$(jq -r '.c.log' <<<"$res")" "PATH="
t_not_contains "plugin gone: unchanged" "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS"
# no NRI call timed out (containerd waits 2 s per call, then goes on): the
# pod's time is said, not compared (a loaded guest is slow either way)
t_eq "plugin gone: no NRI call of containerd timed out (the pod took $(( $(date +%s) - start ))s)" \
    "$(grep -i nri "$T/ctd/log" | grep -ciE 'timeout|timed out|deadline')" "0"
plugin_start
t_ok "the plugin restarted registers again" wait_for registered 2
res=$(scenario pod4 "$one")
t_contains "after the plugin's restart: GOMAXPROCS=2" "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS=2"
t_contains "after the plugin's restart: the views" "$(jq -r '.c.log' <<<"$res")" "524288 kB"

# containerd restarted under the running plugin: it reconnects by itself
_stop_pid "$CTD_PID"; CTD_PID=""
ctd_start "$(ctd_cri_toml "$IMG")
$nv_toml
$nri_toml" || exit 1
t_ok "containerd restarted: the same plugin process registers again" wait_for registered 3
t_ok "the plugin process lived through it" kill -0 "$PLUGIN_PID"
res=$(scenario pod5 "$one")
t_contains "after containerd's restart: GOMAXPROCS=2" "$(jq -r '.c.log' <<<"$res")" "GOMAXPROCS=2"
t_contains "after containerd's restart: the views" "$(jq -r '.c.log' <<<"$res")" "524288 kB"
t_not_contains "no error in the plugin's log" "$(grep ' error resview-nri' "$T/resview.log" | grep -v 'connecting again')" "NRI"
# the plugin stopped (SIGSTOP) while a pod is created: containerd gives up on
# the call after its request timeout, closes the plugin and creates the
# container bare; resumed, the plugin says the dropped call, registers again,
# and Synchronize gives that running container its views, naming it in the log
late='[{"name": "c", "image": "'$IMG'", "command": ["/bin/sleep", "300"],
        "cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
        "update": {"cpu_period": 100000, "cpu_quota": 150000, "memory": 536870912,
                   "wait": "'$T/late-go'", "exec": ["/bin/sh", "-c", "'"$show"'"]}}]'
kill -STOP "$PLUGIN_PID"
scenario late "$late" >"$T/late.out" & late_pid=$!
for _ in $(seq 600); do [ -e "$T/late-go.started" ] && break; sleep 0.2; done
t_contains "the plugin stopped: doctor says it is not serving" "$(RESVIEW_CONFIG=$T/config.json "$CLI" doctor 2>&1)" \
    "is not serving"
kill -CONT "$PLUGIN_PID"
t_ok "resumed: the plugin registers again" wait_for registered 4
t_contains "resumed: the dropped call is said" "$(cat "$T/resview.log")" \
    "NRI: the runtime closed the connection: containers created meanwhile get views at re-registration"
wait_for grep -q "its variables are missing until it is re-created" "$T/resview.log"
touch "$T/late-go"; wait $late_pid
late_id=$(jq -r '.c.id' <"$T/late.out")
t_contains "the pod created meanwhile is named in the log" \
    "$(grep -F "$late_id" "$T/resview.log" | grep -F 'its variables are missing')" "created while the plugin was not registered"
t_contains "…and gets its views at re-registration" "$(jq -r '.c.exec_log' <"$T/late.out")" "524288 kB"
t_not_contains "…not its variables" "$(jq -r '.c.exec_log' <"$T/late.out")" "GOMAXPROCS"

# `resview watch` holds the LXCFS files (as the node agent runs it): the
# adjustment carries no hook and the plugin gives the views itself at
# containerd's StartContainer (after runc create, before runc start: what the
# main process and an exec session read); the hook's path stays for the rest
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 1 >"$T/watch.out" 2>&1 & WATCH=$!
t_cleanup "kill $WATCH"
wait_for test -S "$T/state/views.sock"
sleep 1   # its first answer from LXCFS
seen=$(wc -l <"$T/ctd/log")
res=$(scenario fast "[$main]")
id=$(jq -r '.main.id' <<<"$res")
t_contains "watch holds the files: the main process reads its limit" "$(jq -r '.main.log' <<<"$res")" "524288 kB"
t_contains "…its variables" "$(jq -r '.main.log' <<<"$res")" "GOMAXPROCS=2"
t_contains "…an exec session reads it too" "$(jq -r '.main.exec_log' <<<"$res")" "524288 kB"
t_contains "…given at StartContainer, no hook" "$(grep -F "id=$id" "$T/resview.log")" \
    "LXCFS views: given at StartContainer"
t_contains "…from watch's files" "$(grep -F "id=$id" "$T/resview.log" | grep 'LXCFS views: ')" \
    "cloned from files watch holds"
t_eq "…no NRI call of containerd timed out" "$(tail -n +"$((seen + 1))" "$T/ctd/log" | grep -i nri |
    grep -ciE 'timeout|timed out|deadline')" "0"
if [ -n "${VERBOSE:-}" ]; then sed 's/^/#   log: /' "$T/resview.log" | grep -i nri | tail -20; fi
