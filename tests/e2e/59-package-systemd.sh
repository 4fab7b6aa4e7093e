#!/bin/bash
# 59-package-systemd.sh - the Debian package on a systemd node, as an operator
# gets it: `apt install ./resview_*.deb` (built on the host: tests/v2/run.sh
# runs `make deb` for a script that names $BUILD's .deb), resview-watch.service
# enabled and active beside the node's own lxcfs.service; a container started
# through the package's resview-runtime with the package's configuration reads
# LXCFS's /proc/meminfo; `systemctl restart lxcfs` and its views come back
# with no command (the unit's `resview watch`); purge, while a user's FUSE
# mount that never answers sits in users/: the unit is gone, the user's mount
# goes with its directory, and the container keeps running. Needs systemd as init: the v2 guests (make check's
# Debian 13 share); this host has none, said in one line.
source "$(dirname "$0")/../lib/common.sh"
[ -d /run/systemd/system ] ||
    { echo "ok 1 - skipped: systemd is not init here (the cgroup v2 guests run this: tests/v2/run.sh)"; exit 0; }
deb=$(ls "$BUILD"/resview_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "not ok 1 - no $BUILD/resview_*.deb (make deb on the host)"; exit 1; }
if dpkg-query -W -f='${Status}' resview 2>/dev/null | grep -q 'installed\|config-files'; then
    echo "not ok 1 - resview is installed here (dpkg --purge resview first)"; exit 1
fi
apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends "$@"; }
ID=pkg-$$
t_cleanup "runc --root $T/runc-root delete -f $ID >/dev/null 2>&1"
t_cleanup 'dpkg-query -W -f="\${Status}" resview 2>/dev/null | grep -q "installed\|config-files" && apt_ purge resview >/dev/null 2>&1'

# the node's own lxcfs.service (the guests mask the suite's services: the
# other tests start their own LXCFS), put back as it was at the end
if [ "$(systemctl is-enabled lxcfs 2>/dev/null)" = masked ]; then
    systemctl unmask -q lxcfs && t_cleanup "systemctl stop lxcfs; systemctl mask -q lxcfs"
fi
systemctl is-active -q lxcfs || { systemctl start lxcfs && t_cleanup "systemctl stop lxcfs"; }
t_eq "(the node's lxcfs.service runs)" "$(systemctl is-active lxcfs)" active
out=$(apt_ install "$deb" 2>&1); rc=$?
t_eq "apt install $(basename "$deb"): exit 0" "$rc" 0
t_contains "postinst names resview configure" "$out" "resview configure --engine"
t_eq "resview-watch.service enabled" "$(systemctl is-enabled resview-watch 2>&1)" enabled
wait_active() { for _ in $(seq 50); do [ "$(systemctl is-active resview-watch)" = active ] && return 0; sleep 0.2; done; return 1; }
t_ok "resview-watch.service active" wait_active
t_eq "the package's binaries report one version" \
    "$(resview version | cut -d' ' -f2) $(resview-runtime --version | grep -o '[0-9][^ ]*' | head -n 1)" \
    "$(dpkg-query -W -f='${Version}' resview) $(dpkg-query -W -f='${Version}' resview)"

# a container through the package's runtime and configuration (the views'
# state in /run/resview, where the unit's watch looks)
rv_bundle "$T/b" '.process.args = ["/bin/sleep", "600"] | .linux.resources.memory = {"limit": 268435456}'
(cd "$T/b" && resview-runtime --root "$T/runc-root" create "$ID" </dev/null >/dev/null 2>"$T/create.err" &&
    resview-runtime --root "$T/runc-root" start "$ID") || echo "# $(cat "$T/create.err")"
mem() { runc --root "$T/runc-root" exec "$ID" grep MemTotal /proc/meminfo 2>&1 | tr -s ' '; }
t_eq "a container through the package reads its limit from LXCFS" "$(mem)" "MemTotal: 262144 kB"
t_ok "recorded where the unit's watch looks" test -e "/run/resview/containers/$ID/views"

