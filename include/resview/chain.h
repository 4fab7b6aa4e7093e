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
/* Record out in RV_CHAIN_ENV before exec. */
int rv_chain_mark(const char *path, struct rv_error *err);

#endif
