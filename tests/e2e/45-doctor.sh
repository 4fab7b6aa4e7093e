#!/bin/bash
# 45-doctor.sh - `resview doctor` reports what works and what to fix.
source "$(dirname "$0")/../lib/common.sh"
LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json"
export RESVIEW_CONFIG=$T/config.json

out=$("$CLI" doctor 2>&1); rc=$?
t_eq "healthy setup: exit 0" "$rc" "0"
t_contains "names the configuration" "$out" "configuration \`$T/config.json\`"
t_contains "LXCFS live, with the files that answer" "$out" "LXCFS live on \`$LXCFS_DIR\`"
t_contains "lists proc/meminfo among them" "$out" "proc/meminfo"
t_contains "cgroup version" "$out" "cgroup v"
t_contains "next runtime" "$out" "next runtime: \`"

lxcfs_stop "$LXCFS_DIR"
out=$("$CLI" doctor 2>&1); rc=$?
t_contains "LXCFS down: says so and how to fix" "$out" "resview repair"
t_eq "LXCFS down, not required: warning only (exit 0)" "$rc" "0"
rv_config "$T/req.json" '{"lxcfs": {"required": true}}'
RESVIEW_CONFIG=$T/req.json "$CLI" doctor >/dev/null 2>&1; rc=$?
t_eq "LXCFS down and lxcfs.required: exit 1" "$rc" "1"

rv_config "$T/warn.json" '{"no_such_key": 1}'
out=$(RESVIEW_CONFIG=$T/warn.json "$CLI" doctor 2>&1)
t_contains "unknown configuration key: a warning" "$out" "no_such_key"

echo '{"runtimes": ' >"$T/broken.json"
out=$(RESVIEW_CONFIG=$T/broken.json "$CLI" doctor 2>&1); rc=$?
t_eq "broken configuration: exit 1" "$rc" "1"
t_contains "broken configuration: FAIL line" "$out" "FAIL  configuration"

rv_config "$T/nort.json" '{"runtimes": ["no-such-runtime"]}'
out=$(RESVIEW_CONFIG=$T/nort.json "$CLI" doctor 2>&1); rc=$?
t_contains "no next runtime: FAIL with the reason" "$out" "no-such-runtime (not found)"

cp "$TOP/tests/samples/daemon.json" "$T/daemon.json"
out=$("$CLI" doctor --engine=docker --config "$T/daemon.json" 2>&1); rc=$?
t_contains "engine without the entry: says how to add it" "$out" "resview configure --engine=docker"
t_eq "engine named but not configured: exit 1" "$rc" "1"
"$CLI" configure --engine=docker --config "$T/daemon.json" --runtime-path "$RUNTIME" >/dev/null
out=$("$CLI" doctor --engine=docker --config "$T/daemon.json" 2>&1)
t_contains "configured engine: shows the entry" "$out" "ok    docker: \`$T/daemon.json\`: path = $RUNTIME"
cp "$TOP/tests/samples/bad-string.toml" "$T/bad.toml"
out=$("$CLI" doctor --engine=containerd --config "$T/bad.toml" 2>&1)
t_contains "unparsable engine file: FAIL with the line" "$out" "line 3: unterminated string"

"$CLI" configure --engine=docker --config "$T/daemon.json" --runtime-path /nonexistent/resview-runtime >/dev/null 2>&1
out=$("$CLI" doctor --engine=docker --config "$T/daemon.json" 2>&1); rc=$?
t_contains "entry naming a missing runtime: FAIL" "$out" "runs \`/nonexistent/resview-runtime\`, which is missing"
t_eq "entry naming a missing runtime: exit 1" "$rc" "1"
# podman's and CRI-O's configure also installs the system's hooks.d file: taken
# away at the end unless it was there before (later tests and runs see none)
HOOKSD_FILE=/usr/share/containers/oci/hooks.d/resview-lxcfs.json
[ -e "$HOOKSD_FILE" ] || t_cleanup "rm -f $HOOKSD_FILE"
for e in containerd podman crio slurm; do
    "$CLI" configure --engine=$e --config "$T/$e.conf" --runtime-path "$RUNTIME" --slurm-version 23.02 >/dev/null 2>&1
    out=$("$CLI" doctor --engine=$e --config "$T/$e.conf" 2>&1)
    t_contains "$e: configured entry found" "$out" "ok    $e: \`$T/$e.conf\`"
    "$CLI" configure --engine=$e --config "$T/$e.conf" --runtime-path /nonexistent/rt --slurm-version 23.02 >/dev/null 2>&1
    out=$("$CLI" doctor --engine=$e --config "$T/$e.conf" 2>&1)
    t_contains "$e: entry naming a missing runtime: FAIL" "$out" "runs \`/nonexistent/rt\`"
