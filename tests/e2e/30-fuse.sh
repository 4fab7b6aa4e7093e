#!/bin/bash
# FUSE with least privilege (DESIGN.md section 4), through resview-runtime with
# real runc and crun, no privileged anywhere:
# - a container that asks mounts a real FUSE file system (bindfs, copied with
#   its libraries into the rootfs), reads through it, unmounts it;
# - it holds exactly CAP_SYS_ADMIN more than the engine gave, sees /dev/fuse
#   and no other host device (stand-in GPU nodes on the host stay hidden; mknod
#   + open of c 195:0 fails);
# - inside it, still denied: open_by_handle_at, bpf, keyctl,
#   unshare(CLONE_NEWUSER), setns, fsopen (ENOSYS), mount with MS_BIND,
#   MS_REMOUNT, MS_MOVE over /proc (a static probe, tests/fuse/fuse-probe.c);
# - without the request: no /dev/fuse, no CAP_SYS_ADMIN, mount denied;
# - fuse.allowed=false: refused with a clear error, bundle byte-for-byte untouched;
# - engine profiles (docker's and containerd's shape, and a default-allow
#   deny-list) keep every rule and pass runc's and crun's own validation.
source "$(dirname "$0")/../lib/common.sh"

for tool in bindfs gcc runc crun jq; do
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


# Build a bundle: engine-given caps CAP_MKNOD and CAP_DAC_READ_SEARCH (so that
# mknod and open_by_handle_at are stopped by the device cgroup and seccomp,
# not by a missing capability), writable root, the script as the process.
make_bundle() { # DIR REQUEST(true|false|"") SECCOMP_FILE|""
    local b=$1 req=$2 sc=${3:-}
    mkdir -p "$b"
    [ -d "$b/rootfs" ] || fuse_rootfs "$b/rootfs"
    rv_bundle "$b"
    jq --arg s "$SCRIPT" --arg req "$req" --slurpfile sc "${sc:-/dev/null}" '
        .root.readonly = false | .process.args = ["/bin/sh", "-c", $s]
        | .annotations["resview.io/lxcfs"] = "false"
        | .process.capabilities |= with_entries(.value += ["CAP_MKNOD", "CAP_DAC_READ_SEARCH"])
        | if $req != "" then .annotations["resview.io/fuse"] = $req else . end
        | if ($sc | length) > 0 then .linux.seccomp = $sc[0] else . end' \
        "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
}

# CapEff the engine gave (runc spec defaults + the two above), and with SYS_ADMIN.
CAPS_ENGINE=(29 5 10 27 2)    # AUDIT_WRITE KILL NET_BIND_SERVICE MKNOD DAC_READ_SEARCH
CAP_ENGINE=$(cap_hex "${CAPS_ENGINE[@]}")
CAP_FUSE=$(cap_hex "${CAPS_ENGINE[@]}" 21)

rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {seccomp_profile: $p}}')"
rv_config "$T/config-nofuse.json" '{"fuse": {"allowed": false}}'


