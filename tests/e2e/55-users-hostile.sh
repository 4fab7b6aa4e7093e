#!/bin/bash
# 55-users-hostile.sh - a local user against what root does with users/
# (27-lxcfs-unprivileged.sh has a well-behaved user's enroot jobs):
#  1. the user puts an overlay, whose lower layer is its own FUSE file system
#     that never answers LOOKUP, over the /proc of chrooted processes in mount
#     namespaces of its own, and records each: root's repair asks that daemon
#     nothing (overlayfs would look up with the user's credentials), leaves no
#     child stuck, returns at once, refuses and removes the records; a view
#     goes only on a file of the container's procfs (a user's tmpfs over its
#     /proc: refused; a user's mount over /proc/meminfo: taken off); a users'
#     pass in progress does not hold up a repair of root's containers, and
#     `repair --no-users` (the lxcfs.service drop-in) leaves users/ alone;
#  2. root's memory of a user (state_dir/owners/UID): while a child of an
#     earlier repair is stuck, or during a back-off, the user's records are
#     skipped, said in one line;
#  3. /run: a record over 4 KiB, records past 64 per user or past 128 KiB per
#     user are removed; a record whose process never reaches the recorded root
#     is removed 10 minutes after root first saw it, whatever times the user
#     gives the file;
#  4. record names with ESC sequences and newlines: repair's and watch's
#     output shows them escaped, and cannot forge a summary line.
# The user's FUSE daemon is tests/lib/fuse-hang run as the user in its own
# user and mount namespace (`unshare -Urm`), as any user can mount FUSE
# there; it opens a node of /dev/fuse's device made 0666 for the test
# (Debian's mode of /dev/fuse; this host's is root's alone).
source "$(dirname "$0")/../lib/common.sh"

export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json"
t_cleanup "lxcfs_stop $LXCFS_DIR"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"
# users: uids nobody else on this machine uses
U=$((200000 + RANDOM % 50000)); U2=$((U + 50000))
chmod 711 "$T"
chmod 644 "$T/config.json"
USERS=$T/state/users
OWNERS=$T/state/owners
repair() { RESVIEW_CONFIG=$T/config.json "$CLI" repair "$@"; }
as_user() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ns_of() { stat -L -c %i "/proc/$1/ns/mnt"; }
start_of() { awk '{print $22}' "/proc/$1/stat"; }
root_id() { stat -L -c '%Hd:%Ld:%i' "$1"; }
# record PID ROOT_ID [PAD]: a views record as the hook writes it
record() {
    jq -cn --argjson pid "$1" --argjson st "$(start_of "$1")" --argjson ns "$(ns_of "$1")" \
        --arg rid "$2" --arg pad "${3:-}" \
        '{pid: $pid, start_time: $st, mntns: $ns, root_id: $rid, status: "ok",
          wanted: ["proc/meminfo", "proc/cpuinfo"]} + (if $pad == "" then {} else {pad: $pad} end)'
}
# forge UID NAME TEXT: a file the user writes into users/
forge() { as_user "$1" sh -c 'cat >"$1"' sh "$USERS/$2" <<<"$3"; }
stuck_children() { ps -eo stat=,comm= | awk '$1 ~ /^D/ && $2 == "resview"' | wc -l; }

gcc -static -O2 -o "$T/fuse-hang" "$TOP/tests/lib/fuse-hang.c" || { echo "not ok - build fuse-hang"; exit 1; }
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
repair >/dev/null 2>&1   # makes users/

# 1. The overlay over the user's FUSE, under the /proc of its containers.
A=$T/atk
mkdir -p "$A"/low "$A"/up "$A"/work
rv_rootfs "$A/root" >/dev/null
mknod -m 666 "$T/fuse" c 10 229
chown -R "$U:$U" "$A"
setpriv --reuid="$U" --regid="$U" --clear-groups unshare -Urm sh -c '
    A=$1
    "$2" --dev "$3" --hang lookup --verbose "$A/low" >"$A/daemon.out" 2>&1 &
    echo "daemon $!"
    n=0; while ! grep -q ready "$A/daemon.out" && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
    mount -t overlay overlay -o "lowerdir=$A/low,upperdir=$A/up,workdir=$A/work" "$A/root/proc" || exit 1
    for i in 1 2 3; do
        unshare -m chroot "$A/root" /bin/sleep 3600 </dev/null >/dev/null 2>&1 &
        echo "task $!"
    done
    exec sleep 3600' sh "$A" "$T/fuse-hang" "$T/fuse" >"$T/atk.out" 2>&1 &
