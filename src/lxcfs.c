/* lxcfs.c - LXCFS candidates and liveness. */
#define _GNU_SOURCE
#include "resview/lxcfs.h"
#include "resview/bounded.h"
#include "resview/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

const char *const rv_lxcfs_candidates[] = {
    "proc/cpuinfo", "proc/meminfo", "proc/stat", "proc/uptime", "proc/loadavg",
    "proc/swaps", "proc/diskstats", "proc/slabinfo", "proc/pressure/cpu",
    "proc/pressure/io", "proc/pressure/memory", "sys/devices/system/cpu/online",
};
const size_t rv_lxcfs_ncandidates = sizeof(rv_lxcfs_candidates) / sizeof(rv_lxcfs_candidates[0]);

bool rv_lxcfs_is_candidate(const char *rel)
{
    for (size_t i = 0; i < rv_lxcfs_ncandidates; i++)
        if (strcmp(rel, rv_lxcfs_candidates[i]) == 0)
            return true;
    return false;
}

/* The file whose read proves the daemon answers: small and cheap to render. */
static const char *const liveness_order[] = { "proc/loadavg", "proc/uptime",
                                              "sys/devices/system/cpu/online" };

static bool answers(int rootfd, const char *rel, int *e)
{
    char c;
    ssize_t r;
    int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

    if (fd < 0) {
        *e = errno;
        return false;
    }
    r = read(fd, &c, 1);
    *e = r < 0 ? errno : 0;
    close(fd);
    return r >= 0;
}

/* What is mounted on root: a FUSE file system, or why not (false). */
static bool fuse_mounted(const char *root, struct rv_lxcfs *out)
{
    struct statfs sfs;

    if (statfs(root, &sfs) < 0) {
        snprintf(out->why, sizeof(out->why), "statfs `%s`: %s", root, strerror(errno));
        return false;
    }
    if (sfs.f_type != RV_FUSE_SUPER_MAGIC) {
        snprintf(out->why, sizeof(out->why), "no LXCFS mounted on `%s`", root);
        return false;
    }
    return true;
}

void rv_lxcfs_probe_ex(const char *root, bool list, struct rv_lxcfs *out)
{
    struct statx stx;
    cleanup_close int rootfd = -1;
    int e = ENOENT;
    bool answered = false;

    memset(out, 0, sizeof(*out));
    snprintf(out->root, sizeof(out->root), "%s", root);
    /* statfs is a round trip to the daemon (~0.1 ms): the hook, on the start
     * path, asks only once the read below failed, to say why */
    if (list && !fuse_mounted(root, out))
        return;
    /* the device without a round trip (the attributes the kernel holds) */
    rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0 || rv_statx(rootfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) < 0) {
        snprintf(out->why, sizeof(out->why), "open `%s`: %s", root, strerror(errno));
        return;
    }
    /* One read proves the daemon answers (the first of these it offers). */
    for (size_t i = 0; i < sizeof(liveness_order) / sizeof(liveness_order[0]) && !answered; i++) {
        answered = answers(rootfd, liveness_order[i], &e);
        if (!answered && e != ENOENT)
            break;
    }
    if (!answered) {
        if (!list && !fuse_mounted(root, out))
            return;
        snprintf(out->why, sizeof(out->why), "read from `%s`: %s", root, strerror(e));
        out->mounted = e != ENOTCONN;   /* ENOTCONN: dead, the daemon is gone */
        return;
    }
    out->mounted = true;
    /* Which candidates it offers: one FUSE getattr each (LXCFS does not let
     * the kernel cache attributes), so only when asked; the hook learns the
     * same from open_tree() failing with ENOENT. */
    for (size_t i = 0; list && i < rv_lxcfs_ncandidates && out->n < RV_LXCFS_FILES_MAX; i++) {
        struct stat fst;
        if (fstatat(rootfd, rv_lxcfs_candidates[i], &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(fst.st_mode))
            out->files[out->n++] = rv_lxcfs_candidates[i];
    }
    if (list && out->n == 0) {
        snprintf(out->why, sizeof(out->why), "`%s` offers none of the LXCFS files", root);
        return;
    }
    out->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    out->live = true;
}

void rv_lxcfs_probe(const char *root, struct rv_lxcfs *out)
{
    rv_lxcfs_probe_ex(root, true, out);
}

struct probe_call {
    const char *root;
    struct rv_lxcfs *out;
};

static int probe_child(void *arg)
{
    struct probe_call *c = arg;
    rv_lxcfs_probe(c->root, c->out);
    return 0;
}

int rv_lxcfs_discover(const char *root, int timeout_ms, struct rv_lxcfs *out,
                      struct rv_error *err)
{
    struct rv_lxcfs *shared = rv_shared_alloc(sizeof(*shared));
    struct probe_call c = { root, shared };
    struct rv_error e;
    /* keyed by the path: a hung LXCFS holds at most one stuck probe of ours */
    unsigned long long key = 1469598103934665603ull;   /* FNV-1a */
    int status;

    memset(out, 0, sizeof(*out));
    if (!shared)
        return rv_fail(err, errno, "probe LXCFS at `%s`", root);
    for (const char *p = root; *p; p++)
        key = (key ^ (unsigned char)*p) * 1099511628211ull;
    if (rv_run_bounded_key(key | 1, probe_child, &c, timeout_ms, &status, &e) < 0) {
        rv_shared_free(shared, sizeof(*shared));
        if (e.errnum != ETIMEDOUT && e.errnum != EBUSY)
            return rv_fail(err, e.errnum, "probe LXCFS at `%s`: %s", root, e.msg);
        snprintf(out->root, sizeof(out->root), "%s", root);
        snprintf(out->why, sizeof(out->why), "LXCFS at `%s` does not answer (hung?): %s", root,
                 e.msg);
        out->mounted = true;
        return 0;
    }
    *out = *shared;
    rv_shared_free(shared, sizeof(*shared));
    if (status != 0 && !out->why[0])
        snprintf(out->why, sizeof(out->why), "probe of `%s` died (status %d)", root, status);
    if (status != 0)
        out->live = false;
    return 0;
}

int rv_parse_stat_start(const char *text, unsigned long long *start)
{
    const char *p = strrchr(text, ')');
    int field = 2;

    if (!p)
        return -1;
    p++;
    /* fields after the command: 3 (state) ... 22 (starttime) */
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        field++;
        if (field == 22) {
            char *end;
            errno = 0;
            *start = strtoull(p, &end, 10);
            if (errno || end == p || (*end != ' ' && *end != '\0' && *end != '\n'))
                return -1;
            return 0;
        }
        while (*p && *p != ' ')
            p++;
    }
    return -1;
}

int rv_pid_start_time(int piddir, unsigned long long *start)
{
    char buf[1024];
    ssize_t r;
    int fd = openat(piddir, "stat", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    return rv_parse_stat_start(buf, start);
}
