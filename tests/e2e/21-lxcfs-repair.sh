#!/bin/bash
# `resview repair`: views for containers that started while LXCFS was down;
# healing after LXCFS is killed and restarted (20 containers); no stacking;
# records of exited containers and reused pids dropped; --all for views made
# without resview.
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
host_mem=$(grep MemTotal /proc/meminfo | awk '{print $2}')

# 1. LXCFS down when the containers start: they start, with host values.
start_bg late-r-$$ && start_bg c-late-$$
t_eq "LXCFS down: runc container starts with host MemTotal" "$(mem_inside late-r-$$)" "$host_mem"
t_eq "LXCFS down: crun container starts with host MemTotal" "$(mem_inside c-late-$$)" "$host_mem"
t_eq "LXCFS down: recorded as such" "$(jq -r .status "$T/state/containers/late-r-$$/views")" "lxcfs-down"
t_contains "LXCFS down: warning logged" "$(cat "$T/resview.log")" "LXCFS is down"
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "repair while LXCFS is down: fails" "$rc" "1"
t_contains "repair while LXCFS is down: says why" "$(cat "$T/out")" "LXCFS is not answering"
# lxcfs.required: then a start without LXCFS fails, saying why.
rv_config "$T/config-req.json" '{"lxcfs": {"required": true}}'
rv_bundle "$T/req" '.process.args = ["/bin/true"]'
out=$(run_shim runc "req-$$" "$T/req" "$T/config-req.json" 2>&1); rc=$?
t_ok "lxcfs.required, LXCFS down: the start fails" test "$rc" -ne 0
t_contains "lxcfs.required: the error says LXCFS is down" "$out" "LXCFS is down"
runc --root "$T/runc-root" delete -f "req-$$" >/dev/null 2>&1

# `repair --wait` (lxcfs.service ExecStartPost) waits for LXCFS to answer.
RESVIEW_CONFIG=$T/config.json "$CLI" repair --wait 30 >"$T/out" 2>&1 & rp=$!
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
wait $rp; rc=$?
NV=$(lxcfs_views "$LXCFS_DIR")   # the views a container gets: LXCFS 5 nine, 6 and 7 add /proc/pressure/*
t_eq "repair --wait, LXCFS started meanwhile: attaches views to both: exit 0" "$rc" "0"
t_contains "repair attaches views to both: summary" "$(cat "$T/out")" "scanned 2, repaired 2, failed 0"
t_eq "repair: runc container now reads its limit" "$(mem_inside late-r-$$)" "524288"
t_eq "repair: crun container now reads its limit" "$(mem_inside c-late-$$)" "524288"
t_eq "repair: one processor" "$(inside c-late-$$ grep -c ^processor /proc/cpuinfo)" "1"
t_eq "repair: record updated" "$(jq -r '.status + " " + (.mounted | length | tostring)' "$T/state/containers/late-r-$$/views")" "ok $NV"
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "repair again: nothing to do" "$rc $(tail -1 "$T/out")" "0 scanned 2, repaired 0, failed 0 (healthy 2, dropped 0 records of exited containers)"
t_eq "repair again: one LXCFS mount per target" "$(per_target late-r-$$)" "1 "
$(rt_cmd runc) delete -f late-r-$$; $(rt_cmd crun) delete -f c-late-$$

# 2. kill -9 LXCFS while 20 containers run; restart; repair heals all 20.
ids=()
for i in $(seq 1 10); do ids+=("k$i-$$" "ck$i-$$"); done
for id in "${ids[@]}"; do start_bg "$id" || echo "# start $id failed: $(cat "$T/create-$id.err")"; done
ok=0; for id in "${ids[@]}"; do [ "$(mem_inside "$id")" = 524288 ] && ok=$((ok + 1)); done
t_eq "20 containers read their limit" "$ok" "20"
# one rootfs loses its host path meanwhile (renamed): the recorded identity still finds it
mv "$T/b-${ids[3]}/rootfs" "$T/b-${ids[3]}/rootfs.moved"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
enotconn=0; for id in "${ids[@]}"; do
    cat "/proc/$(pid_of "$id")/root/proc/meminfo" 2>&1 | grep -q "Transport endpoint is not connected" && enotconn=$((enotconn + 1))
done
t_eq "LXCFS killed: reads in all 20 fail with ENOTCONN" "$enotconn" "20"
t_contains "LXCFS killed: inside too" "$(inside "${ids[1]}" cat /proc/uptime)" "Transport endpoint is not connected"
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1; rc=$?
t_eq "repair after restart: exit 0" "$rc" "0"
t_contains "repair after restart: all 20 repaired" "$(cat "$T/out")" "scanned 20, repaired 20, failed 0"
ok=0; one=0; for id in "${ids[@]}"; do
    [ "$(mem_inside "$id")" = 524288 ] && [ "$(inside "$id" cat /sys/devices/system/cpu/online)" = 0 ] && ok=$((ok + 1))
    [ "$(per_target "$id")" = "1 " ] && [ "$(grep fuse.lxcfs "/proc/$(pid_of "$id")/mountinfo" | awk '$4 != "/"' | wc -l)" = "$NV" ] && one=$((one + 1))
done
t_eq "after repair: all 20 read their limits again" "$ok" "20"
t_eq "after repair: exactly one LXCFS mount per target in all 20" "$one" "20"
t_eq "after repair: no dead mount left (host reads)" "$(cat "/proc/$(pid_of "${ids[0]}")/root/proc/meminfo" 2>&1 | grep -c 'not connected')" "0"

