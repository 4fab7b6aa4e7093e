#!/bin/bash
# Real FUSE clients in a container with no added capability, under runc and
# crun directly: bindfs; sshfs against an sshd this test starts on loopback;
# s3fs against a local S3 server (s3rver from the npm registry) this test
# starts on loopback, the case users are in (training data in object storage,
# mounted inside a job without `privileged`); rclone mount. Each mounts,
# reads, writes, and unmounts (umount or fusermount3 -u); CapEff is the
# engine's. The containers share the host network (the servers listen on
# 127.0.0.1 at random ports).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"

for tool in bindfs sshfs s3fs rclone fusermount3 ssh-keygen$(s3rver_cached || echo " npm") node runc crun jq; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool missing (make deps installs tests/deps.d/fuse.txt)"; exit 1; }
done
[ -x /usr/sbin/sshd ] || { echo "not ok - sshd missing (make deps installs tests/deps.d/fuse.txt)"; exit 1; }
fuse_probe_build || exit 1
sshd_start || exit 1
s3rver_start || exit 1
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" '{fuse: {allowed: true, seccomp_profile: $p}}')"
fuse_clients_rootfs "$T/rootfs"
CAP_ENGINE=$(cap_hex 29 5 10)    # runc's spec: AUDIT_WRITE KILL NET_BIND_SERVICE

for rt in runc crun; do
    for c in bindfs sshfs s3fs rclone; do
        b=$T/b-$rt-$c
        mkdir -p "$b"
        rv_bundle "$b" ".root.path = \"$T/rootfs\" | .root.readonly = false
            | .linux.namespaces |= map(select(.type != \"network\"))
            | .annotations[\"resview.io/lxcfs\"] = \"false\" | .annotations[\"resview.io/fuse\"] = \"true\""
        jq --arg s "$(client_script "$c" "/mnt/$rt-$c")" '.process.args = ["/bin/sh", "-c", $s]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
        out=$(run_shim "$rt" "$c-$rt-$$" "$b" 2>&1)
        check_client "$rt $c" "$c" "$out"
    done
done
