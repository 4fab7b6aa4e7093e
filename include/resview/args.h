/* args.h - the next runtime's command line as that runtime reads it: global
 * flags, subcommand, the few subcommand options the shim needs. Nothing is
 * reordered or dropped: the original argv goes to the next runtime as it
 * came. runc and crun read some lines differently (flags after the id,
 * crun's --config, abbreviations, clusters): see args.c. */
#ifndef RESVIEW_ARGS_H
#define RESVIEW_ARGS_H

#include "resview/limits.h"

#include <stdbool.h>

enum rv_dialect {
    RV_DIALECT_RUNC,          /* runc 1.1-1.4, and runtimes that hand runc the line */
    RV_DIALECT_CRUN,
};

struct rv_args {
    const char *root, *log, *log_format;
    bool systemd_cgroup, debug;
    int sub_index;            /* argv index of the subcommand, 0 if none */
    const char *sub;          /* "create", "run", "exec", ... or NULL */
    bool valid;               /* the runtime accepts the line and runs sub (not just --help) */
    /* set only when valid: */
    const char *bundle;       /* --bundle/-b, last wins; NULL = working directory */
    const char *config;       /* crun --config/-f: the spec file in the bundle; NULL = config.json */
    const char *process;      /* exec --process/-p */
    const char *id;           /* container id (first positional after sub) */
};

/* Parse; never fails: a line the runtime refuses gives valid = false. */
void rv_args_parse(int argc, char *const argv[], enum rv_dialect dialect, struct rv_args *a);

/* The dialect of a next runtime, by its name: crun* is crun's, any other
 * (runc, nvidia-container-runtime, which hands the line to runc) runc's. */
enum rv_dialect rv_args_dialect(const char *runtime);

/* Whether this subcommand makes the shim edit the bundle. */
static inline bool rv_args_edits_bundle(const struct rv_args *a)
{
    return a->valid && a->sub &&
           (__builtin_strcmp(a->sub, "create") == 0 || __builtin_strcmp(a->sub, "run") == 0);
}

/* The rule of the runtime that places the container, by its name (crun*: crun's). */
enum rv_cg_rule rv_cg_rule_of(const char *runtime);

#endif
