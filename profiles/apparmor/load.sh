#!/bin/sh
# load.sh - install and load the resview-fuse AppArmor profile where AppArmor
# is enabled (for install.sh and admins). Idempotent. Elsewhere it says so and
# does nothing: resview-runtime leaves process.apparmorProfile out there.
#   RESVIEW_AA_ENABLED  (default /sys/module/apparmor/parameters/enabled)
#   RESVIEW_AA_DIR      (default /etc/apparmor.d)
#   RESVIEW_AA_PARSER   (default "apparmor_parser -r -W")
set -eu
here=$(cd "$(dirname "$0")" && pwd)
enabled=${RESVIEW_AA_ENABLED:-/sys/module/apparmor/parameters/enabled}
dir=${RESVIEW_AA_DIR:-/etc/apparmor.d}
parser=${RESVIEW_AA_PARSER:-apparmor_parser -r -W}
if [ "$(cat "$enabled" 2>/dev/null || true)" != "Y" ]; then
    echo "resview-fuse: AppArmor is not enabled on this host: nothing to load"
    exit 0
fi
mkdir -p "$dir"
install -m 0644 "$here/resview-fuse" "$dir/resview-fuse"
# shellcheck disable=SC2086 # $parser is a command with options
$parser "$dir/resview-fuse"
echo "resview-fuse: loaded from $dir/resview-fuse"
