#!/bin/bash
# Bad input to resview-runtime create: one clear line on stderr, a non-zero
# exit, and the bundle's config.json byte-for-byte intact.
source "$(dirname "$0")/../lib/common.sh"

rv_config "$T/config.json"
export RESVIEW_CONFIG=$T/config.json

# create_fails NAME BUNDLE [EXPECT-IN-MESSAGE] [extra shim args...]
create_fails() {
    local name=$1 b=$2 expect=${3:-}; shift 3
    local before=""; [ -f "$b/config.json" ] && before=$(sha256sum <"$b/config.json")
    "$RUNTIME" --root "$T/runc-root" "$@" create --bundle "$b" "id-$RANDOM" >"$T/out" 2>"$T/err" </dev/null
    local rc=$?
    t_ok "$name: non-zero exit" test "$rc" -ne 0
    t_eq "$name: one line on stderr" "$(wc -l <"$T/err")" 1
    [ -n "$expect" ] && t_contains "$name: message says why" "$(cat "$T/err")" "$expect"
    if [ -n "$before" ]; then
        t_eq "$name: config.json intact" "$(sha256sum <"$b/config.json")" "$before"
    fi
    t_eq "$name: no temporary file left" "$(ls -a "$b" | grep -c 'resview.*tmp')" 0
}

rv_bundle "$T/good"

mkdir -p "$T/nocfg/rootfs"
create_fails "missing config.json" "$T/nocfg" "config.json"
create_fails "missing bundle" "$T/does-not-exist" "does-not-exist"

mkdir -p "$T/dircfg/config.json"
create_fails "config.json is a directory" "$T/dircfg" "not a regular file"

mkdir -p "$T/malformed" && printf '{"ociVersion": "1.0.2", "process": {' >"$T/malformed/config.json"
create_fails "malformed config.json" "$T/malformed" "config.json"

mkdir -p "$T/huge" && { printf '{"x":"'; head -c $((17 << 20)) /dev/zero | tr '\0' a; printf '"}'; } >"$T/huge/config.json"
create_fails "17 MiB config.json" "$T/huge" "too large"

mkdir -p "$T/types" && jq '.process.env = "PATH=/bin"' "$T/good/config.json" >"$T/types/config.json"
create_fails "process.env is a string" "$T/types" "process.env"

mkdir -p "$T/types2" && jq '.linux.resources.cpu.quota = "1.5"' "$T/good/config.json" >"$T/types2/config.json"
create_fails "cpu quota is a string" "$T/types2" "quota"

mkdir -p "$T/ann" && jq '.annotations = {"resview.io/lxcfs": "yes"}' "$T/good/config.json" >"$T/ann/config.json"
create_fails "invalid annotation value" "$T/ann" "resview.io/lxcfs"

mkdir -p "$T/link" && ln -s "$T/good/config.json" "$T/link/config.json"
create_fails "config.json is a symlink" "$T/link" "config.json"

mkdir -p "$T/fifo" && mkfifo "$T/fifo/config.json"
create_fails "config.json is a FIFO (no hang)" "$T/fifo" "not a regular file"

# no next runtime: nothing is edited
jq '.runtimes = ["/nonexistent/runc", "no-such-runtime"]' "$T/config.json" >"$T/noruntime.json"
RESVIEW_CONFIG=$T/noruntime.json create_fails "no next runtime" "$T/good" "no next runtime"

# malformed resview configuration: create refused, other subcommands still pass
printf '{"runtimes": [' >"$T/badconf.json"
RESVIEW_CONFIG=$T/badconf.json create_fails "malformed resview configuration" "$T/good" "badconf.json"
out=$(RESVIEW_CONFIG=$T/badconf.json "$RUNTIME" --root "$T/runc-root" list 2>&1); rc=$?
t_eq "malformed resview configuration: list still passes through" "$rc" 0