done

rv_config "$T/sc.json" "{\"fuse\": {\"allowed\": true, \"seccomp_profile\": \"$TOP/profiles/seccomp.json\"}}"
out=$(RESVIEW_CONFIG=$T/sc.json "$CLI" doctor 2>&1)
t_contains "seccomp profile for FUSE found" "$out" "ok    seccomp profile for FUSE containers that have none: \`$TOP/profiles/seccomp.json\`"
rv_config "$T/sc2.json" "{\"fuse\": {\"allowed\": true, \"seccomp_profile\": \"$T/none.json\"}}"
out=$(RESVIEW_CONFIG=$T/sc2.json "$CLI" doctor 2>&1)
t_contains "missing seccomp profile for FUSE: a warning that says what fails" "$out" "warn  FUSE for a container without a seccomp profile"
out=$(RESVIEW_CONFIG=$T/sc.json "$CLI" doctor 2>&1)
t_contains "every syscall name of the shipped profile and the FUSE additions is known" "$out" "ok    every syscall name in"
jq '.syscalls += [{"names": ["no_such_call_xyz"], "action": "SCMP_ACT_ALLOW"}]' "$TOP/profiles/seccomp.json" >"$T/unknown.json"
rv_config "$T/sc3.json" "{\"fuse\": {\"allowed\": true, \"seccomp_profile\": \"$T/unknown.json\"}}"
out=$(RESVIEW_CONFIG=$T/sc3.json "$CLI" doctor 2>&1)
t_contains "an unknown syscall name in the profile is reported" "$out" "unknown syscall \`no_such_call_xyz\`"

# NRI (hooks/kubernetes/README.md "The DaemonSet in NRI mode"): the runtime-class mode needs none,
# so a runtime without it is information, not a problem
out=$("$CLI" doctor 2>&1); rc=$?
t_contains "NRI: a line on the node's NRI socket, by its path" "$out" "NRI: \`/var/run/nri/nri.sock\`"
out=$("$CLI" doctor --nri-socket "$T/none.sock" 2>&1); rc=$?
t_line "no NRI socket: information, saying the mode that needs none" "$out" \
    "info  NRI: \`$T/none.sock\`: no such socket: the runtime has no NRI on here (containerd 1.6 has none, 1.7 has it off by default); resview works through its runtime entry"
t_line "…and resview's plugin is not registered" "$out" "info  NRI: resview's plugin is not registered"
t_eq "…which is no problem (exit 0)" "$rc" "0"
# a socket that takes connections into its backlog and never accepts: doctor does not wait on it
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(120)' "$T/nri.sock" &
lpid=$!
t_cleanup "kill $lpid 2>/dev/null"
for _ in $(seq 100); do [ -S "$T/nri.sock" ] && break; sleep 0.1; done
start=$(date +%s%N)
out=$("$CLI" doctor --nri-socket "$T/nri.sock" 2>&1)
t_line "NRI on: the socket accepts connections" "$out" "ok    NRI: the runtime's socket \`$T/nri.sock\` accepts connections (NRI is on)"
t_line "…resview's plugin not registered: said how to register it" "$out" \
    "info  NRI: resview's plugin is not registered (\`resview nri\`, or the DaemonSet's NRI variant, registers it)"
"$CLI" doctor --nri-socket "$T/nri.sock" >/dev/null 2>&1
# its backlog (1) full of connections nobody accepts: refused at once, not waited for
out=$("$CLI" doctor --nri-socket "$T/nri.sock" 2>&1)
t_line "a socket whose backlog is full: a warning, not a wait" "$out" \
    "warn  NRI: the runtime's socket \`$T/nri.sock\` is there, but it does not accept now (its backlog is full): plugins cannot register now"
