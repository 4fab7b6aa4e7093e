#!/bin/bash
# `make demo`: the same 1.5-CPU / 512 MiB busybox container under plain runc
# and under resview-runtime, side by side. Starts a private LXCFS when none runs.
source "$(dirname "$0")/lib/common.sh"
[ "$(id -u)" = 0 ] || { echo "make demo: run as root (containers need it)" >&2; exit 1; }

LXCFS_DIR=/var/lib/lxcfs
if ! head -c1 "$LXCFS_DIR/proc/meminfo" >/dev/null 2>&1; then
    LXCFS_DIR=$T/lxcfs
    lxcfs_start "$LXCFS_DIR" || { echo "make demo: could not start LXCFS" >&2; exit 1; }
    t_cleanup "lxcfs_stop '$LXCFS_DIR'"
    note="(a private LXCFS on $LXCFS_DIR, stopped at the end)"
else
    note="(the running LXCFS on $LXCFS_DIR)"
fi
export LXCFS_DIR
rv_config "$T/config.json"

SCRIPT='for v in GOMAXPROCS OMP_NUM_THREADS SLURM_CPUS_ON_NODE SLURM_CPUS_PER_TASK SLURM_MEM_PER_NODE; do
    eval "echo \"\$v=\${$v:-(unset)}\""
done
echo "nproc (busybox: affinity)=$(nproc)"
echo "processors in /proc/cpuinfo=$(grep -c ^processor /proc/cpuinfo)"
echo "/sys/devices/system/cpu/online=$(cat /sys/devices/system/cpu/online)"
echo "MemTotal in /proc/meminfo=$(awk "/^MemTotal:/ {print \$2, \$3}" /proc/meminfo)"
echo "free (busybox: sysinfo(2))=$(free -m | awk "/^Mem:/ {print \$2}") MiB"
echo "/proc/uptime=$(cut -d" " -f1 /proc/uptime) s"'
FILTER='.linux.resources.cpu = {"quota": 150000, "period": 100000} | .linux.resources.memory = {"limit": 536870912} | .process.args = ["/bin/sh", "-c", $s]'

rv_bundle "$T/plain" && jq --arg s "$SCRIPT" "$FILTER" "$T/plain/config.json" >"$T/c" && mv "$T/c" "$T/plain/config.json"
rv_bundle "$T/resview" && jq --arg s "$SCRIPT" "$FILTER" "$T/resview/config.json" >"$T/c" && mv "$T/c" "$T/resview/config.json"

run_plain runc demo-plain "$T/plain" >"$T/plain.out" 2>&1 || { cat "$T/plain.out"; exit 1; }
run_shim runc demo-resview "$T/resview" >"$T/resview.out" 2>&1 || { cat "$T/resview.out"; exit 1; }

echo "One busybox container, limited to 1.5 CPUs and 512 MiB, on a host with $(nproc) CPUs and $(free -m | awk '/^Mem:/ {print $2}') MiB."
echo "LXCFS views $note."
echo
printf '%-32s %-20s %s\n' "" "plain runc" "resview-runtime -> runc"
join -t= -j1 -o 0,1.2,2.2 <(cat -n "$T/plain.out" | sed 's/^ *\([0-9]*\)\t/\1:/' | sort -t= -k1,1) \
                           <(cat -n "$T/resview.out" | sed 's/^ *\([0-9]*\)\t/\1:/' | sort -t= -k1,1) \
    | sort -n | awk -F= '{ sub(/^[0-9]+:/, "", $1); printf "%-32s %-20s %s\n", $1, $2, $3 }'
echo
echo "procps free/top, lscpu and most runtimes read /proc and /sys; busybox's free and nproc ask the"
echo "kernel directly (sysinfo(2), sched_getaffinity(2)), which no file view can change."
echo
echo "Why these values: resview env --bundle <bundle>"
"$CLI" env --bundle "$T/resview" | head -3 | sed 's/^/  /'
