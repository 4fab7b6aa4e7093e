/* resview-runtime - runc-compatible shim: edit the bundle on create/run, then
 * exec the next runtime with the original arguments (see runtime.h). */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/log.h"
#include "resview/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    char next[PATH_MAX];
    const char *base = strrchr(argv[0], '/');
    int rc;

    /* the FUSE broker is this binary under another name (broker.h) */
    if (strcmp(base ? base + 1 : argv[0], RV_BROKER_NAME) == 0)
        return rv_broker_main(argc, argv);
    /* ours first, then the next runtime's own (docker and podman show both) */
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-v") == 0)) {
        printf("resview-runtime version %s\n", RV_VERSION);
        fflush(stdout);
    }
    rc = rv_runtime_prepare(argc, argv, next, sizeof(next));

    if (rc != 0)
        return rc;
    argv[0] = next;
    execv(next, argv);
    rv_log(RV_ERROR, "exec `%s`: %s", next, strerror(errno));
    return 1;
}
