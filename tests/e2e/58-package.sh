#!/bin/bash
# 58-package.sh - an upgrade of the Debian package under running containers:
# version N installed with apt (`make deb`), docker (its runtime entry from
# `resview configure --engine docker --config` on the private daemon's file)
# and containerd (`ctr run --runc-binary /usr/bin/resview-runtime`) each start
# a container through it; N+1 (`make deb VERSION=N.1`) installed over it. The
# running containers keep their views and variables, their exec sessions still
# get the variables, new containers start through the new binaries, and
# `resview repair` (N+1's) heals the views after an LXCFS restart that follows
# the upgrade. docker's default file configured --set-as-default: `apt remove`
# writes dockerd's own default runtime and says a reload suffices; after
# kill -HUP alone a plain `docker run` starts. Then purge: the containers keep
# running. Nothing of resview may
# be installed on this host before (the package is purged at exit).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
if dpkg-query -W -f='${Status}' resview 2>/dev/null | grep -q 'installed\|config-files'; then
    echo "not ok - resview is installed on this host (dpkg --purge resview first)"; exit 1
fi
apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends "$@"; }
t_cleanup 'dpkg-query -W -f="\${Status}" resview 2>/dev/null | grep -q "installed\|config-files" && apt_ purge resview'

# the two packages (N+1 first: the tree's binaries end as N, the tree's own version)
V=$(make -s --no-print-directory -C "$TOP" BUILD="$BUILD" version)
ARCH=$(dpkg --print-architecture)
for v in "$V.1" "$V"; do
    make -s --no-print-directory -C "$TOP" BUILD="$BUILD" VERSION="$v" deb >"$T/deb.log" 2>&1 &&
        cp "$BUILD/resview_${v}_$ARCH.deb" "$T/resview_$v.deb" ||
        { echo "not ok - make deb VERSION=$v"; tail -n 5 "$T/deb.log" | sed 's/^/#   /'; exit 1; }
done
t_ok "install N ($V) with apt" apt_ install "$T/resview_$V.deb"

LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || exit 1
t_cleanup "lxcfs_stop $LXCFS_DIR"
# the test's LXCFS, state and log; the installed hook
HOOK=/usr/bin/resview-hook rv_config "$T/config.json"
export RESVIEW_CONFIG=$T/config.json

# docker's default file (the host's own kept aside): the removal takes resview
# out of it; resview is dockerd's default runtime
DJ=/etc/docker/daemon.json
[ -e $DJ ] && cp -a $DJ "$T/daemon.json.host"
t_cleanup "rm -f $DJ $DJ.resview-backup; [ -e $T/daemon.json.host ] && cp -a $T/daemon.json.host $DJ"
mkdir -p /etc/docker && printf '{\n  "log-level": "warn"\n}\n' >$DJ
cp $DJ "$T/daemon.json.operator"
t_ok "resview configure --engine docker --set-as-default (its default file)" \
    resview configure --engine docker --set-as-default
t_eq "daemon.json names the package's runtime, the default" \
    "$(jq -r '.runtimes.resview.path + " " + ."default-runtime"' $DJ)" "/usr/bin/resview-runtime resview"
ctd_start || exit 1
dockerd_start $DJ || exit 1
rv_image_tar "$T/img.tar"
dk import "$T/img.tar" rvtest:busybox >/dev/null
python3 "$TOP/hooks/kubernetes/image/oci-image.py" "$T/img.tar" "$T/oci.tar" resview.test/busybox:1 /bin/sleep 2147483647
ctr --address "$CTD_SOCK" images import "$T/oci.tar" >/dev/null 2>&1
CTR="ctr --address $CTD_SOCK"

# one container through each engine, started by N
t_ok "docker: a container through N" dk run -d --name dk1 --runtime resview --cgroup-parent "$ENGINE_CG_PARENT" \
    --cpus 1 -m 256m rvtest:busybox /bin/sleep 100000
