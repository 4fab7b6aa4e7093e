/* resview-hook - OCI hook: LXCFS views inside the container (see hook.h). */
#define _GNU_SOURCE
#include "resview/hook.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char *argv[])
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("resview-hook %s\n", RV_VERSION);
        return 0;
    }
    return rv_hook_main(argc, argv);
}
