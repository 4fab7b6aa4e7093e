#!/bin/bash
# The FUSE broker's limits against a hostile tenant, under runc and crun
# (profiles/README.md "Limits"): what the tenant controls here is how it
# lets go of its file systems, the timing of its own daemon, the text of its
# calls and the volumes it can write.
#  1. umount -l with the file system kept alive (an fd, a working directory,
#     an fd passed to another process): still counted until the kernel frees
#     it; fuse.max_mounts (8) holds, and is logged once; let go, 8 more work.
#  2. workers replaced while blocked reading the strings of 5 calls (a
#     daemon of the tenant that answers READ late), then 7 mounts: when the 5
#     wake, they get ENOSPC (one count for every worker).
#  3. fuse.max_mounts_node (12) across two containers: the second gets 4,
#     then ENOSPC; `resview doctor` shows the count and who holds them; the
#     first ended, the second gets the rest of its own cap.
#  4. a target with C1 CSI, RIGHT-TO-LEFT OVERRIDE and LINE SEPARATOR: the
#     log has them escaped, and no byte outside printable ASCII at all.
#  5. a volume's host source swapped for a symlink to an engine file (through
#     another volume) before the first call: that file is no volume.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"
export LXCFS_DIR=$T/lxcfs
source "$TOP/tests/lib/lxcfs-helpers.sh"

fuse_tenant_prep || exit 1
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" \
    '{fuse: {allowed: true, allow_other: true, seccomp_profile: $p, max_mounts: 8, max_mounts_node: 12},
      log: {level: "info"}}')"
mkdir -p "$T/ctl"
echo "127.0.0.1 engine-hosts" >"$T/hosts"

make_bundle() { # DIR SCRIPT: FUSE requested, docker's capabilities, volumes /vp and /data (= /vp/a)
    local b=$1 s=$2 vp=$T/vp-$(basename "$1")
    mkdir -p "$b" "$vp/a"
    fuse_rootfs "$b/rootfs"
    cp "$T/fuse-hang" "$b/rootfs/bin/fuse-hang"
    for a in kill timeout sort uniq cut mv ln; do ln -sf busybox "$b/rootfs/bin/$a"; done
    mkdir -p "$b/rootfs/data" "$b/rootfs/vp" "$b/rootfs/ctl" "$b/rootfs/mnt/q"
    : >"$b/rootfs/etc/hosts"
    rv_bundle "$b" "$LIMITS"
    jq --arg s "$s" --argjson caps "$DOCKER_CAPS" --arg vp "$vp" --arg ctl "$T/ctl" --arg hosts "$T/hosts" \
        '.process.args = ["/bin/sh", "-c", $s] | .root.readonly = false
        | .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
        | .annotations["resview.io/fuse"] = "true"
        | .mounts += [{destination: "/vp", type: "bind", source: $vp, options: ["rbind", "rw"]},
                      {destination: "/data", type: "bind", source: ($vp + "/a"), options: ["rbind", "rw"]},
                      {destination: "/ctl", type: "bind", source: $ctl, options: ["rbind", "rw"]},
                      {destination: "/etc/hosts", type: "bind", source: $hosts, options: ["rbind", "ro"]}]' \
        "$b/config.json" >"$b/c.new" && mv "$b/c.new" "$b/config.json"
}
wait_file() { wait_for 60 test -e "$1"; }
log_of() { grep "id=$1" "$T/resview.log"; }
# the tenant's FUSE mounts in its mount table (not the views)
TENANT_FUSE='grep " - fuse" /proc/self/mountinfo | grep -vc fuse.lxcfs'

# 1. Detached but held.
LAZY='for how in fd pass; do
  sleep 3 | fuse-probe lazy /mnt/l-$how 20 $how | sed "s/^/$how /"
  umount /mnt/l-$how/r* 2>/dev/null
