#!/bin/bash
# The Kubernetes node agent (`resview node run`), run directly on this host
# with private paths (a pod would add the kubelet's and containerd's own
# start-up, which are not the agent's): time from agent start to node ready
# (first install with a containerd restart, and a restart of the agent on a
# configured node); time until N running containers see live views again
# after an LXCFS upgrade (the old agent and its LXCFS SIGKILLed, a new agent
# started), counted from the moment the new LXCFS answers; the agent's
# steady-state CPU and memory with N containers. No thresholds.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
command -v containerd >/dev/null || { echo "== node agent: skipped: containerd is not installed (tests/lib/deps.sh engines)"; exit 0; }
N=${HEAL_CONTAINERS:-100}
IDLE_S=${IDLE_SECONDS:-30}

# a containerd with CRI that the agent configures; its restart is a script
ctd_restartable || exit 1
CFG=$T/ctd/config.toml

mkdir -p "$T/payload/bin" "$T/payload/share/resview" "$T/etc"
cp "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook" "$T/payload/bin/"
cp "$TOP/profiles/seccomp.json" "$T/payload/share/resview/"
STATE=$(mktemp -d /dev/shm/resview-bench.XXXXXX)
t_cleanup "rm -rf $STATE"
LX=$T/lxcfs-parent/lxcfs
# resview's configuration as an operator would write it (the agent keeps it: lxcfs.root is its mount)
jq -n --arg lx "$LX" --arg st "$STATE" --arg log "$T/resview.log" \
    '{lxcfs: {root: $lx}, state_dir: $st, log: {file: $log, level: "warn"}, runtimes: ["runc"]}' >"$T/etc/config.json"
agent_start() { # LOGFILE
    RESVIEW_CONFIG=$T/etc/config.json setsid "$CLI" node run --restart "command:$T/ctd-restart" --host-pid $$ \
        --containerd-config "$CFG" --cri-socket "$CTD_SOCK" --prefix "$T/opt" --payload "$T/payload" \
        --lxcfs-dir "$LX" --resview-config "$T/etc/config.json" --lock "$T/run/node.lock" >"$1" 2>&1 &
    AGENT=$!
}
agent_kill() { # SIGKILL the agent, its watch and its LXCFS at once (a forced rollout)
    kill -9 $(cat "$LX.pid" 2>/dev/null) $(pgrep -P "$AGENT") "$AGENT" 2>/dev/null
    wait "$AGENT" 2>/dev/null
}
t_cleanup 'agent_kill; umount -l "$LX"'
ready_ms() { # LOGFILE: the agent's own "node ready in N ms"
    local i
    for i in $(seq 600); do
        grep -q "node ready in" "$1" && { grep -o "node ready in [0-9]* ms.*" "$1"; return 0; }
        sleep 0.05
    done
    echo "not ready: $(tail -3 "$1")"; return 1
}

echo "== node agent: start to ready (resview node run, outside a pod)"
agent_start "$T/agent1.log"
echo "first install (binaries, config.toml, containerd restart, LXCFS, watch): $(ready_ms "$T/agent1.log")"
kill "$AGENT"; wait "$AGENT"
agent_start "$T/agent2.log"
echo "agent restarted on a configured node (LXCFS, watch; no containerd restart): $(ready_ms "$T/agent2.log")"

echo
echo "== healing after an LXCFS upgrade: $N running containers (runc, through the installed shim)"
source "$TOP/tests/lib/lxcfs-helpers.sh"
RUNTIME=$T/opt/current/bin/resview-runtime
jq '.hook = {path: "'"$T"'/opt/current/bin/resview-hook"}' "$T/etc/config.json" >"$T/config.json"
for i in $(seq 1 "$N"); do
    start_bg "nb$i-$$" || { echo "bench: start nb$i failed: $(cat "$T/create-nb$i-$$.err")"; exit 1; }
done
t_cleanup "for k in \$(seq 1 $N); do runc --root $T/runc-root delete -f nb\$k-$$; done"
pids=$(for i in $(seq 1 "$N"); do pid_of "nb$i-$$"; done)
/usr/bin/python3 - "$LX" $pids <<'PY' >"$T/before"
import sys
ok = 0
for p in sys.argv[2:]:
    try:
        open("/proc/%s/root/proc/meminfo" % p).read(16); ok += 1
    except OSError:
        pass
print(ok)
PY
echo "containers with live views before: $(cat "$T/before") of $N"
for round in 1 2 3; do
    agent_kill
    started=$(date +%s%N)
    agent_start "$T/agent-r$round.log"
    # from the moment the new LXCFS answers until every container reads a live view
    /usr/bin/python3 - "$LX" "$started" $pids <<'PY'
import sys, time
lx, started, pids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def answers(path):
    try:
        with open(path) as f:
            f.read(16)
        return True
    except OSError:
        return False
t0 = time.monotonic()
while not answers(lx + "/proc/uptime"):
    if time.monotonic() - t0 > 60:
        sys.exit("LXCFS did not come back")
    time.sleep(0.001)
t_live = time.monotonic()
live_after_start = time.time_ns() - started
todo = set(pids)
while todo:
    todo = {p for p in todo if not answers("/proc/%s/root/proc/meminfo" % p)}
    time.sleep(0.002)   # leave the CPU to the repair
    if time.monotonic() - t_live > 60:
        sys.exit("%d containers not healed" % len(todo))
t_healed = time.monotonic()
print("round: new LXCFS answered %.0f ms after the new agent started; all %d containers live %.0f ms later"
      % (live_after_start / 1e6, len(pids), (t_healed - t_live) * 1000))
PY
done
ready_ms "$T/agent-r3.log" >/dev/null
grep -h "LXCFS answers on" "$T/agent-r3.log" | tail -1 | sed 's/^[^ ]* /watch: /'

echo
echo "== steady state over ${IDLE_S} s with $N containers (agent, watch, LXCFS; one watch sweep per 60 s)"
ticks=$(getconf CLK_TCK)
procs="$AGENT $(pgrep -P "$AGENT" | tr '\n' ' ')"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A c0
for p in $procs; do c0[$p]=$(cpu "$p"); done
sleep "$IDLE_S"
total=0
for p in $procs; do
    d=$(( $(cpu "$p") - ${c0[$p]} )); total=$(( total + d ))
    printf '%-8s CPU %5d ms in %d s   RSS %6s KiB\n' "$(cat "/proc/$p/comm")" $(( d * 1000 / ticks )) "$IDLE_S" \
        "$(awk '/VmRSS/ {print $2}' "/proc/$p/status")"
done
echo "all three: $(( total * 1000 / ticks )) ms of CPU in ${IDLE_S} s ($(awk -v c=$total -v t="$ticks" -v s="$IDLE_S" 'BEGIN {printf "%.2f", c / t / s * 100}') % of one CPU)"
