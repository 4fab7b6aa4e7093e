#!/bin/bash
# Hostile tenants: what an image, an annotation or an env entry can put in
# front of resview-runtime. Each case gets either a correct edit that keeps the
# tenant's bytes exactly, or a clear one-line error, a non-zero exit and the
# original config.json byte for byte; memory stays bounded (max RSS measured)
# and nothing hangs. Rootfs symlinks to host paths: a real container, no mount
# outside the rootfs. (Missing/malformed/17 MiB/FIFO/symlink/full disk/read-only
# are in 11-badinput.sh; symlinked view targets in 20-lxcfs-views.sh.)
source "$(dirname "$0")/../lib/common.sh"

rv_config "$T/config.json"
jq '.runtimes = ["/bin/true"]' "$T/config.json" >"$T/config.true"
export RESVIEW_CONFIG=$T/config.true
rv_bundle "$T/good"
GOOD=$T/good/config.json

# shim B: create through resview-runtime (next runtime /bin/true) under
# /usr/bin/time; sets rc, err (stderr), rss_kb
shim() {
    local b=$1
    timeout -s KILL 120 /usr/bin/time -f %M -o "$T/rss" "$RUNTIME" --root "$T/r" create --bundle "$b" "h-$RANDOM" \
        </dev/null >/dev/null 2>"$T/err"
    rc=$?
    err=$(cat "$T/err")
    rss_kb=$(tail -n 1 "$T/rss")
}
# refused NAME BUNDLE EXPECT: clear one-line error, non-zero exit, original intact
refused() {
    local name=$1 b=$2 expect=$3 before
    before=$(sha256sum <"$b/config.json")
    shim "$b"
    t_ok "$name: refused with a non-zero exit" test "$rc" -ne 0 -a "$rc" -ne 137
    t_eq "$name: one line on stderr" "$(wc -l <<<"$err")" 1
    t_contains "$name: the line says why" "$err" "$expect"
    t_eq "$name: config.json intact" "$(sha256sum <"$b/config.json")" "$before"
}
# spec_with NAME JQ-FILTER [jq args...]: a bundle whose config.json is the good one, edited
spec_with() {
    local name=$1 filter=$2; shift 2
    mkdir -p "$T/$name"
    jq "$filter" "$@" "$GOOD" >"$T/$name/config.json"
}
# a spec with raw bytes in place of the string "@@" (for what jq cannot write)
spec_raw() {
    local name=$1 marker_json=$2 bytes=$3
    mkdir -p "$T/$name"
    jq -c "$marker_json" "$GOOD" | python3 -c '
import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d.replace(b"@@", bytes.fromhex(sys.argv[1])))' "$bytes" \
        >"$T/$name/config.json"
}

# 1. huge values (MiBs) are kept byte for byte; memory stays proportional
head -c $((6 << 20)) /dev/urandom | base64 -w0 >"$T/big.txt"   # 8 MiB of text
spec_with bigann '.annotations.big = $v' --rawfile v "$T/big.txt"
size_kb=$(( $(stat -c %s "$T/bigann/config.json") / 1024 ))
shim "$T/bigann"
t_eq "8 MiB annotation: create succeeds" "$rc" 0
t_eq "8 MiB annotation: kept byte for byte" "$(jq -j .annotations.big "$T/bigann/config.json" | sha256sum)" "$(sha256sum <"$T/big.txt")"
t_ok "8 MiB annotation: variables injected" jq -e '.process.env | index("GOMAXPROCS=2") or index("GOMAXPROCS=1")' "$T/bigann/config.json"
echo "# 8 MiB annotation: max RSS ${rss_kb} kB for a ${size_kb} kB spec"
t_ok "8 MiB annotation: max RSS (${rss_kb} kB) below 8 x the spec size + 16 MiB" test "$rss_kb" -lt $(( 8 * size_kb + 16384 ))

spec_with bigenv '.process.env += ["HUGE=" + $v]' --rawfile v "$T/big.txt"
shim "$T/bigenv"
t_eq "8 MiB env value: create succeeds" "$rc" 0
t_eq "8 MiB env value: kept byte for byte" "$(jq -j '.process.env[] | select(startswith("HUGE=")) | .[5:]' "$T/bigenv/config.json" | sha256sum)" "$(sha256sum <"$T/big.txt")"
echo "# 8 MiB env value: max RSS ${rss_kb} kB"

spec_with bigreq '.annotations["resview.io/env"] = $v' --rawfile v "$T/big.txt"
refused "8 MiB value of resview.io/env" "$T/bigreq" "resview.io/env"
t_ok "8 MiB value of resview.io/env: the error line is short (the value is not echoed)" test "${#err}" -lt 1024