done
# a working directory: a daemon that answers (bindfs), and a process in it
ok=0 pids="" err=""
for i in $(seq 1 20); do
  mkdir -p /mnt/c/$i
  if ! bindfs --no-allow-other /src /mnt/c/$i 2>/tmp/bindfs.err; then
    [ -n "$err" ] || err=$(grep -o "No space left on device" /tmp/bindfs.err || cat /tmp/bindfs.err); continue
  fi
  ok=$((ok + 1))
  (cd /mnt/c/$i && touch /tmp/in-$i && exec sleep 1000) & pids="$pids $!"
  while [ ! -e /tmp/in-$i ]; do sleep 0.05; done
  umount -l /mnt/c/$i
done
echo "cwd lazy 20 ok $ok first-error ${err:-none}"
kill $pids; wait 2>/dev/null; sleep 0.5
echo "cwd after-release ok $(fuse-probe mounts /mnt/c2 8 | cut -d" " -f4)"'
for rt in runc crun; do
    id=lazy-$rt-$$
    b=$T/b-lazy-$rt
    make_bundle "$b" "$LAZY"
    out=$(run_shim "$rt" "$id" "$b" 2>&1)
    for how in fd cwd pass; do
        want="$how lazy 20 ok 8 first-error ENOSPC"
        [ "$how" = cwd ] && want="cwd lazy 20 ok 8 first-error No space left on device"
        t_contains "$rt umount -l, kept alive by $(case $how in fd) echo an fd;; cwd) echo a working directory;;
            pass) echo an fd passed to another process;; esac): 8 of 20 mounts, then ENOSPC (fuse.max_mounts)" \
            "$out" "$want"
        t_contains "$rt umount -l, $how: let go, the kernel frees them and 8 more mount" "$out" "$how after-release ok 8"
    done
    t_eq "$rt: the cap is logged once for the container, not once per request" \
        "$(log_of "$id" | grep -c 'further mounts get ENOSPC')" "1"
    t_eq "$rt: ENOSPC refusals are not logged one by one" "$(log_of "$id" | grep -c 'refused (No space')" "0"
done

# 2. Late workers.
LATE='fuse-hang --hang read --release --content fuse.probe /mnt/q >/tmp/q.out 2>&1 & Q=$!
for i in $(seq 1 100); do grep -q ready /tmp/q.out && break; sleep 0.1; done
fuse-probe mmap-mounts-each /mnt/q/f /mnt/late 5 >/tmp/mm.out
touch /ctl/late-started-$RT; while [ ! -e /ctl/late-go-$RT ]; do sleep 0.1; done
fuse-probe mounts /mnt/m 7
kill -USR1 $Q
for i in $(seq 1 100); do [ "$(grep -c "^mmap-mount " /tmp/mm.out)" = 5 ] && break; sleep 0.1; done
grep "^mmap-mount " /tmp/mm.out | sort | uniq -c | tr -s " "
echo "tenant fuse file systems: $('"$TENANT_FUSE"')"
kill $Q'
for rt in runc crun; do
    id=late-$rt-$$
    b=$T/b-late-$rt
    make_bundle "$b" "RT=$rt; $LATE"
    run_shim "$rt" "$id" "$b" >"$T/late-$rt.out" 2>&1 & bg=$!
    wait_file "$T/ctl/late-started-$rt"
    replaced() { [ "$(log_of "$id" | grep -c 'inside one request')" -ge 5 ]; }
    t_ok "$rt late: 5 workers replaced, each blocked reading its call's strings" wait_for 60 replaced
    touch "$T/ctl/late-go-$rt"; wait $bg
    out=$(cat "$T/late-$rt.out")
    t_contains "$rt late: the current worker mounts up to the cap (the daemon's own mount is one)" "$out" "mounts 7 ok 7 first-error none"
    t_contains "$rt late: the 5 replaced workers, awake, get ENOSPC" "$out" "5 mmap-mount ENOSPC"
    t_contains "$rt late: the container holds 8 FUSE file systems, no more" "$out" "tenant fuse file systems: 8"