# Two repairs at once (watch and the lxcfs.service drop-in, say): both succeed,
# between them every container is repaired once, nothing is stacked.
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/outA" 2>&1 & ra=$!
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/outB" 2>&1 & rb=$!
wait $ra; rca=$?; wait $rb; rcb=$?
t_eq "two repairs at once: both exit 0" "$rca $rcb" "0 0"
t_eq "two repairs at once: 20 repaired between them" "$(( $(grep -c '^repaired' "$T/outA") + $(grep -c '^repaired' "$T/outB") ))" "20"
one=0; for id in "${ids[@]}"; do [ "$(per_target "$id")" = "1 " ] && one=$((one + 1)); done
t_eq "two repairs at once: one LXCFS mount per target in all 20" "$one" "20"

# 3. Only some ids; an unknown id fails.
RESVIEW_CONFIG=$T/config.json "$CLI" repair "${ids[0]}" "${ids[1]}" >"$T/out" 2>&1; rc=$?
t_eq "repair ID ID: only those" "$rc $(tail -1 "$T/out")" "0 scanned 2, repaired 0, failed 0 (healthy 2, dropped 0 records of exited containers)"
RESVIEW_CONFIG=$T/config.json "$CLI" repair no-such-$$ >"$T/out" 2>&1; rc=$?
t_eq "repair of an unknown id: exit 1" "$rc" "1"

# 4. Records of containers that are gone are dropped; a reused pid is not
#    mistaken for the container (pid + start time).
gone=${ids[2]}
$(rt_cmd "$(rt_of "$gone")") delete -f "$gone"
unshare -m --propagation private sleep 3600 & other=$!
t_cleanup "kill $other"
for _ in $(seq 50); do [ "$(readlink /proc/$other/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break; sleep 0.05; done
mkdir -p "$T/state/containers/reused-$$"
jq --argjson p $other '.pid = $p | .start_time = 1' "$T/state/containers/${ids[0]}/views" >"$T/state/containers/reused-$$/views"
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1; rc=$?
t_contains "gone and reused: both records dropped" "$(tail -1 "$T/out")" "dropped 2 records"
t_ok "gone: record removed" test ! -e "$T/state/containers/$gone"
t_ok "reused pid: record removed" test ! -e "$T/state/containers/reused-$$"
t_eq "reused pid: nothing mounted in that process's namespace" "$(grep fuse.lxcfs /proc/$other/mountinfo | awk '$4 != "/"' | wc -l)" "0"

# 5. --all: views made without resview (a bind mount in the spec, as with
#    `docker -v /var/lib/lxcfs/proc/meminfo:/proc/meminfo`) are healed too.
rv_bundle "$T/b-plain" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS | .mounts += [{destination: \"/proc/meminfo\", type: \"bind\", source: \"$LXCFS_DIR/proc/meminfo\", options: [\"bind\", \"ro\"]}]"
(cd "$T/b-plain" && runc --root "$T/runc-root" create plain-$$ </dev/null >/dev/null 2>&1 && runc --root "$T/runc-root" start plain-$$)
t_eq "--all: plain runc container with a bind of LXCFS reads its limit" "$(runc --root "$T/runc-root" exec plain-$$ grep MemTotal /proc/meminfo | awk '{print $2}')" "524288"
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null; lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR"
RESVIEW_CONFIG=$T/config.json "$CLI" repair >"$T/out" 2>&1
t_contains "without --all: the plain container is not touched" "$(runc --root "$T/runc-root" exec plain-$$ cat /proc/meminfo 2>&1)" "not connected"
RESVIEW_CONFIG=$T/config.json "$CLI" repair --all >"$T/out" 2>&1; rc=$?
t_eq "--all: exit 0" "$rc" "0"
t_contains "--all: the namespace was repaired" "$(cat "$T/out")" "repaired namespace of pid $(runc --root "$T/runc-root" state plain-$$ | jq .pid)"
t_eq "--all: the plain container reads its limit again" "$(runc --root "$T/runc-root" exec plain-$$ grep MemTotal /proc/meminfo | awk '{print $2}')" "524288"
t_eq "--all: one LXCFS mount on its /proc/meminfo" "$(grep fuse.lxcfs "/proc/$(runc --root "$T/runc-root" state plain-$$ | jq .pid)/mountinfo" | awk '$4 != "/" {print $5}')" "/proc/meminfo"

# 6. --all leaves alone the views of another LXCFS instance that is alive.
mkdir -p "$T/lxcfs2"
lxcfs -f -l --enable-cfs -p "$T/lxcfs2.pid" "$T/lxcfs2" >"$T/lxcfs2.out" 2>&1 & LX2=$!
t_cleanup "kill $LX2; umount -l $T/lxcfs2"
wait_for 10 head -c1 "$T/lxcfs2/proc/meminfo" >/dev/null
rv_config "$T/config2.json" "{\"lxcfs\": {\"root\": \"$T/lxcfs2\"}, \"state_dir\": \"$T/state2\"}"
start_bg other-$$ "$T/config2.json"
dev2=$(stat -c %d "$T/lxcfs2") 
dev_of_view() { stat -L -c %d "/proc/$(pid_of other-$$)/root/proc/meminfo"; }
t_eq "second LXCFS: its container has its views" "$(dev_of_view)" "$dev2"
RESVIEW_CONFIG=$T/config.json "$CLI" repair --all >"$T/out" 2>&1; rc=$?
t_eq "--all with a second live LXCFS: exit 0" "$rc" "0"
t_eq "--all: the other instance's views are left alone" "$(dev_of_view)" "$dev2"
t_eq "--all: ... and not stacked" "$(per_target other-$$)" "1 "
