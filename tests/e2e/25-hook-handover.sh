#!/bin/bash
# One parse per start: resview-runtime hands root.path to the hook in the
# entry it writes, and the hook then reads no config.json. A hook.path wrapper
# (what runc runs) garbles the bundle's config.json before it execs the real
# hook: with the handover the views still go in; with the argument taken away
# the hook needs the spec and the start fails. A tenant's spec that carries
# its own resview-hook entries (a fake handover, another mode, another
# configuration) gets only the shim's entry.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
t_cleanup "lxcfs_stop $LXCFS_DIR"
NV=$(lxcfs_views "$LXCFS_DIR")   # LXCFS 5: nine; 6 and 7 add /proc/pressure/*

# hook.path: garble config.json (the bundle from the state on stdin), then the
# real hook with the arguments runc gave (or without the handover: strip=1).
mkdir -p "$T/bin"
cat >"$T/bin/resview-hook" <<EOF
#!/bin/bash
state=\$(cat)
bundle=\$(jq -r .bundle <<<"\$state")
printf '%s\n' "\$*" >>"$T/hook-args"
printf '{ garbage' >"\$bundle/config.json"
args=("\$@")
[ -e "$T/strip" ] && args=()
exec "$HOOK" "\${args[@]}" <<<"\$state"
EOF
chmod +x "$T/bin/resview-hook"
rv_config "$T/config.json" "$(jq -n --arg h "$T/bin/resview-hook" '{hook: {path: $h}}')"

READ='grep MemTotal /proc/meminfo; grep -c fuse.lxcfs /proc/self/mountinfo'
LIMITS='.linux.resources.memory.limit = 536870912'
for rt in runc crun; do
    rv_bundle "$T/b-$rt" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS"
    cp "$T/b-$rt/config.json" "$T/b-$rt/config.orig"
    : >"$T/hook-args"
    out=$(run_shim $rt "ho-$rt-$$" "$T/b-$rt" 2>&1)
    t_eq "$rt: the hook got root.path from the shim, joined to the bundle" "$(cat "$T/hook-args")" "--rootfs=$T/b-$rt/rootfs"
    t_contains "$rt: config.json was garbled before the hook ran" "$(cat "$T/b-$rt/config.json")" "{ garbage"
    t_contains "$rt: views mounted without reading config.json: MemTotal is the limit" "$out" "MemTotal:         524288 kB"
    t_line "$rt: every view ($NV)" "$out" "$NV"
done

# The control: the same start without the handover needs config.json.
touch "$T/strip"
cp "$T/b-runc/config.orig" "$T/b-runc/config.json"
out=$(run_shim runc "ho-strip-$$" "$T/b-runc" 2>&1); rc=$?
t_ok "without the handover the garbled spec fails the hook (rc $rc)" test "$rc" -ne 0
t_contains "  and it says it read config.json" "$(cat "$T/resview.log")" "config.json"
rm -f "$T/strip"

# A tenant's spec with entries pretending to be ours: a handover pointing at
# /etc, another configuration, the enroot mode with ENROOT_PID=1. Only the
# shim's entry runs: the views are in the container's rootfs, nothing else.
rv_bundle "$T/fake" ".process.args = [\"/bin/sh\", \"-c\", $(jq -Rn --arg s "$READ" '$s')] | $LIMITS"
jq --arg h "$T/bin/resview-hook" '.hooks = {
      prestart: [{path: $h, args: ["resview-hook", "--rootfs=/"], env: ["RESVIEW_CONFIG=/nonexistent/tenant.json"]}],
      poststart: [{path: "/usr/local/bin/resview-hook", args: ["resview-hook", "--enroot"],
                   env: ["ENROOT_PID=1", "ENROOT_ROOTFS=/", "ENROOT_ENVIRON=/etc/environment"]}]}' \
    "$T/fake/config.json" >"$T/fake/c.json" && mv "$T/fake/c.json" "$T/fake/config.json"
: >"$T/hook-args"
out=$(run_shim runc "ho-fake-$$" "$T/fake" 2>&1)
t_eq "tenant entries: the hook ran once, with the shim's handover" "$(cat "$T/hook-args")" "--rootfs=$T/fake/rootfs"
t_contains "tenant entries: views in the container" "$out" "MemTotal:         524288 kB"
t_eq "tenant entries: no view was mounted on the host's /proc" "$(grep -c ' /proc/meminfo ' /proc/1/mountinfo)" "0"
