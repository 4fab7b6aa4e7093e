# tests/fuse/lib.sh - shared by the FUSE end-to-end tests (tests/e2e/3*-fuse*.sh).
# Source after tests/lib/common.sh.
#   fuse_probe_build         build tests/fuse/fuse-probe.c static into $T/fuse-probe
#   copy_bin ROOTFS BIN...   copy host binaries with their libraries into a rootfs
#   fuse_rootfs DIR          busybox rootfs + bindfs, fusermount3 (with libraries),
#                            the probe, /src/hello, /mnt/fuse, /etc/mtab
#   $SCRIPT                  what the container runs (FUSE mounts, probes)
#   cap_hex BIT...           a CapEff mask as /proc/self/status prints it
#   check_fuse_output LABEL OUTPUT   assertions on a FUSE container's output;
#                            expects $CAP_ENGINE (the CapEff the engine gave)
#   fuse_host_mounts         FUSE mounts in the host's mount table (one line each)

# fuse_tenant_prep          a hostile tenant's tests (36, 37): the tools, the
#                            probe and fuse-hang built, LXCFS on $LXCFS_DIR
# $DOCKER_CAPS              docker's default capability set (CAP_SYS_CHROOT among them)
# podman_private CONFIG     podman on private storage: pm, $T/rv-runtime
# fuse_users_prep ROOTFS BASE   files of the container's root and of its user 1000
#                            (BASE: the host uid of the container's uid 0)
# $FUSE_USERS               uid 1000 and root ask for mounts over them (fusermount's rule)
# check_fuse_users LABEL OUTPUT AO   assertions on its output; AO: whether the node
#                            allows allow_other (fuse.allow_other)
DOCKER_CAPS='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_NET_RAW","CAP_SETGID",
  "CAP_SETUID","CAP_SETFCAP","CAP_SETPCAP","CAP_NET_BIND_SERVICE","CAP_SYS_CHROOT","CAP_KILL","CAP_AUDIT_WRITE"]'
fuse_tenant_prep() {
    local tool
    for tool in bindfs gcc runc crun jq lxcfs; do
        command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps)"; return 1; }
    done
    fuse_probe_build || return 1
    gcc -static -O2 -o "$T/fuse-hang" "$TOP/tests/lib/fuse-hang.c" || { echo "not ok - build fuse-hang"; return 1; }
    t_cleanup "lxcfs_stop $LXCFS_DIR"
    lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; return 1; }
}

# podman_private CONFIG   podman on private storage (pm ARGS...), its runtime
#                         $T/rv-runtime: resview with CONFIG (conmon does not pass
#                         its environment to the runtime: a wrapper does)
podman_private() {
    printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$1" "$RUNTIME" >"$T/rv-runtime"
    chmod +x "$T/rv-runtime"
    printf '[engine]\ncgroup_manager = "%s"\nevents_logger = "file"\nevents_logfile_path = "%s"\n' \
        "$ENGINE_CGROUPS" "$T/pm-events.log" >"$T/containers.conf"
    export CONTAINERS_CONF=$T/containers.conf
    t_cleanup "pm rm -af -t 0"
}
pm() { podman --root "$T/pm-root" --runroot "$T/pm-run" --tmpdir "$T/pm-tmp" --cgroup-manager "$ENGINE_CGROUPS" "$@"; }

fuse_probe_build() {
    gcc -static -O2 -Wall -Wextra -Werror -pthread -o "$T/fuse-probe" "$TOP/tests/fuse/fuse-probe.c" ||
        { echo "not ok - build fuse-probe"; exit 1; }
}

copy_bin() {
    local d=$1 bin lib; shift
    for bin in "$@"; do
        mkdir -p "$d$(dirname "$bin")"
        cp -L "$bin" "$d$bin"
        for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*'); do
            [ -e "$d$lib" ] && continue
            mkdir -p "$d$(dirname "$lib")"
            cp -L "$lib" "$d$lib"
        done
    done
}

fuse_rootfs() {
    local d=$1
    rv_rootfs "$d"
    mkdir -p "$d/src" "$d/mnt/fuse" "$d/mnt/tmp"
    echo "hello through fuse" >"$d/src/hello"
    copy_bin "$d" /usr/bin/bindfs /usr/bin/fusermount3
    # fusermount3 >= 3.17 (Debian 13) runs /bin/umount --no-canonicalize -i
    # --fake after an unmount as root (util-linux's options; busybox's umount
    # refuses them): an image with fusermount3 has util-linux's umount
    rm -f "$d/bin/umount" && copy_bin "$d" /bin/umount
    ln -sf /proc/self/mounts "$d/etc/mtab"
    cp "$T/fuse-probe" "$d/bin/fuse-probe"
}