for rt in runc crun; do
    # 1. The request, no engine profile: profiles/seccomp.json + additions.
    b=$T/b-fuse-$rt
    make_bundle "$b" true
    out=$(run_shim "$rt" "fuse-$rt-$$" "$b" 2>&1)
    check_fuse_output "$rt fuse" "$out"
    # The limit seccomp cannot enforce (README "fuse"): mount(2)'s fs type is a
    # pointer, so a plain mount of another fs type with no flag passes seccomp.
    t_contains "$rt fuse: documented limit: tmpfs mount with no flags passes seccomp (no AppArmor here)" \
        "$out" "mount-tmpfs ok"
    t_eq "$rt fuse: the bundle's seccomp is profiles/seccomp.json + 3 rules" \
        "$(jq '.linux.seccomp.syscalls | length' "$b/config.json")" \
        "$(( $(jq '.syscalls | length' "$TOP/profiles/seccomp.json") + 3 ))"
    t_eq "$rt fuse: no apparmorProfile (AppArmor disabled on this host)" \
        "$(jq -r '.process.apparmorProfile // "none"' "$b/config.json")" "none"
    # Idempotent: the edited bundle run again is not changed.
    sum1=$(sha256sum <"$b/config.json")
    out2=$(run_shim "$rt" "fuse2-$rt-$$" "$b" 2>&1)
    t_eq "$rt fuse: a second create leaves config.json byte-for-byte the same" "$(sha256sum <"$b/config.json")" "$sum1"
    t_contains "$rt fuse: the second run mounts FUSE too" "$out2" "read hello through fuse"

    # The same request through the container's env (docker 20.10 has no annotations).
    b=$T/b-env-$rt
    make_bundle "$b" ""
    jq '.process.env += ["RESVIEW_FUSE=1"]' "$b/config.json" >"$b/c.new" && mv "$b/c.new" "$b/config.json"
    out=$(run_shim "$rt" "env-$rt-$$" "$b" 2>&1)
    t_contains "$rt RESVIEW_FUSE=1: FUSE mount works" "$out" "read hello through fuse"
    t_eq "$rt RESVIEW_FUSE=1: CapEff + CAP_SYS_ADMIN" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_FUSE"
    # Any other value is an error, not a guess; the bundle is untouched.
    b=$T/b-bad-$rt
    make_bundle "$b" yes
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "bad-$rt-$$" "$b" 2>&1); rc=$?
    t_ok "$rt resview.io/fuse: \"yes\": non-zero exit" test "$rc" -ne 0
    t_contains "$rt resview.io/fuse: \"yes\": the error names the annotation" "$err" "resview.io/fuse"
    t_eq "$rt resview.io/fuse: \"yes\": config.json untouched" "$(sha256sum <"$b/config.json")" "$sum"

    # 2. No request: nothing of the above.
    b=$T/b-plain-$rt
    make_bundle "$b" ""
    out=$(run_shim "$rt" "plain-$rt-$$" "$b" 2>&1)
    t_eq "$rt no request: CapEff = the engine's, no CAP_SYS_ADMIN" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_not_contains "$rt no request: no /dev/fuse" "$out" "dev /dev/fuse"
    t_contains "$rt no request: bindfs cannot mount" "$out" "bindfs failed"
    t_contains "$rt no request: mount denied" "$out" "mount-tmpfs EPERM"
    t_eq "$rt no request: config.json has no /dev/fuse" "$(jq '[.linux.devices[]? | select(.path == "/dev/fuse")] | length' "$b/config.json")" "0"
    t_contains "$rt no request: explicit \"false\" is accepted" \
        "$(make_bundle "$T/b-false-$rt" false; run_shim "$rt" "false-$rt-$$" "$T/b-false-$rt" 2>&1)" "capeff $CAP_ENGINE"

    # 3. fuse.allowed=false: refused, bundle untouched, no container.
    b=$T/b-refused-$rt
    make_bundle "$b" true
    sum=$(sha256sum <"$b/config.json")
    err=$(run_shim "$rt" "refused-$rt-$$" "$b" "$T/config-nofuse.json" 2>&1); rc=$?
    t_ok "$rt fuse.allowed=false: non-zero exit" test "$rc" -ne 0
    t_contains "$rt fuse.allowed=false: clear error" "$err" "FUSE was requested but fuse.allowed is false"
    t_eq "$rt fuse.allowed=false: config.json byte-for-byte untouched" "$(sha256sum <"$b/config.json")" "$sum"
    t_not_contains "$rt fuse.allowed=false: the container never ran" "$err" "capeff"

    # 4. Engine profiles: every rule kept; runc/crun create and run it.
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
    # The default-allow profile: tmpfs mount with no flags passes; its engine
    # deny rule lost only mount and umount2.
    t_eq "$rt default-allow: the engine's deny rule keeps its other names" \
        "$(jq -c '.syscalls[0].names - ["mount", "umount2"]' "$PROFILES/default-allow.json")" \
        "$(jq -c '.linux.seccomp.syscalls[0].names' "$T/b-default-allow-$rt/config.json")"
done

# Discovery: an installed runtime finds <bin>/../share/resview/seccomp.json
# when fuse.seccomp_profile is not set (the layout `make install` makes).
mkdir -p "$T/prefix/bin" "$T/prefix/share/resview"
cp "$RUNTIME" "$T/prefix/bin/resview-runtime"
jq '.syscalls[0].names -= ["getpgrp"]' "$TOP/profiles/seccomp.json" >"$T/prefix/share/resview/seccomp.json"
rv_config "$T/config-discover.json"
b=$T/b-discover
make_bundle "$b" true
out=$(RUNTIME=$T/prefix/bin/resview-runtime run_shim runc "discover-$$" "$b" "$T/config-discover.json" 2>&1)
t_contains "installed layout: FUSE works with the discovered profile" "$out" "read hello through fuse"
t_eq "installed layout: the profile used is <bin>/../share/resview/seccomp.json" \
    "$(jq '[.linux.seccomp.syscalls[0].names[] | select(. == "getpgrp")] | length' "$b/config.json")" "0"

# The AppArmor profile is valid for the parser (this host has no AppArmor to load it).
if command -v apparmor_parser >/dev/null; then
    t_ok "profiles/apparmor/resview-fuse parses (apparmor_parser -Q -K)" \
        apparmor_parser -Q -K "$TOP/profiles/apparmor/resview-fuse"
    # load.sh: nothing where AppArmor is off; installs and runs the parser where on.
    echo N >"$T/aa-enabled"
    t_contains "load.sh: AppArmor disabled: nothing loaded" \
        "$(RESVIEW_AA_ENABLED=$T/aa-enabled RESVIEW_AA_DIR=$T/aa.d "$TOP/profiles/apparmor/load.sh" 2>&1)" "not enabled"
    t_ok "load.sh: AppArmor disabled: no file installed" test ! -e "$T/aa.d/resview-fuse"
    echo Y >"$T/aa-enabled"
    t_contains "load.sh: AppArmor enabled: installed and parsed" \
        "$(RESVIEW_AA_ENABLED=$T/aa-enabled RESVIEW_AA_DIR=$T/aa.d RESVIEW_AA_PARSER="apparmor_parser -Q -K" \
           "$TOP/profiles/apparmor/load.sh" 2>&1)" "loaded from $T/aa.d/resview-fuse"
    t_ok "load.sh: the installed profile is the repo's" cmp "$TOP/profiles/apparmor/resview-fuse" "$T/aa.d/resview-fuse"
else
    echo "not ok - apparmor_parser missing (make deps installs tests/deps.d/fuse.txt)"
fi