# 2. newlines: valid JSON, kept, and the container sees them
rv_bundle "$T/nl" '.process.env += ["MULTI=line1\nline2", "RESVIEW_NOTE=a\nb"] | .annotations.note = "x\ny" | .process.args = ["/bin/sh", "-c", "env; printf %s \"$MULTI\" | wc -l"]'
cp "$T/nl/config.json" "$T/nl.orig"
out=$(RESVIEW_CONFIG=$T/config.json run_shim runc nl-$$ "$T/nl" 2>&1)
t_contains "newline in an env value: the container runs and gets its variables" "$out" "GOMAXPROCS="
t_eq "newline in an env value: the container sees both lines" "$(tail -n 1 <<<"$out" | tr -d ' ')" "1"
t_eq "newline in values: kept exactly" "$(jq -c '[.process.env[] | select(startswith("MULTI=") or startswith("RESVIEW_NOTE="))], .annotations.note' "$T/nl/config.json")" \
    "$(jq -c '[.process.env[] | select(startswith("MULTI=") or startswith("RESVIEW_NOTE="))], .annotations.note' "$T/nl.orig")"
spec_with nlreq '.annotations["resview.io/lxcfs"] = "true\nfalse"'
refused "newline inside a resview.io request value" "$T/nlreq" "resview.io/lxcfs"
spec_with nlenv '.process.env += ["RESVIEW_ENV=1\n0"]'
refused "newline inside RESVIEW_ENV" "$T/nlenv" "RESVIEW_ENV"

# 3. NUL and invalid UTF-8
spec_with nul '.annotations.x = "a\u0000b"'
refused "NUL (\\u0000) in an annotation" "$T/nul" "NUL"
spec_with nulenv '.process.env += ["X=a\u0000b"]'
refused "NUL (\\u0000) in an env value" "$T/nulenv" "NUL"
spec_raw badutf '.annotations.x = "@@"' "ff fe 80 c0"
refused "invalid UTF-8 in an annotation" "$T/badutf" "config.json"
spec_raw badutfenv '.process.env += ["X=@@"]' "ed a0 80"
refused "invalid UTF-8 (a UTF-16 surrogate) in an env value" "$T/badutfenv" "config.json"
spec_raw badkey '.annotations["@@"] = "v"' "c3 28"
refused "invalid UTF-8 in an annotation key" "$T/badkey" "config.json"

# 4. what config.json is
mkdir -p "$T/sparse" && truncate -s 1G "$T/sparse/config.json"
refused "1 GiB sparse config.json" "$T/sparse" "too large"
t_ok "1 GiB sparse config.json: never read (max RSS ${rss_kb} kB < 16 MiB)" test "$rss_kb" -lt 16384

mkdir -p "$T/outside" "$T/symlink"
cp "$GOOD" "$T/outside/secret.json"
ln -s "$T/outside/secret.json" "$T/symlink/config.json"
before=$(sha256sum <"$T/outside/secret.json")
shim "$T/symlink"
t_ok "config.json a symlink to a host file: refused" test "$rc" -ne 0
t_eq "config.json a symlink: one line on stderr" "$(wc -l <<<"$err")" 1
t_eq "config.json a symlink: the host file is untouched" "$(sha256sum <"$T/outside/secret.json")" "$before"
t_ok "config.json a symlink: still the same symlink" test "$(readlink "$T/symlink/config.json")" = "$T/outside/secret.json"

mkdir -p "$T/hardlink" && ln "$T/outside/secret.json" "$T/hardlink/config.json"
shim "$T/hardlink"
t_eq "config.json a hard link to a host file: the bundle's spec is edited" "$(grep -c GOMAXPROCS "$T/hardlink/config.json")" 1
t_eq "config.json a hard link: the other name's file is untouched" "$(sha256sum <"$T/outside/secret.json")" "$before"

mkdir -p "$T/chardev" && mknod "$T/chardev/config.json" c 1 5
shim "$T/chardev"
t_ok "config.json a character device (/dev/zero): refused" test "$rc" -ne 0 -a "$rc" -ne 137
t_contains "config.json a character device: says why" "$err" "not a regular file"
echo "# character device: max RSS ${rss_kb} kB"

mkdir -p "$T/fifo" && mkfifo "$T/fifo/config.json"
sleep 60 3<>"$T/fifo/config.json" & holder=$!   # a writer that never writes
shim "$T/fifo"
kill $holder 2>/dev/null; wait $holder 2>/dev/null
t_ok "config.json a FIFO with a silent writer: refused, no hang" test "$rc" -ne 0 -a "$rc" -ne 137
t_contains "config.json a FIFO: says why" "$err" "not a regular file"