t_ok "…doctor never waits on the socket (three runs under 15 s)" test $(( ($(date +%s%N) - start) / 1000000 )) -lt 15000
# the plugin's record names a process that is gone (a plugin killed with SIGKILL)
sh -c 'exit 0' & dead=$!; wait $dead
mkdir -p "$T/state"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null; rm -f "$T/nri.sock"
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(120)' "$T/nri.sock" &
lpid=$!
t_cleanup "kill $lpid 2>/dev/null"
for _ in $(seq 100); do [ -S "$T/nri.sock" ] && break; sleep 0.1; done
echo "{\"pid\": $dead, \"start\": 1, \"socket\": \"$T/nri.sock\", \"runtime\": \"containerd v2.1.9\"}" >"$T/state/nri-plugin.json"
out=$("$CLI" doctor 2>&1)
t_contains "a record of a plugin that is gone: the record's socket is checked" "$out" "ok    NRI: the runtime's socket \`$T/nri.sock\`"
t_contains "…and a warning: not registered, the plugin (pid $dead) gone" "$out" \
    "warn  NRI: resview's plugin is not registered: the plugin (pid $dead) that registered on \`$T/nri.sock\` is gone"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
out=$("$CLI" doctor 2>&1)
t_contains "…nothing listens there any more: information only" "$out" \
    "info  NRI: resview's plugin is not registered: the plugin (pid $dead) that registered on \`$T/nri.sock\` is gone"
rm -f "$T/state/nri-plugin.json"

# FUSE (profiles/README.md "What the next runtime and the kernel must do"): off by default; when allowed, the kernel, the next
# runtime's listener support, the FUSE runtime name, running brokers.
rv_config "$T/nofuse.json"
out=$(RESVIEW_CONFIG=$T/nofuse.json "$CLI" doctor 2>&1)
t_contains "FUSE off by default: said so" "$out" "info  FUSE: off (fuse.allowed is false)"
out=$(RESVIEW_CONFIG=$T/sc.json "$CLI" doctor 2>&1)
t_contains "FUSE allowed: the policy is shown" "$out" "ok    FUSE: allowed for the annotation resview.io/fuse=\"true\" and the runtime resview-runtime-fuse (any namespace); allow_other refused"
t_contains "FUSE: the kernel calls the broker needs are there" "$out" "ok    FUSE: the kernel has seccomp user notification, pidfd_getfd, fsopen, openat2"
t_contains "FUSE: runc can hand mount calls to the broker" "$out" "SCMP_ACT_NOTIFY"
mkdir -p "$T/oldbin"
printf '#!/bin/sh\necho "runc version 1.0.0"; exit 1\n' >"$T/oldbin/runc" && chmod +x "$T/oldbin/runc"
rv_config "$T/oldrt.json" "{\"fuse\": {\"allowed\": true}, \"runtimes\": [\"$T/oldbin/runc\"]}"
out=$(RESVIEW_CONFIG=$T/oldrt.json "$CLI" doctor 2>&1); rc=$?
t_contains "FUSE allowed, a next runtime without listener support: FAIL" "$out" "FAIL  FUSE: next runtime \`$T/oldbin/runc\`"
t_eq "FUSE allowed, a next runtime without listener support: exit 1" "$rc" "1"
mkdir -p "$T/state/fuse" && chmod 700 "$T/state/fuse" && : >"$T/state/fuse/c1.999999999.sock"
out=$(RESVIEW_CONFIG=$T/sc.json "$CLI" doctor 2>&1)
t_contains "FUSE: a socket of a killed broker is reported" "$out" "FUSE brokers: 0 running (one per FUSE container), and sockets of brokers that were killed"

lxcfs_start "$LXCFS_DIR" || exit 1
out=$("$CLI" doctor 2>&1)
t_contains "lxcfs started with --enable-cfs: said so" "$out" "runs with --enable-cfs"
lxcfs_stop "$LXCFS_DIR"
mkdir -p "$LXCFS_DIR"
lxcfs -f -p "$T/lxcfs2.pid" "$LXCFS_DIR" >/dev/null 2>&1 &
pid2=$!
t_cleanup "kill $pid2; umount -l $LXCFS_DIR"
for _ in $(seq 1 100); do head -c1 "$LXCFS_DIR/proc/meminfo" >/dev/null 2>&1 && break; sleep 0.05; done
out=$("$CLI" doctor 2>&1)
t_contains "lxcfs without --enable-cfs: a warning that says what to add" "$out" "without --enable-cfs"
kill $pid2; wait $pid2 2>/dev/null; umount -l "$LXCFS_DIR" 2>/dev/null; true
