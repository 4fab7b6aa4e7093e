#!/bin/sh
# enroot hook (install into /etc/enroot/hooks.d/, mode 0755): LXCFS views and
# resource variables (GOMAXPROCS, OMP_NUM_THREADS, SLURM_CPUS_ON_NODE, ...)
# for enroot containers, e.g. under Slurm with pyxis. enroot runs it with
# ENROOT_PID, ENROOT_ROOTFS and ENROOT_ENVIRON set; resview-hook reads them.
# Opt out per container with RESVIEW_LXCFS=0 / RESVIEW_ENV=0 in its environment.
exec "${RESVIEW_HOOK:-/usr/local/bin/resview-hook}" --enroot
