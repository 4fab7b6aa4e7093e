#!/bin/bash
# 41-docker.sh - dockerd (Debian's docker.io) on private sockets and directories,
# with resview registered by `resview configure --engine=docker` in its daemon.json;
# --uninstall where resview was the default: a reload alone brings plain
# `docker run` back to runc.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"

LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
rv_config "$T/config.json"

printf '{\n  "log-level": "warn",\n  "storage-driver": "overlay2"\n}\n' >"$T/daemon.json"
cp "$T/daemon.json" "$T/daemon.json.orig"
t_ok "configure --engine=docker" "$CLI" configure --engine=docker --config "$T/daemon.json" --runtime-path "$RUNTIME"
t_eq "daemon.json names the runtime" "$(jq -r '.runtimes.resview.path' "$T/daemon.json")" "$RUNTIME"
t_eq "daemon.json keeps the other keys" "$(jq -c '{a: ."log-level", b: ."storage-driver"}' "$T/daemon.json")" '{"a":"warn","b":"overlay2"}'

ctd_start || exit 1
dockerd_start "$T/daemon.json" || exit 1
rv_image_tar "$T/img.tar"
dk import "$T/img.tar" rvtest:busybox >/dev/null

run() { dk run --rm --cgroup-parent "$ENGINE_CG_PARENT" "$@"; }

out=$(run --runtime resview --cpus 1.5 -m 512m rvtest:busybox /bin/env 2>&1)
t_contains "docker --runtime resview --cpus 1.5: GOMAXPROCS=2" "$out" "GOMAXPROCS=2"
t_contains "docker --runtime resview: OMP_NUM_THREADS=2" "$out" "OMP_NUM_THREADS=2"
t_contains "docker --runtime resview -m 512m: SLURM_MEM_PER_NODE=512" "$out" "SLURM_MEM_PER_NODE=512"
t_contains "the shim ran with the test configuration (log)" "$(cat "$T/resview.log" 2>/dev/null)" "cpus=2"

out=$(run --cpus 1.5 -m 512m rvtest:busybox /bin/env 2>&1)
t_not_contains "plain runc (no --runtime): no GOMAXPROCS" "$out" "GOMAXPROCS"
t_contains "(that container ran)" "$out" "PATH="

# (docker 28 prints "WARNING: IPv4 forwarding is disabled" first, on a node without it)
out=$(run --runtime resview --cpus 1 -m 256m rvtest:busybox /bin/sh -c \
    'echo "cpus $(grep -c ^processor /proc/cpuinfo)"; grep MemTotal /proc/meminfo' 2>&1)
t_line "LXCFS view inside docker: 1 CPU in /proc/cpuinfo" "$out" "cpus 1"
t_contains "LXCFS view inside docker: MemTotal 262144 kB" "$out" "262144 kB"

# FUSE through docker: the image's own RESVIEW_FUSE=1 never suffices (the
# FUSE runtime name does, tests/e2e/31-fuse-docker.sh); off by default anyway.
probe='test -c /dev/fuse && echo has-fuse; c=$(grep CapEff /proc/self/status | awk "{print \$2}"); echo sysadmin=$(( 0x$c >> 21 & 1 ))'
out=$(run --runtime resview -e RESVIEW_FUSE=1 rvtest:busybox /bin/sh -c "$probe" 2>&1)
t_contains "docker -e RESVIEW_FUSE=1, default configuration: refused, saying why" "$out" \
    "FUSE was requested (RESVIEW_FUSE=1 in the container's environment) but fuse.allowed is false"
t_not_contains "docker -e RESVIEW_FUSE=1: the container never ran" "$out" "sysadmin="
out=$(run --runtime resview rvtest:busybox /bin/sh -c "$probe" 2>&1)
t_not_contains "docker without the request: no /dev/fuse" "$out" "has-fuse"
t_contains "docker without the request: no CAP_SYS_ADMIN" "$out" "sysadmin=0"

