#!/bin/bash
# 47-slurm.sh - Slurm (Debian's slurmctld/slurmd 22.05 with munge) on private
# ports and directories, with task/cgroup on cgroup v1 or v2 as sites run it:
# `srun --container` through a site oci.conf (runc `run`), then the same
# oci.conf routed through resview-runtime by `resview configure
# --engine=slurm` (a job's own allocation: the cpuset and memory cgroups Slurm
# made for it), then restored by --uninstall.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
for b in slurmctld slurmd srun munged; do
    command -v $b >/dev/null || { echo "not ok - $b missing (make deps installs tests/deps.d/engines.txt)"; exit 1; }
done

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json"
# slurmstepd does not hand its environment to the runtime: a wrapper passes the test configuration
printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$T/config.json" "$RUNTIME" >"$T/resview-runtime"
chmod +x "$T/resview-runtime"

# munge on a private socket
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 0400 "$T/munge.key"
mkdir -p "$T/munge" && chmod 0700 "$T/munge"
munged -F -f --socket="$T/munge/sock" --key-file="$T/munge.key" --pid-file="$T/munge/pid" \
    --log-file="$T/munge/log" --seed-file="$T/munge/seed" >/dev/null 2>&1 &
MUNGE_PID=$!
t_cleanup "_stop_pid $MUNGE_PID"
wait_for sh -c "munge -S '$T/munge/sock' -n | unmunge -S '$T/munge/sock'" || { echo "not ok - munged did not start"; exit 1; }

