/* held-cost.c - the cost of the FUSE caps' bookkeeping per mount
 * (src/broker/fuse_held.c), as the broker pays it under the node's table
 * lock: lock, drop the container's freed file systems, count the container's
 * and the node's, look the new connection up in fusectl, enter it, unlock.
 *
 *   held-cost DIR HELD MAX NODE ROUNDS
 *
 * Makes HELD real FUSE file systems (mounts under DIR with a /dev/fuse fd and
 * no daemon) held by the container, whose cap is MAX (HELD = MAX: each round
 * meets the cap, looks every one up in fusectl and is refused), fills the node's
 * table to NODE entries (the others of other containers), then times ROUNDS
 * rounds of that bookkeeping (each round's entry taken out again) and prints
 * the median and the 90th percentile in microseconds. Needs root. */
#define _GNU_SOURCE
#include "resview/fuse_held.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct rv_held h;
    struct rv_error err;
    char path[4096], key[RV_HELD_ID_MAX];
    uint32_t devs[1024];
    int held, max, node, rounds, ctl;
    long long *t;

    if (argc != 6 || (held = atoi(argv[2])) < 1 || held > 1024 || (max = atoi(argv[3])) < held ||
        (node = atoi(argv[4])) < held || node > (int)RV_HELD_CAPACITY - 1 || (rounds = atoi(argv[5])) < 1) {
        fprintf(stderr, "usage: held-cost DIR HELD(1-1024) MAX(>= HELD) NODE ROUNDS\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/held", argv[1]);
    if (rv_held_open(&h, path, true, &err) < 0 || (ctl = rv_fusectl_open()) < 0) {
        fprintf(stderr, "held-cost: %s\n", err.msg);
        return 1;
    }
    rv_held_key("bench-container", key);
    for (int i = 0; i < held; i++) {
        char dir[4200], opts[128];
        struct statx sx;
        uint64_t ino;
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        snprintf(dir, sizeof(dir), "%s/m%d", argv[1], i);
        mkdir(dir, 0755);
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (fd < 0 || mount("bench", dir, "fuse.bench", MS_NOSUID | MS_NODEV, opts) < 0) {
            perror("held-cost: mount");
            return 1;
        }
        close(fd);   /* no daemon: the connection is aborted, the file system stays */
        /* the device, without asking the (absent) daemon */
        if (statx(AT_FDCWD, dir, AT_STATX_DONT_SYNC, STATX_INO, &sx) < 0) {
            perror("held-cost: statx");
            return 1;
        }
        devs[i] = (sx.stx_dev_major << 20) | sx.stx_dev_minor;
        if (rv_held_ino(ctl, devs[i], &ino) < 0 || rv_held_add(&h, key, devs[i], ino) < 0) {
            perror("held-cost: fusectl");
            return 1;
        }
    }
    for (int i = held; i < node; i++) {
        char other[32];
        snprintf(other, sizeof(other), "other-%d", i % 100);
        rv_held_add(&h, other, 0xfffff, 1);   /* another container's */
    }
    t = calloc((size_t)rounds, sizeof(*t));
    for (int r = 0; t && r < rounds; r++) {
        uint64_t ino;
        long long t0 = now_ns();
        if (rv_held_lock(&h) < 0)
            return 1;
        bool room = rv_held_admit(&h, ctl, key, (unsigned)max, RV_HELD_CAPACITY) == 0;
        if (room) {
            rv_held_ino(ctl, devs[r % held], &ino);
            rv_held_add(&h, key, devs[r % held], ino);
        }
        rv_held_unlock(&h);
        t[r] = now_ns() - t0;
        if (room)
            h.t->n--;   /* this round's entry out again */
    }
    qsort(t, (size_t)rounds, sizeof(*t), by_value);
    printf("bookkeeping per mount: median %.1f us, p90 %.1f us (the container holds %d, fuse.max_mounts %d%s; "
           "%d in the node's table; %d rounds)\n", t[rounds / 2] / 1000.0, t[rounds * 9 / 10] / 1000.0,
           held, max, held == max ? ", refused" : "", node, rounds);
    for (int i = 0; i < held; i++) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/m%d", argv[1], i);
        umount2(dir, MNT_DETACH);
    }
    return 0;
}
