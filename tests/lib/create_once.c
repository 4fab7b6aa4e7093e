/* create_once BUNDLE: what resview-runtime does for `create`, without the
 * exec of the next runtime, so that callgrind can count its instructions. */
#include "resview/log.h"
#include "resview/shim.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    struct rv_config cfg;
    struct rv_error err;
    struct rv_host host;
    struct rv_args a;
    char *av[] = { "resview-runtime", "create", "--bundle", argv[1], "bench-create", NULL };

    if (argc != 2)
        return 2;
    rv_args_parse(5, av, &a);
    if (rv_config_load(&cfg, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rv_log_init("runtime", &cfg);
    rv_host_defaults(&host);
    if (rv_shim_create(&cfg, &host, &a, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    return 0;
}
