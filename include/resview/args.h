/* args.h - runc-compatible command line: global flags, subcommand, the few
 * subcommand options the shim needs. Nothing is reordered or dropped: the
 * original argv goes to the next runtime as it came. */
#ifndef RESVIEW_ARGS_H
#define RESVIEW_ARGS_H

#include <stdbool.h>

struct rv_args {
    const char *root, *log, *log_format, *criu, *rootless;
    bool systemd_cgroup, debug;
    int sub_index;            /* argv index of the subcommand, 0 if none */
    const char *sub;          /* "create", "run", "exec", ... or NULL */
    const char *bundle;       /* --bundle/-b, last wins; NULL = working directory */
    const char *process;      /* exec --process/-p */
    const char *id;           /* container id (first positional after sub) */
};

/* Parse; never fails: unknown flags are the next runtime's business. */
void rv_args_parse(int argc, char *const argv[], struct rv_args *a);

/* Whether this subcommand makes the shim edit the bundle. */
static inline bool rv_args_edits_bundle(const struct rv_args *a)
{
    return a->sub && (__builtin_strcmp(a->sub, "create") == 0 || __builtin_strcmp(a->sub, "run") == 0);
}

#endif
