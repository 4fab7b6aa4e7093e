/* engine_enroot.c - an enroot hooks.d script that runs `resview-hook
 * --enroot` (LXCFS views and variables for enroot and pyxis containers). The
 * whole file is resview's; a file of the same name written by someone else is
 * left alone. */
#define _GNU_SOURCE
#include "resview/engine.h"

#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

static bool ours(const char *text)
{
    return strstr(text, RV_OWNED_MARK) != NULL;
}

/* Whether hook says it has no --enroot mode (a build without it): installing
 * the script would then fail every enroot container start. */
static bool hook_lacks_enroot(const char *hook)
{
    char cmd[PATH_MAX + 64], line[512];
    bool lacks = false;

    if (access(hook, X_OK) != 0 || rv_snprintf(cmd, sizeof(cmd), "env -i '%s' --enroot 2>&1 </dev/null", hook) < 0)
        return false;
    FILE *f = popen(cmd, "r");
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "not available in this build"))
            lacks = true;
    pclose(f);
    return lacks;
}

static int edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                const char *backup, size_t backup_len, struct rv_edit_result *res,
                struct rv_error *err)
{
    int r;

    (void)backup;
    (void)backup_len;
    r = rv_owned_file_edit(o, old, len, exists, exists && ours(old),
                           "the file exists and was not written by resview; remove it first", res, err);
    if (r <= 0)
        return r;
    if (strchr(o->hook_path, '\''))
        return rv_fail(err, 0, "`%s`: a quote in the hook path", o->hook_path);
    if (hook_lacks_enroot(o->hook_path))
        return rv_fail(err, 0, "`%s` has no --enroot mode in this build: the hook script would fail "
                       "every enroot start", o->hook_path);
    if (asprintf(&res->text,
                 "#!/bin/sh\n"
                 RV_OWNED_MARK "\n"
                 "# LXCFS views and resource variables for enroot/pyxis containers\n"
                 "# (resview-hook reads ENROOT_PID, ENROOT_ROOTFS and appends to ENROOT_ENVIRON).\n"
                 "exec '%s' --enroot \"$@\"\n", o->hook_path) < 0) {
        res->text = NULL;
        return rv_fail(err, ENOMEM, "enroot");
    }
    res->len = strlen(res->text);
    res->mode = 0755;
    return 0;
}

static int status(const char *text, size_t len, char *detail, size_t size, char *exe, size_t exe_size,
                  struct rv_error *err)
{
    (void)len;
    (void)err;
    exe[0] = '\0';
    if (!ours(text))
        return 0;
    const char *e = strstr(text, "exec '");
    rv_snprintf(detail, size, "%.*s", e ? (int)strcspn(e, "\n") : 0, e ? e : "");
    if (e)
        rv_snprintf(exe, exe_size, "%.*s", (int)strcspn(e + 6, "'"), e + 6);
    return 1;
}

const struct rv_engine rv_engine_enroot = {
    .name = "enroot",
    .default_config = "/etc/enroot/hooks.d/50-resview.sh",
    .reload = "the next `enroot start` (and pyxis job) runs it",
    .unload = "nothing to restart: the next `enroot start` (and pyxis job) runs without it",
    .edit = edit,
    .status = status,
};