# 5. a rootfs whose /sys, /sys/devices/system/cpu or /proc are symlinks to host
#    paths, or /sys a bind mount of a host directory, in real containers (runc, private LXCFS, the hook): the container
#    starts (or runc itself refuses it), nothing is mounted outside the rootfs,
#    host files are untouched, the /proc views that are safe still work.
unset RESVIEW_CONFIG
export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.lx"
jq '.runtimes = ["runc"]' "$T/config.lx" >"$T/config.lx.runc"
t_cleanup "lxcfs_stop $LXCFS_DIR"
lxcfs_start "$LXCFS_DIR" || echo "not ok - lxcfs did not start"
RUNC="runc --root $T/runc-root"
mkdir -p "$T/host/cpu" "$T/host/sys/devices/system/cpu"
echo secret >"$T/host/cpu/online"; echo secret >"$T/host/sys/devices/system/cpu/online"
host_lxcfs_mounts() { grep fuse.lxcfs /proc/self/mountinfo | awk '$4 != "/"' | wc -l; }
lx_before=$(host_lxcfs_mounts)
NOSYS='.mounts |= map(select(.destination != "/sys" and .destination != "/sys/fs/cgroup"))'
LIM='.process.args = ["/bin/sleep", "3600"] | .linux.resources.memory = {limit: 201326592}'
hostile_rootfs() { # NAME SETUP-CMD [JQ]: rootfs prepared by SETUP-CMD (run in the rootfs), spec edited by JQ
    local name=$1 setup=$2 extra=${3:-.} id=hr-$1-$$ pid mem
    rv_bundle "$T/$name" "$LIM | $NOSYS | $extra"
    (cd "$T/$name/rootfs" && eval "$setup")
    (cd "$T/$name" && RESVIEW_CONFIG=$T/config.lx.runc "$RUNTIME" --root "$T/runc-root" create "$id" \
        </dev/null >/dev/null 2>"$T/$name.err" && $RUNC start "$id" 2>>"$T/$name.err"); rc=$?
    if [ $rc -eq 0 ]; then
        pid=$($RUNC state "$id" | jq -r .pid)
        mem=$($RUNC exec "$id" grep MemTotal /proc/meminfo)
        t_contains "rootfs $name: the container starts and reads its /proc/meminfo view" "$mem" "196608 kB"
        if [ "$extra" = . ]; then
            t_eq "rootfs $name: nothing of the host tree mounted in the container" "$(grep -c " $T/host" "/proc/$pid/mountinfo")" 0
            t_eq "rootfs $name: no cpu/online view through the symlink" \
                "$(grep fuse.lxcfs "/proc/$pid/mountinfo" | awk '{print $5}' | grep -c 'cpu/online')" 0
        else # the tenant's own bind of a host directory: a view there stays in the container's namespace
            t_eq "rootfs $name: inside, cpu/online is the LXCFS view, not the host file" \
                "$($RUNC exec "$id" cat /sys/devices/system/cpu/online)" "$(cat "$LXCFS_DIR/sys/devices/system/cpu/online")"
        fi
        $RUNC delete -f "$id"
    else
        echo "# rootfs $name: runc refused: $(grep -o 'msg=.*' "$T/$name.err" | head -c 200)"
        t_not_contains "rootfs $name: refused by runc, not by resview" "$(cat "$T/$name.err")" "resview"
    fi
    t_eq "rootfs $name: host files untouched" "$(cat "$T/host/cpu/online" "$T/host/sys/devices/system/cpu/online" | tr '\n' ' ')" "secret secret "
    t_eq "rootfs $name: nothing mounted on the host tree (host namespace)" "$(grep -c " $T/host" /proc/self/mountinfo)" 0
    t_eq "rootfs $name: no LXCFS file mounted in the host namespace" "$(host_lxcfs_mounts)" "$lx_before"
}
hostile_rootfs cpu-symlink "mkdir -p sys/devices/system && ln -s $T/host/cpu sys/devices/system/cpu"
hostile_rootfs sys-symlink "rmdir sys && ln -s $T/host/sys sys"
hostile_rootfs sys-dotdot "mkdir -p sys/devices/system && ln -s ../../../../../../../../$T/host/cpu sys/devices/system/cpu"
hostile_rootfs sys-bind-host "mkdir -p sys" \
    ".mounts += [{destination: \"/sys\", type: \"bind\", source: \"$T/host/sys\", options: [\"rbind\", \"rw\"]}]"
hostile_rootfs proc-symlink "rmdir proc && ln -s /proc proc"
hostile_rootfs proc-host-dir "rmdir proc && ln -s $T/host proc"
lxcfs_stop "$LXCFS_DIR"
