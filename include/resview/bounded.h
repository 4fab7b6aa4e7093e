/* bounded.h - run a function with a deadline, for work that may block forever
 * on a dead or hung FUSE file system (LXCFS).
 *
 * The function runs in a child that shares our memory and file table but has
 * its own root, working directory and mount namespace (clone without CLONE_FS):
 * it can setns() into a container without touching the caller, it writes its
 * results straight into caller memory, and when the deadline passes it is
 * killed (FUSE waits are killable). The caller is blocked while the child
 * runs, so the two never touch memory (or errno) at the same time. The child
 * must not log or exit the process: it returns an int that becomes its exit
 * status.
 *
 * Where a memory-sharing child cannot be made (valgrind, which only supports
 * fork- and thread-like clones), a plain fork() is used instead: arg, and
 * everything the child writes, must therefore live in memory from
 * rv_shared_alloc(), which both kinds of child share with the caller. */
#ifndef RESVIEW_BOUNDED_H
#define RESVIEW_BOUNDED_H

#include "resview/util.h"

/* Returns 0 and *status = fn's return value (0..255), or -1 with err filled:
 * errnum ETIMEDOUT when the deadline passed (the child has been killed and
 * reaped), or the errno of a failed clone/wait. */
/* Zeroed memory shared with children (MAP_SHARED|MAP_ANONYMOUS); NULL on failure. */
void *rv_shared_alloc(size_t size);
void rv_shared_free(void *p, size_t size);

int rv_run_bounded(int (*fn)(void *arg), void *arg, int timeout_ms, int *status,
                   struct rv_error *err);

#endif
