/* runtime.h - everything resview-runtime does before it execs the next
 * runtime, as one library call, so that tests and benchmarks (valgrind,
 * callgrind) run exactly the binary's path without the exec. */
#ifndef RESVIEW_RUNTIME_H
#define RESVIEW_RUNTIME_H

#include <limits.h>
#include <stddef.h>

/* Parse argv, load the configuration, pick the next runtime (into next),
 * apply the create/run edits or the exec variables, and mark the chain.
 * Returns 0 when the caller should exec next with argv, or the exit code
 * (an error has been reported on stderr and in the logs). `delete` of a
 * container with records spawns next with argv, waits, removes the records if
 * the delete succeeded and exits with the runtime's status (it does not
 * return, unless the spawn failed: then the caller execs as usual). */
int rv_runtime_prepare(int argc, char *argv[], char *next, size_t size);

#endif
