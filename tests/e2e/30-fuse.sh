#!/bin/bash
# FUSE with zero added capabilities (profiles/README.md), through resview-runtime
# with real runc and crun, no privileged anywhere:
# - a container that may have FUSE mounts a real FUSE file system (bindfs),
#   reads and writes through it, unmounts it with umount and fusermount3 -u;
#   its mount calls go to its broker (seccomp user notification);
# - CapEff is exactly the engine's; /dev/fuse and no other host device;
# - still denied: open_by_handle_at, bpf, keyctl, unshare(CLONE_NEWUSER),
#   setns; fsopen and open_tree answer ENOSYS; a tmpfs mount is refused;
# - who may ask: fuse.allowed (default false) refuses with the bundle byte for
#   byte intact; RESVIEW_FUSE=1 alone is refused, saying how to ask; the
#   annotation and the FUSE runtime name work; fuse.namespaces; allow_other
#   only with fuse.allow_other;
# - without a request: no /dev/fuse, no broker, mount denied;
# - engine profiles (docker's, containerd's shapes, a default-allow deny-list)
#   keep every other rule and pass runc's and crun's own validation;
# - a next runtime that cannot pass the notify fd: refused, bundle intact;
# - the broker is gone once the container is, and removed its socket.
source "$(dirname "$0")/../lib/common.sh"

for tool in bindfs fusermount3 gcc runc crun jq; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps installs tests/deps.d/fuse.txt)"; exit 1; }
done
[ -c /dev/fuse ] || { echo "not ok - /dev/fuse missing on the host"; exit 1; }

PROFILES=$TOP/tests/fuse/profiles
source "$TOP/tests/fuse/lib.sh"
fuse_probe_build || exit 1

# Stand-in GPU nodes on the host, only where absent; removed at exit.
for n in nvidia0:195:0 nvidia1:195:1 nvidiactl:195:255; do
    IFS=: read -r name maj min <<<"$n"
    if [ ! -e "/dev/$name" ]; then
        mknod "/dev/$name" c "$maj" "$min" && t_cleanup "rm -f /dev/$name"
    fi
done
t_ok "host has the stand-in GPU node /dev/nvidia0 (c 195:0)" test -c /dev/nvidia0

# The control: without seccomp (on the host) the probe's calls do not fail with
# EPERM, so an EPERM inside the container comes from the filter.
control=$("$T/fuse-probe" control)
t_eq "control (host, no seccomp): the probe's calls are not EPERM there" \
    "$(grep -c ' EPERM$' <<<"$control")" "0"
t_contains "control (host): fsopen reaches the kernel" "$control" "fsopen ENODEV"

# A bundle: engine-given caps CAP_MKNOD and CAP_DAC_READ_SEARCH (so that
# mknod and open_by_handle_at are stopped by the device cgroup and seccomp,
# not by a missing capability), writable root, the script as the process.
make_bundle() { # DIR REQUEST(true|false|"") SECCOMP_FILE|"" [SCRIPT]
    local b=$1 req=$2 sc=${3:-} s=${4:-$SCRIPT}
    mkdir -p "$b"
    [ -d "$b/rootfs" ] || fuse_rootfs "$b/rootfs"
    rv_bundle "$b"
    jq --arg s "$s" --arg req "$req" --slurpfile sc "${sc:-/dev/null}" '
        .root.readonly = false | .process.args = ["/bin/sh", "-c", $s]
        | .annotations["resview.io/lxcfs"] = "false"
        | .process.capabilities |= with_entries(.value += ["CAP_MKNOD", "CAP_DAC_READ_SEARCH"])
        | if $req != "" then .annotations["resview.io/fuse"] = $req else . end
        | if ($sc | length) > 0 then .linux.seccomp = $sc[0] else . end' \
        "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
}
set_spec() { jq "$2" "$1/config.json" >"$1/c.new" && mv "$1/c.new" "$1/config.json"; }
# Brokers of this test still running (their sockets carry the test dir).
live_brokers() { pgrep -f "resview-fuse-broker .*$T/" | wc -l; }

# CapEff the engine gave: runc's spec defaults + the two above.
CAP_ENGINE=$(cap_hex 29 5 10 27 2)    # AUDIT_WRITE KILL NET_BIND_SERVICE MKNOD DAC_READ_SEARCH

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}}')"
rv_config "$T/config-default.json"
rv_config "$T/config-ao.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, allow_other: true, seccomp_profile: $p}}')"
rv_config "$T/config-ns.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, namespaces: ["team-a"], seccomp_profile: $p}}')"
mkdir -p "$T/bin"
ln -s "$RUNTIME" "$T/bin/resview-runtime-fuse"

