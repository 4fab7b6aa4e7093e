#!/bin/bash
# generate.sh - the files in this directory are what resview 0.1.0 (commit
# 100f26d) wrote, made with its real binary; they are committed because CI's
# checkout may have no history to build 0.1 from. To make them again:
#   git worktree add /tmp/rv-0.1 100f26d && make -C /tmp/rv-0.1 build/resview
#   tests/samples/v0.1/generate.sh /tmp/rv-0.1/build/resview
#   git worktree remove /tmp/rv-0.1
# NAME is 0.1's output, NAME.resview-backup the copy of the original it kept;
# new-* are files 0.1 created (no backup). Used by tests/e2e/40-configure.sh,
# 49-node-agent.sh and tests/unit/test_engine.c.
set -eu
OLD=${1:?usage: generate.sh PATH-OF-0.1-resview}
HERE=$(cd "$(dirname "$0")" && pwd)
S=$HERE/..
RT=/opt/resview/bin/resview-runtime
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$OLD" version | grep -q '^resview 0\.1\.0' || { echo "not resview 0.1.0: $OLD" >&2; exit 1; }
conf() { # ENGINE SAMPLE OUT [args]
    local e=$1 in=$2 out=$3; shift 3
    [ -z "$in" ] || cp "$S/$in" "$W/$out"
    "$OLD" configure --engine="$e" --config "$W/$out" --hooks-dir "$W/hooks" "$@" >/dev/null 2>&1
}
# the runtime path 0.1 was given differs from the one the tests configure
conf containerd containerd-v2.toml containerd-v2.toml --set-as-default --runtime-path /usr/local/bin/resview-runtime
conf containerd containerd-v3.toml containerd-v3.toml --set-as-default --runtime-path "$RT"
conf containerd containerd-noeol.toml containerd-noeol.toml --runtime-path "$RT"
conf containerd containerd-debian.toml containerd-debian.toml --set-as-default --runtime-path "$RT"
conf crio crio.conf crio.conf --set-as-default --runtime-path "$RT"
conf podman containers.conf containers.conf --set-as-default --runtime-path "$RT"
conf podman containers-empty.conf containers-empty.conf --runtime-path "$RT"
conf docker daemon.json daemon.json --set-as-default --runtime-path "$RT"
conf slurm oci.conf oci.conf --runtime-path "$RT"
conf containerd "" new-containerd.toml --containerd-version 3 --set-as-default --runtime-path "$RT"
conf crio "" new-crio.conf --runtime-path "$RT"
conf podman "" new-podman.conf --set-as-default --runtime-path "$RT" --hook-path /opt/resview/bin/resview-hook
conf docker "" new-daemon.json --set-as-default --runtime-path "$RT"
conf slurm "" new-oci.conf --slurm-version 23.02 --runtime-path "$RT"
conf enroot "" new-enroot.sh --hook-path /opt/resview/bin/resview-hook
cp "$W/hooks/resview-lxcfs.json" "$W/new-hooks.json"
rm -rf "$W/hooks"
find "$HERE" -type f ! -name generate.sh -delete
cp -p "$W"/* "$HERE/"