# What the container runs: bindfs (without allow_other, which the default
# configuration refuses) mounted, read, written, unmounted with busybox
# umount; mounted again and unmounted with fusermount3 -u; then the probes.
SCRIPT='echo "capeff $(grep CapEff /proc/self/status | awk "{print \$2}")"
for d in /dev/*; do echo "dev $d"; done
if bindfs --no-allow-other /src /mnt/fuse; then
  echo "read $(cat /mnt/fuse/hello)"
  echo written >/mnt/fuse/new && echo "wrote $(cat /src/new)"
  grep " /mnt/fuse " /proc/self/mounts | sed "s/^/mounted /"
  umount /mnt/fuse && echo "umount ok"
  grep -q " /mnt/fuse " /proc/self/mounts || echo "gone ok"
  bindfs --no-allow-other /src /mnt/fuse && fusermount3 -u /mnt/fuse && echo "fusermount ok"
  grep -q " /mnt/fuse " /proc/self/mounts || echo "gone again ok"
else
  echo "bindfs failed"
fi
fuse-probe denied
fuse-probe mknod /tmp/nv0 195 0
fuse-probe mount-tmpfs /mnt/tmp'

cap_hex() { local m=0 b; for b in "$@"; do m=$((m | (1 << b))); done; printf '%016x' "$m"; }

fuse_host_mounts() { grep -E ' - fuse(\.[^ ]*)? ' /proc/self/mountinfo | grep -v fuse.lxcfs; }

# Assertions on what the FUSE container printed.
check_fuse_output() { # LABEL OUTPUT
    local l=$1 out=$2
    t_eq "$l: CapEff = the engine's capabilities, nothing added" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_contains "$l: /dev/fuse present" "$out" "dev /dev/fuse"
    t_not_contains "$l: host GPU node /dev/nvidia0 absent" "$out" "dev /dev/nvidia"
    t_contains "$l: bindfs read a file" "$out" "read hello through fuse"
    t_contains "$l: bindfs wrote a file" "$out" "wrote written"
    t_eq "$l: the mount is a FUSE mount, nosuid,nodev" \
        "$(grep -cE '^mounted [^ ]+ /mnt/fuse fuse(\.[a-z]+)? rw,nosuid,nodev' <<<"$out")" "1"
    t_contains "$l: unmounted with umount" "$out" "umount ok"
    t_contains "$l: the mount is gone" "$out" "gone ok"
    t_contains "$l: mounted again, unmounted with fusermount3 -u" "$out" "fusermount ok"
    t_contains "$l: gone again" "$out" "gone again ok"
    t_contains "$l: open of c 195:0 made with mknod fails (device cgroup)" "$out" "open EPERM"
    t_contains "$l: bpf denied" "$out" "bpf EPERM"
    t_contains "$l: keyctl denied" "$out" "keyctl EPERM"
    t_contains "$l: setns denied" "$out" "setns EPERM"
    t_contains "$l: open_by_handle_at denied" "$out" "open_by_handle_at EPERM"
    t_contains "$l: unshare(CLONE_NEWUSER) denied" "$out" "unshare-newuser EPERM"
    t_contains "$l: fsopen answers ENOSYS" "$out" "fsopen ENOSYS"
    t_contains "$l: open_tree answers ENOSYS" "$out" "open_tree ENOSYS"
    t_contains "$l: a tmpfs mount is refused (the broker reads the type)" "$out" "mount-tmpfs EPERM"
}

# --- real FUSE clients and their servers (tests/e2e/34-fuse-clients.sh, the engine tests) ---
#   fuse_clients_rootfs DIR  fuse_rootfs + sshfs, ssh, s3fs, rclone (with libraries), keys in /keys
#   free_port                a free TCP port on 127.0.0.1
#   sshd_start               an sshd on 127.0.0.1:$SSH_PORT (its own keys, a private /run);
#                            root logs in with $T/ssh/id; serves $T/sshdata
#   s3rver_start             an S3 server (s3rver from the npm registry, installed once in
#                            build/test-cache) on 127.0.0.1:$S3_PORT, bucket "bucket" in $T/s3data
#   client_script CLIENT     what a container runs to mount, read, write and unmount with CLIENT
#   check_client LABEL CLIENT OUTPUT   the assertions on it (and on the server side)

fuse_clients_rootfs() {
    local d=$1
    fuse_rootfs "$d"
    copy_bin "$d" /usr/bin/sshfs /usr/bin/ssh /usr/bin/s3fs /usr/bin/rclone
    # rclone 1.60 runs fusermount (libfuse 2's name); fusermount3 speaks the same
    ln -sf fusermount3 "$d/usr/bin/fusermount"
    mkdir -p "$d/keys" "$d/root"
    install -m 0600 "$T/ssh/id" "$d/keys/id"
    echo "S3RVER:S3RVER" >"$d/keys/s3" && chmod 0600 "$d/keys/s3"
}

free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() { local i; for i in $(seq 1 300); do (: >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

sshd_start() {
    mkdir -p "$T/ssh" "$T/sshdata"
    echo "hello through sshfs" >"$T/sshdata/hello"
    ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/id" || return 1
    cp "$T/ssh/id.pub" "$T/ssh/authorized_keys"
    SSH_PORT=$(free_port)
    cat >"$T/ssh/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $SSH_PORT
HostKey $T/ssh/host
AuthorizedKeysFile $T/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $T/ssh/sshd.pid
Subsystem sftp internal-sftp
CONF
    # sshd wants /run/sshd: a tmpfs over /run in its own mount namespace, not the host's
    unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /run && mkdir /run/sshd && exec /usr/sbin/sshd -D -e -f "$1"' \
        sh "$T/ssh/sshd_config" >"$T/ssh/log" 2>&1 &
    SSHD_PID=$!
    t_cleanup "kill $SSHD_PID"
    wait_port "$SSH_PORT" || { echo "sshd did not start:"; cat "$T/ssh/log"; return 1; }
}

# s3rver_cached: s3rver is installed in the cache (npm is needed only to install it)
s3rver_cached() { [ -x "$TOP/build/test-cache/s3rver/node_modules/.bin/s3rver" ]; }
s3rver_start() {
    local cache=$TOP/build/test-cache/s3rver
    if ! s3rver_cached; then
        mkdir -p "$cache"
        npm install --prefix "$cache" --cache "$cache/npm-cache" --no-audit --no-fund --loglevel=error \
            s3rver@3 >"$T/npm.log" 2>&1 || { echo "npm install s3rver failed:"; tail -5 "$T/npm.log"; return 1; }
    fi
    S3_PORT=$(free_port)
    mkdir -p "$T/s3data"
    "$cache/node_modules/.bin/s3rver" -d "$T/s3data" -a 127.0.0.1 -p "$S3_PORT" --silent \
        --configure-bucket bucket >"$T/s3rver.log" 2>&1 &
    S3_PID=$!
    t_cleanup "kill $S3_PID"
    wait_port "$S3_PORT" || { echo "s3rver did not start:"; cat "$T/s3rver.log"; return 1; }
}

# CLIENT mounts on MOUNTPOINT (created if missing), reads what its server
# has, writes a file the server then holds, and unmounts (umount for some,
# fusermount3 -u for others); "capeff" for the capability check.
client_script() { # CLIENT MOUNTPOINT
    local m=$2 mount read unmount
    case $1 in
    bindfs) mount="bindfs --no-allow-other /src $m"; read=hello; unmount="umount $m" ;;
    sshfs)  mount="sshfs -p $SSH_PORT -o IdentityFile=/keys/id,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes root@127.0.0.1:$T/sshdata $m"
            read=hello; unmount="fusermount3 -u $m" ;;
    s3fs)   mount="s3fs bucket $m -o url=http://127.0.0.1:$S3_PORT,use_path_request_style,passwd_file=/keys/s3"
            read=""; unmount="umount $m" ;;
    rclone) mount="rclone mount /src $m --config /tmp/rclone.conf >/tmp/rclone.log 2>&1 &
            for i in \$(seq 1 100); do grep -q ' $m ' /proc/self/mounts && break; sleep 0.1; done"
            read=hello; unmount="fusermount3 -u $m" ;;
    esac
    cat <<SCRIPT
echo "capeff \$(grep CapEff /proc/self/status | awk '{print \$2}')"
mkdir -p $m
$mount
grep " $m " /proc/self/mounts | sed "s/^/mounted /"
${read:+echo "read \$(cat $m/$read)"}
grep -q " $m " /proc/self/mounts && echo "from $1" >$m/written-by-$1 && sync && echo "wrote ok"
cat $m/written-by-$1
$unmount && echo "unmounted ok"
grep -q " $m " /proc/self/mounts || echo "gone ok"
SCRIPT
}

check_client() { # LABEL CLIENT OUTPUT
    local l=$1 c=$2 out=$3
    t_eq "$l: CapEff = the engine's capabilities, nothing added" "$(sed -n 's/^capeff //p' <<<"$out")" "$CAP_ENGINE"
    t_eq "$l: a FUSE mount, nosuid,nodev" "$(grep -cE '^mounted [^ ]+ [^ ]+ fuse(\.[a-z0-9]+)? [^ ]*nosuid,nodev' <<<"$out")" "1"
    [ "$c" = s3fs ] || t_contains "$l: read through the mount" "$out" "read hello through"
    t_contains "$l: wrote through the mount" "$out" "wrote ok"
    t_contains "$l: read back what it wrote" "$out" "from $c"
    t_contains "$l: unmounted" "$out" "unmounted ok"
    t_contains "$l: the mount is gone" "$out" "gone ok"
    case $c in
    sshfs) t_eq "$l: the sshd's directory holds the file" "$(cat "$T/sshdata/written-by-sshfs" 2>/dev/null)" "from sshfs" ;;
    s3fs) t_ok "$l: the S3 server holds the object" test -n "$(find "$T/s3data" -path '*written-by-s3fs*' | head -1)" ;;
    esac
}

fuse_users_prep() {
    local r=$1 base=$2
    mkdir -p "$r/home/u" "$r/tmp/stk" "$r/mnt/tmp"
    echo secret >"$r/etc/rootcfg"
    chmod 0644 "$r/etc/rootcfg"; chmod 1777 "$r/tmp/stk"; chmod 0755 "$r/etc"
    chown "$base:$base" "$r/etc/rootcfg" "$r/etc" "$r/tmp/stk"
    chown "$((base + 1000)):$((base + 1000))" "$r/home/u"
}
# crun 1.8 makes a user-namespaced container's /dev/fuse under its umask
# (0644, whatever fileMode says): its root opens it to the user, as an image would
FUSE_USERS='u() { fuse-probe as 1000 1000 "$@"; }; chmod 0666 /dev/fuse
echo "user-over-root $(u mount /etc/rootcfg)"; echo "user-over-etc $(u mount /etc)"
echo "user-sticky $(u mount /tmp/stk)"
echo "user-own $(u mount /home/u) $(u umount /home/u | tr "\n" " ")"
echo "user-umount-root $(fuse-probe mount /mnt/tmp) $(u umount /mnt/tmp | tr "\n" " ")$(umount /mnt/tmp 2>&1 && echo umounted)"
echo "user-ao $(u mount /home/u 0 allow_other) $(umount /home/u 2>/dev/null && echo umounted)"
echo "root-ao $(fuse-probe mount /mnt/tmp 0 allow_other) $(umount /mnt/tmp 2>&1 && echo umounted)"
echo "root-over-root $(fuse-probe mount /etc/rootcfg) $(umount /etc/rootcfg 2>&1 && echo umounted)"
echo "rootcfg $(cat /etc/rootcfg)"'
check_fuse_users() {
    local l=$1 out=$2 ao=$3
    t_contains "$l: uid 1000 may not put a FUSE mount over root's file (fusermount's rule)" "$out" "user-over-root mount EPERM"
    t_contains "$l: ... nor over root's directory" "$out" "user-over-etc mount EPERM"
    t_contains "$l: ... nor on a sticky directory it does not own" "$out" "user-sticky mount EPERM"
    t_contains "$l: uid 1000 mounts on its own directory, and unmounts it" "$out" "user-own mount ok umount /home/u ok"
    t_contains "$l: uid 1000 may not unmount root's FUSE mount, lazily neither; root may" "$out" \
        "user-umount-root mount ok umount /mnt/tmp EPERM umount-lazy /mnt/tmp EPERM umounted"
    if [ "$ao" = yes ]; then
        t_contains "$l: uid 1000 gets allow_other where the node allows it" "$out" "user-ao mount ok umounted"
    else
        t_contains "$l: uid 1000 gets no allow_other (only the container's root, or fuse.allow_other)" "$out" "user-ao mount EPERM"
    fi
    t_contains "$l: the container's root gets allow_other" "$out" "root-ao mount ok umounted"
    t_contains "$l: the container's root mounts over its own file" "$out" "root-over-root mount ok umounted"
    t_contains "$l: root's file reads root's content" "$out" "rootcfg secret"
    t_contains "$l: the log says why uid 1000 was refused" "$(cat "$T/resview.log")" \
        "(uid 1000 in its user namespace, not root) may not write the mount point"
}
