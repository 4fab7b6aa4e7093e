#!/bin/bash
# make check stage: the e2e scripts of tests/v2/suites.txt again, on a cgroup
# v2 host with Debian 12's own kernel (tests/v2/run.sh: a qemu guest; the
# image is built once into build/v2/). Last line: "e2e-v2: N passed, N failed".
exec "$(dirname "$0")/../v2/run.sh"