# full disk during the rewrite: a tiny tmpfs that holds config.json but not a second copy
mkdir -p "$T/full"
mount -t tmpfs -o size=64k tmpfs "$T/full" && t_cleanup "umount -l '$T/full'"
jq '.annotations = {"pad": $p}' --arg p "$(head -c 40000 /dev/zero | tr '\0' p)" "$T/good/config.json" >"$T/full/config.json"
create_fails "disk full during the rewrite" "$T/full" "No space left"

# read-only bundle directory
mkdir -p "$T/ro"
mount -t tmpfs -o size=1m tmpfs "$T/ro" && t_cleanup "umount -l '$T/ro'"
cp "$T/good/config.json" "$T/ro/" && mount -o remount,ro "$T/ro"
create_fails "read-only bundle directory" "$T/ro" "Read-only file system"

# the error also reaches the engine through runc's --log in json format
"$RUNTIME" --root "$T/runc-root" --log "$T/engine.log" --log-format json create --bundle "$T/malformed" x1 2>/dev/null
t_eq "error written to --log as runc-style JSON" "$(jq -r .level "$T/engine.log" 2>/dev/null)" error
t_contains "the JSON log line carries the message" "$(jq -r .msg "$T/engine.log")" "config.json"
"$RUNTIME" --root "$T/runc-root" --log "$T/engine.txt" create --bundle "$T/malformed" x2 2>/dev/null
t_contains "text --log gets logrus-style lines" "$(cat "$T/engine.txt")" 'level=error msg="'
t_contains "the event log names the container" "$(cat "$T/resview.log")" "id=x1"

# Hostile text in the message (a bundle path the engine passes on): every
# byte outside printable ASCII escaped first (\xHH, a backslash as \\, as in
# every log line of ours), then quoted exactly as runc's own logrus does, in
# both formats; compared with the real runc, whose error names the path that
# reads as our escaped text.
esc() { python3 -c 'import sys; sys.stdout.write("".join(chr(c) if 0x20 <= c <= 0x7e and c != 0x5c else "\\\\" if c == 0x5c else "\\x%02x" % c for c in sys.argv[1].encode("utf-8", "surrogateescape")))' "$1"; }
hostile=('q"uote level=info msg="forged' $'new\nline\r\ttab' 'back\\slash<&>' $'ctl\x01\x1b[0m\x7f'
         $'utf8 caf\u00e9 \U0001F600' $'bytes \xff\xc0\xaf' $'spaces\u00a0\u2028\u202e\U000E0001')
i=0
for h in "${hostile[@]}"; do
    i=$((i + 1)); b=$T/nope/$h
    for fmt in text json; do
        rm -f "$T/runc.$fmt" "$T/ours.$fmt"
        runc --root "$T/runc-root" --log "$T/runc.$fmt" --log-format $fmt create --bundle "$T/nope/$(esc "$h")" h$i 2>/dev/null
        "$RUNTIME" --root "$T/runc-root" --log "$T/ours.$fmt" --log-format $fmt create --bundle "$b" h$i 2>/dev/null
        theirs=$(LC_ALL=C sed -n 's/.*chdir \(.*\): no such file or directory.*/\1/p' "$T/runc.$fmt")
        ours=$(LC_ALL=C sed -n 's/.*bundle `\(.*\)`: No such file or directory.*/\1/p' "$T/ours.$fmt")
        t_eq "runc --log-format $fmt: hostile message $i escaped as runc escapes it" "$ours" "${theirs:-(runc logged no such line)}"
        t_eq "... one line, fields time, level, msg" "$(wc -l <"$T/ours.$fmt") $(LC_ALL=C grep -c '^time="[^"]*" level=error msg="' "$T/ours.$fmt")" \
            "1 $([ $fmt = text ] && echo 1 || echo 0)"
    done
done

# the good bundle was never touched by all of the above
t_ok "good bundle still untouched (no hook yet)" sh -c "! grep -q resview-hook '$T/good/config.json'"
