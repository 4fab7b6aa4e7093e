/* fuse.c - FUSE with least privilege (DESIGN.md section 4). */
#define _GNU_SOURCE
#include "resview/edit.h"

int rv_fuse_apply(json_t *root, const struct rv_config *cfg, struct rv_error *err)
{
    (void)root;
    if (!cfg->fuse_allowed)
        return rv_fail(err, 0, "FUSE was requested but fuse.allowed is false in %s",
                       cfg->path[0] ? cfg->path : "the configuration");
    return rv_fail(err, 0, "FUSE was requested but this build of resview does not support it yet");
}
