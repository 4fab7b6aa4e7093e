#!/bin/bash
# Run every end-to-end script tests/e2e/*.sh (as root). Each prints TAP-like
# "ok - name" / "not ok - name" lines. Prints a total line.
# Usage: run-e2e.sh [SCRIPT...]  (default: all)
# RESVIEW_E2E_TIMEOUT: seconds a script may run (default 900; an emulated
# guest's run sets more, tests/v2/run.sh)
set -u
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "e2e: must run as root" >&2; exit 1; }
pass=0 fail=0
scripts=("$@"); [ ${#scripts[@]} -gt 0 ] || scripts=(tests/e2e/*.sh)
for s in "${scripts[@]}"; do
    start=$(date +%s)
    out=$(timeout "${RESVIEW_E2E_TIMEOUT:-900}" bash "$s" 2>&1); rc=$?
    p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; out="$out
not ok - $(basename "$s") exited $rc"; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -gt 0 ] || [ -n "${VERBOSE:-}" ]; then echo "$out"; fi
    printf 'e2e  %-28s %d passed, %d failed (%ds)\n' "$(basename "$s")" "$p" "$f" $(( $(date +%s) - start ))
done
echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
