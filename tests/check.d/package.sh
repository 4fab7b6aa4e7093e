#!/bin/bash
# make check stage: the Debian package (`make deb`, hooks/debian/) and `make
# install`, on this host (as root; nothing of resview may be installed here):
#  1. two builds, N (the tree's version) and N+1 (N.1, `make deb VERSION=`):
#     lintian (no E: or W:), `dpkg -c` exactly the expected files; one version
#     in the changelog, the package, the binaries, doctor and the node image's
#     manifests;
#  2. apt-get install N: the binaries run as installed (the CLI's libraries are
#     the package's Depends), doctor finds the configuration and the seccomp
#     profile, man finds the pages, the unit is enabled, the postinst names
#     `resview configure`; docker configured at its default file over an
#     operator's daemon.json;
#  3. the operator edits the conffile; upgrade to N+1: edit kept, engine file
#     untouched; apt refuses the downgrade to N unless --allow-downgrades,
#     which works (and keeps the edit); N+2 (N+1 repacked with another
#     example configuration) over the edit: without a tty dpkg's conffile
#     prompt fails the install; with --force-confdef --force-confold the
#     edit is kept and the release's file is config.json.dpkg-dist;
#  4. a daemon.json configure cannot read back: remove refuses, one line, the
#     package stays; fixed: remove takes resview out of docker (its bytes
#     before configure, said so), the conffile stays; install again; a
#     running containerd whose default runtime is resview: remove refuses,
#     one line; purge
#     while a hostile user (FUSE through fusermount3, allow_other, a symlink
#     swapped in, a late mount, a loop adding directories in users/) plays:
#     exit 0 within its bound, a host mount behind the symlink still mounted,
#     the user's earlier mounts gone, what the user kept adding left and said
#     in one line; dpkg -S and a walk of /usr /etc /var /run find nothing of
#     resview;
#  5. make install DESTDIR (the package's set, under PREFIX) and make
#     uninstall: no file left; an edited configuration kept and said.
# Last line: "package: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
TOP=$PWD
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/resview-package.XXXXXX)
pass=0 fail=0
ok() { echo "ok - package: $1"; pass=$((pass + 1)); }
bad() { echo "not ok - package: $1"; fail=$((fail + 1)); }
check() { local name=$1; shift; if "$@" >"$T/.out" 2>&1; then ok "$name"; else bad "$name"; sed 's/^/#   /' "$T/.out" | tail -n 20; fi; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1"; printf '#   got:  %s\n#   want: %s\n' "$2" "$3" | head -n 40; fi; }
has() { case $2 in *"$3"*) ok "$1" ;; *) bad "$1"; printf '#   no "%s" in:\n' "$3"; printf '%s\n' "$2" | sed 's/^/#   /' | tail -n 15 ;; esac; }
finish() { echo "package: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q "$@"; }

[ "$(id -u)" = 0 ] || { bad "must run as root"; finish; }
for c in lintian dpkg-deb apt-get go-md2man; do command -v $c >/dev/null || { bad "$c missing (make deps)"; finish; }; done
if dpkg-query -W -f='${Status}' resview 2>/dev/null | grep -q 'installed\|config-files'; then
    bad "resview is installed on this host: the test installs and purges it (dpkg --purge resview first)"; finish
fi

DOCKER_CFG=/etc/docker/daemon.json
[ -e $DOCKER_CFG ] && cp -a $DOCKER_CFG "$T/daemon.json.host"
CTD_CFG=/etc/containerd/config.toml
[ -e $CTD_CFG ] && cp -a $CTD_CFG "$T/config.toml.host"
V=$(make -s --no-print-directory BUILD="$BUILD" version)
V1=$V.1
# the hostile user's processes and what they left (section 4)
USERS=
users_cleanup() {
    local p m
    for p in $USERS; do kill -KILL -- -"$p" 2>/dev/null; done
    USERS=
    grep -o ' /run/resview/users/[^ ]*' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf /run/resview
    mountpoint -q "$T/X" && umount "$T/X"
    [ -e "$T/fuse.conf" ] && cp -a "$T/fuse.conf" /etc/fuse.conf && rm -f "$T/fuse.conf"
    [ -e "$T/fuse.mode" ] && chmod "$(cat "$T/fuse.mode")" /dev/fuse && rm -f "$T/fuse.mode"
    return 0
}
cleanup() {
    users_cleanup
    dpkg-query -W -f='${Status}' resview 2>/dev/null | grep -q 'installed\|config-files' &&
        apt_ purge resview >/dev/null 2>&1
    rm -f $DOCKER_CFG $DOCKER_CFG.resview-backup $CTD_CFG.resview-backup
    [ -e "$T/config.toml.host" ] && cp -a "$T/config.toml.host" $CTD_CFG
    [ -e "$T/daemon.json.host" ] && cp -a "$T/daemon.json.host" $DOCKER_CFG
    # the tree's own binaries back (N+1 is built first, N last; this only after a failure)
    [ "$(cat "$BUILD/version" 2>/dev/null)" = "$V" ] ||
        make -s --no-print-directory BUILD="$BUILD" VERSION="$V" all static >/dev/null 2>&1
    rm -f "$BUILD/resview_$V1"_*.deb
    rm -rf "$T"
}
trap cleanup EXIT

# --- 1. the two builds ------------------------------------------------------
ARCH=$(dpkg --print-architecture)
DEB=$BUILD/resview_${V}_$ARCH.deb DEB1=$BUILD/resview_${V1}_$ARCH.deb
for v in "$V1" "$V"; do
    if ! make -s --no-print-directory BUILD="$BUILD" VERSION="$v" deb >"$T/deb.log" 2>&1; then
        bad "make deb VERSION=$v"; sed 's/^/#   /' "$T/deb.log" | tail -n 20; finish
    fi
    cp "$BUILD/resview_${v}_$ARCH.deb" "$T/n${v#"$V"}.deb" || { bad "make deb VERSION=$v: no $BUILD/resview_${v}_$ARCH.deb"; finish; }
done
mv "$T/n.1.deb" "$T/n1.deb"
same "make deb: $DEB, the only .deb in $BUILD (the one of N+1 removed)" "$(ls "$BUILD"/resview_*.deb)" "$DEB"
lint=$(lintian "$T/n.deb" 2>&1 | grep -v '^running with root')
same "lintian: no error, no warning" "$(grep -E '^(E|W):' <<<"$lint")" ""
[ -n "$lint" ] && sed 's/^/#   lintian: /' <<<"$lint"

listing=$(dpkg -c "$T/n.deb" | awk '$1 !~ /^d/ {print $1, $2, $6, $7, $8}' | sed 's/ *$//' |
          sed 's| \./\(usr/\)\{0,1\}lib/systemd/system/| UNITDIR/|; s| \./| /|' | LC_ALL=C sort -k3)
same "dpkg -c: exactly the expected files, modes and owners" "$listing" "$(LC_ALL=C sort -k3 <<'EOF'
-rw-r--r-- root/root /etc/logrotate.d/resview
-rw-r--r-- root/root /etc/resview/config.json
-rw-r--r-- root/root UNITDIR/resview-watch.service
-rwxr-xr-x root/root /usr/bin/resview
-rwxr-xr-x root/root /usr/bin/resview-hook
-rwxr-xr-x root/root /usr/bin/resview-runtime
lrwxrwxrwx root/root /usr/bin/resview-runtime-fuse -> resview-runtime
-rw-r--r-- root/root /usr/share/doc/resview/changelog.gz
-rw-r--r-- root/root /usr/share/doc/resview/copyright
-rw-r--r-- root/root /usr/share/lintian/overrides/resview
-rw-r--r-- root/root /usr/share/man/man5/resview.json.5.gz
-rw-r--r-- root/root /usr/share/man/man8/resview-hook.8.gz
lrwxrwxrwx root/root /usr/share/man/man8/resview-runtime-fuse.8.gz -> resview-runtime.8.gz
-rw-r--r-- root/root /usr/share/man/man8/resview-runtime.8.gz
-rw-r--r-- root/root /usr/share/man/man8/resview.8.gz
-rw-r--r-- root/root /usr/share/resview/seccomp.json
EOF
)"
same "conffiles: the example configuration and the log's rotation" "$(dpkg-deb --ctrl-tarfile "$T/n.deb" | tar -xO ./conffiles)" \
    "$(printf '/etc/resview/config.json\n/etc/logrotate.d/resview')"
