#!/bin/bash
# make check stage: the e2e scripts of tests/v2/suites.txt again, on a cgroup
# v2 host: the Debian guest named in tests/v2/suite (tests/v2/run.sh: qemu; the
# image is built once into build/v2/SUITE/). Last line: "e2e-v2: N passed, N failed".
exec "$(dirname "$0")/../v2/run.sh"
