/* cmd_doctor.c - `resview doctor`. */
#define _GNU_SOURCE
#include "resview/cli.h"

#include <stdio.h>

int rv_cmd_doctor(const struct rv_config *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    (void)argv;
    fprintf(stderr, "resview doctor: not available in this build yet\n");
    return 1;
}