id=$(dk run -d --cgroup-parent "$ENGINE_CG_PARENT" --runtime resview --cpus 1.5 rvtest:busybox /bin/sleep 300)
out=$(dk exec "$id" /bin/env 2>&1)
t_contains "docker exec sees the variables too" "$out" "GOMAXPROCS=2"
dk rm -f "$id" >/dev/null 2>&1

# docker update (in place): a new docker exec gets the new values
id=$(dk run -d --cgroup-parent "$ENGINE_CG_PARENT" --runtime resview --cpus 2 -m 1g rvtest:busybox /bin/sleep 300)
dk update --cpus 1 -m 512m "$id" >/dev/null
out=$(dk exec "$id" /bin/sh -c 'env; grep MemTotal /proc/meminfo' 2>&1)
t_contains "docker update --cpus 1 -m 512m: a new docker exec reads GOMAXPROCS=1" "$out" "GOMAXPROCS=1"
t_contains "docker update: ... SLURM_MEM_PER_NODE=512" "$out" "SLURM_MEM_PER_NODE=512"
t_contains "docker update: ... and /proc/meminfo shows 512 MiB" "$out" "524288 kB"
dk rm -f "$id" >/dev/null 2>&1

t_ok "configure --set-as-default" "$CLI" configure --engine=docker --config "$T/daemon.json" --runtime-path "$RUNTIME" --set-as-default
kill -HUP "$DOCKERD_PID"
wait_for sh -c "$DOCKER -H unix://$DOCKER_SOCK info 2>/dev/null | grep -q 'Default Runtime: resview'"
out=$(run --cpus 1.5 rvtest:busybox /bin/env 2>&1)
t_contains "default runtime resview: docker run without --runtime gets GOMAXPROCS=2" "$out" "GOMAXPROCS=2"

# --uninstall while resview is dockerd's default: a reload keeps a default the
# file does not set, so the file now sets dockerd's own (runc), and says that a
# reload suffices (#42)
out=$("$CLI" configure --engine=docker --config "$T/daemon.json" --uninstall 2>&1)
t_eq "configure --uninstall: exit 0" "$?" 0
t_contains "… says that resview was the default, what is now, and that a reload suffices" "$out" \
    'docker: it had resview as its default runtime: `default-runtime` is now "runc" (dockerd'"'"'s own); reload dockerd (systemctl reload docker, or kill -HUP the dockerd pid) and plain docker run uses it'
t_not_contains "… and offers no runtime it removed" "$out" "--runtime resview"
t_ok "daemon.json: the original bytes, with \"default-runtime\": \"runc\" first" \
    cmp "$T/daemon.json" <(sed '1a\  "default-runtime": "runc",' "$T/daemon.json.orig")
kill -HUP "$DOCKERD_PID"
wait_for sh -c "$DOCKER -H unix://$DOCKER_SOCK info 2>/dev/null | grep -q 'Default Runtime: runc'"
out=$(run --cpus 1.5 rvtest:busybox /bin/env 2>&1)
t_contains "after the reload only (no restart), a plain docker run starts" "$out" "PATH="
t_not_contains "… through runc (no GOMAXPROCS)" "$out" "GOMAXPROCS"

# dockerd adds runtimes on SIGHUP but does not drop them: a restart does (the
# message of an uninstall where resview was not the default says so)
"$CLI" configure --engine=docker --config "$T/daemon.json" --runtime-path "$RUNTIME" >/dev/null
out=$("$CLI" configure --engine=docker --config "$T/daemon.json" --uninstall 2>&1)
t_contains "configure --uninstall, resview not the default: dockerd needs nothing, a restart drops the runtime" "$out" \
    "docker: nothing to do for containers that name no runtime; dockerd lists the removed runtime until it restarts (systemctl restart docker): a reload does not drop it"
dockerd_stop
dockerd_start "$T/daemon.json" || exit 1
out=$(run --runtime resview rvtest:busybox /bin/true 2>&1)
# (dockerd 20.10: "Unknown runtime specified resview"; 26 and 28: "unknown or invalid runtime name: resview")
t_ok "after uninstall and a restart, --runtime resview is unknown to dockerd" \
    grep -qiE 'unknown runtime specified resview|unknown or invalid runtime name: resview' <<<"$out"
