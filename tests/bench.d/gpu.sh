#!/bin/bash
# GPU nodes: start latency (create+start+delete of busybox /bin/true,
# interleaved, medians) of a GPU-requesting and a plain container through
# resview with NVIDIA's runtime chained (gpu.runtime), against both through
# NVIDIA's runtime alone (as when `nvidia` is containerd's default) and plain
# runc. NVIDIA's runtime is the stand-in tests/lib/fake-nvidia-runtime (bash +
# jq, slower than the real one's ~6 ms): compare arms within one run only.
# GPU_ROUNDS (default 30). No thresholds.
source "$(dirname "$0")/../lib/common.sh"
R=${GPU_ROUNDS:-30}
SHIM=$BUILD/static/resview-runtime
export HOOK_BIN=$BUILD/static/resview-hook HOOK=$BUILD/static/resview-hook
mkdir -p "$T/run" && mount -t tmpfs -o size=64m tmpfs "$T/run" && t_cleanup "umount -l '$T/run'"
export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop '$LXCFS_DIR'"
mkdir -p "$T/gpudev" "$T/nv"
mknod "$T/gpudev/nvidia0" c 195 0 && mknod "$T/gpudev/nvidiactl" c 195 255
cp "$TOP/tests/lib/fake-nvidia-runtime" "$T/nv/nvidia-container-runtime"
printf 'FAKE_NVIDIA_DEV_DIR=%s\nFAKE_NVIDIA_RUNTIMES=runc\n' "$T/gpudev" >"$T/nv/fake-nvidia.env"
NV=$T/nv/nvidia-container-runtime
rv_config "$T/cfg.json" "$(jq -n --arg r "$NV" --arg s "$T/run/state" '{log: {level: "warn"}, state_dir: $s, gpu: {runtime: $r}}')"
jq 'del(.gpu)' "$T/cfg.json" >"$T/cfg-nogpu.json"
for arm in runc nvidia-gpu nvidia-plain resview+nvidia-gpu resview+nvidia-plain resview+runc; do
    mkdir -p "$T/run/bundle-$arm"
    rv_rootfs "$T/run/bundle-$arm/rootfs"
    rv_bundle "$T/run/bundle-$arm" '.process.args = ["/bin/true"] | .linux.resources.cpu = {"quota": 150000, "period": 100000}'
    case $arm in
        *gpu) jq '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]' "$T/run/bundle-$arm/config.json" ;;
        *) cat "$T/run/bundle-$arm/config.json" ;;
    esac >"$T/run/bundle-$arm/config.pristine"
done
echo "== GPU nodes: start latency with NVIDIA's runtime chained (stand-in: tests/lib/fake-nvidia-runtime), $R rounds"
echo "   nvidia-X: NVIDIA's runtime alone (containerd's default nvidia); resview+nvidia-gpu: resview, then NVIDIA's"
echo "   runtime (the container asks for GPU 0); resview+nvidia-plain: resview, which sends a plain container"
echo "   straight to runc (gpu.containers gpu, one more read of the spec to tell); resview+runc: no gpu.runtime"
/usr/bin/python3 "$TOP/tests/lib/bench.py" "$R" "$T/run" \
    "runc=runc --root $T/r1" \
    "nvidia-gpu=$NV --root $T/r2|runc --root $T/r2" \
    "nvidia-plain=$NV --root $T/r3|runc --root $T/r3" \
    "resview+nvidia-gpu=RESVIEW_CONFIG=$T/cfg.json $SHIM --root $T/r4|runc --root $T/r4" \
    "resview+nvidia-plain=RESVIEW_CONFIG=$T/cfg.json $SHIM --root $T/r5|runc --root $T/r5" \
    "resview+runc=RESVIEW_CONFIG=$T/cfg-nogpu.json $SHIM --root $T/r6|runc --root $T/r6" || exit 1
