#!/bin/bash
# run.sh SECONDS FUZZER... - run each libFuzzer harness for SECONDS on a copy of
# its seed corpus (tests/fuzz/corpus/<name>, plus whatever earlier runs found in
# build/fuzz/corpus/<name>), after replaying the regression inputs
# (tests/fuzz/regress/<name>). Crashes land in build/fuzz/crashes/<name>/.
# Prints one line per fuzzer and "fuzz: N passed, N failed" last.
set -u
cd "$(dirname "$0")/../.."
secs=$1; shift
pass=0 fail=0
for bin in "$@"; do
    name=$(basename "$bin"); name=${name#fuzz_}
    work=build/fuzz/corpus/$name crashes=build/fuzz/crashes/$name
    mkdir -p "$work" "$crashes"
    seeds=tests/fuzz/corpus/$name
    [ -d "$seeds" ] || seeds=""
    dict=tests/fuzz/$name.dict
    # 1. regression inputs: each must run clean
    if [ -d "tests/fuzz/regress/$name" ] && ls "tests/fuzz/regress/$name"/* >/dev/null 2>&1; then
        if out=$("$bin" -runs=0 tests/fuzz/regress/"$name"/* 2>&1); then
            echo "ok - fuzz $name: $(ls tests/fuzz/regress/"$name" | wc -l) regression inputs replayed"
            pass=$((pass + 1))
        else
            echo "not ok - fuzz $name: a regression input fails"; tail -n 30 <<<"$out" | sed 's/^/#   /'
            fail=$((fail + 1))
        fi
    fi
    # 2. bounded fuzzing from the seeds (-merge-free: new inputs go to $work)
    log=build/fuzz/$name.log
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$crashes/" ${dict:+$( [ -f "$dict" ] && echo "-dict=$dict")} \
        "$work" $seeds >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n1)
    if [ "$rc" -eq 0 ]; then
        echo "ok - fuzz $name: ${execs:-?} executions in ${secs}s, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l)"
        pass=$((pass + 1))
    else
        echo "not ok - fuzz $name: exit $rc after ${execs:-?} executions; inputs in $crashes"
        grep -aE 'invariant|SUMMARY|ERROR: AddressSanitizer|runtime error|Test unit written' "$log" | head -n 8 | sed 's/^/#   /'
        fail=$((fail + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
