#!/bin/sh
# written by `resview configure`; `resview configure --uninstall` removes it
# LXCFS views and resource variables for enroot/pyxis containers
# (resview-hook reads ENROOT_PID, ENROOT_ROOTFS and appends to ENROOT_ENVIRON).
exec '/opt/resview/bin/resview-hook' --enroot "$@"
