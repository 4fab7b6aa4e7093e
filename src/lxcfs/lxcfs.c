/* lxcfs.c - LXCFS candidates and liveness. */
#define _GNU_SOURCE
#include "resview/lxcfs.h"
#include "resview/bounded.h"
#include "syscalls.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
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
const char *const rv_lxcfs_liveness[] = { "proc/loadavg", "proc/uptime",
                                          "sys/devices/system/cpu/online" };
const size_t rv_lxcfs_nliveness = sizeof(rv_lxcfs_liveness) / sizeof(rv_lxcfs_liveness[0]);

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
    for (size_t i = 0; i < rv_lxcfs_nliveness && !answered; i++) {
        answered = answers(rootfd, rv_lxcfs_liveness[i], &e);
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

/* --- who serves the views, and where it runs ---------------------------- */

/* One line of mountinfo: its device, root, mount point (unescaped), type. */
struct mi_line {
    unsigned maj, min;
    char root[PATH_MAX];
    char target[PATH_MAX];
    char type[64];
};

static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w = *r++;
        }
    }
    *w = '\0';
}

static bool mi_parse(char *line, struct mi_line *m)
{
    char *sep = strstr(line, " - ");
    if (!sep || sscanf(line, "%*u %*u %u:%u %4095s %4095s", &m->maj, &m->min, m->root, m->target) != 4 ||
        sscanf(sep + 3, "%63s", m->type) != 1)
        return false;
    unescape(m->root);
    unescape(m->target);
    return true;
}

/* fn for each line of /proc/PID/mountinfo (pid 0: ours); -1 if unreadable.
 * procfs only: no FUSE request. fn returns false to stop. */
static int mi_foreach(pid_t pid, bool (*fn)(const struct mi_line *, void *), void *arg)
{
    char path[64], line[2 * PATH_MAX + 256];
    struct mi_line *m = malloc(sizeof(*m));
    FILE *f;

    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/mountinfo");
    if (!m || !(f = fopen(path, "re"))) {
        free(m);
        return -1;
    }
    while (fgets(line, sizeof(line), f))
        if (mi_parse(line, m) && !fn(m, arg))
            break;
    fclose(f);
    free(m);
    return 0;
}

struct has_dev { dev_t dev; bool found; };

static bool mi_has_dev(const struct mi_line *m, void *arg)
{
    struct has_dev *h = arg;
    if (strcmp(m->type, "fuse.lxcfs") == 0 && makedev(m->maj, m->min) == h->dev)
        h->found = true;
    return !h->found;
}

static bool named_lxcfs(int piddir)
{
    char comm[32];
    ssize_t r;
    int fd = openat(piddir, "comm", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    r = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (r <= 0)
        return false;
    comm[r] = '\0';
    return strcmp(comm, "lxcfs\n") == 0;
}

/* A process named lxcfs; with dev, one whose mount table has that LXCFS
 * mount (parsing its mountinfo: for the scan, where any process may be
 * named lxcfs; a pid file already names the process). */
static void server_add(struct rv_lxcfs_servers *out, pid_t pid, dev_t dev)
{
    char path[64];
    struct stat st;
    cleanup_close int piddir = -1;
    struct has_dev h = { dev, dev == 0 };

    if (pid <= 0 || out->n >= RV_LXCFS_SERVERS_MAX)
        return;
    for (unsigned i = 0; i < out->n; i++)
        if (out->s[i].pid == pid)
            return;
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0 || !named_lxcfs(piddir) || fstatat(piddir, "ns/mnt", &st, 0) < 0)
        return;
    if (dev && (mi_foreach(pid, mi_has_dev, &h) < 0 || !h.found))
        return;
    out->s[out->n++] = (struct rv_lxcfs_server){ pid, st.st_dev, st.st_ino };
}

static pid_t pid_from_file(const char *path)
{
    char buf[32];
    uint64_t v;
    ssize_t r;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

    if (fd < 0)
        return 0;
    r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = '\0';
    buf[strcspn(buf, " \n")] = '\0';
    return rv_parse_u64(buf, &v) == 0 && v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

void rv_lxcfs_servers_find(const char *root, dev_t dev, bool scan, struct rv_lxcfs_servers *out)
{
    char pidfile[PATH_MAX];

    memset(out, 0, sizeof(*out));
    if (rv_snprintf(pidfile, sizeof(pidfile), "%s.pid", root) >= 0)
        server_add(out, pid_from_file(pidfile), 0);
    server_add(out, pid_from_file("/run/lxcfs.pid"), 0);
    if (scan) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            uint64_t pid;
            int piddir;
            if (rv_parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                continue;
            piddir = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (piddir < 0)
                continue;
            if (named_lxcfs(piddir))
                server_add(out, (pid_t)pid, dev);
            close(piddir);
        }
        if (d)
            closedir(d);
    }
}

