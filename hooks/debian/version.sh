#!/bin/sh
# version.sh - resview's version, as the Makefile gives it to the binaries, the
# package and the node image: the top entry of hooks/debian/changelog (the one
# place it is kept); in a git tree with commits since the one that wrote that
# entry, +git.SHORTSHA of HEAD; with uncommitted changes to tracked files,
# +dirty (or .dirty after the sha). Without git, the release alone.
set -eu
cd "$(dirname "$0")/../.."
v=$(sed -n '1s/^resview (\([^)]*\)).*/\1/p' hooks/debian/changelog)
[ -n "$v" ] || { echo "version.sh: no version on the first line of hooks/debian/changelog" >&2; exit 1; }
if head=$(git rev-parse -q --verify HEAD 2>/dev/null); then
    rel=$(git log -1 --format=%H -- hooks/debian/changelog 2>/dev/null || true)
    [ "$rel" = "$head" ] || v=$v+git.$(git rev-parse --short=7 HEAD)
    git diff --quiet HEAD -- 2>/dev/null || case $v in *+*) v=$v.dirty ;; *) v=$v+dirty ;; esac
fi
echo "$v"
