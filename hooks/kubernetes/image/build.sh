#!/bin/sh
# build.sh BUILD_DIR VERSION - the node image of the Kubernetes DaemonSet
# (`make image`), FROM scratch, as BUILD_DIR/resview-node.tar: an OCI archive
# with a docker-archive manifest.json beside it (hooks/kubernetes/image/oci-image.py).
#
# What it carries, and nothing else (no shell, no package manager, nothing
# that downloads at run time):
#   /usr/bin/lxcfs and its liblxcfs.so, libfuse3, libc, libgcc_s   from Debian's .debs
#   /usr/local/bin/resview (the agent; dynamic) and its libraries   from Debian's .debs
#   /usr/local/lib/resview/payload/bin/*        what `make static` built: installed on the host
#   /usr/local/lib/resview/payload/share/resview/seccomp.json
# The .debs are the versions installed on this machine (the ones the CLI was
# built against), fetched with `apt-get download` from the configured archive
# into BUILD_DIR/image/debs (kept: a second build downloads nothing).
set -eu
BUILD=$1
VERSION=$2
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
# tagged with the release it is built from (an OCI tag holds no +: 0.13.0 for
# 0.13.0+git.SHA, kustomization.yaml's newTag); its label says the whole version
REF=${IMAGE_REF:-localhost/resview/node:${VERSION%%+*}}
WORK=$BUILD/image
ROOT=$WORK/rootfs
DEBS=$WORK/debs
OUT=$BUILD/resview-node.tar

[ -x "$BUILD/resview" ] && [ -x "$BUILD/static/resview-runtime" ] && [ -x "$BUILD/static/resview-hook" ] || {
    echo "build.sh: run \`make all static\` first" >&2; exit 1; }

# The package owning a library path (Debian 12 ships some under /lib, some under /usr/lib;
# from Debian 13 on, dpkg-query -S says "diversion by PKG from: PATH" first where the
# /usr merge diverted a path, and "PKG1, PKG2: PATH" for a path several packages own).
owner() {
    for p in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
        dpkg-query -S "$p" 2>/dev/null | grep -v '^diversion by ' | sed -n '1s/[,:].*//p' | grep . && return 0
    done
    echo "build.sh: no Debian package owns $1" >&2
    return 1
}

# Packages: lxcfs, the owners of the CLI's libraries, and their library
# dependencies, to a fixed point.
pkgs="lxcfs"
for lib in $(ldd "$BUILD/resview" | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
    pkgs="$pkgs $(owner "$lib")"
done
while :; do
    more=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances --no-pre-depends $pkgs 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^lib/ {print $2}')
    all=$(printf '%s\n' $pkgs $more | sed 's/:amd64$//' | sort -u)
    [ "$all" = "$(printf '%s\n' $pkgs | sort -u)" ] && break
    pkgs=$all
done
pkgs=$(printf '%s\n' $pkgs | sort -u)

mkdir -p "$DEBS"
want=""
for p in $pkgs; do
    v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
    spec=$p${v:+=$v}
    ls "$DEBS/${p}_"*.deb >/dev/null 2>&1 || want="$want $spec"
done
if [ -n "$want" ]; then
    echo "image: apt-get download$want" >&2
    (cd "$DEBS" && apt-get download -q $want >/dev/null)
fi

rm -rf "$ROOT"
mkdir -p "$ROOT"
for p in $pkgs; do
    deb=$(ls "$DEBS/${p}_"*.deb | tail -1)
    dpkg-deb -x "$deb" "$ROOT"
done
# what a FROM-scratch agent does not need
rm -rf "$ROOT/usr/share/doc" "$ROOT/usr/share/man" "$ROOT/usr/share/lintian" "$ROOT/usr/share/locale" \
       "$ROOT/usr/share/info" "$ROOT/usr/share/lxc" "$ROOT/usr/share/lxcfs" "$ROOT/etc/init.d" \
       "$ROOT/lib/systemd" "$ROOT/usr/lib/x86_64-linux-gnu/gconv" "$ROOT/usr/share/bug" \
       "$ROOT/var/lib/lxcfs"
mkdir -p "$ROOT/usr/local/bin" "$ROOT/usr/local/lib/resview/payload/bin" \
         "$ROOT/usr/local/lib/resview/payload/share/resview" "$ROOT/run" "$ROOT/tmp" "$ROOT/etc"
chmod 1777 "$ROOT/tmp"
install -m 0755 "$BUILD/resview" "$ROOT/usr/local/bin/resview"
for f in "$BUILD"/static/*; do
    [ -f "$f" ] && [ -x "$f" ] && install -m 0755 "$f" "$ROOT/usr/local/lib/resview/payload/bin/"
done
install -m 0644 "$TOP/profiles/seccomp.json" "$ROOT/usr/local/lib/resview/payload/share/resview/seccomp.json"
# every library the agent and LXCFS load is in the image
for exe in "$ROOT/usr/local/bin/resview" "$ROOT/usr/bin/lxcfs" "$ROOT/usr/lib/x86_64-linux-gnu/lxcfs/liblxcfs.so"; do
    for lib in $(objdump -p "$exe" | awk '$1 == "NEEDED" {print $2}'); do
        [ -e "$ROOT/lib/x86_64-linux-gnu/$lib" ] || [ -e "$ROOT/usr/lib/x86_64-linux-gnu/$lib" ] || {
            echo "build.sh: $lib (needed by ${exe#$ROOT}) is not in the image" >&2; exit 1; }
    done
done
[ -e "$ROOT/lib64/ld-linux-x86-64.so.2" ] || { echo "build.sh: no dynamic loader in the image" >&2; exit 1; }

"$TOP/hooks/kubernetes/image/oci-image.py" --gzip --cmd node --cmd run \
    --label "org.opencontainers.image.title=resview node agent" \
    --label "org.opencontainers.image.version=$VERSION" \
    --label "io.resview.debs=$(echo $pkgs | tr ' ' ',')" \
    "$ROOT" "$OUT" "$REF" /usr/local/bin/resview
echo "image: $OUT ($REF; $(du -h "$OUT" | cut -f1); Debian packages: $(echo $pkgs))" >&2
