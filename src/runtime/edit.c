/* edit.c - the edits of config.json, in one place. */
#define _GNU_SOURCE
#include "resview/edit.h"
#include "resview/fuse.h"
#include "resview/hook.h"
#include "resview/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* resview-hook, whoever put it there: an earlier shim, a hooks.d file
 * (podman, CRI-O), or a tenant's own spec pretending to be us. */
static bool is_our_hook(json_t *h, const char *path)
{
    const char *p = json_string_value(json_object_get(h, "path"));
    const char *base;

    if (!p)
        return false;
    base = strrchr(p, '/');
    base = base ? base + 1 : p;
    return strcmp(p, path) == 0 || strcmp(base, "resview-hook") == 0;
}

/* Our entry, with what the hook needs handed over (hook.h): it reads no
 * config.json then. A relative root.path goes over joined to the bundle:
 * crun runs the hooks of a user-namespaced container from "/" in a mount
 * namespace of its own, and its state then names "/" as the bundle. */
static json_t *hook_entry(json_t *root, const struct rv_config *cfg, const char *bundle,
                          struct rv_error *err)
{
    const char *config = getenv("RESVIEW_CONFIG");
    const char *rootfs = json_string_value(rv_json_path(root, "root.path"));
    json_t *entry, *args;

    entry = json_pack("{s:s,s:[s],s:i}", "path", cfg->hook_path, "args", "resview-hook",
                      "timeout", 10);
    args = json_object_get(entry, "args");
    if (!entry)
        goto nomem;
    /* without a usable root.path the hook reads the spec and says what is wrong */
    if (rootfs && *rootfs) {
        bool join = bundle && rootfs[0] != '/';
        size_t n = strlen(RV_HOOK_ARG_ROOTFS) + (join ? strlen(bundle) + 1 : 0) + strlen(rootfs) + 1;
        cleanup_free char *arg = malloc(n);
        if (!arg || rv_snprintf(arg, n, "%s%s%s%s", RV_HOOK_ARG_ROOTFS, join ? bundle : "",
                                join ? "/" : "", rootfs) < 0 ||
            json_array_append_new(args, json_string(arg)) < 0)
            goto nomem;
    }
    /* Runtimes run hooks with the entry's env only: hand over our configuration. */
    if (cfg->from_env && config) {
        char kv[PATH_MAX + 32];
        if (rv_snprintf(kv, sizeof(kv), "RESVIEW_CONFIG=%s", config) < 0) {
            json_decref(entry);
            rv_fail(err, ENAMETOOLONG, "RESVIEW_CONFIG");
            return NULL;
        }
        if (json_object_set_new(entry, "env", json_pack("[s]", kv)) < 0)
            goto nomem;
    }
    return entry;
nomem:
    json_decref(entry);
    rv_fail(err, ENOMEM, "config.json: hooks");
    return NULL;
}

int rv_spec_set_hook(json_t *root, const struct rv_config *cfg, const char *bundle, bool on,
                     struct rv_error *err)
{
    static const char *const stages[] = { "prestart", "createRuntime", "createContainer",
                                          "startContainer", "poststart", "poststop" };
    json_t *hooks = json_object_get(root, "hooks"), *entry = NULL, *ours;
    bool placed = false;

    if (hooks && !json_is_object(hooks))
        return rv_fail(err, 0, "config.json: hooks: expected an object");
    for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
        json_t *arr = json_object_get(hooks, stages[s]);
        if (arr && !json_is_array(arr))
            return rv_fail(err, 0, "config.json: hooks.%s: expected an array", stages[s]);
    }
    if (!on && !hooks)
        return 0;
    if (on && !(entry = hook_entry(root, cfg, bundle, err)))
        return -1;
    /* Every resview-hook entry goes: only the one written here is trusted with
     * a handover. Ours takes the place of the first one in our stage, so that
     * a second edit changes nothing. */
    for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
        json_t *arr = json_object_get(hooks, stages[s]);
        bool ours_stage = strcmp(stages[s], cfg->hook_stage) == 0;
        for (size_t i = 0; i < json_array_size(arr);) {
            if (!is_our_hook(json_array_get(arr, i), cfg->hook_path)) {
                i++;
            } else if (entry && ours_stage && !placed) {
                if (json_array_set(arr, i, entry) < 0)
                    goto nomem;
                placed = true;
                i++;
            } else {
                json_array_remove(arr, i);
            }
        }
    }
    if (entry && !placed) {
        if (!(hooks = rv_json_object_at(root, "hooks", "config.json: hooks", err)) ||
            !(ours = rv_json_array_at(hooks, cfg->hook_stage, "config.json: hooks", err))) {
            json_decref(entry);
            return -1;
        }
        if (json_array_append(ours, entry) < 0)
            goto nomem;
    }
    json_decref(entry);
    return 0;
nomem:
    json_decref(entry);
    return rv_fail(err, ENOMEM, "config.json: hooks");
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
    int gomaxprocs = -1;

    memset(res, 0, sizeof(*res));
    /* Validate every request before changing anything. */
    if (request(root, RV_ANN_LXCFS, "RESVIEW_LXCFS", true, &res->lxcfs_on, err) < 0 ||
        request(root, RV_ANN_ENV, "RESVIEW_ENV", cfg->env_enabled, &res->env_on, err) < 0 ||
        (gomaxprocs = rv_spec_request(root, RV_ANN_GOMAXPROCS, RV_ENV_GOMAXPROCS, err)) == -2 ||
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
        rv_env_plan(cfg, &res->limits, env, gomaxprocs, &res->plan);
        if (rv_env_apply(env, &res->plan, err) < 0)
            return -1;
    }
    if (res->lxcfs_on && ctx->hook_missing) {
        /* fail open: the container starts without views, unless they are required */
        if (cfg->lxcfs_required)
            return rv_fail(err, ENOENT, "lxcfs.required is true, but the hook `%s` cannot be run",
                           cfg->hook_path);
        res->lxcfs_on = false;
        res->hook_missing = true;
    }
    /* the hook gets root.path handed over: it never reads the spec file,
     * whichever file it was (crun --config) */
    return rv_spec_set_hook(root, cfg, ctx->bundle, res->lxcfs_on && !ctx->views_at_start, err);
}
