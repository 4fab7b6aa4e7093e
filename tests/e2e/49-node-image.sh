#!/bin/bash
# 49-node-image.sh - the node image of `make image`: what it carries (LXCFS
# with its own libfuse and libc, the agent, the static payload, nothing
# else), that it runs with nothing from the host, that the archive is
# reproducible, and that the three clients of the issue accept it:
# `ctr images import` (then `ctr run`), `docker load` of docker 20.10 (then
# `docker run`), `skopeo copy`.
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/cri/engines.sh"
PY=/usr/bin/python3
TAR=$BUILD/resview-node.tar

make -s --no-print-directory -C "$TOP" BUILD="$BUILD" image >"$T/image.log" 2>&1 ||
    { echo "not ok - make image"; sed 's/^/#   /' "$T/image.log" | tail -5; exit 1; }
REF=$(tar -xOf "$TAR" index.json | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')
VERSION=$(cat "$BUILD/version")   # what make image built (its tag: the release, up to +)
t_eq "OCI index names the image" "$REF" "localhost/resview/node:${VERSION%%+*}"
t_eq "docker-archive manifest.json beside it, same tag" "$(tar -xOf "$TAR" manifest.json | jq -r '.[0].RepoTags[0]')" "$REF"
t_eq "…pointing at the same config blob" \
    "$(tar -xOf "$TAR" manifest.json | jq -r '.[0].Config' | sed 's|blobs/sha256/|sha256:|')" \
    "$(tar -xOf "$TAR" "blobs/sha256/$(tar -xOf "$TAR" index.json | jq -r '.manifests[0].digest' | cut -d: -f2)" | jq -r '.config.digest')"

# the layer: what is in it, and what is not
layer=$(tar -xOf "$TAR" manifest.json | jq -r '.[0].Layers[0]')
mkdir -p "$T/rootfs"
tar -xOf "$TAR" "$layer" | tar -xz -C "$T/rootfs"
for f in usr/bin/lxcfs usr/lib/x86_64-linux-gnu/lxcfs/liblxcfs.so usr/local/bin/resview \
         usr/local/lib/resview/payload/bin/resview-runtime usr/local/lib/resview/payload/bin/resview-hook \
         usr/local/lib/resview/payload/share/resview/seccomp.json; do
    t_ok "image carries /$f" test -e "$T/rootfs/$f"
done
t_ok "image carries its own libfuse3 and libc" test -e "$T/rootfs/lib/x86_64-linux-gnu/libfuse3.so.3" -a \
    -e "$T/rootfs/lib/x86_64-linux-gnu/libc.so.6"
t_ok "no shell, no package manager, nothing that downloads" test ! -e "$T/rootfs/bin/sh" -a \
    ! -e "$T/rootfs/usr/bin/apt" -a ! -e "$T/rootfs/usr/bin/curl" -a ! -e "$T/rootfs/usr/bin/wget"
t_ok "payload binaries are static (they run on any node)" sh -c \
    "! objdump -p '$T/rootfs/usr/local/lib/resview/payload/bin/resview-runtime' | grep -q NEEDED"
t_contains "resview runs with only what the image carries" "$(chroot "$T/rootfs" /usr/local/bin/resview version 2>&1)" "resview $VERSION"
t_contains "LXCFS runs with only what the image carries" "$(chroot "$T/rootfs" /usr/bin/lxcfs --version 2>&1)" "5."
t_eq "image config: entrypoint resview, command node run" \
    "$(tar -xOf "$TAR" "$(tar -xOf "$TAR" manifest.json | jq -r '.[0].Config')" | jq -c '[.config.Entrypoint, .config.Cmd]')" \
    '[["/usr/local/bin/resview"],["node","run"]]'

# reproducible: the same rootfs gives the same archive, byte for byte
$PY "$TOP/hooks/kubernetes/image/oci-image.py" --gzip --cmd node --cmd run "$T/rootfs" "$T/a.tar" x:1 /usr/local/bin/resview
touch "$T/rootfs/usr/bin/lxcfs"   # a new mtime changes nothing
$PY "$TOP/hooks/kubernetes/image/oci-image.py" --gzip --cmd node --cmd run "$T/rootfs" "$T/b.tar" x:1 /usr/local/bin/resview
t_ok "the archive is reproducible (sorted, root-owned, mtime 0)" cmp "$T/a.tar" "$T/b.tar"

# containerd: ctr images import, then a container from it
ctd_start || exit 1
t_ok "ctr images import" ctr --address "$CTD_SOCK" images import "$TAR"
t_contains "…listed" "$(ctr --address "$CTD_SOCK" images ls -q)" "$REF"
t_contains "ctr run: the agent runs in a container from it" \
    "$(ctr --address "$CTD_SOCK" run --rm --cgroup "$CG_PARENT/ctr1" "$REF" t1 /usr/local/bin/resview version 2>&1)" "resview $VERSION"

# docker 20.10: docker load reads manifest.json
printf '{\n  "log-level": "warn",\n  "storage-driver": "overlay2"\n}\n' >"$T/daemon.json"
dockerd_start "$T/daemon.json" || exit 1
t_contains "docker load (docker $(dk version -f '{{.Server.Version}}' 2>/dev/null))" "$(dk load -i "$TAR" 2>&1)" "Loaded image: $REF"
t_contains "docker run: LXCFS from the image" \
    "$(dk run --rm --network none --cgroup-parent "$CG_PARENT" --entrypoint /usr/bin/lxcfs "$REF" --version 2>&1)" "5."
dockerd_stop

# skopeo (no policy file needed for a local copy)
out=$(skopeo --insecure-policy inspect "oci-archive:$TAR" 2>&1)
t_contains "skopeo inspect oci-archive:" "$out" '"org.opencontainers.image.title": "resview node agent"'
t_ok "skopeo copy oci-archive: to a directory" skopeo --insecure-policy copy -q "oci-archive:$TAR" "dir:$T/sk"
t_ok "…with the layer and the config" test -s "$T/sk/manifest.json" -a -s "$T/sk/$(basename "$layer")"
t_ok "skopeo copy oci-archive: to docker-archive:" skopeo --insecure-policy copy -q "oci-archive:$TAR" \
    "docker-archive:$T/d.tar:$REF"
