/* bounded.h - run a function with a deadline, for work that may block forever
 * on a FUSE file system: LXCFS dead or hung, or a tenant's own FUSE mount
 * sitting where resview looks (a tenant controls its daemon and can leave any
 * request unanswered).
 *
 * The function runs in a child that shares our memory but has its own file
 * table, root, working directory and mount namespace (clone with CLONE_VM,
 * without CLONE_FILES or CLONE_FS): it can setns() into a container without
 * touching the caller and writes its results straight into caller memory. It
 * first closes every descriptor it inherited (0-2 become /dev/null), so it
 * holds nothing of ours: no lock, no pipe a runtime reads to its end.
 *
 * When the deadline passes the child is killed. A child waiting for a FUSE
 * request its daemon has already read cannot be killed (the kernel waits
 * uninterruptibly for the answer): after a short grace it is left behind,
 * never waited for, and reaped later if it ever ends. The caller is blocked
 * while the child runs, so the two never touch memory (or errno) at the same
 * time; a child left behind never runs user code again. The child must not
 * log, allocate, or exit the process: it returns an int that becomes its exit
 * status.
 *
 * Where a memory-sharing child cannot be made (valgrind, which only supports
 * fork- and thread-like clones), a plain fork() is used instead: arg, and
 * everything the child writes, must therefore live in memory from
 * rv_shared_alloc(), which both kinds of child share with the caller. */
#ifndef RESVIEW_BOUNDED_H
#define RESVIEW_BOUNDED_H

#include "resview/util.h"

/* Zeroed memory shared with children (MAP_SHARED|MAP_ANONYMOUS); NULL on failure. */
void *rv_shared_alloc(size_t size);
void rv_shared_free(void *p, size_t size);

/* Returns 0 and *status = fn's return value (0..255), or -1 with err filled:
 * errnum ETIMEDOUT when the deadline passed (the child was killed, or left
 * behind if it could not be), or the errno of a failed clone/wait. */
int rv_run_bounded(int (*fn)(void *arg), void *arg, int timeout_ms, int *status,
                   struct rv_error *err);
/* The same for work on one thing that may hang (key != 0: a container's
 * mount namespace inode, an LXCFS mount...): while a child left behind for
 * the same key is still stuck, fails at once with EBUSY instead of leaving
 * another one behind. A long-running caller (watch) thus keeps at most one
 * stuck child per key. */
int rv_run_bounded_key(unsigned long long key, int (*fn)(void *arg), void *arg, int timeout_ms,
                       int *status, struct rv_error *err);
/* The same, handing the child the descriptor keep as its descriptor 3 (a
 * socket to send back what it opened: its table is its own). */
int rv_run_bounded_fd(unsigned long long key, int keep, int (*fn)(void *arg), void *arg,
                      int timeout_ms, int *status, struct rv_error *err);
/* Children left behind by this process that are still stuck (reaps those
 * that ended). */
unsigned rv_bounded_stuck(void);
/* The child the last call left behind, 0 if it left none. */
pid_t rv_bounded_left_behind(void);

#endif
