#!/bin/sh
# build.sh ROOT VERSION OUT - the Debian package (`make deb`) from ROOT, what
# `make install DESTDIR=ROOT PREFIX=/usr` put there: the man pages gzip -9n,
# /usr/share/doc/resview (copyright, changelog.gz), lintian's overrides, and
# DEBIAN/ from hooks/debian/: control with the version, the architecture, the
# size and the libraries the CLI links (dpkg-shlibdeps; the static binaries
# need none), conffiles, md5sums, the maintainer scripts. dpkg-deb builds it,
# every file root's.
set -eu
ROOT=$(cd "$1" && pwd) VERSION=$2 OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
doc=$ROOT/usr/share/doc/resview

# stripped as dh_strip does; man pages compressed, their links renamed with them
for f in "$ROOT"/usr/bin/*; do
    [ -L "$f" ] || strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
done
find "$ROOT/usr/share/man" -type f ! -name '*.gz' -exec gzip -9nf {} +
find "$ROOT/usr/share/man" -type l ! -name '*.gz' | while read -r l; do
    ln -s "$(readlink "$l").gz" "$l.gz" && rm "$l"
done
install -d "$doc" "$ROOT/usr/share/lintian/overrides" "$ROOT/DEBIAN"
install -m 0644 "$HERE/copyright" "$doc/copyright"
sed -e '/^#/d' -e '/^$/d' "$HERE/lintian-overrides" >"$ROOT/usr/share/lintian/overrides/resview"
chmod 0644 "$ROOT/usr/share/lintian/overrides/resview"
# a build of another version than the changelog's (a tree past the release,
# or make VERSION=...) says so in an entry of its own on top
release=$(sed -n '1s/^resview (\([^)]*\)).*/\1/p' "$HERE/changelog")
{
    if [ "$VERSION" != "$release" ]; then
        printf 'resview (%s) UNRELEASED; urgency=medium\n\n' "$VERSION"
        printf '  * Built from the tree of %s with changes since (not a release).\n\n' "$release"
        printf ' -- %s  %s\n\n' "$(sed -n '0,/^ -- /s/^ -- \(.*>\).*/\1/p' "$HERE/changelog")" \
            "$(LC_ALL=C date -R ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH})"
    fi
    cat "$HERE/changelog"
} | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# run-time dependencies of the dynamic binaries (the CLI), as dh_shlibdeps finds them
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/debian"
printf 'Source: resview\n\nPackage: resview\nArchitecture: any\n' >"$work/debian/control"
dyn=$(cd "$ROOT" && for f in usr/bin/*; do [ -L "$f" ] || ! objdump -p "$f" | grep -q NEEDED || echo "$ROOT/$f"; done)
depends=$(cd "$work" && dpkg-shlibdeps -O $(printf -- '-e%s ' $dyn) 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build.sh: dpkg-shlibdeps found no dependency for $dyn" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$(dpkg --print-architecture)/" -e "s/@SIZE@/$size/" \
    -e "s/@DEPENDS@/$depends/" "$HERE/control" >"$ROOT/DEBIAN/control"
install -m 0644 "$HERE/conffiles" "$ROOT/DEBIAN/conffiles"
install -m 0755 "$HERE/postinst" "$HERE/prerm" "$HERE/postrm" "$ROOT/DEBIAN/"
(cd "$ROOT" && find . -type f ! -path './DEBIAN/*' | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) \
    >"$ROOT/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/md5sums" "$ROOT/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT" >/dev/null
echo "$OUT"
