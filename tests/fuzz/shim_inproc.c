/* shim_inproc - what resview-runtime's main does before it execs the next
 * runtime (configuration, argv, create/run edit or exec variables, next
 * runtime lookup), then a normal exit instead of the exec, so that valgrind's
 * leak check (which an exec skips) covers the whole path. Same arguments as
 * resview-runtime; exit 0 on success. */
#define _GNU_SOURCE
#include "resview/args.h"
#include "resview/chain.h"
#include "resview/log.h"
#include "resview/shim.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char *argv[])
{
    struct rv_config cfg;
    struct rv_error err = { 0 };
    struct rv_args a;
    struct rv_host host;
    char next[PATH_MAX];

    rv_args_parse(argc, argv, &a);
    rv_log_init("runtime", NULL);
    if (rv_config_load(&cfg, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rv_log_init("runtime", &cfg);
    rv_log_config_warnings(&cfg);
    if (rv_chain_next(&cfg, next, sizeof(next), &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (rv_args_edits_bundle(&a)) {
        rv_host_defaults(&host);
        if (rv_shim_create(&cfg, &host, &a, &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    } else if (a.sub && strcmp(a.sub, "exec") == 0 && rv_shim_exec(&cfg, &a, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    return 0;
}
