#!/bin/bash
# install.sh - build resview, install it, and register it with the container
# engines on this node; `install.sh --uninstall` takes everything out again.
#
#   install.sh [--engine NAME]... [--set-as-default] [--no-deps] [--no-build]
#              [--prefix DIR] [--destdir DIR] [--dry-run]
#   install.sh --uninstall [--engine NAME]... [--prefix DIR] [--destdir DIR]
#
# Without --engine, every engine found on the node is configured (containerd,
# docker, podman, crio, enroot, slurm). PREFIX (default /usr/local) and DESTDIR
# (default empty) work as in `make install`; with DESTDIR, engines are only
# configured when named, and their files are edited under DESTDIR.
set -eu
cd "$(dirname "$0")"
TOP=$PWD
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
BUILD=${BUILD:-$TOP/build}
engines=() uninstall=0 deps=1 build=1 set_default="" dry=0

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
    --engine) engines+=("$2"); shift ;;
    --engine=*) engines+=("${1#--engine=}") ;;
    --set-as-default) set_default=--set-as-default ;;
    --uninstall) uninstall=1 ;;
    --no-deps) deps=0 ;;
    --no-build) build=0 ;;
    --prefix) PREFIX=$2; shift ;;
    --prefix=*) PREFIX=${1#--prefix=} ;;
    --destdir) DESTDIR=$2; shift ;;
    --destdir=*) DESTDIR=${1#--destdir=} ;;
    --dry-run) dry=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $PREFIX in /*) ;; *) echo "install.sh: --prefix must be absolute" >&2; exit 2 ;; esac

BIN=$DESTDIR$PREFIX/bin
SHARE=$DESTDIR$PREFIX/share/resview
ETC=$DESTDIR/etc/resview
HOOKSD=$DESTDIR/usr/share/containers/oci/hooks.d
APPARMOR_D=$DESTDIR/etc/apparmor.d
SYSTEMD=$DESTDIR/etc/systemd/system
ROTATE=$DESTDIR/etc/logrotate.d/resview   # the log's rotation (hooks/logrotate/)
RUNTIME_PATH=$PREFIX/bin/resview-runtime     # as the engines will see it
HOOK_PATH=$PREFIX/bin/resview-hook

say() { echo "install.sh: $*"; }
run() { if [ $dry = 1 ]; then echo "+ $*"; else "$@"; fi; }

# Engines found on this node (or named).
detect_engines() {
    if [ ${#engines[@]} -gt 0 ]; then printf '%s\n' "${engines[@]}"; return; fi
    [ -n "$DESTDIR" ] && return
    command -v containerd >/dev/null 2>&1 && echo containerd
    command -v dockerd >/dev/null 2>&1 && echo docker
    command -v podman >/dev/null 2>&1 && echo podman
    command -v crio >/dev/null 2>&1 && echo crio
    command -v enroot >/dev/null 2>&1 && echo enroot
    command -v slurmd >/dev/null 2>&1 && echo slurm
    true
}
engine_config() { # NAME -> the file to edit (under DESTDIR)
    case $1 in
    containerd) echo "$DESTDIR/etc/containerd/config.toml" ;;
    docker) echo "$DESTDIR/etc/docker/daemon.json" ;;
    podman) echo "$DESTDIR/etc/containers/containers.conf.d/99-resview.conf" ;;
    crio|cri-o) echo "$DESTDIR/etc/crio/crio.conf.d/99-resview.conf" ;;
    enroot) echo "$DESTDIR/etc/enroot/hooks.d/50-resview.sh" ;;
    slurm) echo "$DESTDIR/etc/slurm/oci.conf" ;;
    *) echo "install.sh: unknown engine $1" >&2; return 1 ;;
    esac
}
apparmor_enabled() {
    [ -z "$DESTDIR" ] && [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ] &&
        command -v apparmor_parser >/dev/null 2>&1
}
default_config() {
    jq -n --arg hook "$HOOK_PATH" --arg seccomp "$PREFIX/share/resview/seccomp.json" \
        '{runtimes: ["runc", "crun"], hook: {path: $hook}, fuse: {seccomp_profile: $seccomp}}'
}

if [ $uninstall = 1 ]; then
    cli=$BIN/resview
    [ -x "$cli" ] || cli=$BUILD/resview
    for e in $(detect_engines); do
        f=$(engine_config "$e") || exit 2
        [ -e "$f" ] || continue
        run "$cli" configure --engine="$e" --config "$f" --hooks-dir "$HOOKSD" --uninstall ||
            say "could not take resview out of $f (see above)"
    done
    if [ -z "$DESTDIR" ] && [ ${#engines[@]} -eq 0 ]; then :; fi
    for f in "$HOOKSD/resview-lxcfs.json" "$SYSTEMD/resview-watch.service" \
             "$SYSTEMD/lxcfs.service.d/resview-repair.conf" \
             "$BIN/resview-runtime" "$BIN/resview-runtime-fuse" "$BIN/resview-hook" "$BIN/resview"; do
        [ -e "$f" ] || [ -L "$f" ] && run rm -f "$f"
    done
    # the AppArmor profile of resview < 0.2 (FUSE now goes through the broker)
    if [ -e "$APPARMOR_D/resview-fuse" ]; then
        apparmor_enabled && run apparmor_parser -R "$APPARMOR_D/resview-fuse" || true
        run rm -f "$APPARMOR_D/resview-fuse"
    fi
    rmdir "$SYSTEMD/lxcfs.service.d" 2>/dev/null || true
    [ -d "$SHARE" ] && run rm -rf "$SHARE"
    if cmp -s hooks/logrotate/resview "$ROTATE"; then run rm -f "$ROTATE"
    elif [ -e "$ROTATE" ]; then say "kept $ROTATE (changed since install)"; fi
    if [ -e "$ETC/config.json" ]; then
        if [ "$(jq -S . "$ETC/config.json" 2>/dev/null)" = "$(default_config | jq -S .)" ]; then
            run rm -f "$ETC/config.json"
            rmdir "$ETC" 2>/dev/null || true
        else
            say "kept $ETC/config.json (changed since install)"
        fi
    fi
    say "resview removed"
    exit 0
fi

# 1. build dependencies
if [ $deps = 1 ]; then
    need=""
    for p in gcc make pkg-config libjansson-dev libseccomp-dev libmount-dev musl-tools dpkg-dev gperf jq lxcfs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need="$need $p"
    done
    if [ -n "$need" ]; then
        say "installing$need"
        run apt-get update -qq
        DEBIAN_FRONTEND=noninteractive run apt-get install -y -qq --no-install-recommends $need
    fi
fi

# 2. build (static musl hot-path binaries: nodes differ in their libraries, and a
#    musl exec costs a fraction of a glibc one)
if [ $build = 1 ]; then
    run make -s BUILD="$BUILD" all static
fi
for f in "$BUILD/resview" "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook"; do
    [ -x "$f" ] || [ $dry = 1 ] || { echo "install.sh: $f not built (run without --no-build)" >&2; exit 1; }
done

# 3. files
run install -d "$BIN" "$SHARE" "$SHARE/kubernetes" "$ETC"
run install -m 0755 "$BUILD/static/resview-runtime" "$BUILD/static/resview-hook" "$BIN/"
run install -m 0755 "$BUILD/resview" "$BIN/"
run install -m 0644 profiles/seccomp.json "$SHARE/seccomp.json"
run install -m 0644 hooks/kubernetes/*.yaml "$SHARE/kubernetes/"
if [ -e "$ETC/config.json" ]; then
    say "kept the existing $ETC/config.json"
elif [ $dry = 1 ]; then
    echo "+ write $ETC/config.json"
else
    default_config >"$ETC/config.json"
    chmod 0644 "$ETC/config.json"
fi
[ -e "$ROTATE" ] || run install -D -m 0644 hooks/logrotate/resview "$ROTATE"
# The FUSE runtime name (profiles/README.md "Who may ask"): a symlink; FUSE stays off until
# fuse.allowed is set and an engine runtime entry names it.
run ln -sfn resview-runtime "$BIN/resview-runtime-fuse"
if [ -e hooks/systemd/resview-watch.service ]; then
    run install -d "$SYSTEMD"
    if [ $dry = 1 ]; then echo "+ install $SYSTEMD/resview-watch.service"
    else sed "s|/usr/bin/resview|$PREFIX/bin/resview|g" hooks/systemd/resview-watch.service >"$SYSTEMD/resview-watch.service"; fi
fi
if [ -e hooks/systemd/lxcfs.service.d/resview-repair.conf ]; then
    # repair the views of running containers whenever lxcfs.service (re)starts
    run install -d "$SYSTEMD/lxcfs.service.d"
    if [ $dry = 1 ]; then echo "+ install $SYSTEMD/lxcfs.service.d/resview-repair.conf"
    else sed "s|/usr/local/bin/resview|$PREFIX/bin/resview|g" hooks/systemd/lxcfs.service.d/resview-repair.conf \
        >"$SYSTEMD/lxcfs.service.d/resview-repair.conf"; fi
fi

if [ -z "$DESTDIR" ] && [ $dry = 0 ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi

# 4. engines
configured=()
for e in $(detect_engines); do
    f=$(engine_config "$e") || exit 2
    # podman and CRI-O also get the OCI hooks.d file (LXCFS views for every container)
    flags=(--engine="$e" --config "$f" --runtime-path "$RUNTIME_PATH" --hook-path "$HOOK_PATH"
           --hooks-dir "$HOOKSD")
    [ -n "$set_default" ] && flags+=("$set_default")
    [ $dry = 1 ] && flags+=(--dry-run)
    cli=$BIN/resview
    [ -x "$cli" ] || cli=$BUILD/resview   # --dry-run installs nothing
    if "$cli" configure "${flags[@]}"; then
        configured+=("$e")
    else
        say "$e: not configured (see above)"
    fi
done

# 5. check
if [ -z "$DESTDIR" ] && [ $dry = 0 ]; then
    "$BIN/resview" doctor || say "resview doctor reports problems (above)"
fi
say "installed in $DESTDIR$PREFIX; engines configured: ${configured[*]:-none}"
[ -n "$DESTDIR" ] || [ -e /etc/systemd/system/resview-watch.service ] &&
    say "to re-attach views after LXCFS restarts: systemctl daemon-reload && systemctl enable --now resview-watch"
true