for rt in runc crun; do
    # 1. The annotation, no engine profile: profiles/seccomp.json + the rules.
    b=$T/b-fuse-$rt
    make_bundle "$b" true
    out=$(run_shim "$rt" "fuse-$rt-$$" "$b" 2>&1)
    check_fuse_output "$rt fuse" "$out"
    t_eq "$rt fuse: the bundle's seccomp is profiles/seccomp.json + 2 rules" \
        "$(jq '.linux.seccomp.syscalls | length' "$b/config.json")" \
        "$(( $(jq '.syscalls | length' "$TOP/profiles/seccomp.json") + 2 ))"
    t_eq "$rt fuse: mount, umount, umount2 go to the broker" \
        "$(jq -c '[.linux.seccomp.syscalls[] | select(.action == "SCMP_ACT_NOTIFY") | .names]' "$b/config.json")" \
        '[["mount","umount","umount2"]]'
    t_eq "$rt fuse: no capability in the spec beyond the engine's" \
        "$(jq -c '.process.capabilities.bounding | sort' "$b/config.json")" \
        '["CAP_AUDIT_WRITE","CAP_DAC_READ_SEARCH","CAP_KILL","CAP_MKNOD","CAP_NET_BIND_SERVICE"]'
    lp=$(jq -r .linux.seccomp.listenerPath "$b/config.json")
    t_ok "$rt fuse: listenerPath is a socket of its own under state_dir/fuse" \
        grep -qE "^$T/state/fuse/fuse-$rt-$$\.[0-9]+\.sock$" <<<"$lp"
    t_eq "$rt fuse: listenerMetadata names the container" "$(jq -r .linux.seccomp.listenerMetadata "$b/config.json")" "fuse-$rt-$$"
    t_ok "$rt fuse: the broker left with the container and removed its socket" test ! -e "$lp"
    t_eq "$rt fuse: no apparmorProfile" "$(jq -r '.process.apparmorProfile // "none"' "$b/config.json")" "none"
    case $rt in
    runc) # runc 1.1 lists no seccomp flags in its features (none added); runc >= 1.2 lists
          # SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where the kernel has it (added)
          if runc features | jq -e '.linux.seccomp.supportedFlags // [] | index("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV")' >/dev/null; then
              t_eq "runc >= 1.2 (the flag in its features): SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV added" \
                  "$(jq -c '.linux.seccomp.flags' "$b/config.json")" '["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]'
          else
              t_eq "runc 1.1 (no seccomp flags in its features): no flags added" "$(jq -c '.linux.seccomp.flags' "$b/config.json")" "null"
          fi ;;
    crun) t_eq "crun >= 1.6: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV added" \
              "$(jq -c '.linux.seccomp.flags' "$b/config.json")" '["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]' ;;
    esac
    # Run again on the edited bundle: only the listener changes (a new broker).
    before=$(jq -S 'del(.linux.seccomp.listenerPath, .linux.seccomp.listenerMetadata)' "$b/config.json")
    out2=$(run_shim "$rt" "fuse2-$rt-$$" "$b" 2>&1)
    t_eq "$rt fuse: a second create changes nothing but the listener" \
        "$(jq -S 'del(.linux.seccomp.listenerPath, .linux.seccomp.listenerMetadata)' "$b/config.json")" "$before"
    t_contains "$rt fuse: the second run mounts FUSE too" "$out2" "read hello through fuse"
    # 2 to 8, and what follows the loop: who may ask, and seccomp, the same on cgroup v1 and v2
    in_v2_share && continue

    # 2. The image's own RESVIEW_FUSE=1: refused, saying how to ask; no broker.
    b=$T/b-env-$rt
    make_bundle "$b" ""
    set_spec "$b" '.process.env += ["RESVIEW_FUSE=1"]'
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "env-$rt-$$" "$b" 2>&1); rc=$?
    t_ok "$rt RESVIEW_FUSE=1 alone: non-zero exit" test "$rc" -ne 0
    t_contains "$rt RESVIEW_FUSE=1 alone: says how to ask" "$err" "ask with the annotation resview.io/fuse=\"true\" or the runtime resview-runtime-fuse"
    t_eq "$rt RESVIEW_FUSE=1 alone: one line" "$(wc -l <<<"$err")" "1"
    t_eq "$rt RESVIEW_FUSE=1 alone: config.json untouched" "$(sha256sum <"$b/config.json")" "$sum"
    t_eq "$rt RESVIEW_FUSE=1 alone: no socket left" "$(ls "$T/state/fuse" | grep -c "^env-$rt-$$\.")" "0"
    # ... and the same container through the FUSE runtime name (docker 20.10's way).
    out=$(RUNTIME=$T/bin/resview-runtime-fuse run_shim "$rt" "rtname-$rt-$$" "$b" 2>&1)
    t_contains "$rt the runtime resview-runtime-fuse: FUSE mount works" "$out" "read hello through fuse"
    t_eq "$rt the runtime resview-runtime-fuse: CapEff the engine's" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"

    # 3. An invalid value: an error, not a guess; the bundle is untouched.
    b=$T/b-bad-$rt
    make_bundle "$b" yes
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "bad-$rt-$$" "$b" 2>&1); rc=$?
    t_ok "$rt resview.io/fuse: \"yes\": non-zero exit" test "$rc" -ne 0
    t_contains "$rt resview.io/fuse: \"yes\": the error names the annotation" "$err" "resview.io/fuse"
    t_eq "$rt resview.io/fuse: \"yes\": config.json untouched" "$(sha256sum <"$b/config.json")" "$sum"

    # 4. No request: nothing of the above.
    b=$T/b-plain-$rt
    make_bundle "$b" ""
    out=$(run_shim "$rt" "plain-$rt-$$" "$b" 2>&1)
    t_eq "$rt no request: CapEff = the engine's" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_not_contains "$rt no request: no /dev/fuse" "$out" "dev /dev/fuse"
    t_contains "$rt no request: bindfs cannot mount" "$out" "bindfs failed"
    t_contains "$rt no request: mount denied" "$out" "mount-tmpfs EPERM"
    t_eq "$rt no request: config.json has no /dev/fuse and no listener" \
        "$(jq '([.linux.devices[]? | select(.path == "/dev/fuse")] | length), .linux.seccomp.listenerPath' "$b/config.json" | tr '\n' ' ')" "0 null "
    t_contains "$rt no request: explicit \"false\" is accepted" \
        "$(make_bundle "$T/b-false-$rt" false; run_shim "$rt" "false-$rt-$$" "$T/b-false-$rt" 2>&1)" "capeff $CAP_ENGINE"

    # 5. The default configuration (fuse.allowed false): refused, bundle byte for byte.
    b=$T/b-refused-$rt
    make_bundle "$b" true
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "refused-$rt-$$" "$b" "$T/config-default.json" 2>&1); rc=$?
    t_ok "$rt fuse.allowed=false: non-zero exit" test "$rc" -ne 0
    t_contains "$rt fuse.allowed=false: clear error" "$err" "FUSE was requested (annotation resview.io/fuse=true) but fuse.allowed is false"
    t_eq "$rt fuse.allowed=false: config.json byte-for-byte untouched" "$(sha256sum <"$b/config.json")" "$sum"
    t_not_contains "$rt fuse.allowed=false: the container never ran" "$err" "capeff"

    # 6. allow_other: bindfs as root asks for it; refused unless fuse.allow_other.
    b=$T/b-ao-$rt
    make_bundle "$b" true "" 'bindfs /src /mnt/fuse && cat /mnt/fuse/hello && grep " /mnt/fuse " /proc/self/mounts'
    out=$(run_shim "$rt" "ao-$rt-$$" "$b" 2>&1)
    t_not_contains "$rt allow_other, not allowed: bindfs cannot mount" "$out" "hello through fuse"
    t_contains "$rt allow_other, not allowed: the broker says why" "$(cat "$T/resview.log")" \
        "mount fuse \`/mnt/fuse\` (tid"
    out=$(run_shim "$rt" "ao2-$rt-$$" "$b" "$T/config-ao.json" 2>&1)
    t_contains "$rt fuse.allow_other true: bindfs mounts with allow_other" "$out" "hello through fuse"
    t_contains "$rt fuse.allow_other true: the mount has allow_other" "$out" "allow_other"

    # 7. fuse.namespaces: only the Kubernetes namespaces listed (CRI's own annotation).
    b=$T/b-ns-$rt
    make_bundle "$b" true "" 'fuse-probe mount /mnt/fuse'
    set_spec "$b" '.annotations["io.kubernetes.cri.sandbox-namespace"] = "team-a"'
    t_contains "$rt fuse.namespaces: team-a listed: mounts" "$(run_shim "$rt" "ns-$rt-$$" "$b" "$T/config-ns.json" 2>&1)" "mount ok"
    set_spec "$b" '.annotations["io.kubernetes.cri.sandbox-namespace"] = "team-b"'
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "ns2-$rt-$$" "$b" "$T/config-ns.json" 2>&1)
    t_contains "$rt fuse.namespaces: team-b: refused" "$err" "the Kubernetes namespace \`team-b\` is not in fuse.namespaces"
    t_eq "$rt fuse.namespaces: team-b: bundle untouched" "$(sha256sum <"$b/config.json")" "$sum"

    # 8. Engine profiles: every other rule kept; runc/crun create and run it.
    for p in docker-default containerd-default default-allow; do
        b=$T/b-$p-$rt
        make_bundle "$b" true "$PROFILES/$p.json"
        out=$(run_shim "$rt" "$p-$rt-$$" "$b" 2>&1)
        t_eq "$rt $p: every engine rule without mount/umount2 kept, in order" \
            "$(jq -c '[.syscalls[] | select(any(.names[]; . == "mount" or . == "umount2") | not)]' "$PROFILES/$p.json")" \
            "$(jq -c --slurpfile o "$PROFILES/$p.json" '[.linux.seccomp.syscalls[] | select(. as $r | $o[0].syscalls | index([$r]))]' "$b/config.json")"
        t_eq "$rt $p: default action and architectures kept" \
            "$(jq -c '[.defaultAction, .defaultErrnoRet, .architectures]' "$PROFILES/$p.json")" \
            "$(jq -c '.linux.seccomp | [.defaultAction, .defaultErrnoRet, .architectures]' "$b/config.json")"
        check_fuse_output "$rt $p" "$out"
    done
    t_eq "$rt default-allow: the engine's deny rule keeps its other names" \
        "$(jq -c '.syscalls[0].names - ["mount", "umount2"]' "$PROFILES/default-allow.json")" \
        "$(jq -c '.linux.seccomp.syscalls[0].names' "$T/b-default-allow-$rt/config.json")"
