/* shim_inproc - resview-runtime without the final exec (rv_runtime_prepare,
 * the binary's own path), then a normal exit, so that valgrind's leak check
 * (which an exec skips) covers the whole path. Same arguments as
 * resview-runtime; exit 0 on success. */
#include "resview/runtime.h"

int main(int argc, char *argv[])
{
    char next[PATH_MAX];

    return rv_runtime_prepare(argc, argv, next, sizeof(next));
}
