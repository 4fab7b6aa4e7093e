#!/bin/bash
# Run unit test binaries; print per-binary results and a total line.
# Usage: run-unit.sh BIN... ; env UNIT_WRAP (e.g. "valgrind --error-exitcode=9")
set -u
pass=0 fail=0
for t in "$@"; do
    out=$(${UNIT_WRAP:-} "$t" 2>&1); rc=$?
    p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; out="$out
not ok - $t exited $rc"; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -gt 0 ]; then echo "$out" | grep -v '^ok '; fi
    printf 'unit %-28s %d passed, %d failed\n' "$(basename "$t")" "$p" "$f"
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
