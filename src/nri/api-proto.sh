#!/bin/sh
# api-proto.sh OUT - NRI's api.proto as Debian ships it, into OUT (make's
# rule for build/nri-api/api.proto; src/README.md "The NRI plugin's messages").
# The .deb of golang-github-containerd-nri-dev comes from DEBIAN_MIRROR when
# set (an archive's root; a snapshot of it once the version leaves the pool),
# else from each Debian archive apt is configured with here
# (`apt-get indextargets`), its SHA256 checked, the file taken out with
# dpkg-deb. Nothing else of the package is used.
set -eu
out=$1
name=golang-github-containerd-nri-dev_0.8.0-1_all.deb
pool=pool/main/g/golang-github-containerd-nri
sha256=8081f1a966e3670dcfed1202bf533902a3f3fead6c29c00a6091a7de2409bcf7
member=./usr/share/gocode/src/github.com/containerd/nri/pkg/api/api.proto
dir=$(dirname "$out")
mkdir -p "$dir"
deb=$dir/$name
mirrors=${DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 'Target-Of: deb' 'Origin: Debian' \
          2>/dev/null | sort -u | grep -v -- '-security' || true)}
[ -n "$mirrors" ] || { echo "api-proto.sh: apt knows no Debian archive here: set DEBIAN_MIRROR=URL" \
    "(a Debian archive's root), or make NRI_API=FILE" >&2; exit 1; }
for m in $mirrors; do
    [ -s "$deb" ] && break
    curl -sSfL --retry 2 --max-time 120 -o "$deb.part" "${m%/}/$pool/$name" 2>/dev/null &&
        mv "$deb.part" "$deb" || rm -f "$deb.part"
done
[ -s "$deb" ] || { echo "api-proto.sh: cannot download $name from $mirrors (set DEBIAN_MIRROR to an" \
    "archive that holds it, a snapshot of Debian's, or make NRI_API=FILE)" >&2; exit 1; }
if ! echo "$sha256  $deb" | sha256sum -c --quiet -; then
    echo "api-proto.sh: $deb: wrong SHA256 (expected $sha256)" >&2
    rm -f "$deb"; exit 1
fi
dpkg-deb --fsys-tarfile "$deb" | tar -xO "$member" >"$out.part"
[ -s "$out.part" ] || { echo "api-proto.sh: $deb holds no api.proto" >&2; exit 1; }
mv "$out.part" "$out"