# (containerd's runc root for the namespace is the host's: ids of this run's own)
C1=rv58-${TID#resviewe2e} C2=rv58b-${TID#resviewe2e}
t_ok "containerd: a container through N" $CTR run -d --null-io --runc-binary /usr/bin/resview-runtime \
    --cgroup "$CG_PARENT/ctr1" --cpus 1 --memory-limit 268435456 resview.test/busybox:1 $C1 /bin/sleep 100000
# after the purge its engine cannot stop it (no resview-runtime): runc itself then
t_cleanup "$CTR task kill -s KILL $C1; sleep 0.5; $CTR task delete $C1; $CTR container delete $C1;
           runc --root /run/containerd/runc/default delete -f $C1"
in_dk() { dk exec dk1 "$@" 2>&1; }
in_ctr() { $CTR task exec --exec-id "e$RANDOM" $C1 "$@" 2>&1; }
views() { # NAME WHEN: a container's view and variables
    local n=$1 when=$2 run=in_dk
    [ "$n" = containerd ] && run=in_ctr
    t_contains "$n, $when: /proc/meminfo is its own (MemTotal 262144 kB)" "$($run grep MemTotal /proc/meminfo)" "262144 kB"
    t_contains "$n, $when: its process has GOMAXPROCS=1" "$($run cat /proc/1/environ | tr '\0' '\n')" "GOMAXPROCS=1"
    t_contains "$n, $when: an exec session gets GOMAXPROCS=1" "$($run env)" "GOMAXPROCS=1"
}
views docker "started by N"
views containerd "started by N"

# the upgrade
out=$(apt_ install "$T/resview_$V.1.deb" 2>&1); rc=$?
t_eq "upgrade to N+1 ($V.1) with apt: exit 0" "$rc" 0
t_eq "resview-runtime is N+1's" "$(resview-runtime --version | head -n 1)" "resview-runtime version $V.1"
t_eq "docker's container still runs" "$(dk inspect -f '{{.State.Running}}' dk1 2>&1)" true
t_contains "containerd's container still runs" "$($CTR task ls 2>&1 | grep $C1)" RUNNING
views docker "after the upgrade"
views containerd "after the upgrade"

# new containers start through N+1
out=$(dk run --rm --runtime resview --cgroup-parent "$ENGINE_CG_PARENT" --cpus 1.5 -m 512m rvtest:busybox \
      /bin/sh -c 'env; grep MemTotal /proc/meminfo' 2>&1)
t_contains "docker, a new container through N+1: GOMAXPROCS=2" "$out" "GOMAXPROCS=2"
t_contains "docker, a new container through N+1: its view (MemTotal 524288 kB)" "$out" "524288 kB"
out=$($CTR run --rm --runc-binary /usr/bin/resview-runtime --cgroup "$CG_PARENT/ctr2" --cpus 1.5 \
      --memory-limit 536870912 resview.test/busybox:1 $C2 /bin/sh -c 'env; grep MemTotal /proc/meminfo' 2>&1)
t_contains "containerd, a new container through N+1: GOMAXPROCS=2" "$out" "GOMAXPROCS=2"
t_contains "containerd, a new container through N+1: its view" "$out" "524288 kB"

# LXCFS restarts after the upgrade: N+1's repair heals N's containers
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
t_ok "after the LXCFS restart, docker's view is dead (ENOTCONN)" sh -c "! dk exec dk1 cat /proc/meminfo >/dev/null 2>&1"
out=$(resview repair 2>&1)
t_eq "resview repair (N+1): exit 0" "$?" 0
views docker "repaired by N+1"
views containerd "repaired by N+1"

# apt remove under the live dockerd whose default runtime is resview: the
# removal writes dockerd's own default and says that a reload suffices; after
# that reload alone, a plain docker run starts (#42)
out=$(apt_ remove resview 2>&1); rc=$?
t_eq "apt-get remove: exit 0" "$rc" 0
t_contains "remove: says what dockerd needs, a reload" "$out" \
    'docker: it had resview as its default runtime: `default-runtime` is now "runc" (dockerd'"'"'s own); reload dockerd (systemctl reload docker, or kill -HUP the dockerd pid) and plain docker run uses it'
t_not_contains "remove: offers no runtime it removed" "$out" "--runtime resview"
t_eq "remove: daemon.json is the operator's, with dockerd's own default" "$(jq -cS . $DJ)" \
    "$(jq -cS '. + {"default-runtime": "runc"}' "$T/daemon.json.operator")"
kill -HUP "$DOCKERD_PID"
wait_for sh -c "$DOCKER -H unix://$DOCKER_SOCK info 2>/dev/null | grep -q 'Default Runtime: runc'"
out=$(dk run --rm --cgroup-parent "$ENGINE_CG_PARENT" rvtest:busybox /bin/echo plain-run 2>&1)
t_line "after the removal and the reload it names (nothing restarted), a plain docker run starts" "$out" plain-run

# purge: the containers keep running
out=$(apt_ purge resview 2>&1); rc=$?
t_eq "apt-get purge: exit 0" "$rc" 0
t_eq "purge: docker's container still runs" "$(dk inspect -f '{{.State.Running}}' dk1 2>&1)" true
t_contains "purge: containerd's container still runs" "$($CTR task ls 2>&1 | grep $C1)" RUNNING
# (its engine now fails to exec in it or stop it: it runs resview-runtime, gone;
# the prerm says so for the containers it has records of; the test's cgroups end it)
pid=$($CTR task ls 2>/dev/null | awk -v id=$C1 '$1 == id {print $2}')
# (LXCFS answers for the cgroup of the reader's pid namespace's init)
t_contains "purge: its view still answers (read in its mount and pid namespaces)" \
    "$(nsenter -t "$pid" -m -p -r /bin/grep MemTotal /proc/meminfo 2>&1)" "262144 kB"
