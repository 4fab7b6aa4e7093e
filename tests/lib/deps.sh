#!/bin/sh
# Install the Debian packages that building and testing resview need, if
# missing. Lists: tests/deps.d/*.txt (one or more names per line, # comments).
# Usage: deps.sh [LIST...]  (list names without .txt; default: every list)
set -eu
cd "$(dirname "$0")/../.."
lists=""
for l in "$@"; do lists="$lists tests/deps.d/$l.txt"; done
PKGS=$(sed 's/#.*//' ${lists:-tests/deps.d/*.txt})
# Also installed: a name another installed package provides (npm comes with
# some nodejs builds, which conflict with Debian's npm).
provided=$(dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null | sed -n 's/^ii *|//p' |
    tr ',' '\n' | sed 's/ *(.*//; s/^ *//')
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        grep -qx -- "$p" <<EOF_PROVIDED || missing="$missing $p"
$provided
EOF_PROVIDED
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "resview: missing packages:$missing (run as root, or install them)" >&2
    exit 1
fi
echo "resview: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
