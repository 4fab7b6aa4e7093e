/* resview-hook - OCI hook: LXCFS views inside the container. */
#define _GNU_SOURCE
#include "resview/log.h"

int main(void)
{
    /* LXCFS views come with the hook issue; until then the hook is a no-op. */
    return 0;
}
