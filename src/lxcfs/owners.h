/* owners.h - what root remembers of each party whose file systems its repair
 * may wait on (repair.c), so that none can make root pay again on every run:
 * a user whose records in users/ it acts on, and each of root's containers
 * (its mount namespace) whose views it repairs:
 *
 *   state_dir/owners/<uid>   root only (0700 directory, 0600 files), never in
 *                            users/: {"stuck": [[PID, START], ...],
 *                            "level": N, "until": EPOCH_S, "last_timeout": EPOCH_S,
 *                            "seen": [[INODE, EPOCH_S], ...]}
 *   state_dir/stalled/<ino>  the same for the container whose mount namespace
 *                            has that inode, with "of": [PID, START], a process
 *                            of it (the inode is used again once the namespace
 *                            ends): no "seen"; removed once there is nothing
 *                            to remember (no child stuck, no back-off, no
 *                            timeout within RV_OWNER_BACKOFF_S), or once that
 *                            process is gone and no child is stuck.
 *
 * - stuck: children of a repair left in an uninterruptible wait while they
 *   worked on that user's container (bounded.h). While one of them is still
 *   there, the user's records are skipped: no second child follows the first.
 * - level, until, last_timeout: a record of the user's that left a child
 *   stuck, or a second one that timed out within RV_OWNER_BACKOFF_S of the
 *   last (one alone may be a busy host), backs the user off (a container: a
 *   second child stuck or timeout within RV_OWNER_BACKOFF_S), for
 *   RV_OWNER_BACKOFF_S doubled per level in a row (at most
 *   RV_OWNER_BACKOFF_MAX_S); a run without one ends the series.
 * - seen: when root first saw each record (its inode): a record that is still
 *   "not yet" (its process has not reached the recorded root) some time after
 *   is dropped, by root's clock, not by times the user can set (utimes sets
 *   mtime, and any change the user makes sets ctime).
 * Within one run a user's records get at most RV_OWNER_RUN_MS of root's time;
 * the rest wait for the next run. */
#ifndef RESVIEW_LXCFS_OWNERS_H
#define RESVIEW_LXCFS_OWNERS_H

#include <stdbool.h>
#include <sys/types.h>
#include "resview/config.h"

#define RV_OWNER_STUCK_MAX 8
#define RV_OWNER_BACKOFF_S 600
#define RV_OWNER_BACKOFF_MAX_S 86400
#define RV_OWNER_RUN_MS 3000
#define RV_OWNER_SEEN_MAX 256

struct rv_owner_seen {
    unsigned long long ino;
    long long first;          /* epoch seconds */
    bool now;                 /* seen in this run */
};

struct rv_owner {
    uid_t uid;                /* a user's (rv_owner_get) */
    unsigned long long key;   /* the name of its file: the uid, or the namespace's inode */
    char label[96];           /* what the log calls it ("user 1000's records") */
    pid_t of_pid;             /* a container's: a process of it (rv_owner_of); 0: a user's */
    unsigned long long of_start;
    bool stuck_alone_ok;      /* a container's: a child left stuck counts as a timeout (none
                                 follows while it lives; a second within RV_OWNER_BACKOFF_S
                                 backs off), so that it is tried again once it answers */
    struct { pid_t pid; unsigned long long start; } stuck[RV_OWNER_STUCK_MAX];
    unsigned n_stuck;
    unsigned level;
    long long until;
    long long last_timeout;   /* epoch seconds, 0: none */
    struct rv_owner_seen seen[RV_OWNER_SEEN_MAX];
    unsigned n_seen;
    /* this run */
    long spent_ms;
    bool troubled;            /* a timeout or a stuck child in this run */
    bool dirty;
    bool said;                /* the skip was said once */
};

struct rv_owners {
    const struct rv_config *cfg;
    const char *dir;          /* under state_dir: NULL "owners" (users), "stalled" (containers) */
    struct rv_owner **o;
    size_t n;
};

/* The memory of uid (read from its file the first time; a missing or
 * unreadable file: a user root knows nothing of). NULL: out of memory. */
struct rv_owner *rv_owner_get(struct rv_owners *t, uid_t uid);
/* The same for any key (a container: its mount namespace's inode, with
 * t->dir "stalled"); label names it in the log. */
struct rv_owner *rv_owner_get_key(struct rv_owners *t, unsigned long long key, const char *label);
/* The memory is of the container whose process is pid (started at start):
 * a memory of another process that is gone, with no child stuck, is of a
 * namespace whose inode is used again: forgotten. */
void rv_owner_of(struct rv_owner *o, pid_t pid, unsigned long long start);
/* Remove the memories in t->dir whose process is gone and whose children
 * have all ended (containers that are gone); returns how many. */
unsigned rv_owners_sweep(const struct rv_owners *t);
/* Whether uid's records are to be left alone now: 1 and why (a line), or 0. */
int rv_owner_blocked(struct rv_owner *o, long long now, char *why, size_t size);
/* When root first saw the record with this inode (now if never). */
long long rv_owner_first_seen(struct rv_owner *o, unsigned long long ino, long long now);
/* What a record cost: ms of root's time; timed_out: it timed out or was not
 * tried because a child of an earlier one is stuck; stuck: the child it left
 * behind (0: none). */
void rv_owner_charge(struct rv_owner *o, long ms, bool timed_out, pid_t stuck, long long now);
/* Write what changed (only the records seen in this run are remembered), free. */
void rv_owners_save(struct rv_owners *t);

#endif