ATK=$!
t_cleanup "kill $ATK"
wait_for 10 test "$(grep -c '^task' "$T/atk.out")" = 3
# its daemon last: a child stuck in it (before the fix) ends when it does
for p in $(awk '$1 == "daemon" || $1 == "task" {print $2}' "$T/atk.out"); do t_cleanup "kill -9 $p"; done
tasks=$(awk '$1 == "task" {print $2}' "$T/atk.out")
t_eq "the user's containers: 3, each in a mount namespace of its own" \
    "$(for p in $tasks; do ns_of "$p"; done | sort -u | wc -l)" "3"
t_contains "... with the user's overlay on /proc, over its FUSE" \
    "$(grep ' /proc ' "/proc/$(head -1 <<<"$tasks")/mountinfo")" " - overlay "
i=0
for p in $tasks; do
    i=$((i + 1))
    forge "$U" "atk-$i" "$(record "$p" "$(root_id "/proc/$p/root")")"
done
asked=$(grep -c '^hung' "$A/daemon.out")
t0=$(date +%s%N)
timeout 60 env RESVIEW_CONFIG="$T/config.json" "$CLI" repair >"$T/out" 2>&1; rc=$?
ms=$(ms_since "$t0")
t_ok "repair returns at once (${ms} ms; a record that reached the daemon cost 2 s)" test "$ms" -lt 1500
t_eq "repair: exit 0" "$rc" "0"
echo "# the daemon, before repair: $asked requests; after: $(grep '^hung' "$A/daemon.out" | tr '\n' ' ')"
t_eq "root's repair asked the user's daemon nothing" "$(grep -c '^hung' "$A/daemon.out")" "$asked"
t_eq "no child of root's repair is left stuck (D state)" "$(stuck_children)" "0"
t_eq "the 3 records are refused: /proc is on the user's overlay" \
    "$(grep -c "^refused  user $U's container (record atk-[123]): \`/proc\` is on overlay" "$T/out")" "3"
t_eq "... and removed" "$(ls "$USERS" | grep -c '^atk-')" "0"
t_contains "summary" "$(tail -1 "$T/out")" "refused 3 records of users"

# A view's target is a file of the container's procfs (or sysfs): a user's
# tmpfs over its /proc is refused (root's move_mount would wait for the
# target's inode lock, which the user can hold); a user's mount over its
# /proc/meminfo is taken off, unasked, and the view goes on procfs's file.
mkdir -p "$T/ut"; chown "$U:$U" "$T/ut"
for k in tmpfs bind; do
    setpriv --reuid="$U" --regid="$U" --clear-groups unshare -Urm sh -c '
        mount -t tmpfs t "$1" && echo fake >"$1/meminfo" && echo fake >"$1/cpuinfo" || exit 1
        if [ "$2" = tmpfs ]; then mount --bind "$1" /proc; else mount --bind "$1/meminfo" /proc/meminfo; fi
        exec sleep 3600' sh "$T/ut" "$k" </dev/null >/dev/null 2>&1 &
    t_cleanup "kill $!"
    eval "u_$k=$!"
done
wait_for 5 sh -c "grep -q ' /proc/meminfo ' /proc/$u_bind/mountinfo && grep -q ' /proc ' /proc/$u_tmpfs/mountinfo && ! grep -q ' /proc .* - proc ' /proc/$u_tmpfs/mountinfo"
forge "$U" proc-tmpfs "$(record "$u_tmpfs" "$(root_id "/proc/$u_tmpfs/root")")"
forge "$U" proc-bind "$(record "$u_bind" "$(root_id "/proc/$u_bind/root")")"
repair >"$T/out" 2>&1
t_contains "a user's tmpfs over its /proc: refused" "$(cat "$T/out")" \
    "refused  user $U's container (record proc-tmpfs): \`/proc/meminfo\` is on tmpfs, not proc"
