/* fuse.h - FUSE with least privilege (DESIGN.md section 4). rv_fuse_apply()
 * is declared in edit.h; this header adds what tests and doctor need. */
#ifndef RESVIEW_FUSE_H
#define RESVIEW_FUSE_H

#include "resview/edit.h"

#define RV_FUSE_MAJOR 10
#define RV_FUSE_MINOR 229

/* Host facts rv_fuse_apply reads, injectable for tests. NULL members: the
 * real paths (apparmor.h) and the configured/discovered seccomp profile. */
struct rv_fuse_host {
    const char *apparmor_enabled;     /* /sys/module/apparmor/parameters/enabled */
    const char *apparmor_profiles;    /* /sys/kernel/security/apparmor/profiles */
    const char *seccomp_profile;      /* default profile for specs without one */
};

/* rv_fuse_apply with explicit host facts. */
int rv_fuse_apply_host(json_t *root, const struct rv_config *cfg, const struct rv_fuse_host *host,
                       struct rv_error *err);

/* A privileged spec: CAP_SYS_ADMIN in the bounding set and a device cgroup
 * rule that allows every device. Such a spec is left alone. */
bool rv_fuse_spec_is_privileged(json_t *root);

#endif
