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
out=$(tests/run-unit.sh "$@" 2>&1); echo "$out"; tally "$out"
for extra in tests/check.d/*.sh; do
    [ -e "$extra" ] || continue
    out=$(bash "$extra" 2>&1); echo "$out"; tally "$out"
done
out=$(tests/run-e2e.sh 2>&1); echo "$out"; tally "$out"
echo
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
