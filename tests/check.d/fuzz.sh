#!/bin/bash
# make check stage: build the libFuzzer harnesses and run each briefly
# (CHECK_FUZZ_SECONDS, default 10) after replaying the regression inputs.
# `make fuzz` runs the same for longer. Last line: "fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
if ! out=$(make -s --no-print-directory fuzz-build 2>&1); then
    echo "$out" | tail -n 20 | sed 's/^/#   /'
    echo "not ok - fuzz: the harnesses do not build"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
exec tests/fuzz/run.sh "${CHECK_FUZZ_SECONDS:-10}" build/fuzz/fuzz_*