int rv_lxcfs_ns_check(const struct rv_lxcfs_servers *srv, pid_t pid, char *why, size_t size)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    if (stat(path, &st) < 0 && (errno == ENOENT || errno == ESRCH)) {
        why[0] = '\0';
        return 0;   /* gone: nothing is mounted there (the injector finds out and says so) */
    }
    if (stat(path, &st) < 0) {
        snprintf(why, size, "cannot tell whether LXCFS runs in the mount namespace of process %d "
                 "(stat `%s`: %s): no views mounted there", (int)pid, path, strerror(errno));
        return -1;
    }
    for (unsigned i = 0; i < srv->n; i++)
        if (srv->s[i].ns_dev == st.st_dev && srv->s[i].ns_ino == st.st_ino) {
            snprintf(why, size, "LXCFS (pid %d), which serves these views, runs in this mount "
                     "namespace (process %d's): its own reads of /proc would wait for itself; "
                     "no views mounted there", (int)srv->s[i].pid, (int)pid);
            return 1;
        }
    return 0;
}

struct views_acc { char *out; size_t size; int n; };

static bool mi_view(const struct mi_line *m, void *arg)
{
    struct views_acc *a = arg;
    size_t len;

    if (strcmp(m->type, "fuse.lxcfs") != 0 || strcmp(m->root, "/") == 0)
        return true;
    len = a->out ? strlen(a->out) : 0;
    if (a->out && len + 1 < a->size)
        snprintf(a->out + len, a->size - len, "%s%s", a->n ? ", " : "", m->target);
    a->n++;
    return true;
}

int rv_lxcfs_views_in_ns(pid_t pid, char *out, size_t size)
{
    struct views_acc a = { out, size, 0 };

    if (out && size)
        out[0] = '\0';
    return mi_foreach(pid, mi_view, &a) < 0 ? -1 : a.n;
}

#define DETACH_MAX 32

struct detach_job {
    unsigned n_targets;
    char targets[DETACH_MAX][PATH_MAX];
    int n;                     /* out: mounts detached */
    int errnum;
    unsigned failed;           /* out: index of the target that failed */
};

static bool mi_collect(const struct mi_line *m, void *arg)
{
    struct detach_job *j = arg;

    if (strcmp(m->type, "fuse.lxcfs") != 0 || strcmp(m->root, "/") == 0)
        return true;
    for (unsigned i = 0; i < j->n_targets; i++)
        if (strcmp(j->targets[i], m->target) == 0)
            return true;   /* stacked: the child detaches every layer */
    if (j->n_targets < DETACH_MAX)
        snprintf(j->targets[j->n_targets++], PATH_MAX, "%s", m->target);
    return true;
}

/* In the bounded child (our mount namespace): no allocation, no stdio, only
 * umount2 of what the parent found, every stacked layer of each. */
static int detach_child(void *arg)
{
    struct detach_job *j = arg;

    for (unsigned i = 0; i < j->n_targets; i++)
        for (int layer = 0; layer < 16; layer++) {
            if (umount2(j->targets[i], MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
                j->n++;
                continue;
            }
            if (errno == EINVAL || errno == ENOENT)
                break;   /* no mount (left) there */
            j->errnum = errno;
            j->failed = i;
            return 1;
        }
    return 0;
}

int rv_lxcfs_detach_own_views(struct rv_error *err)
{
    struct detach_job *j;
    struct rv_error e;
    int status, n;

    j = rv_shared_alloc(sizeof(*j));
    if (!j)
        return rv_fail(err, errno, "detach LXCFS views from our own mount namespace");
    if (mi_foreach(0, mi_collect, j) < 0 || j->n_targets == 0) {
        rv_shared_free(j, sizeof(*j));
        return 0;
    }
    if (rv_run_bounded(detach_child, j, 2000, &status, &e) < 0) {
        rv_shared_free(j, sizeof(*j));
        return rv_fail(err, e.errnum, "detach LXCFS views from our own mount namespace: %s", e.msg);
    }
    n = j->n;
    if (status != 0) {
        int en = j->errnum;
        char t[PATH_MAX];
        snprintf(t, sizeof(t), "%s", j->targets[j->failed]);
        rv_shared_free(j, sizeof(*j));
        return rv_fail(err, en, "detach the LXCFS view on `%s` from our own mount namespace", t);
    }
    rv_shared_free(j, sizeof(*j));
    return n;
}
