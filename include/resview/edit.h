/* edit.h - the spec editor: everything resview-runtime changes in config.json. */
#ifndef RESVIEW_EDIT_H
#define RESVIEW_EDIT_H

#include "resview/envvars.h"
#include "resview/limits.h"

#define RV_ANN_LXCFS "resview.io/lxcfs"
#define RV_ANN_ENV "resview.io/env"
#define RV_ANN_FUSE "resview.io/fuse"

struct rv_edit_ctx {
    const struct rv_config *cfg;
    const struct rv_host *host;
    bool systemd_hint;        /* runtime got --systemd-cgroup */
    bool hook_missing;        /* hook.path cannot be executed here: add no hook (a
                                 hook runc cannot run would fail the start) */
};

struct rv_edit_result {
    bool env_on, lxcfs_on, fuse_on;
    bool hook_missing;        /* views wanted, but no hook added (ctx->hook_missing) */
    struct rv_limits limits;
    struct rv_env_plan plan;  /* valid when env_on */
};

/* Apply every edit, idempotently. On error the document may be partly edited:
 * callers must not save it. */
int rv_spec_edit(json_t *root, const struct rv_edit_ctx *ctx, struct rv_edit_result *res,
                 struct rv_error *err);

/* The hook entry alone (exposed for tests): every resview-hook entry of the
 * spec is taken out (a tenant's spec may carry one pretending to be ours);
 * with on, ours goes in with the handover (hook.h), in place of the first
 * one in hook.stage, else at its end. */
int rv_spec_set_hook(json_t *root, const struct rv_config *cfg, bool on, struct rv_error *err);

/* FUSE for containers that ask (fuse.c): device, capability, seccomp, AppArmor.
 * Requested security features fail closed: any problem is an error. */
int rv_fuse_apply(json_t *root, const struct rv_config *cfg, struct rv_error *err);

#endif
