/* runtime.c - resview-runtime up to the exec of the next runtime. */
#define _GNU_SOURCE
#include "resview/runtime.h"
#include "resview/args.h"
#include "resview/broker.h"
#include "resview/chain.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/shim.h"
#include "resview/state.h"

#include <string.h>

/* delete: the container goes away, and so do its records (the variables for
 * exec sessions, the views for repair). The one place delete is handled. */
static void forget(const struct rv_config *cfg, const struct rv_args *a)
{
    struct rv_error err;

    if (a->id && rv_safe_name(a->id) && rv_state_remove(cfg, a->id, &err) < 0)
        rv_log(RV_WARN, "delete: records not removed: %s", err.msg);
}

/* Every subcommand but create, run, exec and delete is passed through: args,
 * configuration (the next runtime), the loop guard, and the exec. */
int rv_runtime_prepare(int argc, char *argv[], char *next, size_t size)
{
    struct rv_config cfg;
    struct rv_error err = { 0 };
    struct rv_args a;
    struct rv_host host;
    bool cfg_ok;

    /* runc's reading first (the log flags read alike in both); the next
     * runtime's own once it is known */
    rv_args_parse(argc, argv, RV_DIALECT_RUNC, &a);
    rv_log_init("runtime", NULL);
    if (a.log)
        rv_log_runtime_file(a.log, a.log_format && strcmp(a.log_format, "json") == 0);
    cfg_ok = rv_config_load(&cfg, &err) == 0;
    rv_log_init("runtime", &cfg);

    /* Find the next runtime first: no bundle is edited for nothing. */
    struct rv_error cerr = { 0 };
    if (rv_chain_next(&cfg, next, size, &cerr) < 0) {
        if (!cfg_ok)
            rv_log(RV_ERROR, "%s", err.msg);
        rv_log(RV_ERROR, "%s", cerr.msg);
        return 1;
    }
    if (rv_args_dialect(next) != RV_DIALECT_RUNC)
        rv_args_parse(argc, argv, rv_args_dialect(next), &a);
    if (a.id)
        rv_log_set_id(a.id);
    if (!cfg_ok) {
        /* Without a readable configuration nothing may be edited (fuse.allowed
         * could be false), but other subcommands must keep working. */
        if (rv_args_edits_bundle(&a)) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
        rv_log(RV_WARN, "%s; passing `%s` through with default runtimes", err.msg,
               a.sub ? a.sub : "");
    } else if (rv_args_edits_bundle(&a)) {
        rv_log_config_warnings(&cfg);
    }
    if (rv_args_edits_bundle(&a)) {
        const char *base = strrchr(argv[0], '/');
        rv_host_defaults(&host);
        if (rv_shim_create(&cfg, &host, &a, next, strcmp(base ? base + 1 : argv[0],
                                                         RV_FUSE_RUNTIME_NAME) == 0, &err) < 0) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
    } else if (a.sub && (strcmp(a.sub, "create") == 0 || strcmp(a.sub, "run") == 0)) {
        rv_log(RV_WARN, "%s: `%s` would not run this command line as resview reads it; the "
               "bundle is left as it is", a.sub, next);
    } else if (a.sub && strcmp(a.sub, "exec") == 0) {
        if (rv_shim_exec(&cfg, &a, &err) < 0)
            rv_log(RV_WARN, "exec: variables not added: %s", err.msg);
        if (rv_broker_revive(&cfg, a.id, &err) < 0)
            rv_log(RV_WARN, "exec: FUSE broker not started again: %s", err.msg);
    } else if (a.sub && strcmp(a.sub, "delete") == 0) {
        forget(&cfg, &a);
    }
    if (rv_chain_mark(next, &err) < 0) {
        rv_log(RV_ERROR, "%s", err.msg);
        return 1;
    }
    return 0;
}
