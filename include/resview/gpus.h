/* gpus.h - the GPUs a container gets, the ways they are handed out today,
 * and whether it asks for one at all (for the GPU runtime chain, chain.h).
 *
 * Sources, each counted on its own; the container gets the largest:
 *   - NVIDIA_VISIBLE_DEVICES in process.env: indices, GPU UUIDs, MIG ids
 *     (MIG-..., MIG-GPU-.../g/c, i:j) or `all` (the host's /dev/nvidia[0-9]*);
 *     `none`, `void` or empty: 0. Set to /var/run/nvidia-container-devices
 *     (the device plugin's volume-mounts strategy), the mounts under that
 *     directory name the devices instead (`all` again meaning the host's);
 *   - CDI annotations (cdi.k8s.io/..., nvidia.cdi.k8s.io/...): NVIDIA devices
 *     among their fully qualified names (VENDOR/CLASS=NAME, vendor ending in
 *     nvidia.com, class gpu or mig; NAME all: the host's);
 *   - /dev/nvidiaN device nodes in linux.devices (CDI devices that containerd
 *     resolved, --device, or what an earlier runtime in the chain added). */
#ifndef RESVIEW_GPUS_H
#define RESVIEW_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include "resview/json.h"

/* The device plugin's volume-mounts strategy. */
#define RV_GPU_MOUNTS_DIR "/var/run/nvidia-container-devices"

/* What rv_gpus_count needs loaded of a spec besides the members every load
 * has (rv_spec_load's extra): mounts, for the volume-mounts strategy only. */
struct rv_spec_extra;
extern const struct rv_spec_extra rv_gpus_spec_extra;

/* The variables these read (NULL ends), and whether an annotation is one of
 * the CDI ones they read: all of a spec they look at but for mounts and
 * linux.devices (NRI's spec copies only these, nri_adjust.c). */
extern const char *const rv_gpus_vars[];
bool rv_gpus_cdi_annotation(const char *key);

/* Count the GPUs the spec hands the container; why: which source counted.
 * dev_dir: where the host's device nodes are (/dev). */
unsigned rv_gpus_count(json_t *spec, const char *dev_dir, char *why, size_t size);

/* Whether the container asks for a GPU in a way that NVIDIA's runtime acts on
 * (why: which): NVIDIA_VISIBLE_DEVICES other than none/void/empty, a legacy
 * CUDA image (CUDA_VERSION without NVIDIA_REQUIRE_CUDA and without
 * NVIDIA_VISIBLE_DEVICES), a CDI annotation, or an NVIDIA device node
 * (/dev/nvidia*) in linux.devices. */
bool rv_gpus_wanted(json_t *spec, char *why, size_t size);

#endif