t_contains "a user's mount over its /proc/meminfo: taken off, the view mounted" "$(cat "$T/out")" \
    "repaired user $U's container (record proc-bind): 2 views mounted, 1 stale detached"
t_eq "... one mount on /proc/meminfo: the view" "$(grep -c ' /proc/meminfo ' "/proc/$u_bind/mountinfo") $(grep ' /proc/meminfo ' "/proc/$u_bind/mountinfo" | grep -c ' - fuse.lxcfs ')" "1 1"
t_eq "refused records removed, the other kept" "$(ls "$USERS" | grep '^proc-' | tr '\n' ' ')" "proc-bind "
rm -f "$USERS/proc-bind"

# A users' pass in progress (its lock held) holds up no repair of root's
# containers, and --no-users does not wait for it.
( flock 8 && exec sleep 30 ) 8>"$T/state/users.lock" </dev/null >/dev/null 2>&1 & HOLD=$!
t_cleanup "kill $HOLD"
wait_for 5 sh -c "! flock -n '$T/state/users.lock' true"
t0=$(date +%s%N); repair no-such-container >/dev/null 2>&1
t_ok "repair ID while a users' pass runs: no wait ($(ms_since "$t0") ms)" test "$(ms_since "$t0")" -lt 1500
forge "$U" junk 'not json'
t0=$(date +%s%N); repair --no-users >"$T/out" 2>&1; rc=$?
t_ok "repair --no-users while a users' pass runs: no wait ($(ms_since "$t0") ms)" test "$(ms_since "$t0")" -lt 1500
t_eq "repair --no-users: exit 0, users/ untouched" "$rc $(ls "$USERS" | grep -c '^junk$')" "0 1"
kill "$HOLD"; wait "$HOLD" 2>/dev/null
t_contains "the lxcfs.service drop-in repairs with --no-users" \
    "$(cat "$TOP/hooks/systemd/lxcfs.service.d/resview-repair.conf")" "repair --wait 10 --no-users"
repair >"$T/out" 2>&1
t_eq "a plain repair takes users' records again" "$(ls "$USERS" | grep -c '^junk$')" "0"

# 2. Root's memory of the user: a child still stuck, then a back-off.
sleep 60 </dev/null >/dev/null 2>&1 & STUCK=$!
t_cleanup "kill $STUCK"
t_eq "root remembers the user (its records were seen): root's alone" \
    "$(stat -c '%U %a' "$OWNERS" "$OWNERS/$U" | tr '\n' ' ')" "root 700 root 600 "
jq -n --argjson p "$STUCK" --argjson s "$(start_of "$STUCK")" '{stuck: [[$p, $s]], level: 1, until: 0, seen: []}' \
    >"$T/o" && cat "$T/o" >"$OWNERS/$U"
forge "$U" junk2 'not json'
forge "$U" junk3 'not json'
repair >"$T/out" 2>&1
t_eq "a child still stuck in the user's file systems: the user's records are skipped, said once" \
    "$(grep -c "^skipped  user $U's records: 1 child of root's repair still stuck" "$T/out") $(ls "$USERS" | grep -c '^junk[23]$')" "1 2"
t_contains "... counted in the summary" "$(tail -1 "$T/out")" "2 records of users left for a later run"
kill "$STUCK"; wait "$STUCK" 2>/dev/null
jq --argjson u "$(( $(date +%s) + 600 ))" '.until = $u' "$OWNERS/$U" >"$T/o" && cat "$T/o" >"$OWNERS/$U"
repair >"$T/out" 2>&1
t_eq "the child ended, but a back-off is on: still skipped" \
    "$(grep -c "^skipped  user $U's records: backing off" "$T/out") $(ls "$USERS" | grep -c '^junk[23]$')" "1 2"
jq '.until = 0' "$OWNERS/$U" >"$T/o" && cat "$T/o" >"$OWNERS/$U"
repair >"$T/out" 2>&1
t_eq "the back-off over: the user's records are taken again" "$(ls "$USERS" | grep -c '^junk')" "0"

