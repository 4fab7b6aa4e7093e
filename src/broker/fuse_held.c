/* fuse_held.c - the node's table of FUSE file systems its brokers made
 * (fuse_held.h). */
#define _GNU_SOURCE
#include "resview/fuse_held.h"
#include "resview/sys.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

int rv_held_open(struct rv_held *h, const char *path, bool create, struct rv_error *err)
{
    cleanup_close int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    struct stat st;
    void *t;

    h->fd = -1;
    h->t = NULL;
    if (fd < 0)
        return rv_fail(err, errno, "open `%s`", path);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return rv_fail(err, EPERM, "`%s`: not a regular file of ours, mode 0600", path);
    /* the full size at once: holes, until entries are written */
    if (st.st_size < (off_t)sizeof(struct rv_held_table) &&
        ftruncate(fd, sizeof(struct rv_held_table)) < 0)
        return rv_fail(err, errno, "size `%s`", path);
    t = mmap(NULL, sizeof(struct rv_held_table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED)
        return rv_fail(err, errno, "map `%s`", path);
    h->t = t;
    h->fd = move_fd(fd);
    return 0;
}

int rv_held_reopen(struct rv_held *h)
{
    char p[64];
    int fd;

    snprintf(p, sizeof(p), "/proc/self/fd/%d", h->fd);
    if ((fd = open(p, O_RDWR | O_CLOEXEC)) < 0)
        return -1;
    close(h->fd);
    h->fd = fd;
    return 0;
}

void rv_held_close(struct rv_held *h)
{
    if (h->t)
        munmap(h->t, sizeof(*h->t));
    if (h->fd >= 0)
        close(h->fd);
    h->t = NULL;
    h->fd = -1;
}

int rv_held_lock(struct rv_held *h)
{
    long long until = rv_now_ms() + RV_HELD_LOCK_MS;

    while (flock(h->fd, LOCK_EX | LOCK_NB) < 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || rv_now_ms() >= until) {
            errno = EAGAIN;
            return -1;
        }
        poll(NULL, 0, 1);
    }
    /* a table written by someone else than us: never trust its count */
    if (h->t->n > RV_HELD_CAPACITY)
        h->t->n = RV_HELD_CAPACITY;
    return 0;
}

void rv_held_unlock(struct rv_held *h)
{
    flock(h->fd, LOCK_UN);
}

void rv_held_key(const char *id, char key[RV_HELD_ID_MAX])
{
    size_t n = strlen(id);
    uint64_t hash = 14695981039346656037ull;   /* FNV-1a */

    if (n < RV_HELD_ID_MAX) {
        memcpy(key, id, n + 1);
        return;
    }
    for (size_t i = 0; i < n; i++)
        hash = (hash ^ (unsigned char)id[i]) * 1099511628211ull;
    snprintf(key, RV_HELD_ID_MAX, "%.*s~%016llx", RV_HELD_ID_MAX - 18, id, (unsigned long long)hash);
}

int rv_fusectl_open(void)
{
    cleanup_close int fs = rv_fsopen("fusectl", RV_FSOPEN_CLOEXEC);

    if (fs < 0 || rv_fsconfig(fs, RV_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return -1;
    return rv_fsmount(fs, RV_FSMOUNT_CLOEXEC, 0);
}

int rv_held_ino(int fusectl, uint32_t dev, uint64_t *ino)
{
    char name[16];
    struct stat st;

    snprintf(name, sizeof(name), "%u", dev);
    if (fstatat(fusectl, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOENT;
        return -1;
    }
    *ino = st.st_ino;
    return 0;
}

/* Whether the kernel still holds the file system of e: its connection's
 * directory is there and is the one we saw. When fusectl cannot say, it is
 * still counted. */
static bool held_alive(int fusectl, const struct rv_held_entry *e)
{
    uint64_t ino;

    if (rv_held_ino(fusectl, e->dev, &ino) == 0)
        return ino == e->ino;
    return errno != ENOENT;
}

void rv_held_prune(struct rv_held *h, int fusectl, const char *key)
{
    struct rv_held_table *t = h->t;

    for (uint32_t i = t->n; i-- > 0;)
        if ((!key || strncmp(t->e[i].id, key, RV_HELD_ID_MAX) == 0) && !held_alive(fusectl, &t->e[i]))
            t->e[i] = t->e[--t->n];
}

int rv_held_admit(struct rv_held *h, int fusectl, const char *key, unsigned max, unsigned max_node)
{
    /* freed ones are looked for only when a cap is met: below it, they need
     * not be told from live ones */
    if (rv_held_count(h, key) >= max) {
        rv_held_prune(h, fusectl, key);
        if (rv_held_count(h, key) >= max)
            return 1;
    }
    if (rv_held_count(h, NULL) >= max_node) {
        rv_held_prune(h, fusectl, NULL);
        if (rv_held_count(h, NULL) >= max_node)
            return 2;
    }
    return 0;
}

unsigned rv_held_count(const struct rv_held *h, const char *key)
{
    unsigned n = 0;

    if (!key)
        return h->t->n;
    for (uint32_t i = 0; i < h->t->n; i++)
        n += strncmp(h->t->e[i].id, key, RV_HELD_ID_MAX) == 0;
    return n;
}

int rv_held_add(struct rv_held *h, const char *key, uint32_t dev, uint64_t ino)
{
    struct rv_held_entry *e;

    if (h->t->n >= RV_HELD_CAPACITY) {
        errno = ENOSPC;
        return -1;
    }
    e = &h->t->e[h->t->n];
    memset(e, 0, sizeof(*e));
    e->dev = dev;
    e->ino = ino;
    snprintf(e->id, sizeof(e->id), "%s", key);
    h->t->n++;
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return strncmp(((const struct rv_held_entry *)a)->id, ((const struct rv_held_entry *)b)->id,
                   RV_HELD_ID_MAX);
}

size_t rv_held_top(const struct rv_held *h, struct rv_held_top *top, size_t max)
{
    uint32_t n = h->t->n;
    struct rv_held_entry *e;
    size_t k = 0;

    if (n == 0 || max == 0 || !(e = malloc(sizeof(*e) * n)))
        return 0;
    memcpy(e, h->t->e, sizeof(*e) * n);
    qsort(e, n, sizeof(*e), by_id);
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && by_id(&e[i], &e[j]) == 0; j++) {
        }
        /* insert the run [i, j) among the largest so far */
        size_t at = k < max ? k++ : max;
        while (at > 0 && top[at - 1].count < j - i) {
            if (at < max)
                top[at] = top[at - 1];
            at--;
        }
        if (at < max) {
            snprintf(top[at].id, sizeof(top[at].id), "%.*s", RV_HELD_ID_MAX - 1, e[i].id);
            top[at].count = j - i;
        }
    }
    free(e);
    return k;
}
