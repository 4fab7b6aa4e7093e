#!/bin/bash
# 46-install.sh - install.sh into a temporary root (DESTDIR) and back out:
# static binaries, configuration, profiles, hook files, engine entries; then
# --uninstall leaves nothing behind.
source "$(dirname "$0")/../lib/common.sh"
R=$T/root
export BUILD
# a site oci.conf (Slurm 22.05 style) for install.sh to route through resview
mkdir -p "$R/etc/slurm"
cp "$TOP/tests/samples/oci.conf" "$R/etc/slurm/oci.conf"

out=$("$TOP/install.sh" --no-deps --destdir "$R" --prefix /opt/rv --engine docker --engine containerd \
      --engine podman --engine slurm 2>&1); rc=$?
t_eq "install.sh into DESTDIR: exit 0" "$rc" "0"
[ "$rc" = 0 ] || echo "$out" | tail -5 | sed 's/^/#   /'
for f in resview resview-runtime resview-hook; do
    t_ok "installed $f" test -x "$R/opt/rv/bin/$f"
done
t_contains "resview-runtime is static" "$(ldd "$R/opt/rv/bin/resview-runtime" 2>&1)" "not a dynamic executable"
t_contains "resview-hook is static" "$(ldd "$R/opt/rv/bin/resview-hook" 2>&1)" "not a dynamic executable"
t_eq "config.json written, hook path under the prefix" "$(jq -r .hook.path "$R/etc/resview/config.json")" "/opt/rv/bin/resview-hook"
t_ok "seccomp profile installed" test -s "$R/opt/rv/share/resview/seccomp.json"
t_ok "the log's rotation installed (hooks/logrotate/resview)" cmp "$TOP/hooks/logrotate/resview" "$R/etc/logrotate.d/resview"
t_eq "the FUSE runtime name is a symlink to the runtime" "$(readlink "$R/opt/rv/bin/resview-runtime-fuse")" "resview-runtime"
t_ok "no AppArmor profile any more" test ! -e "$R/etc/apparmor.d/resview-fuse"
t_contains "lxcfs drop-in runs the installed resview" "$(cat "$R/etc/systemd/system/lxcfs.service.d/resview-repair.conf")" "/opt/rv/bin/resview repair"
t_ok "RuntimeClass installed" test -s "$R/opt/rv/share/resview/kubernetes/runtimeclass.yaml"
t_eq "hooks.d file for podman names the installed hook" \
    "$(jq -r .hook.path "$R/usr/share/containers/oci/hooks.d/resview-lxcfs.json")" "/opt/rv/bin/resview-hook"
t_eq "docker: daemon.json names the installed runtime" \
    "$(jq -r .runtimes.resview.path "$R/etc/docker/daemon.json")" "/opt/rv/bin/resview-runtime"
t_contains "containerd: config.toml has the entry" "$(cat "$R/etc/containerd/config.toml")" 'BinaryName = "/opt/rv/bin/resview-runtime"'
t_contains "podman: drop-in has the runtime" "$(cat "$R/etc/containers/containers.conf.d/99-resview.conf")" 'resview = ["/opt/rv/bin/resview-runtime"]'
t_contains "slurm: oci.conf runs resview-runtime" "$(cat "$R/etc/slurm/oci.conf")" 'RunTimeCreate="/opt/rv/bin/resview-runtime'
t_eq "installed CLI runs" "$("$R/opt/rv/bin/resview" version)" "resview $(cat "$BUILD/version")"

echo '{"keep": true}' >"$R/etc/resview/config.json.user"
cp "$R/etc/docker/daemon.json" "$T/daemon.after"
out=$("$TOP/install.sh" --no-deps --no-build --destdir "$R" --prefix /opt/rv --engine docker 2>&1); rc=$?
t_eq "install.sh again: exit 0" "$rc" "0"
t_ok "twice = once (daemon.json)" cmp "$R/etc/docker/daemon.json" "$T/daemon.after"
t_contains "existing config.json kept" "$out" "kept the existing"

rm -f "$R/etc/resview/config.json.user"
out=$("$TOP/install.sh" --uninstall --destdir "$R" --prefix /opt/rv --engine docker --engine containerd \
      --engine podman --engine slurm 2>&1); rc=$?
t_eq "install.sh --uninstall: exit 0" "$rc" "0"
t_ok "site oci.conf restored byte for byte" cmp "$R/etc/slurm/oci.conf" "$TOP/tests/samples/oci.conf"
rm -f "$R/etc/slurm/oci.conf" "$R/etc/slurm/oci.conf.resview-backup"
t_eq "nothing left behind" "$(find "$R" -type f | sed "s|^$R||" | sort | tr '\n' ' ')" ""
