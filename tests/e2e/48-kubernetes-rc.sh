#!/bin/bash
# 48-kubernetes-rc.sh - 48-kubernetes.sh with workloads choosing
# resview through the RuntimeClass; the agent's pod runs on runc.
K8S_RUNTIME=runtimeclass exec bash "$(dirname "$0")/48-kubernetes.sh"
