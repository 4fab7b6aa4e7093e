#!/bin/bash
# 48-kubernetes-nri.sh - 48-kubernetes.sh with the DaemonSet's NRI variant
# (hooks/kubernetes-nri/): the agent runs the NRI plugin, containerd's
# configuration untouched; workloads on the default runtime. Needs a
# containerd with NRI (1.7 and later: the sid guest, make e2e-next).
# (the node image, build/resview-node.tar: tests/v2/run.sh makes it for the guest)
K8S_RUNTIME=nri exec bash "$(dirname "$0")/48-kubernetes.sh"