ports=$(/usr/bin/python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1", 0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r P1 P2 <<<"$ports"
H=$(hostname -s)
NODE=rvn$$
mkdir -p "$T/ctld" "$T/spool"
cat >"$T/slurm.conf" <<CONF
ClusterName=rvtest$$
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/ctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/ctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=$NODE NodeHostname=$H NodeAddr=127.0.0.1 CPUs=$(nproc --all) RealMemory=1024 State=UNKNOWN
PartitionName=rv Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# Debian's Slurm (built for several slurmd on one host) makes its cgroups
# under /slurm_<NodeName> of each v1 hierarchy, and on v2 in a systemd scope
# ...slurmstepd.scope (asked of systemd over D-Bus) with
# job_N/step_M/user/task_K below it: private to this run.
# A job's cgroup is job_ID up to Slurm 24.11; Slurm 26.05 names it after the
# job's SLUID, its lexicographically sortable unique id ("s" and base32, e.g.
# sAPNM8GF7EBF00): .../slurmstepd.scope/SLUID/step_0/user/...
if cg_is_v2; then
    CG_PLUGIN=cgroup/v2 JOB_CG_LINE='^0::' JOB_CG_RE='slurmstepd\.scope/(job_JOBID|s[0-9A-Z]{10,16})/step_0/user/'
else
    CG_PLUGIN=cgroup/v1 JOB_CG_LINE=':cpuset:' JOB_CG_RE=":cpuset:/slurm_$NODE/uid_0/job_JOBID/step_0(/|$)"
fi
cat >"$T/cgroup.conf" <<CONF
CgroupPlugin=$CG_PLUGIN
ConstrainCores=yes
ConstrainRAMSpace=yes
CONF
# the site's oci.conf (Slurm 22.05: runc `run`, no %U)
cat >"$T/oci.conf" <<CONF
# site oci.conf
RunTimeQuery="runc --root=$T/runc-root state %n.%u.%j.%s.%t"
RunTimeKill="runc --root=$T/runc-root kill -a %n.%u.%j.%s.%t"
RunTimeDelete="runc --root=$T/runc-root delete --force %n.%u.%j.%s.%t"
RunTimeRun="runc --root=$T/runc-root run %n.%u.%j.%s.%t -b %b"
CONF
cp "$T/oci.conf" "$T/oci.conf.orig"
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i -f "$T/slurm.conf" >/dev/null 2>&1 &
CTLD_PID=$!
t_cleanup "_stop_pid $CTLD_PID"
wait_for scontrol ping || { echo "not ok - slurmctld did not start"; tail -5 "$T/ctld.log"; exit 1; }
# on a systemd host slurmd runs in a delegated scope of its own, as its unit
# (Delegate=yes) has it: Slurm 26.05's slurmd enables the controllers of its
# own cgroup's subtree at start, which the kernel refuses in a cgroup with
# other processes (this test's, in the guest's service)
SLURMD_RUN=()
if cg_is_v2 && [ -d /run/systemd/system ]; then
    SLURMD_RUN=(systemd-run -q --scope -p Delegate=yes --unit="rv-slurmd-$$")
fi
"${SLURMD_RUN[@]}" slurmd -D -N "$NODE" -f "$T/slurm.conf" >"$T/slurmd.out" 2>&1 &
SLURMD_PID=$!
t_cleanup "_stop_pid $SLURMD_PID"
wait_for sh -c "sinfo -h -n $NODE -o %t | grep -q idle" ||
    { echo "not ok - slurmd did not register"; tail -5 "$T/slurmd.log" "$T/slurmd.out" | sed 's/^/#   /'; exit 1; }

rv_bundle "$T/b" '.process.args = ["/bin/env"] | .linux.resources.cpu = {quota: 150000, period: 100000}'
srun_c() { timeout 120 srun -N1 -n1 -c2 -w "$NODE" --container="$T/b" /bin/env 2>&1; }

out=$(srun_c)
t_contains "srun --container with the site's runc lines runs" "$out" "SLURM_JOB_ID="
t_not_contains "(plain runc: no GOMAXPROCS)" "$out" "GOMAXPROCS"

t_ok "configure --engine=slurm on the site oci.conf" "$CLI" configure --engine=slurm --config "$T/oci.conf" --runtime-path "$T/resview-runtime"
out=$(srun_c)
t_contains "srun --container through resview: GOMAXPROCS=2 (1.5 CPUs)" "$out" "GOMAXPROCS=2"
t_contains "srun --container through resview: OMP_NUM_THREADS=2" "$out" "OMP_NUM_THREADS=2"
t_contains "the shim ran for the Slurm step (log)" "$(cat "$T/resview.log" 2>/dev/null)" "id=$NODE.root."
t_eq "a real Slurm job: resview adds no SLURM_* (Slurm's own SLURM_CPUS_PER_TASK only)" \
    "$(grep '^SLURM_CPUS_PER_TASK=' <<<"$out")" "SLURM_CPUS_PER_TASK=2"

# A job's own allocation, as task/cgroup made it: on v1 the task sits at cpu:/,
# cpuset:/slurm/uid_0/job_N/step_0 and memory:/slurm/uid_0/job_N/step_0/task_0,
# on v2 at .../job_N/step_0/user/task_0, runc's container beside it in user/
# (the bundle, as users write them, has no cgroupsPath; without a cgroup
# namespace its /proc/self/cgroup shows where the task is).
rv_bundle "$T/b2" 'del(.linux.cgroupsPath) | .linux.namespaces |= map(select(.type != "cgroup"))'
out=$(timeout 120 srun -N1 -n1 -c1 --mem=512M -w "$NODE" --container="$T/b2" \
    /bin/sh -c 'env; grep MemTotal /proc/meminfo; cat /proc/self/cgroup' 2>&1)
jid=$(sed -n 's/^SLURM_JOB_ID=//p' <<<"$out")
echo "# job ${jid:-?}'s cgroup: $(grep -E "$JOB_CG_LINE" <<<"$out")"
t_ok "srun -c1 --mem=512M: the job's cgroup is the one Slurm made for it ($CG_PLUGIN)" \
    grep -qE "${JOB_CG_RE/JOBID/${jid:-none}}" <<<"$(grep -E "$JOB_CG_LINE" <<<"$out")"
# the scope slurmd asked systemd for outlives slurmd: stopped at the end
scope=$(sed -n 's|^0::.*/\([^/]*slurmstepd\.scope\)/.*|\1|p' <<<"$out")
[ -z "$scope" ] || t_cleanup "systemctl stop $scope"
t_contains "srun -c1 --mem=512M: GOMAXPROCS=1 (the job's cpuset)" "$out" "GOMAXPROCS=1"
t_contains "... OMP_NUM_THREADS=1" "$out" "OMP_NUM_THREADS=1"
t_eq "... Slurm's own SLURM_CPUS_PER_TASK, once" "$(grep '^SLURM_CPUS_PER_TASK=' <<<"$out")" "SLURM_CPUS_PER_TASK=1"
# Slurm 22.05's srun sets no SLURM_MEM_PER_NODE, 24.11 and later set their own:
# the same job without a container says which
own=$(timeout 120 srun -N1 -n1 -c1 --mem=512M -w "$NODE" /usr/bin/env 2>&1 | grep '^SLURM_MEM_PER_NODE=')
t_eq "... no SLURM_MEM_PER_NODE added inside a real job (only srun's own: ${own:-none})" \
    "$(grep '^SLURM_MEM_PER_NODE=' <<<"$out")" "$own"
t_contains "... the memory limit, seen through LXCFS" "$out" "MemTotal:         524288 kB"
t_contains "... and found by resview-runtime in the job's memory cgroup" "$(cat "$T/resview.log")" "mem_mib=512"

t_ok "configure --uninstall" "$CLI" configure --engine=slurm --config "$T/oci.conf" --uninstall
t_ok "oci.conf restored byte for byte" cmp "$T/oci.conf" "$T/oci.conf.orig"
out=$(srun_c)
t_not_contains "after uninstall: plain runc again" "$out" "GOMAXPROCS"
t_contains "(that step ran)" "$out" "SLURM_JOB_ID="

# a new oci.conf follows the Slurm found here (%U needs 23.02)
v=$(slurmd -V | awk '{print $2}')
out=$("$CLI" configure --engine=slurm --config "$T/new/oci.conf" --runtime-path "$RUNTIME" 2>&1); rc=$?
if [ "$(printf '%s\n' "$v" 23.02 | sort -V | head -1)" = 23.02 ]; then
    t_eq "Slurm $v: a new oci.conf is written" "$rc" "0"
else
    t_eq "Slurm $v (detected): no new oci.conf with %U" "$rc" "1"
    t_contains "Slurm $v: the message names the version" "$out" "Slurm ${v%.*} has no %U"
fi