done

# 3. The node-wide cap, across two containers.
NODE='fuse-probe mounts /mnt/m 8; touch /ctl/node-$NAME; while [ ! -e /ctl/node-go-$NAME ]; do sleep 0.1; done
fuse-probe mounts /mnt/m2 8'
for rt in runc crun; do
    for n in a b; do
        make_bundle "$T/b-node-$rt-$n" "NAME=$rt-$n; $NODE"
        run_shim "$rt" "node-$rt-$n-$$" "$T/b-node-$rt-$n" >"$T/node-$rt-$n.out" 2>&1 &
        eval "bg_$n=\$!"
        wait_file "$T/ctl/node-$rt-$n"
    done
    t_contains "$rt node: the first container mounts its 8" "$(cat "$T/node-$rt-a.out")" "mounts 8 ok 8 first-error none"
    t_contains "$rt node: the second gets 4, then ENOSPC (fuse.max_mounts_node 12)" \
        "$(cat "$T/node-$rt-b.out")" "mounts 8 ok 4 first-error ENOSPC"
    doc=$(RESVIEW_CONFIG=$T/config.json.$rt "$CLI" doctor 2>&1)
    t_contains "$rt node: doctor shows the count and who holds them" "$doc" \
        "FUSE file systems held on the node: 12 of 12 (fuse.max_mounts_node); most: node-$rt-a-$$ 8, node-$rt-b-$$ 4"
    t_eq "$rt node: the node cap is logged once" "$(log_of "node-$rt-b-$$" | grep -c 'fuse.max_mounts_node): further')" "1"
    touch "$T/ctl/node-go-$rt-a"; wait $bg_a
    touch "$T/ctl/node-go-$rt-b"; wait $bg_b
    t_eq "$rt node: the first one ended, the second mounts 4 more, up to its own cap (fuse.max_mounts)" \
        "$(grep -c '^mounts 8 ok 4 first-error ENOSPC' "$T/node-$rt-b.out")" "2"
done

# 4. Text from a tenant in the log.
for rt in runc crun; do
    id=text-$rt-$$
    b=$T/b-text-$rt
    make_bundle "$b" 'fuse-probe mount "$(printf "/mnt/\302\233[2J\342\200\256evil\342\200\250x")"'
    out=$(run_shim "$rt" "$id" "$b" 2>&1)
    t_contains "$rt text: the call was refused (no such target)" "$out" "mount ENOENT"
    t_contains "$rt text: the log shows C1 CSI, RLO and LINE SEPARATOR escaped" "$(log_of "$id" | grep refused)" \
        '`/mnt/\xc2\x9b[2J\xe2\x80\xaeevil\xe2\x80\xa8x`'
    t_eq "$rt text: no byte outside printable ASCII anywhere in the log" \
        "$(LC_ALL=C grep -c '[^ -~]' "$T/resview.log")" "0"
done

# 5. A volume's source swapped for a symlink.
SWAP='mv /vp/a /vp/a.old && ln -s '"$T"'/hosts /vp/a && echo swapped
echo "engine-file $(fuse-probe mount /etc/hosts)"
echo "volume $(fuse-probe mount /data) $(umount /data 2>&1 && echo umounted)"'
for rt in runc crun; do
    id=swap-$rt-$$
    b=$T/b-swap-$rt
    make_bundle "$b" "$SWAP"
    out=$(run_shim "$rt" "$id" "$b" 2>&1)
    t_contains "$rt swap: the tenant swapped the source of /data for a symlink to the engine's file" "$out" "swapped"
    t_contains "$rt swap: that file is still no volume: a FUSE mount over /etc/hosts is refused" "$out" "engine-file mount EPERM"
    t_contains "$rt swap: /data is still the volume the spec named" "$out" "volume mount ok umounted"
done
t_eq "no broker of this test is left" "$(pgrep -fc "resview-fuse-broker .*$T/")" "0"
