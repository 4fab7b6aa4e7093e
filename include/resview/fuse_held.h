/* fuse_held.h - the FUSE file systems the brokers of a node made, for as long
 * as the kernel keeps them (profiles/README.md "Limits").
 *
 * A FUSE file system outlives its mount: after umount -l it lives on while
 * anything refers to it (an fd, a working directory, an fd passed to another
 * process), with its anonymous device number and its connection. So the
 * caps count superblocks, not mounts: one table per node
 * (<state_dir>/fuse/held), shared by every broker and every worker, one
 * entry per file system a broker made: its container, its device, and the
 * inode of its connection's directory under fusectl
 * (/sys/fs/fuse/connections/<dev>), which the kernel removes when it frees
 * the superblock. An entry whose directory is gone, or is another one (the
 * device number was reused), is dropped. The table is a file mapped by each
 * process and locked with flock for each change; nothing done under the lock
 * waits on a tenant. */
#ifndef RESVIEW_FUSE_HELD_H
#define RESVIEW_FUSE_HELD_H

#include "resview/config.h"
#include "resview/util.h"

#include <stdint.h>

#define RV_HELD_FILE "held"          /* <state_dir>/fuse/held, mode 0600 */
#define RV_HELD_CAPACITY RV_FUSE_MAX_MOUNTS_NODE_MAX   /* entries */
#define RV_HELD_ID_MAX 72            /* a longer id: its start and a hash */
#define RV_HELD_LOCK_MS 1000         /* longer: the table is busy (EAGAIN) */

struct rv_held_entry {
    uint32_t dev;                    /* the superblock's device, as fusectl names it */
    uint32_t unused;
    uint64_t ino;                    /* of fusectl's directory for it */
    char id[RV_HELD_ID_MAX];         /* container (rv_held_key) */
};

struct rv_held_table {
    uint32_t n;
    uint32_t unused;
    struct rv_held_entry e[RV_HELD_CAPACITY];
};

struct rv_held {
    int fd;                          /* locked with flock: one per process */
    struct rv_held_table *t;         /* MAP_SHARED */
};

/* Open (create = make it if missing) and map the table. */
int rv_held_open(struct rv_held *h, const char *path, bool create, struct rv_error *err);
/* Another open file description of the same table for this process (a
 * forked worker: flock locks belong to the description, not the process). */
int rv_held_reopen(struct rv_held *h);
void rv_held_close(struct rv_held *h);
/* 0, or -1 with errno EAGAIN when another holder kept it RV_HELD_LOCK_MS. */
int rv_held_lock(struct rv_held *h);
void rv_held_unlock(struct rv_held *h);

/* The key of a container id in the table. */
void rv_held_key(const char *id, char key[RV_HELD_ID_MAX]);
/* A private mount of fusectl (an fd to look connections up in), -1 + errno. */
int rv_fusectl_open(void);
/* The inode of fusectl's directory for connection dev: 0, or -1. */
int rv_held_ino(int fusectl, uint32_t dev, uint64_t *ino);
/* Under the lock: drop the entries whose file system the kernel freed, of
 * key only, or all when key is NULL. */
void rv_held_prune(struct rv_held *h, int fusectl, const char *key);
/* Under the lock: whether one more file system of key fits: 0; 1 when the
 * container holds max already, 2 when the node holds max_node (file systems
 * the kernel freed are dropped first, when a cap is met). */
int rv_held_admit(struct rv_held *h, int fusectl, const char *key, unsigned max, unsigned max_node);
/* Under the lock: the entries of key, or all when key is NULL. */
unsigned rv_held_count(const struct rv_held *h, const char *key);
/* Under the lock: one more; -1 (ENOSPC) when the table is full. */
int rv_held_add(struct rv_held *h, const char *key, uint32_t dev, uint64_t ino);

/* Under the lock: the containers that hold most, at most max, largest first. */
struct rv_held_top {
    char id[RV_HELD_ID_MAX];
    unsigned count;
};
size_t rv_held_top(const struct rv_held *h, struct rv_held_top *top, size_t max);

#endif