systemctl restart lxcfs
healed() { for _ in $(seq 100); do [ "$(mem)" = "MemTotal: 262144 kB" ] && return 0; sleep 0.2; done; return 1; }
t_ok "lxcfs.service restarted: the views heal with no command (resview-watch)" healed
t_contains "the log says watch repaired it" "$(cat /var/log/resview.log 2>/dev/null)" "$ID"

# the metrics through the package's unit, as resview(8) MONITORING tells an
# operator: metrics.address in the configuration, the unit restarted; a
# container started after that is counted
jq '.metrics.address = "127.0.0.1:9464"' /etc/resview/config.json >"$T/cfg" && cat "$T/cfg" >/etc/resview/config.json
systemctl restart resview-watch && wait_active
scrape() { curl -s --max-time 5 http://127.0.0.1:9464/metrics; }
for _ in $(seq 50); do scrape | grep -q '^resview_lxcfs_up 1' && break; sleep 0.2; done
rv_bundle "$T/b2" '.process.args = ["/bin/true"]'
(cd "$T/b2" && resview-runtime --root "$T/runc-root" run "$ID-2" </dev/null >/dev/null 2>&1)
m=$(scrape)
t_line "resview-watch.service serves /metrics: LXCFS up" "$m" "resview_lxcfs_up 1"
t_line "/metrics: the container started since, with its views" "$m" 'resview_container_views_total{views="yes",reason="ok"} 1'
t_ok "the package's logrotate file passes logrotate's own check" logrotate -d /etc/logrotate.d/resview

# a user's FUSE file system that never answers, mounted through fusermount3
# in a directory of the user's in users/ (1733, where /run is a tmpfs of its
# own): the purge neither enters nor waits on it, and it goes with its directory
mkdir -p /run/resview/users && chmod 0711 /run/resview && chmod 1733 /run/resview/users
install -d -m 0755 "$T/u" && chmod 0711 "$T" && gcc -O2 -o "$T/u/fuse-user" "$TOP/tests/lib/fuse-user.c"
stat -c %a /dev/fuse >"$T/fuse.mode" && chmod 0666 /dev/fuse && t_cleanup "chmod $(cat "$T/fuse.mode") /dev/fuse"
setpriv --reuid=65534 --regid=65534 --clear-groups mkdir /run/resview/users/nobody
setsid setpriv --reuid=65534 --regid=65534 --clear-groups "$T/u/fuse-user" /run/resview/users/nobody >"$T/fu.out" 2>&1 &
t_cleanup "kill -KILL -- -$!"
for _ in $(seq 100); do grep -qs ready "$T/fu.out" && break; sleep 0.1; done
t_eq "(a user's FUSE mount in users/)" "$(grep -c ' /run/resview/users/nobody ' /proc/self/mountinfo)" 1
start=$SECONDS
out=$(timeout 150 env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q purge resview 2>&1); rc=$?
echo "# purge: $((SECONDS - start)) s (pivot_root: $(command -v pivot_root || echo none))"
grep '^resview:' <<<"$out" | sed 's/^/#   /'
t_eq "apt purge: exit 0" "$rc" 0
t_eq "purge: the user's mount went with its directory, nothing left, nothing said" \
    "$(grep -c ' /run/resview/' /proc/self/mountinfo) $(grep -c 'resview: left' <<<"$out")" "0 0"
t_eq "the unit is gone" "$(systemctl is-active resview-watch 2>&1; systemctl cat resview-watch >/dev/null 2>&1 || echo gone)" \
    "inactive"$'\n'"gone"
t_eq "the container keeps running" "$(runc --root "$T/runc-root" state "$ID" | jq -r .status)" running
t_eq "nothing of resview is left in /etc, /run, /usr/bin" \
    "$(ls -d /etc/resview /run/resview /usr/bin/resview* 2>/dev/null)" ""
echo "# $(basename "$0"): done"
