#!/bin/bash
# `make check`: unit tests, then end-to-end tests; one closing total line.
set -u
cd "$(dirname "$0")/.."
total_p=0 total_f=0
tally() { # parse "...: N passed, N failed" from the last line of $1
    local line; line=$(tail -n 1 <<<"$1")
    local p f; p=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' <<<"$line")
    f=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' <<<"$line")
    total_p=$((total_p + ${p:-0})); total_f=$((total_f + ${f:-1}))
}
# make check's guest image (tests/check.d/v2.sh) is built beside the first
# stages: mostly downloads and dpkg, minutes that would otherwise follow them
if [ -e tests/check.d/v2.sh ] && [ "$(id -u)" = 0 ] && command -v qemu-system-x86_64 >/dev/null; then
    mkdir -p build/v2
    tests/v2/image.sh >build/v2/early-build.log 2>&1 &
fi
times=()
stage() { # stage NAME CMD...: run, print, count, time
    local name=$1 t0=$SECONDS; shift
    out=$("$@" 2>&1); echo "$out"; tally "$out"
    times+=("$name $((SECONDS - t0))s")
}
stage unit tests/run-unit.sh "$@"
for extra in tests/check.d/*.sh; do
    [ -e "$extra" ] || continue
    stage "$(basename "$extra" .sh)" bash "$extra"
done
stage e2e tests/run-e2e.sh
echo
echo "time: ${times[*]} (all ${SECONDS}s)"
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
