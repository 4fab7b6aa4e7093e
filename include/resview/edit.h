/* edit.h - the spec editor: everything resview-runtime changes in config.json. */
#ifndef RESVIEW_EDIT_H
#define RESVIEW_EDIT_H

#include "resview/envvars.h"
#include "resview/fuse.h"
#include "resview/limits.h"

struct rv_edit_ctx {
    const struct rv_config *cfg;
    const struct rv_host *host;
    const char *bundle;       /* absolute; NULL: a relative root.path goes over as it is */
    bool systemd_hint;        /* runtime got --systemd-cgroup */
    bool hook_missing;        /* hook.path cannot be executed here: add no hook (a
                                 hook runc cannot run would fail the start) */
    bool fuse_runtime;        /* started as the FUSE runtime name (fuse.h) */
    bool views_at_start;      /* the views may come at `start` (shim.c): no hook yet */
    const struct rv_fuse_runtime *fuse_rt;   /* the next runtime's support; NULL: assume it */
};

struct rv_edit_result {
    bool env_on, lxcfs_on, fuse_on;
    bool hook_missing;        /* views wanted, but no hook added (ctx->hook_missing) */
    bool fuse_broker;         /* the container's mount calls go to a broker: start one */
    struct rv_limits limits;
    struct rv_env_plan plan;  /* valid when env_on */
};

/* Apply every edit, idempotently. On error the document may be partly edited:
 * callers must not save it. */
int rv_spec_edit(json_t *root, const struct rv_edit_ctx *ctx, struct rv_edit_result *res,
                 struct rv_error *err);

/* Count what the edit decided in the node's counters (edit_count.c; the hook
 * counts the views it was asked for). Never fails. */
void rv_edit_count(const struct rv_config *cfg, const struct rv_edit_result *res);

/* The hook entry alone (exposed for tests): every resview-hook entry of the
 * spec is taken out (a tenant's spec may carry one pretending to be ours);
 * with on, ours goes in with the handover (hook.h), in place of the first
 * one in hook.stage, else at its end. bundle: as in rv_edit_ctx. */
int rv_spec_set_hook(json_t *root, const struct rv_config *cfg, const char *bundle, bool on,
                     struct rv_error *err);

#endif