same "the example configuration is hooks/debian/config.json" \
    "$(dpkg-deb --fsys-tarfile "$T/n.deb" | tar -xO ./etc/resview/config.json | sha256sum)" "$(sha256sum <hooks/debian/config.json)"
depends=$(dpkg-deb -f "$T/n.deb" Depends)
same "Depends: the CLI's libraries only (libc6, libjansson4, libmount1, libseccomp2)" \
    "$(tr ',' '\n' <<<"$depends" | sed 's/ *(.*//; s/^ *//' | sort | tr '\n' ' ')" "libc6 libjansson4 libmount1 libseccomp2 "
same "Recommends lxcfs, Suggests fuse3" "$(dpkg-deb -f "$T/n.deb" Recommends) $(dpkg-deb -f "$T/n.deb" Suggests)" "lxcfs fuse3"
release=$(sed -n '1s/^resview (\([^)]*\)).*/\1/p' hooks/debian/changelog)
has "the version is the changelog's top entry ($release), or past it" "$V" "$release"
same "the package's version is make's" "$(dpkg-deb -f "$T/n.deb" Version)" "$V"
same "N+1's version" "$(dpkg-deb -f "$T/n1.deb" Version)" "$V1"
check "N+1 is newer than N for dpkg" dpkg --compare-versions "$V1" gt "$V"
changelog=$(dpkg-deb --fsys-tarfile "$T/n.deb" | tar -xO ./usr/share/doc/resview/changelog.gz | gzip -dc)
same "the packaged changelog's top entry is this version" "$(sed -n '1s/^resview (\([^)]*\)).*/\1/p' <<<"$changelog")" "$V"
same "node image: kustomization.yaml's newTag is the release" \
    "$(sed -n 's/^ *newTag: *//p' hooks/kubernetes/kustomization.yaml)" "$release"
