/* cmd_configure.c - `resview configure`. */
#define _GNU_SOURCE
#include "resview/cli.h"

#include <stdio.h>

int rv_cmd_configure(const struct rv_config *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    (void)argv;
    fprintf(stderr, "resview configure: not available in this build yet\n");
    return 1;
}
