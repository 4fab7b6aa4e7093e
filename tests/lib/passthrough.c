/* passthrough RUNTIME ARGS...: exec RUNTIME with ARGS and nothing else. The
 * benchmark's floor: what any shim in front of a runtime costs (one exec). */
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    execv(argv[1], argv + 1);
    return 127;
}