same "node image: daemonset.yaml's image tag is the release" \
    "$(sed -n 's|^ *image: localhost/resview/node:||p' hooks/kubernetes/daemonset.yaml)" "$release"

# --- 2. install N -------------------------------------------------------------
walk() { find /usr /etc /var /run -xdev -name '*resview*' 2>/dev/null | LC_ALL=C sort; }
before=$(walk)   # what other installs or tests left (install.sh's /usr/local, ...): said, not counted
[ -z "$before" ] || sed 's/^/# there before the test: /' <<<"$before"
# an operator's daemon.json, at docker's default file
printf '{\n  "log-level": "warn"\n}\n' >$DOCKER_CFG
cp $DOCKER_CFG "$T/daemon.json.operator"
out=$(apt_ install --no-install-recommends "$T/n.deb" 2>&1); rc=$?
same "apt-get install ./resview_N.deb: exit 0" "$rc" 0
has "the postinst names resview configure (no engine configured)" "$out" "run \`resview configure --engine NAME\`"
same "installed: resview version" "$(resview version 2>&1)" "resview $V"
same "installed: resview-runtime --version (then the next runtime's)" "$(resview-runtime --version 2>&1 | head -n 1)" \
    "resview-runtime version $V"
same "installed: resview-hook --version" "$(resview-hook --version 2>&1)" "resview-hook $V"
doctor=$(resview doctor 2>&1)
has "doctor says the version" "$doctor" "info  resview $V"
has "doctor reads the example configuration" "$doctor" "ok    configuration \`/etc/resview/config.json\`"
has "doctor: the shim is /usr/bin's" "$doctor" "ok    runtime shim \`/usr/bin/resview-runtime\`"
echo '{"fuse": {"allowed": true}}' >"$T/fuse.json"
has "the seccomp profile found from /usr/bin (../share/resview)" "$(RESVIEW_CONFIG=$T/fuse.json resview doctor 2>&1)" \
    "seccomp profile for FUSE containers that have none: \`/usr/bin/../share/resview/seccomp.json\`"
same "doctor: no warning about the configuration's keys" "$(grep -i 'unknown key\|keeping the default' <<<"$doctor")" ""
check "man finds resview(8), resview-runtime-fuse(8) and resview.json(5)" \
    sh -c 'man -w resview && man -w resview-runtime-fuse && man -w 5 resview.json'
check "resview-watch.service enabled (deb-systemd-helper)" test -L /etc/systemd/system/multi-user.target.wants/resview-watch.service
same "the unit runs /usr/bin/resview" "$(grep '^ExecStart=' "$(dpkg -L resview | grep 'resview-watch.service$')")" \
    "ExecStart=/usr/bin/resview watch"
out=$(resview configure --engine docker 2>&1)
same "configure --engine docker: daemon.json names /usr/bin/resview-runtime" \
    "$(jq -r .runtimes.resview.path $DOCKER_CFG)" "/usr/bin/resview-runtime"
