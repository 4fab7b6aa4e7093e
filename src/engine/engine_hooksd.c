/* engine_hooksd.c - the OCI hooks.d file (oci-hooks 1.0.0) that makes podman
 * and CRI-O run resview-hook for every container, with or without the
 * runtime. The whole file is resview's: a file of that name whose hook is not
 * a resview-hook is left alone. */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hook a hooks.d file runs, or NULL if it is not such a file. */
static const char *hook_of(const char *text, size_t len, json_t **doc)
{
    struct rv_error err;

    *doc = NULL;
    if (rv_json_parse(text, len, "hooks.d file", doc, &err) < 0)
        return NULL;
    return json_string_value(rv_json_path(*doc, "hook.path"));
}

static bool ours(const char *text, size_t len)
{
    cleanup_json json_t *doc = NULL;
    const char *path = hook_of(text, len, &doc);
    const char *base = path ? strrchr(path, '/') : NULL;

    return base && strcmp(base + 1, "resview-hook") == 0;
}

static int edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                const char *backup, size_t backup_len, struct rv_edit_result *res,
                struct rv_error *err)
{
    cleanup_json json_t *doc = NULL;
    int r;

    (void)backup;
    (void)backup_len;
    r = rv_owned_file_edit(o, old, len, exists, exists && ours(old, len),
                           "the file exists and does not run resview-hook; remove it first", res, err);
    if (r <= 0)
        return r;
    doc = json_pack("{s:s,s:{s:s,s:[s],s:i},s:{s:b},s:[s]}", "version", "1.0.0", "hook", "path",
                    o->hook_path, "args", "resview-hook", "timeout", 10, "when", "always", 1,
                    "stages", "prestart");
    /* Engines run hooks with the entry's env only: hand over a non-default
     * configuration, as the shim does in the hook entries it adds. */
    const char *config = getenv("RESVIEW_CONFIG");
    if (doc && config && *config) {
        char *kv = NULL;
        if (asprintf(&kv, "RESVIEW_CONFIG=%s", config) < 0 ||
            json_object_set_new(json_object_get(doc, "hook"), "env", json_pack("[s]", kv)) < 0) {
            free(kv);
            return rv_fail(err, ENOMEM, "hooks.d");
        }
        free(kv);
    }
    res->text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (!res->text || !(res->text = realloc(res->text, strlen(res->text) + 2)))
        return rv_fail(err, ENOMEM, "hooks.d");
    strcat(res->text, "\n");
    res->len = strlen(res->text);
    return 0;
}

static int status(const char *text, size_t len, char *detail, size_t size, char *exe, size_t exe_size,
                  struct rv_error *err)
{
    cleanup_json json_t *doc = NULL;
    const char *path = hook_of(text, len, &doc);

    (void)err;
    exe[0] = '\0';
    if (!ours(text, len))
        return 0;
    rv_snprintf(detail, size, "hook %s", path);
    rv_snprintf(exe, exe_size, "%s", path);
    return 1;
}

const struct rv_engine rv_engine_hooksd = {
    .name = "hooks.d",
    .default_config = RV_HOOKSD_DIR_DEFAULT "/resview-lxcfs.json",
    .reload = "podman and CRI-O read hooks.d at every container start",
    .unload = "nothing to restart: podman and CRI-O read hooks.d at every container start",
    .edit = edit,
    .status = status,
};
