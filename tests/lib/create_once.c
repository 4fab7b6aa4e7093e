/* create_once BUNDLE: resview-runtime's `create` without the exec of the next
 * runtime (rv_runtime_prepare, the binary's own path), so that callgrind can
 * count its instructions. create_once -- ARG...: the same for any runtime
 * arguments (a pass-through subcommand). */
#include "resview/runtime.h"

#include <string.h>

int main(int argc, char **argv)
{
    char next[PATH_MAX];
    char *av[] = { "resview-runtime", "create", "--bundle", argv[1], "bench-create", NULL };

    if (argc > 2 && strcmp(argv[1], "--") == 0) {
        argv[1] = "resview-runtime";
        return rv_runtime_prepare(argc - 1, argv + 1, next, sizeof(next));
    }
    if (argc != 2)
        return 2;
    return rv_runtime_prepare(5, av, next, sizeof(next));
}
