/* chain.h - choosing the next runtime without ever coming back to ourselves. */
#ifndef RESVIEW_CHAIN_H
#define RESVIEW_CHAIN_H

#include "resview/config.h"

/* Environment variable carrying the runtimes already handed to in this chain
 * (colon-separated dev:inode pairs), so that two runtimes configured to call
 * each other cannot loop. */
#define RV_CHAIN_ENV "RESVIEW_CHAIN"

/* First executable of cfg->runtimes (name in PATH or absolute path) that is not
 * this binary and was not visited earlier in the chain. */
int rv_chain_next(const struct rv_config *cfg, char *out, size_t size, struct rv_error *err);
/* create/run on a GPU node: when gpu.runtime is set and the container asks
 * for a GPU (gpus.h; any container with gpu.containers "all"), that runtime
 * (NVIDIA's) replaces next, unless it is this binary or was already called in
 * this chain. file: crun's --config or NULL (config.json of the bundle).
 * 1 switched (why: the request), 0 not, 2 not: a hook of NVIDIA's is in the
 * spec already (containerd ran NVIDIA's runtime, which ran resview next), -1
 * gpu.runtime cannot be run (why says so; next is kept: the container starts
 * without NVIDIA's edits). */
int rv_chain_gpu(const struct rv_config *cfg, const char *bundle, const char *file, char *next, size_t size,
                 char *why, size_t why_size);
/* Record out in RV_CHAIN_ENV before exec. */
int rv_chain_mark(const char *path, struct rv_error *err);

#endif
