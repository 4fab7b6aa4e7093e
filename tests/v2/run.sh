#!/bin/bash
# Run end-to-end scripts on a cgroup v2 host: a guest of tests/v2/image.sh
# (a Debian suite, its kernel, systemd on the unified hierarchy) under qemu,
# with a copy of this tree shared in (9p: the tree here can change while the
# guest runs) and the binaries built here. Prints what tests/run-e2e.sh
# prints, per file, with "e2e-v2" for "e2e" ("e2e-v2-SUITE" on a guest other
# than make check's).
# Usage: run.sh [SCRIPT...]   (default: the scripts tests/v2/suites.txt puts
# in `make check`; RESVIEW_V2_ALL=1: every script it lists)
# RESVIEW_V2_SUITE=bookworm|trixie|sid: the guest's Debian (default: make
# check's, tests/v2/suite; sid is `make e2e-next`'s),
# RESVIEW_V2_ACCEL=kvm|tcg (default: kvm when it boots the kernel, else tcg),
# RESVIEW_V2_TIMEOUT seconds for the whole run (default: 2700 for make
# check's share; else the scripts' own limits, RESVIEW_E2E_TIMEOUT each, added).
set -u
{ # read whole before it runs: the script may change while a guest runs
cd "$(dirname "$0")/../.."
TOP=$PWD
SUITE=${RESVIEW_V2_SUITE:-$(cat tests/v2/suite)}
export RESVIEW_V2_SUITE=$SUITE
# the label of make check's guest stays "e2e-v2" (tests/run-all.sh's tally)
label=e2e-v2; [ "$SUITE" = "$(cat tests/v2/suite)" ] || label=e2e-v2-$SUITE
DIR=$TOP/build/v2/$SUITE
RUN=${RESVIEW_V2_RUN_DIR:-$TOP/build/v2/run-$SUITE}   # where the run copies the tree: two runs at once need two
fail() { echo "not ok - v2 ($SUITE): $*"; echo "$label: 0 passed, 1 failed"; exit 1; }
[ "$(id -u)" = 0 ] || fail "must run as root"
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 missing (make deps installs tests/deps.d/v2.txt)"
scripts=("$@") share=${RESVIEW_V2_SHARE:-}
# make check's share (or RESVIEW_V2_SHARE=1): the parts of its scripts that
# can differ on v2 (tests/lib/common.sh in_v2_share)
[ $# -gt 0 ] || [ -n "${RESVIEW_V2_ALL:-}" ] || share=1
[ ${#scripts[@]} -gt 0 ] || mapfile -t scripts < <(awk -v all="${RESVIEW_V2_ALL:-}" '
    { sub(/#.*/, "") } NF == 0 { next }
    $1 ~ /^-/ { if (all == "") next; sub(/^-/, "", $1) } { print "tests/e2e/" $1 }' tests/v2/suites.txt)
for s in "${scripts[@]}"; do [ -f "$s" ] || fail "no such script: $s"; done
# a build that fails (a change in the suite, most likely unstable's) is one
# failure, said in one line; the tests still run on the image built before, if any
built=; out=$(tests/v2/image.sh 2>&1) || built=$(grep -m 1 'did not build' <<<"$out" || tail -n 1 <<<"$out")
if [ -n "$built" ]; then
    [ -f "$DIR/root.img" ] || fail "${built#v2: } (no image built before; logs in $DIR)"
    echo "not ok - v2 ($SUITE): ${built#v2: }; the tests run on the image built before ($(stat -c %y "$DIR/root.img" | cut -d. -f1))"
fi
# the scripts and those they run (48-kubernetes-rc.sh runs 48-kubernetes.sh):
# what they need is made here
needs=("${scripts[@]}")
for s in "${scripts[@]}"; do
    for t in $(grep -o '[0-9][0-9]-[a-z0-9-]*\.sh' "$s" | sort -u); do
        [ -f "tests/e2e/$t" ] && needs+=("tests/e2e/$t")
    done
done
# what the guest cannot build itself (it has no network): the node image
if grep -qs resview-node.tar "${needs[@]}"; then
    out=$(make -s --no-print-directory image 2>&1) || fail "make image: $(tail -n 3 <<<"$out")"
fi
# nor the Debian package (no musl, no go-md2man there): for a script that
# installs $BUILD's resview_*.deb (59-package-systemd)
if grep -qs 'resview_\*\.deb' "${needs[@]}"; then
    out=$(make -s --no-print-directory deb 2>&1) || fail "make deb: $(tail -n 3 <<<"$out")"
fi
# what the guest cannot fetch itself (it has no network): the S3 server of the
# s3fs test, cached where the host's own run puts it
if grep -qs s3rver_start "${needs[@]}" && [ ! -x build/test-cache/s3rver/node_modules/.bin/s3rver ]; then
    npm install --prefix build/test-cache/s3rver --cache build/test-cache/s3rver/npm-cache \
        --no-audit --no-fund --loglevel=error s3rver@3 >/dev/null 2>&1 || echo "# v2: npm install s3rver failed"
fi

accel=${RESVIEW_V2_ACCEL:-}
if [ -z "$accel" ]; then
    # /dev/kvm can be a nested hypervisor that never runs this kernel: try it
    accel=tcg
    if [ -w /dev/kvm ] && timeout 20 qemu-system-x86_64 -accel kvm -cpu host -m 512 -nographic \
        -no-reboot -kernel "$DIR/vmlinuz" -append "console=ttyS0 panic=-1" </dev/null 2>/dev/null |
        grep -q 'Kernel panic'; then
        accel=kvm
    fi
fi
case $accel in
kvm) cpu=host ;;
tcg) accel=tcg,thread=multi cpu=${RESVIEW_V2_CPU:-max}
    # emulated, a script runs 3 to 10 times as long as on the host: twice the
    # host's limit per script (48-kubernetes-rc whole ran past 900 s)
    : "${RESVIEW_E2E_TIMEOUT:=1800}" ;;
*) fail "RESVIEW_V2_ACCEL: kvm or tcg, not $accel" ;;
esac

rm -rf "$RUN"; mkdir -p "$RUN/top"
tar -C "$TOP" --exclude=./build/v2 --exclude=./.git -cf - . | tar -C "$RUN/top" -xf - ||
    fail "cannot copy the tree to $RUN/top"
ORIG=$TOP TOP=$RUN/top
RUN=$TOP/build/v2/run
mkdir -p "$RUN"
{
    rt=${RUNTIME_BIN:-$ORIG/build/static/resview-runtime} hook=${HOOK_BIN:-$ORIG/build/static/resview-hook}
    echo "export RUNTIME_BIN=${rt/#$ORIG\//$TOP/} HOOK_BIN=${hook/#$ORIG\//$TOP/}"
    # root's login PATH (Debian's /etc/profile), as the host's tests have: the
    # service's own, from systemd 257 on merged /usr, has no /bin, and some
    # tests run a busybox rootfs's /bin tools with nsenter (27)
    echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    [ -n "${VERBOSE:-}" ] && echo "export VERBOSE=1"
    [ -n "$share" ] && echo "export RESVIEW_V2_SHARE=1"
    [ -n "${RESVIEW_E2E_TIMEOUT:-}" ] && echo "export RESVIEW_E2E_TIMEOUT=$RESVIEW_E2E_TIMEOUT"
    printf 'tests/run-e2e.sh'; printf ' %q' "${scripts[@]}"; echo
} >"$RUN/cmd"
# /tmp stays on the root file system, as on Debian 12 and the host: Debian 13
# mounts a tmpfs there (nosuid,nodev), and the tests keep their bundles in /tmp,
# where nodev would stop their device nodes before the device cgroup does (30,
# 52); nodes keep rootfs elsewhere (an engine's overlay mounts)
boot() {
    timeout "$limit" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" \
        -smp "$(nproc)" -m "${RESVIEW_V2_MEM:-6144}" -nographic -no-reboot \
        -kernel "$DIR/vmlinuz" -initrd "$DIR/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 quiet systemd.unified_cgroup_hierarchy=1 systemd.mask=tmp.mount ${RESVIEW_V2_APPEND:-} resview.top=$TOP" \
        -drive "file=$DIR/root.img,format=raw,if=virtio,snapshot=on" \
        -virtfs "local,path=$TOP,mount_tag=top,security_model=passthrough,id=top" \
        -nic none </dev/null >"$RUN/console.log" 2>&1
}
limit=${RESVIEW_V2_TIMEOUT:-2700}
[ -n "$share" ] || [ -n "${RESVIEW_V2_TIMEOUT:-}" ] || limit=$(( 300 + ${#scripts[@]} * ${RESVIEW_E2E_TIMEOUT:-900} ))
start=$(date +%s)
boot; qrc=$?
# TCG with a thread per vCPU can crash the guest's kernel (seen twice: an int3
# Oops in the scheduler right after text patching, trixie's 6.12 on a loaded
# host, sid's 7.2 at boot): once, a new guest runs the scripts that had not ended; those that had
# count from the console (the guest's writes to the tree may be lost)
if [ ! -f "$RUN/rc" ] && grep -aq "Kernel panic" "$RUN/console.log"; then
    ended=$(grep -ao "e2e  [^ ]*\.sh  *[0-9]* passed, [0-9]* failed ([0-9]*s)" "$RUN/console.log")
    left=()
    for s in "${scripts[@]}"; do grep -q "^e2e  ${s##*/} " <<<"$ended" || left+=("$s"); done
    echo "# v2: the guest's kernel panicked after $(( $(date +%s) - start ))s ($(grep -a -m 1 -E 'Oops|BUG:|Kernel panic' "$RUN/console.log" |
        sed 's/^.*\] //' | cut -c1-80); $RUN/console.1.log); a new guest runs the ${#left[@]} scripts left"
    mv "$RUN/console.log" "$RUN/console.1.log"
    if [ ${#left[@]} -gt 0 ]; then
        sed -i '$d' "$RUN/cmd"
        { printf 'tests/run-e2e.sh'; printf ' %q' "${left[@]}"; echo; } >>"$RUN/cmd"
        boot; qrc=$?
    else
        : >"$RUN/out"; echo 0 >"$RUN/rc"   # every script had ended
    fi
    { [ -z "$ended" ] || echo "$ended"; cat "$RUN/out" 2>/dev/null; } >"$RUN/out.all" && mv "$RUN/out.all" "$RUN/out"
fi
sed "s/^e2e\\([ :]\\)/$label\\1/" "$RUN/out" 2>/dev/null | grep -v "^$label: "
read -r p f < <(awk '/^e2e  .* passed, .* failed/ { p += $(NF-4); f += $(NF-2) } END { print p+0, f+0 }' "$RUN/out" 2>/dev/null)
p=${p:-0} f=${f:-0}
[ -z "$built" ] || f=$((f + 1))
if [ ! -f "$RUN/rc" ]; then
    f=$((f + 1))
    echo "not ok - v2: the guest run did not finish (qemu $qrc after $(( $(date +%s) - start ))s; $RUN/console.log):"
    tail -n 15 "$RUN/console.log" | sed 's/^/#   /'
fi
echo "# v2: guest ($SUITE, $accel, kernel $(cat "$DIR/kernel" 2>/dev/null)) ran $(( $(date +%s) - start ))s"
echo "$label: $p passed, $f failed"
[ "$f" -eq 0 ]
exit
}
