#!/bin/bash
# 49-node-agent.sh - `resview node` steps run directly (no pod) against a real
# containerd with CRI, for what 48-kubernetes.sh does not reach: restart mode
# none (the agent says what to run and waits), a restart that does not bring
# the entry in is not repeated (a crash-looping agent must not restart
# containerd again and again), a node without containerd's config file, the
# node lock, bad values. The host whose namespaces the restart enters is this
# test's shell (--host-pid): pid 1 of this machine cannot be entered.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"

ctd_restartable || { echo "not ok - containerd did not start"; exit 1; }
CFG=$T/ctd/config.toml
cp "$CFG" "$T/config.toml.orig"

node() { local step=$1; shift
         "$CLI" node "$step" --containerd-config "$CFG" --cri-socket "$CTD_SOCK" --prefix "$T/opt" \
             --lock "$T/run/node.lock" --host-pid $$ --resview-config "$T/etc/config.json" "$@"; }

# bad values: one line, exit 2
out=$(RESVIEW_NODE_RESTART=reboot "$CLI" node configure 2>&1); rc=$?
t_eq "unknown restart mode refused (exit 2)" "$rc" "2"
t_contains "…with one line naming the choices" "$out" "expected systemd, systemd:UNIT, none or command:/ABSOLUTE/PATH"
out=$(RESVIEW_NODE_MODE=remove "$CLI" node run 2>&1); rc=$?
t_eq "unknown mode refused (exit 2): $out" "$rc" "2"
out=$(RESVIEW_NODE_SET_AS_DEFAULT=yes "$CLI" node ready 2>&1); rc=$?
t_eq "RESVIEW_NODE_SET_AS_DEFAULT=yes refused (exit 2): $out" "$rc" "2"

# restart mode none: the file is written, containerd is not restarted, the agent says what to do
out=$(node configure --restart none 2>&1); rc=$?
t_eq "restart none: configure does not finish while containerd lacks the entry" "$rc" "1"
t_contains "…and says what the operator must run" "$out" "restart containerd on this node yourself (systemctl restart containerd; k3s"
t_eq "…containerd was not restarted" "$(wc -l <"$T/ctd-restarts")" "0"
t_contains "…the entry is in the file" "$(cat "$CFG")" "runtimes.resview.options]"
"$T/ctd-restart"; : >"$T/ctd-restarts"    # the operator restarts containerd
wait_for sh -c "'$CLI' node configure --restart none --containerd-config '$CFG' --cri-socket '$CTD_SOCK' \
    --prefix '$T/opt' --lock '$T/run/node.lock' --resview-config '$T/etc/config.json' >'$T/out' 2>&1"
t_contains "after the operator's restart: in use, nothing restarted" "$(cat "$T/out")" "runs with the configuration wanted; not restarted"

# a restart that does not bring the entry in is not repeated (for the same file, 10 minutes)
node uninstall --restart "command:$T/ctd-restart" >"$T/out" 2>&1
t_ok "uninstall restores the file byte for byte" cmp "$CFG" "$T/config.toml.orig"

# resview as containerd's default runtime, and back
node configure --set-as-default --restart "command:$T/ctd-restart" >"$T/out" 2>&1
t_contains "set as default: default_runtime_name changed in place" "$(cat "$CFG")" \
    'default_runtime_name = "resview"  # resview-was'
t_contains "…and the restarted containerd runs resview as its default" "$(cat "$T/out")" \
    "answers on \`$CTD_SOCK\`"
node uninstall --restart "command:$T/ctd-restart" >"$T/out" 2>&1
t_ok "uninstall: the previous default runtime is back, the file byte for byte" cmp "$CFG" "$T/config.toml.orig"
t_contains "…and in the running containerd" "$(cat "$T/out")" "answers on \`$CTD_SOCK\`"
: >"$T/ctd-restarts"
touch "$T/ctd-noop"
out=$(node configure --restart "command:$T/ctd-restart" 2>&1); rc=$?
t_eq "a restart that changed nothing: configure fails" "$rc" "1"
t_contains "…saying so" "$out" "containerd was restarted but the running containerd has no resview runtime"
out=$(node configure --restart "command:$T/ctd-restart" 2>&1); rc=$?
t_contains "…and the next attempt does not restart again" "$out" "although it was restarted for this configuration less than 10 minutes ago"
t_eq "…one restart in all" "$(wc -l <"$T/ctd-restarts")" "1"
rm -f "$T/ctd-noop"

# no containerd config file: containerd runs on built-in defaults; nothing is created
out=$(node configure --containerd-config "$T/none/config.toml" 2>&1); rc=$?
t_eq "missing containerd config refused" "$rc" "1"
t_contains "…saying how to create it" "$out" "containerd runs on built-in defaults"
t_ok "…and no file was created" test ! -e "$T/none/config.toml"

# one agent per node: a second one waits for the lock
mkdir -p "$T/payload/bin"
cp "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook" "$T/payload/bin/"
mkdir -p "$T/run"
flock "$T/run/node.lock" sleep 3 &
sleep 0.3
start=$(date +%s%N)
out=$(node install --payload "$T/payload" 2>&1); rc=$?
t_contains "second agent waits for the node lock" "$out" "waiting for the node lock"
t_ok "…then installs once the first is gone" test "$rc" = 0 -a $(( ($(date +%s%N) - start) / 1000000 )) -ge 2000
wait
t_ok "binaries installed" test -x "$T/opt/current/bin/resview-runtime"
t_contains "resview's config written for the agent's LXCFS" "$(cat "$T/etc/config.json")" "/var/lib/resview/lxcfs"

# readiness: one line per check, not ready without LXCFS
out=$(node ready --payload "$T/payload" --lxcfs-dir "$T/nolxcfs" 2>&1); rc=$?
t_eq "ready: exit 1 without LXCFS" "$rc" "1"
t_contains "…binaries intact" "$out" "binaries:   intact"
t_contains "…LXCFS named" "$out" "lxcfs:      "
t_contains "…not ready" "$out" "not ready"

# a node that resview 0.1.0 configured (tests/samples/v0.1, its real output;
# see generate.sh there): the agent takes 0.1's entry over instead of refusing
# it, and its uninstall gives back the original byte for byte
V=$TOP/tests/samples/v0.1
mkdir -p "$T/v01"
cp "$V/containerd-v2.toml" "$T/v01/config.toml"
cp "$V/containerd-v2.toml.resview-backup" "$T/v01/config.toml.resview-backup"
out=$(node configure --restart none --containerd-config "$T/v01/config.toml" 2>&1)
t_not_contains "0.1's entry: the agent does not refuse it" "$out" "not written by resview"
t_contains "…it writes its own entry in its place" "$(cat "$T/v01/config.toml")" \
    "BinaryName = \"$T/opt/current/bin/resview-runtime\""
t_not_contains "…with none of 0.1's markers left" "$(cat "$T/v01/config.toml")" "resview-begin:"
node uninstall --restart none --containerd-config "$T/v01/config.toml" >"$T/out" 2>&1
t_ok "…and uninstall restores the original byte for byte" cmp "$T/v01/config.toml" "$V/containerd-v2.toml.resview-backup"
cp "$V/containerd-v2.toml" "$T/v01/config.toml"
node uninstall --restart none --containerd-config "$T/v01/config.toml" >"$T/out" 2>&1
t_ok "…also straight from 0.1's file" cmp "$T/v01/config.toml" "$V/containerd-v2.toml.resview-backup"
