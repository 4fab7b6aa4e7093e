/* resview-hook - OCI hook: LXCFS views inside the container (see hook.h). */
#define _GNU_SOURCE
#include "resview/hook.h"

int main(int argc, char *argv[])
{
    return rv_hook_main(argc, argv);
}
