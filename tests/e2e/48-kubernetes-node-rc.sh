#!/bin/bash
# 48-kubernetes-node-rc.sh - 48-kubernetes-node.sh with workloads choosing
# resview through the RuntimeClass; the agent's pod runs on runc.
K8S_RUNTIME=runtimeclass exec bash "$(dirname "$0")/48-kubernetes-node.sh"
