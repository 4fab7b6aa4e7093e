#!/bin/bash
# 54-gpu-node-dropin.sh - 54-gpu-node.sh's cases 2d to 2g: NVIDIA's toolkit
# 1.18 (its drop-in beside config.toml) with resview in each order, resview
# uninstalled while the toolkit stays, the toolkit 1.13 first after that.
RV54_PART=dropin exec bash "$(dirname "$0")/54-gpu-node.sh"