done
t_eq "every broker of this test has exited" "$(live_brokers)" "0"
t_eq "no socket left under state_dir/fuse" "$(ls "$T/state/fuse" | grep -c '\.sock$')" "0"
in_v2_share && exit 0

# A next runtime that cannot hand over the notify fd (its `features` lacks
# SCMP_ACT_NOTIFY, as runc 1.0): refused with one line, bundle intact.
cat >"$T/bin/old-runc" <<EOF
#!/bin/sh
[ "\$1" = features ] && { runc features | jq '.linux.seccomp.actions -= ["SCMP_ACT_NOTIFY"]'; exit 0; }
exec runc "\$@"
EOF
chmod +x "$T/bin/old-runc"
b=$T/b-old
make_bundle "$b" true
sum=$(sha256sum <"$b/config.json")
jq --arg r "$T/bin/old-runc" '.runtimes = [$r]' "$T/config.json" >"$T/config-old.json"
err=$(cd "$b" && RESVIEW_CONFIG=$T/config-old.json "$RUNTIME" --root "$T/runc-root" run "old-$$" 2>&1); rc=$?
t_ok "runtime without listener support: non-zero exit" test "$rc" -ne 0
t_contains "runtime without listener support: says so" "$err" "no SCMP_ACT_NOTIFY; use runc >= 1.1 or crun >= 0.19"
t_eq "runtime without listener support: config.json untouched" "$(sha256sum <"$b/config.json")" "$sum"
t_ok "the runtime's answer is cached under state_dir/fuse" test -n "$(ls "$T/state/fuse" | grep '^runtime-')"

# Discovery: an installed runtime finds <bin>/../share/resview/seccomp.json
# when fuse.seccomp_profile is not set (the layout `make install` makes).
mkdir -p "$T/prefix/bin" "$T/prefix/share/resview"
cp "$RUNTIME" "$T/prefix/bin/resview-runtime"
jq '.syscalls[0].names -= ["getpgrp"]' "$TOP/profiles/seccomp.json" >"$T/prefix/share/resview/seccomp.json"
rv_config "$T/config-discover.json" '{"fuse": {"allowed": true}}'
b=$T/b-discover
make_bundle "$b" true
out=$(RUNTIME=$T/prefix/bin/resview-runtime run_shim runc "discover-$$" "$b" "$T/config-discover.json" 2>&1)
t_contains "installed layout: FUSE works with the discovered profile" "$out" "read hello through fuse"
t_eq "installed layout: the profile used is <bin>/../share/resview/seccomp.json" \
    "$(jq '[.linux.seccomp.syscalls[0].names[] | select(. == "getpgrp")] | length' "$b/config.json")" "0"
