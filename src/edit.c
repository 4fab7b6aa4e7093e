/* edit.c - the edits of config.json, in one place. */
#define _GNU_SOURCE
#include "resview/edit.h"
#include "resview/fuse.h"
#include "resview/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool is_our_hook(json_t *h, const char *path)
{
    const char *p = json_string_value(json_object_get(h, "path"));
    const char *base;

    if (!p)
        return false;
    base = strrchr(p, '/');
    base = base ? base + 1 : p;
    /* also a hook added by a hooks.d file (podman, CRI-O) or an earlier shim */
    return strcmp(p, path) == 0 || strcmp(base, "resview-hook") == 0;
}

int rv_spec_add_hook(json_t *root, const struct rv_config *cfg, struct rv_error *err)
{
    static const char *const stages[] = { "prestart", "createRuntime", "createContainer",
                                          "startContainer", "poststart" };
    json_t *hooks, *stage, *entry, *env = NULL;
    const char *config = getenv("RESVIEW_CONFIG");

    hooks = rv_json_object_at(root, "hooks", "config.json: hooks", err);
    if (!hooks)
        return -1;
    for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
        json_t *arr = json_object_get(hooks, stages[s]), *h;
        size_t i;
        if (arr && !json_is_array(arr))
            return rv_fail(err, 0, "config.json: hooks.%s: expected an array", stages[s]);
        json_array_foreach(arr, i, h)
            if (is_our_hook(h, cfg->hook_path))
                return 0;
    }
    stage = rv_json_array_at(hooks, cfg->hook_stage, "config.json: hooks", err);
    if (!stage)
        return -1;
    /* Runtimes run hooks with the entry's env only: hand over our configuration. */
    if (cfg->from_env && config) {
        char kv[PATH_MAX + 32];
        if (rv_snprintf(kv, sizeof(kv), "RESVIEW_CONFIG=%s", config) < 0)
            return rv_fail(err, ENAMETOOLONG, "RESVIEW_CONFIG");
        env = json_pack("[s]", kv);
    }
    entry = json_pack("{s:s,s:[s],s:i}", "path", cfg->hook_path, "args", "resview-hook",
                      "timeout", 10);
    if (!entry || (env && json_object_set_new(entry, "env", env) < 0) ||
        json_array_append_new(stage, entry) < 0)
        return rv_fail(err, ENOMEM, "config.json: hooks");
    return 0;
}

/* A request that is absent follows the configured default. */
static int request(json_t *root, const char *ann, const char *var, bool dflt, bool *on,
                   struct rv_error *err)
{
    int r = rv_spec_request(root, ann, var, err);
    if (r == -2)
        return -1;
    *on = r < 0 ? dflt : r == 1;
    return 0;
}

int rv_spec_edit(json_t *root, const struct rv_edit_ctx *ctx, struct rv_edit_result *res,
                 struct rv_error *err)
{
    const struct rv_config *cfg = ctx->cfg;
    json_t *env;

    memset(res, 0, sizeof(*res));
    /* Validate every request before changing anything. */
    if (request(root, RV_ANN_LXCFS, "RESVIEW_LXCFS", true, &res->lxcfs_on, err) < 0 ||
        request(root, RV_ANN_ENV, "RESVIEW_ENV", cfg->env_enabled, &res->env_on, err) < 0 ||
        rv_fuse_wanted(root, cfg, ctx->fuse_runtime, &res->fuse_on, err) < 0)
        return -1;
    if (res->fuse_on) {
        const struct rv_fuse_host fh = { NULL };
        if (rv_fuse_apply_host(root, cfg, &fh, ctx->fuse_rt, &res->fuse_broker, err) < 0)
            return -1;
    }
    if (res->env_on) {
        env = rv_spec_env(root, err);
        if (!env)
            return -1;
        if (rv_limits_compute(root, ctx->host, cfg->rounding, ctx->systemd_hint, &res->limits, err) < 0)
            return -1;
        rv_env_plan(cfg, &res->limits, env, &res->plan);
        if (rv_env_apply(env, &res->plan, err) < 0)
            return -1;
    }
    if (res->lxcfs_on && rv_spec_add_hook(root, cfg, err) < 0)
        return -1;
    return 0;
}