# 3. /run. A process of the user's in a namespace of its own, whose root
#    the records never match: "not yet" for ever.
setpriv --reuid="$U" --regid="$U" --clear-groups unshare -Urm sleep 3600 </dev/null >/dev/null 2>&1 & NY=$!
setpriv --reuid="$U2" --regid="$U2" --clear-groups unshare -Urm sleep 3600 </dev/null >/dev/null 2>&1 & NY2=$!
t_cleanup "kill $NY $NY2"
for p in "$NY" "$NY2"; do wait_for 5 sh -c "[ \"\$(stat -L -c %i /proc/$p/ns/mnt)\" != \"\$(stat -L -c %i /proc/self/ns/mnt)\" ]"; done
never=$(root_id "$T")
forge "$U" big "$(record "$NY" "$never" "$(head -c 5000 /dev/zero | tr '\0' x)")"
# many records, written by one process of each user
as_user "$U" sh -c 'for i in $(seq 1 70); do printf "%s\n" "$2" >"$1/ny-$i"; done' sh "$USERS" \
    "$(record "$NY" "$never")"
as_user "$U2" sh -c 'for i in $(seq 1 40); do printf "%s\n" "$2" >"$1/fat-$i"; done' sh "$USERS" \
    "$(record "$NY2" "$never" "$(head -c 3600 /dev/zero | tr '\0' y)")"
repair >"$T/out" 2>&1
t_eq "a record over 4 KiB is removed" "$(ls "$USERS" | grep -c '^big$')" "0"
t_eq "records past 64 per user are removed (70 written)" "$(ls "$USERS" | grep -c '^ny-')" "64"
fat=$(cd "$USERS" && ls | grep '^fat-' | xargs -r stat -c %s | awk '{s += $1} END {print s + 0}')
t_ok "a user's records past 128 KiB are removed (40 x 3.7 KiB written, $fat bytes left)" \
    test "$fat" -le 131072 -a "$fat" -gt 110000
t_eq "... the young \"not yet\" ones stay" "$(grep -c "ny-\|fat-" "$T/out")" "0"
# ten minutes later, by root's clock (its memory, moved back); the user
# setting the files' times changes nothing
as_user "$U" touch "$USERS/ny-1" "$USERS/ny-2"
for u in "$U" "$U2"; do
    jq '.seen |= map([.[0], (.[1] - 601)])' "$OWNERS/$u" >"$T/o" && cat "$T/o" >"$OWNERS/$u"
done
repair >"$T/out" 2>&1
t_eq "\"not yet\" 10 minutes after root first saw them: removed" "$(ls "$USERS" | grep -c '^ny-\|^fat-')" "0"
t_contains "... said" "$(cat "$T/out")" "dropped  user $U's container (record ny-1): its process has not reached the recorded root in 600 s"

# 4. Names that are terminal sequences and lines of their own.
evil=$'\e[2J\e[H\e]0;owned\a\nscanned 99, repaired 99, failed 0 (all fine)'
forge "$U" "$evil" 'not json'
repair >"$T/out" 2>&1
t_eq "repair's output: no ESC, BEL or forged line" \
    "$(grep -c $'\e\|\a' "$T/out") $(grep -c '^scanned' "$T/out")" "0 1"
t_contains "... the name shown escaped" "$(cat "$T/out")" 'record \x1b[2J\x1b[H\x1b]0;owned\x07\x0ascanned 99'
forge "$U" "$evil" 'not json'
RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 0 >"$T/watch.out" 2>&1 </dev/null & WATCH=$!
t_cleanup "kill $WATCH"
wait_for 10 grep -q "LXCFS answers" "$T/watch.out"
kill "$WATCH"; wait "$WATCH" 2>/dev/null
t_eq "watch's output: no ESC, BEL or forged line" \
    "$(grep -c $'\e\|\a' "$T/watch.out") $(grep -c '^scanned' "$T/watch.out")" "0 0"
t_contains "... the name shown escaped" "$(cat "$T/watch.out")" 'record \x1b[2J'