[ -e "$T/config.toml.host" ] && cp -a $CTD_CFG "$T/config.toml.before"

# --- 3. upgrade, downgrade ------------------------------------------------------
jq '.log.level = "debug"' /etc/resview/config.json >"$T/edited" && cat "$T/edited" >/etc/resview/config.json
cp $DOCKER_CFG "$T/daemon.json.configured"
out=$(apt_ install --no-install-recommends "$T/n1.deb" 2>&1); rc=$?
same "upgrade to N+1: exit 0" "$rc" 0
same "upgrade: resview version N+1" "$(resview version 2>&1)" "resview $V1"
check "upgrade: the operator's edit of the conffile kept" cmp /etc/resview/config.json "$T/edited"
check "upgrade: the engine's file untouched" cmp $DOCKER_CFG "$T/daemon.json.configured"
out=$(apt_ install --no-install-recommends "$T/n.deb" 2>&1); rc=$?
check "downgrade to N through apt: refused without --allow-downgrades" test "$rc" -ne 0
has "… and says so" "$out" "downgraded"
same "… N+1 stays" "$(resview version 2>&1)" "resview $V1"
out=$(apt_ install --no-install-recommends --allow-downgrades "$T/n.deb" 2>&1); rc=$?
same "downgrade with --allow-downgrades: exit 0, version N" "$rc $(resview version 2>&1)" "0 resview $V"
check "downgrade: the conffile edit kept" cmp /etc/resview/config.json "$T/edited"
# N+2: a release whose example configuration changed (N+1 repacked), over the
# operator's edit: unattended, as configuration management runs apt
V2=$V.2
dpkg-deb -R "$T/n1.deb" "$T/n2"
sed -i "s/^Version: .*/Version: $V2/" "$T/n2/DEBIAN/control"
jq '.log.level = "warn"' "$T/n2/etc/resview/config.json" >"$T/dist2" && cp "$T/dist2" "$T/n2/etc/resview/config.json"
(cd "$T/n2" && find . -type f ! -path './DEBIAN/*' | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$T/n2/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$T/n2" "$T/n2.deb" >/dev/null
out=$(apt_ install --no-install-recommends "$T/n2.deb" </dev/null 2>&1); rc=$?
check "N+2 changes the example configuration, N's was edited: with no tty and no --force-conf*, dpkg's prompt fails the install" \
    test "$rc" -ne 0
has "… saying why" "$out" "conffile prompt"
check "… the operator's file untouched" cmp /etc/resview/config.json "$T/edited"
CONF=(-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
out=$(apt_ "${CONF[@]}" install --no-install-recommends "$T/n2.deb" </dev/null 2>&1); rc=$?
same "… with --force-confdef --force-confold (hooks/README.md \"The package\"): exit 0, N+2 installed" \
    "$rc $(dpkg-query -W -f='${Version} ${Status}' resview)" "0 $V2 install ok installed"
check "… the operator's file kept" cmp /etc/resview/config.json "$T/edited"
check "… the release's beside it, config.json.dpkg-dist" cmp /etc/resview/config.json.dpkg-dist "$T/dist2"
out=$(apt_ "${CONF[@]}" install --no-install-recommends --allow-downgrades "$T/n.deb" </dev/null 2>&1); rc=$?
same "back to N the same way: exit 0, version N, the edit kept" \
    "$rc $(resview version 2>&1) $(cmp /etc/resview/config.json "$T/edited" && echo kept)" "0 resview $V kept"

# --- 4. remove, install again, purge --------------------------------------------
# an operator's edit that broke the file: it names resview, configure cannot read it
sed '$ d' "$T/daemon.json.configured" >$DOCKER_CFG
out=$(apt_ remove resview 2>&1); rc=$?
check "remove with a daemon.json that names resview and configure cannot read: refused" test "$rc" -ne 0
has "… with one line saying what to run first" "$out" "still names /usr/bin/resview: take resview out of it"
check "… the package stays installed" sh -c "dpkg-query -W -f='\${Status}' resview | grep -q 'install ok installed'"
cp "$T/daemon.json.configured" $DOCKER_CFG
out=$(apt_ remove resview 2>&1); rc=$?
same "apt-get remove: exit 0" "$rc" 0
has "remove takes resview out of docker and says so" "$out" "taking resview out of docker ($DOCKER_CFG)"
check "remove: daemon.json byte for byte the operator's" cmp $DOCKER_CFG "$T/daemon.json.operator"
check "remove: the binaries are gone" test ! -e /usr/bin/resview -a ! -e /usr/bin/resview-runtime -a ! -L /usr/bin/resview-runtime-fuse
check "remove: the conffile stays (with the edit)" cmp /etc/resview/config.json "$T/edited"
[ -e "$T/config.toml.before" ] && check "containerd's config.toml untouched throughout" cmp $CTD_CFG "$T/config.toml.before"
out=$(apt_ install --no-install-recommends "$T/n.deb" 2>&1); rc=$?
same "install again after remove: exit 0" "$rc $(resview version 2>&1)" "0 resview $V"
check "… the edited conffile still there" cmp /etc/resview/config.json "$T/edited"
# a running containerd (a process of root's by that name) whose default
# runtime is resview: it reads its file only at start, so the removal is
# refused, in one line saying what to run first
resview configure --engine containerd --set-as-default >/dev/null 2>&1
cp /bin/sleep "$T/containerd"
"$T/containerd" 600 & FAKE=$!
out=$(apt_ remove resview 2>&1); rc=$?
kill $FAKE; wait $FAKE 2>/dev/null
check "remove with a running containerd whose default runtime is resview: refused" test "$rc" -ne 0
has "… in one line saying what to run first" "$out" \
    "resview: containerd runs with resview as its default runtime ($CTD_CFG) and reads the file only at start: run \`resview configure --engine containerd --uninstall\` and \`systemctl restart containerd\` first, then remove the package"
check "… the package stays installed" sh -c "dpkg-query -W -f='\${Status}' resview | grep -q 'install ok installed'"
resview configure --engine containerd --uninstall >/dev/null 2>&1
if [ -e "$T/config.toml.host" ]; then check "(containerd's file back as it was)" cmp $CTD_CFG "$T/config.toml.host"
else check "(containerd's file, resview's, gone)" test ! -e $CTD_CFG; fi
# what resview leaves at run time: a backup configure kept, state, the log
resview configure --engine docker >/dev/null 2>&1
mkdir -p /run/resview/containers/pkgtest && echo 1 >/run/resview/containers/pkgtest/pid
echo x >>/var/log/resview.log
check "(configure kept a backup of daemon.json)" test -e $DOCKER_CFG.resview-backup
# the operator edits daemon.json after configure: the removal takes resview's
# entry only, keeps the edit, and says so
jq '.debug = true' $DOCKER_CFG >"$T/dj" && cat "$T/dj" >$DOCKER_CFG
# a hostile local user (nobody) during the purge (#42): users/ is 1733,
# /dev/fuse 0666 as udev makes it, user_allow_other in /etc/fuse.conf. Through
# the setuid fusermount3 the user mounts file systems that never answer
# (allow_other) on users/nobody/z and users/nobody/d/X; once z is gone the user
# swaps d for a symlink to $T, where a throwaway host mount X sits, and mounts
# again (late); a loop keeps making directories there all along.
U=/run/resview/users/nobody
mkdir -p /run/resview/users && chmod 0711 /run/resview && chmod 1733 /run/resview/users
install -d -m 0755 "$T/u" && chmod 0711 "$T" && gcc -O2 -o "$T/u/fuse-user" tests/lib/fuse-user.c
mkdir "$T/X" && mount -t tmpfs rv-victim "$T/X"
stat -c %a /dev/fuse >"$T/fuse.mode" && chmod 0666 /dev/fuse
cp -a /etc/fuse.conf "$T/fuse.conf" && echo user_allow_other >>/etc/fuse.conf
AS_USER="setsid setpriv --reuid=65534 --regid=65534 --clear-groups"   # each its own process group
$AS_USER mkdir -p $U/z $U/d/X
$AS_USER "$T/u/fuse-user" --allow-other $U/d/X >"$T/fu-x.out" 2>&1 & USERS="$!"
$AS_USER "$T/u/fuse-user" --allow-other --when-gone $U/z --swap $U/d "$T" --late $U/late $U/z >"$T/fu-z.out" 2>&1 &
USERS="$USERS $!"
for _ in $(seq 100); do [ "$(cat "$T"/fu-*.out | grep -c ready)" = 2 ] && break; sleep 0.1; done
same "(a user's two FUSE mounts in users/, through fusermount3)" \
    "$(grep -c " $U/z \| $U/d/X " /proc/self/mountinfo) $(grep " $U/" /proc/self/mountinfo | grep -c allow_other)" "2 2"
$AS_USER sh -c "while :; do mkdir -p $U/more/\$\$.\$(date +%N) 2>/dev/null; sleep 0.01; done" & USERS="$USERS $!"
start=$SECONDS
out=$(timeout 150 env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q purge resview 2>&1); rc=$?
took=$((SECONDS - start))
echo "# purge under the hostile user: ${took} s; the user's side: $(cat "$T"/fu-*.out | tr '\n' ' ')"
same "apt-get purge: exit 0, within its bound (90 s), whatever the user does" "$rc $((took <= 100))" "0 1"
same "purge: the throwaway host mount behind the user's symlink is still mounted" "$(grep -c " $T/X " /proc/self/mountinfo)" 1
same "purge: the user's mounts from before it are gone" "$(grep -c " $U/z \| $U/d/X \| $U/d.old/X " /proc/self/mountinfo)" 0
# (the loop may win a race or lose it: either all of /run/resview is gone, or
# users/ alone is left and said)
left=gone
[ -e /run/resview ] && left="$(ls -A /run/resview), said $(grep -c '^resview: left /run/resview/users: ' <<<"$out") time(s)"
has "purge: /run/resview gone, or users/ alone left and said in one line ($left)" "gone users, said 1 time(s)" "$left"
users_cleanup
has "purge of an engine file edited after configure: resview's part taken out, said" "$out" \
    "removed resview from \`$DOCKER_CFG\`"
same "… the operator's edit kept, nothing of resview left in it" "$(jq -cS . $DOCKER_CFG)" \
    "$(jq -cS '. + {debug: true}' "$T/daemon.json.operator")"
same "purge: dpkg -S finds nothing of resview" "$(dpkg -S resview 2>&1 | grep -v '^dpkg-query: no path found')" ""
same "purge: dpkg knows no resview" "$(dpkg-query -W -f='${Status}' resview 2>/dev/null)" ""
same "purge: no file of resview under /usr /etc /var /run (but what was there before)" \
    "$(LC_ALL=C comm -13 <(echo "$before") <(walk))" ""
rm -f $DOCKER_CFG
[ -e "$T/daemon.json.host" ] && cp -a "$T/daemon.json.host" $DOCKER_CFG

# --- 5. make install / make uninstall --------------------------------------------
R=$T/root
make -s --no-print-directory BUILD="$BUILD" install DESTDIR="$R" >"$T/install.log" 2>&1
same "make install DESTDIR: exit 0" "$?" 0
inst=$(cd "$R" && find . ! -type d | sed 's|^\.||' | sort)
same "make install: the package's set under PREFIX (/usr/local)" "$inst" \
"/etc/logrotate.d/resview
/etc/resview/config.json
/usr/local/bin/resview
/usr/local/bin/resview-hook
/usr/local/bin/resview-runtime
/usr/local/bin/resview-runtime-fuse
/usr/local/lib/systemd/system/resview-watch.service
/usr/local/share/man/man5/resview.json.5
/usr/local/share/man/man8/resview-hook.8
/usr/local/share/man/man8/resview-runtime-fuse.8
/usr/local/share/man/man8/resview-runtime.8
/usr/local/share/man/man8/resview.8
/usr/local/share/resview/seccomp.json"
same "make install: the unit runs PREFIX's resview" "$(grep '^ExecStart=' "$R/usr/local/lib/systemd/system/resview-watch.service")" \
    "ExecStart=/usr/local/bin/resview watch"
make -s --no-print-directory BUILD="$BUILD" uninstall DESTDIR="$R" >"$T/uninstall.log" 2>&1
same "make uninstall: exit 0, no file left" "$? $(find "$R" ! -type d | sed "s|^$R||" | tr '\n' ' ')" "0 "
make -s --no-print-directory BUILD="$BUILD" install DESTDIR="$R" >/dev/null 2>&1
echo '{}' >"$R/etc/resview/config.json"
out=$(make -s --no-print-directory BUILD="$BUILD" uninstall DESTDIR="$R" 2>&1)
has "make uninstall: an edited configuration kept, and said" "$out" "kept $R/etc/resview/config.json"
same "… and only it" "$(find "$R" ! -type d | sed "s|^$R||")" "/etc/resview/config.json"
finish
