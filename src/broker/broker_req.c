/* broker_req.c - one mount(2)/umount(2)/umount2(2) notification of a FUSE
 * container, handled by the broker's worker (broker.h), which goes back to
 * its own mount namespace afterwards.
 *
 * Order of work, which is what makes it safe:
 *  1. open handles on the calling thread (pidfd, /proc/TID/{mem,status,ns/mnt,
 *     ns/user,root,cwd}), then SECCOMP_IOCTL_NOTIF_ID_VALID: the handles are
 *     known to name the caller, not a process that reused its id;
 *  2. read each string argument once, bounded, and decide on that copy
 *     (another thread of the caller may change its memory at any time);
 *  3. enter the container's mount namespace (setns: our root becomes the
 *     container's own root, whatever root the caller chrooted into) and walk
 *     the target from the caller's root or cwd one component at a time,
 *     looking up only in directories of a place a FUSE mount may go (the
 *     container's root file system, a volume the engine mounted): nothing is
 *     ever looked up through a tenant's FUSE file system or /proc, so a
 *     daemon that never answers cannot hold us, and chroot, "..", symlinks
 *     and magic links cannot make a target mean another place;
 *  4. decide the place by mount identity (mount id, device, the volume's
 *     host inode, taken when the broker started), never by a path string;
 *     from the walk to the attach, one mount of the container at a time
 *     (a lock shared by every worker, replaced ones included);
 *  5. join the container's memory and pids cgroups (the kernel memory of
 *     the mount is the container's); a caller that is not the container's
 *     root must be able to write the target with its own credentials
 *     (fusermount's rule: a child that takes them on asks the kernel), and
 *     gets allow_other only with fuse.allow_other (in its own user
 *     namespace, the container's root gets it too); take the caller's
 *     /dev/fuse descriptor with pidfd_getfd (the number in fd= is never
 *     trusted) only now, make the context with options rebuilt here and
 *     nosuid,nodev forced, create the file system and its mount, and drop
 *     the descriptor: nothing that can wait holds it;
 *  6. back in our own cgroups, under the node's table lock (fuse_held.h):
 *     count the FUSE file systems the container and the node hold (until the
 *     kernel frees them, however detached) and enter the new one; only then,
 *     with the lock dropped, move_mount it onto the target fd. A lock every
 *     container shares never waits on a tenant, see
 *     profiles/README.md "Locks: nothing shared waits on a tenant":
 *     move_mount waits for the target's inode lock, which the tenant can hold
 *     for ever (a page fault into its own unanswered FUSE file while a
 *     getdents holds the directory), and a charge to a container at its
 *     memory limit waits for its reclaim. One refused or failing to move is
 *     freed, and its place in the count with it. Unmount only FUSE mounts
 *     this broker made, and for a caller that is not root, its own;
 *  7. answer; a mount whose caller is gone by then is taken away again.
 * The fresh FUSE mount is never stat'ed or read: the daemon that must answer
 * may be the very caller blocked in mount(2). The answer is never
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/mountreq.h"
#include "resview/sys.h"
#include "resview/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UMOUNT_NOFOLLOW
#define UMOUNT_NOFOLLOW 8
#endif
#define MOUNTINFO_MAX (32u << 20)
/* do_mount/do_umount: give the reason for the log and the answer. */
#define REFUSE(reason, ret) \
    do {                    \
        *why = (reason);    \
        return (ret);       \
    } while (0)
/* Returned when the answer was already sent (a mount answers itself, so that
 * it can take the mount away again if the caller is gone), or is impossible. */
#define ANSWERED 2
#define GONE 1
#define LOG_REFUSALS 20   /* refusals logged one by one, then every 1000th */

enum rv_broker_call rv_broker_call(uint32_t arch, int nr)
{
    /* libseccomp knows every architecture's numbers; remember the last few */
    static struct { uint32_t arch; int nr; enum rv_broker_call c; } seen[8];
    static unsigned next;
    enum rv_broker_call c = RV_CALL_OTHER;
    char *name;

    for (unsigned i = 0; i < 8; i++)
        if (seen[i].arch == arch && seen[i].nr == nr && arch)
            return seen[i].c;
    name = seccomp_syscall_resolve_num_arch(arch, nr);
    if (!name)
        return c;
    if (strcmp(name, "mount") == 0)
        c = RV_CALL_MOUNT;
    else if (strcmp(name, "umount") == 0)
        c = RV_CALL_UMOUNT;
    else if (strcmp(name, "umount2") == 0)
        c = RV_CALL_UMOUNT2;
    free(name);
    seen[next % 8].arch = arch;
    seen[next % 8].nr = nr;
    seen[next++ % 8].c = c;
    return c;
}

void rv_mount_set_add(struct rv_mount_set *s, const struct rv_broker_mount *m)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct rv_broker_mount *nm = realloc(s->m, cap * sizeof(*nm));
        if (!nm)
            return;   /* not recorded: its umount will be refused */
        s->m = nm;
        s->cap = cap;
    }
    s->m[s->n++] = *m;
}

void rv_mount_set_remove(struct rv_mount_set *s, const struct rv_broker_mount *m)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i].mnt_id == m->mnt_id) {
            s->m[i] = s->m[--s->n];
            return;
        }
}

const struct rv_broker_mount *rv_mount_set_find(const struct rv_mount_set *s,
                                                const struct rv_broker_mount *m)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i].mnt_id == m->mnt_id && s->m[i].dev_major == m->dev_major &&
            s->m[i].dev_minor == m->dev_minor)
            return &s->m[i];
    return NULL;
}

/* Handles on the calling thread, and the descriptors the work opens: all
 * closed after the answer (closing a namespace or a /dev/fuse file can take
 * milliseconds that the caller need not wait for). */
struct caller {
    pid_t tid;
    int pidfd, mem, mntns, userns, root, cwd;
    int fuse_fd, target, parent, fs, mnt;
    struct rv_mount_caller ids;    /* as its user namespace sees them */
    int ns;                        /* its user namespace: NS_OURS, NS_CONTAINER's, NS_OTHER */
    const char *mounted;           /* what a served mount logs: allow_other and by which rule */
    char why[160];                 /* a refusal's reason made for this request */
};
enum { NS_OURS, NS_CONTAINER, NS_OTHER };

/* What one request learned about the container's mounts. */
struct place {
    struct rv_broker_mount root;   /* the container's root mount (our root after setns) */
    uint64_t root_ino;             /* and its root directory */
    char *mountinfo;               /* the container's mount table, once read */
    struct { struct rv_broker_mount mount; bool ok; } seen[8];
    unsigned n_seen;
};

static void caller_close(struct caller *c)
{
    int *fds[] = { &c->pidfd, &c->mem, &c->mntns, &c->userns, &c->root, &c->cwd,
                   &c->fuse_fd, &c->target, &c->parent, &c->fs, &c->mnt };
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

static int read_at(int dirfd, const char *path, char *buf, size_t size)
{
    cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    size_t have = 0;
    ssize_t r;

    if (fd < 0)
        return -1;
    while (have + 1 < size && (r = read(fd, buf + have, size - 1 - have)) > 0)
        have += (size_t)r;
    buf[have] = '\0';
    return 0;
}

static bool same_ns(int fd, int fd2, const char *path)
{
    struct stat a, b;

    return fd >= 0 && fstat(fd, &a) == 0 && (path ? stat(path, &b) : fstat(fd2, &b)) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Which user namespace the caller is in; in the container's own, its ids as
 * that namespace sees them (the maps are read before the caller is known to
 * be still the same process, as the rest). */
static int caller_ns(struct rv_broker_ctx *ctx, struct caller *c)
{
    char p[64], uid_map[4096], gid_map[4096];

    if (same_ns(c->userns, -1, "/proc/self/ns/user"))
        return NS_OURS;
    if (ctx->container_userns < 0 || !same_ns(c->userns, ctx->container_userns, NULL))
        return NS_OTHER;
    snprintf(p, sizeof(p), "%d/uid_map", (int)c->tid);
    if (read_at(ctx->hostproc, p, uid_map, sizeof(uid_map)) < 0)
        return NS_OTHER;
    snprintf(p, sizeof(p), "%d/gid_map", (int)c->tid);
    if (read_at(ctx->hostproc, p, gid_map, sizeof(gid_map)) < 0 ||
        rv_mountreq_ids_in_ns(uid_map, gid_map, &c->ids) < 0)
        return NS_OTHER;
    return NS_CONTAINER;
}

/* 0, or -1 when the caller is already gone (no answer possible). */
static int caller_open(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                       struct caller *c, int *answer)
{
    char p[64], status[4096] = "";
    const char *tg;
    int tgid;

    memset(c, 0, sizeof(*c));
    c->tid = (pid_t)n->pid;
    c->pidfd = c->mem = c->mntns = c->userns = c->root = c->cwd = -1;
    c->fuse_fd = c->target = c->parent = c->fs = c->mnt = -1;
    *answer = 0;
#define OPEN_TASK(field, file, flags)                                           \
    do {                                                                        \
        snprintf(p, sizeof(p), "%d/%s", (int)c->tid, file);                     \
        c->field = openat(ctx->hostproc, p, (flags) | O_CLOEXEC);               \
        if (c->field < 0 && !*answer)                                           \
            *answer = -EPERM;                                                   \
    } while (0)
    OPEN_TASK(mem, "mem", O_RDONLY);
    OPEN_TASK(mntns, "ns/mnt", O_RDONLY);
    OPEN_TASK(userns, "ns/user", O_RDONLY);
    OPEN_TASK(root, "root", O_PATH | O_DIRECTORY);
    OPEN_TASK(cwd, "cwd", O_PATH | O_DIRECTORY);
#undef OPEN_TASK
    snprintf(p, sizeof(p), "%d/status", (int)c->tid);
    if (read_at(ctx->hostproc, p, status, sizeof(status)) < 0 ||
        rv_mountreq_caller(status, &c->ids) < 0)
        *answer = -EPERM;
    c->ns = *answer ? NS_OTHER : caller_ns(ctx, c);
    c->pidfd = rv_pidfd_open(c->tid, RV_PIDFD_THREAD);
    if (c->pidfd < 0 && errno == EINVAL && (tg = strstr(status, "\nTgid:")) &&
        sscanf(tg + 6, "%d", &tgid) == 1)
        c->pidfd = rv_pidfd_open(tgid, 0);   /* kernels before 6.9: the thread group */
    if (c->pidfd < 0 && !*answer)
        *answer = -EPERM;
    /* From here on the handles are the caller's, or the notification is gone. */
    if (ioctl(ctx->notify_fd, RV_SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0)
        return -1;
    return 0;
}

/* A NUL-terminated string of at most max bytes (with the NUL) at addr. */
static int read_string(int mem, uint64_t addr, char *buf, size_t max, int too_long)
{
    size_t have = 0;

    if (addr == 0)
        return -EFAULT;
    while (have < max) {
        uint64_t at = addr + have;
        size_t chunk = 4096 - (size_t)(at & 4095);
        ssize_t r;
        if (at < addr || at > (uint64_t)INT64_MAX)
            return -EFAULT;
        if (chunk > max - have)
            chunk = max - have;
        r = pread(mem, buf + have, chunk, (off_t)at);
        if (r <= 0)
            return -EFAULT;
        if (memchr(buf + have, '\0', (size_t)r))
            return 0;
        have += (size_t)r;
    }
    return too_long;
}

/* The worker's list changes; the supervisor's copy follows (one atomic write). */
static void record(struct rv_broker_ctx *ctx, enum rv_broker_event ev, const struct rv_broker_mount *m)
{
    struct rv_broker_record r = { ev, *m };

    if (ev == RV_EV_MOUNTED)
        rv_mount_set_add(ctx->mounts, m);
    else
        rv_mount_set_remove(ctx->mounts, m);
    if (write(ctx->record_fd, &r, sizeof(r)) < 0) {
        /* the supervisor is gone; we follow it soon (parent-death signal) */
    }
}

static int answer(struct rv_broker_ctx *ctx, uint64_t id, int error)
{
    struct rv_seccomp_notif_resp resp = { .id = id, .val = 0, .error = error, .flags = 0 };
    return ioctl(ctx->notify_fd, RV_SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* Enter the container's mount namespace: setns makes our root and working
 * directory the namespace's root, the container's own root file system,
 * whatever root the caller chrooted into. The caller must be in the
 * container's namespace (the one its init had when the runtime handed it
 * over) and in our user namespace or the container's own (a namespace the
 * tenant made below it would own its /dev/fuse file, and the mount could
 * not take it). */
static int enter(struct rv_broker_ctx *ctx, const struct caller *c, struct place *pl)
{
    struct rv_statx sx;

    if (c->ns == NS_OTHER)
        return -EPERM;
    if (ctx->container_mntns >= 0 && !same_ns(ctx->container_mntns, c->mntns, NULL))
        return -EPERM;
    if (setns(c->mntns, CLONE_NEWNS) < 0)
        return -EPERM;
    if (rv_statx(AT_FDCWD, "/", RV_AT_STATX_DONT_SYNC, RV_STATX_INO, &sx) < 0 ||
        !(sx.stx_mask & RV_STATX_MNT_ID))
        return -EPERM;
    pl->root.mnt_id = (int)sx.stx_mnt_id;
    pl->root.dev_major = sx.stx_dev_major;
    pl->root.dev_minor = sx.stx_dev_minor;
    pl->root_ino = sx.stx_ino;
    return 0;
}

/* Mount id, device and mount-root flag of an fd, without asking a FUSE
 * daemon (AT_STATX_DONT_SYNC: FUSE answers from the inode as cached). Without
 * mode nothing of the file is asked for: the VFS fills those in itself, and a
 * FUSE mount that we may not use (a user namespace's, whose daemon answers
 * only that namespace) still says them. */
static int mount_of(int fd, struct rv_broker_mount *m, bool *is_root, unsigned *mode)
{
    struct rv_statx sx;

    if (rv_statx(fd, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, mode ? RV_STATX_TYPE : 0, &sx) < 0)
        return -errno;
    if (!(sx.stx_mask & RV_STATX_MNT_ID))
        return -ENOSYS;
    m->mnt_id = (int)sx.stx_mnt_id;
    m->dev_major = sx.stx_dev_major;
    m->dev_minor = sx.stx_dev_minor;
    if (is_root)
        *is_root = (sx.stx_attributes_mask & RV_STATX_ATTR_MOUNT_ROOT) &&
                   (sx.stx_attributes & RV_STATX_ATTR_MOUNT_ROOT);
    if (mode)
        *mode = sx.stx_mode;
    return 0;
}

char *rv_broker_read_proc(int dirfd, const char *path)
{
    cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    cleanup_free char *text = NULL;
    size_t have = 0, cap = 16384;
    ssize_t r;

    if (fd < 0 || !(text = malloc(cap + 1)))
        return NULL;
    for (;;) {
        if (have == cap) {
            char *nt;
            if (cap >= MOUNTINFO_MAX || !(nt = realloc(text, cap * 4 + 1)))
                return NULL;
            text = nt;
            cap *= 4;
        }
        r = read(fd, text + have, cap - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return NULL;
        if (r == 0)
            break;
        have += (size_t)r;
    }
    text[have] = '\0';
    return move_ptr(text);
}

/* The container's mount table as the kernel writes it (no file system is
 * asked), read once per request. */
static const char *mountinfo(struct rv_broker_ctx *ctx, struct place *pl)
{
    if (!pl->mountinfo)
        pl->mountinfo = rv_broker_read_proc(ctx->hostproc, "thread-self/mountinfo");
    return pl->mountinfo;
}

/* File systems a FUSE mount never goes on, and that are never looked up in. */
static bool kernel_fs(const char *fstype)
{
    static const char *const names[] = {
        "proc", "sysfs", "devpts", "devtmpfs", "mqueue", "cgroup", "cgroup2", "securityfs",
        "debugfs", "tracefs", "bpf", "pstore", "efivarfs", "configfs", "binfmt_misc", "fusectl",
        "hugetlbfs", "selinuxfs", "nsfs", "autofs", "rpc_pipefs", "fuseblk", NULL };

    if (strcmp(fstype, "fuse") == 0 || strncmp(fstype, "fuse.", 5) == 0)
        return true;
    for (size_t i = 0; names[i]; i++)
        if (strcmp(fstype, names[i]) == 0)
            return true;
    return false;
}

/* Whether the mount holding fd is a place for FUSE: the container's root
 * file system, or a volume: a mount whose root is the host directory or
 * file the engine bound (same device and inode), and that is neither FUSE
 * nor a kernel file system. fd must be a directory or the mount's root (a
 * file bind). Nothing is asked of a file system: ".." never reaches one. */
static bool place_ok(struct rv_broker_ctx *ctx, struct place *pl, int fd)
{
    struct rv_broker_mount m, up;
    char fstype[256];
    const char *mi;
    unsigned maj, min, mode;
    bool root, shared, ok = false;
    struct stat st;
    int cur, next;

    if (mount_of(fd, &m, &root, &mode) < 0)
        return false;
    if (m.mnt_id == pl->root.mnt_id && m.dev_major == pl->root.dev_major &&
        m.dev_minor == pl->root.dev_minor)
        return true;
    for (unsigned i = 0; i < pl->n_seen; i++)
        if (pl->seen[i].mount.mnt_id == m.mnt_id && pl->seen[i].mount.dev_major == m.dev_major &&
            pl->seen[i].mount.dev_minor == m.dev_minor)
            return pl->seen[i].ok;
    if (ctx->n_vol_ids == 0 || !(mi = mountinfo(ctx, pl)) ||
        rv_mountinfo_find(mi, m.mnt_id, fstype, sizeof(fstype), &maj, &min, &shared) < 0 ||
        maj != m.dev_major || min != m.dev_minor || kernel_fs(fstype) || (!root && !S_ISDIR(mode)))
        goto out;
    /* up to the mount's root, within this mount (".." is the dentry's parent) */
    cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    for (int steps = 0; cur >= 0 && !root && steps < PATH_MAX / 2; steps++) {
        next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(cur);
        cur = next;
        if (cur < 0 || mount_of(cur, &up, &root, NULL) < 0 || up.mnt_id != m.mnt_id) {
            root = false;
            break;
        }
    }
    if (cur >= 0 && root && fstat(cur, &st) == 0)
        for (size_t i = 0; i < ctx->n_vol_ids && !ok; i++)
            ok = st.st_dev == ctx->vol_ids[i].dev && st.st_ino == ctx->vol_ids[i].ino;
    if (cur >= 0)
        close(cur);
out:
    if (pl->n_seen < sizeof(pl->seen) / sizeof(pl->seen[0])) {
        pl->seen[pl->n_seen].mount = m;
        pl->seen[pl->n_seen++].ok = ok;
    }
    return ok;
}

static bool same_dir(int a, int b)
{
    struct rv_statx x, y;

    return rv_statx(a, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_INO, &x) == 0 &&
           rv_statx(b, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_INO, &y) == 0 &&
           x.stx_mnt_id == y.stx_mnt_id && x.stx_ino == y.stx_ino &&
           x.stx_dev_major == y.stx_dev_major && x.stx_dev_minor == y.stx_dev_minor;
}

/* After EACCES: the root of a FUSE mount that only its user namespace may
 * use (a user-namespaced container's) has no type for us, but is a mount
 * root, never a link; as the last component that is all a walk needs. */
static bool unusable_mount_root(int fd, struct rv_statx *sx)
{
    if (errno != EACCES || rv_statx(fd, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, 0, sx) < 0 ||
        !(sx->stx_attributes_mask & sx->stx_attributes & RV_STATX_ATTR_MOUNT_ROOT)) {
        errno = EACCES;
        return false;
    }
    sx->stx_mode = 0;   /* not a directory either: the walk goes no further */
    return true;
}

/* The target as the caller's own call would find it (from its root or its
 * working directory, symlinks followed as the kernel would, ".." stopping at
 * its root), but one component at a time, and each looked up only in a
 * directory that is a place for FUSE (place_ok): never in a tenant's FUSE
 * file system (whose daemon may never answer), never in /proc (so no magic
 * link), never in anything else the runtime mounted. The final component is
 * looked up, not entered: a FUSE mount's root is reached without asking its
 * daemon. Gives the target fd, and its parent directory and name (-1 and ""
 * when the path ends in "/", "." or ".."). Negative errno on failure. */
static int walk(struct rv_broker_ctx *ctx, struct place *pl, const struct caller *c,
                const char *path, bool follow, int *parent, char name[NAME_MAX + 1])
{
    char buf[2 * RV_MOUNT_STR_MAX], link[RV_MOUNT_STR_MAX];
    cleanup_close int dir = -1;
    unsigned links = 0;
    char *p = buf;
    int fd, r;

    *parent = -1;
    name[0] = '\0';
    if (!*path)
        return -ENOENT;
    if (rv_snprintf(buf, sizeof(buf), "%s", path) < 0)
        return -ENAMETOOLONG;
    if ((dir = fcntl(path[0] == '/' ? c->root : c->cwd, F_DUPFD_CLOEXEC, 3)) < 0)
        return -EPERM;
    for (;;) {
        char *comp;
        size_t len;
        bool last;

        while (*p == '/')
            p++;
        if (!*p)
            return move_fd(dir);
        comp = p;
        len = strcspn(p, "/");
        p += len;
        if (*p)
            *p++ = '\0';
        while (*p == '/')
            p++;
        last = !*p;
        if (len > NAME_MAX)
            return -ENAMETOOLONG;
        if (!place_ok(ctx, pl, dir))
            return -EPERM;
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            if (same_dir(dir, c->root))
                continue;
            if ((fd = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
                return -errno;
            close(dir);
            dir = fd;
            continue;
        }
        if ((fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return -errno;
        struct rv_statx sx;
        if (rv_statx(fd, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_TYPE, &sx) < 0 &&
            !unusable_mount_root(fd, &sx)) {
            r = -errno;
            close(fd);
            return r;
        }
        if (S_ISLNK(sx.stx_mode) && (!last || follow)) {
            /* the link is in dir's mount, a place for FUSE: read as is */
            ssize_t n = readlinkat(fd, "", link, sizeof(link) - 1);
            close(fd);
            if (n <= 0)
                return n == 0 ? -ENOENT : -errno;
            if (++links > 40)
                return -ELOOP;
            link[n] = '\0';
            if (rv_snprintf(buf + sizeof(buf) / 2, sizeof(buf) / 2, "%s/%s", link, p) < 0)
                return -ENAMETOOLONG;
            memmove(buf, buf + sizeof(buf) / 2, strlen(buf + sizeof(buf) / 2) + 1);
            p = buf;
            if (link[0] == '/') {
                if ((fd = fcntl(c->root, F_DUPFD_CLOEXEC, 3)) < 0)
                    return -EPERM;
                close(dir);
                dir = fd;
            }
            continue;
        }
        if (last) {
            memcpy(name, comp, len + 1);
            *parent = move_fd(dir);
            return fd;
        }
        if (!S_ISDIR(sx.stx_mode)) {
            close(fd);
            return -ENOTDIR;
        }
        close(dir);
        dir = fd;
    }
}

/* A FUSE mount goes on a place for FUSE, and never on the container's root
 * itself, nor on a mount that propagates out (shared). The target is judged
 * by the mount that holds it: itself if it is a mount's root, else its
 * directory's. */
static int place_for_mount(struct rv_broker_ctx *ctx, struct place *pl, int target, int parent,
                           const char **why)
{
    struct rv_broker_mount m;
    char fstype[256];
    unsigned maj, min, mode;
    bool root, shared;
    const char *mi;
    struct rv_statx sx;

    if (mount_of(target, &m, &root, &mode) < 0)
        REFUSE("target's mount unknown", -EPERM);
    if (root && m.mnt_id == pl->root.mnt_id) {
        if (rv_statx(target, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_INO, &sx) < 0 ||
            sx.stx_ino == pl->root_ino)
            REFUSE("target is the container's root", -EPERM);
    }
    if (!place_ok(ctx, pl, root || S_ISDIR(mode) || parent < 0 ? target : parent))
        REFUSE("target is not on the container's root file system or a volume (/proc, /sys, "
               "/dev, a view, a mask, an engine file, a FUSE mount, ...)", -EPERM);
    if (!(mi = mountinfo(ctx, pl)) ||
        rv_mountinfo_find(mi, m.mnt_id, fstype, sizeof(fstype), &maj, &min, &shared) < 0)
        REFUSE("target's mount unknown", -EPERM);
    if (shared)
        REFUSE("target is on a shared mount (it would propagate out)", -EPERM);
    return 0;
}

struct mount_args {
    char fstype[RV_MOUNT_STR_MAX], source[RV_MOUNT_STR_MAX], target[RV_MOUNT_STR_MAX];
    char data[RV_MOUNT_DATA_MAX];
    bool has_source;
};

/* The messages the kernel left in a file system context ("e fuse: ..."). */
static void kernel_words(int fs, char *msg, size_t size)
{
    ssize_t n = read(fs, msg, size - 1);

    msg[n > 0 ? n : 0] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
}

/* "what: the kernel's words" into c->why: from the context fs, or as they
 * are in c->why already (fs -1). */
static const char *refusal(struct caller *c, const char *what, int fs)
{
    char words[sizeof(c->why)];

    if (fs >= 0)
        kernel_words(fs, c->why, sizeof(c->why));
    snprintf(words, sizeof(words), "%s", c->why);
    snprintf(c->why, sizeof(c->why), "%s%s%s", what, *words ? ": " : "", words);
    return c->why;
}

static int set_string(int fs, const char *key, const char *val)
{
    return rv_fsconfig(fs, RV_FSCONFIG_SET_STRING, key, val, 0) < 0 ? -errno : 0;
}

static int set_flag(int fs, const char *key)
{
    return rv_fsconfig(fs, RV_FSCONFIG_SET_FLAG, key, NULL, 0) < 0 ? -errno : 0;
}

/* fsopen("fuse") with the options rebuilt from what was checked, all but the
 * creation. On failure, the kernel's own words about it go into msg. */
static int fuse_context(const struct mount_args *a, const struct rv_fuse_opts *o,
                        const char *subtype, const struct rv_mount_flags *fl, int fuse_fd,
                        char *msg, size_t size)
{
    cleanup_close int fs = rv_fsopen("fuse", RV_FSOPEN_CLOEXEC);
    char num[32];
    int r = 0;

    if (fs < 0)
        return -errno;
    if (a->has_source)
        r = set_string(fs, "source", a->source);
    if (!r && *subtype)
        r = set_string(fs, "subtype", subtype);
    snprintf(num, sizeof(num), "%d", fuse_fd);
    if (!r)
        r = set_string(fs, "fd", num);
    snprintf(num, sizeof(num), "%o", o->rootmode);
    if (!r)
        r = set_string(fs, "rootmode", num);
    snprintf(num, sizeof(num), "%u", (unsigned)o->user_id);
    if (!r)
        r = set_string(fs, "user_id", num);
    snprintf(num, sizeof(num), "%u", (unsigned)o->group_id);
    if (!r)
        r = set_string(fs, "group_id", num);
    if (!r && o->default_permissions)
        r = set_flag(fs, "default_permissions");
    if (!r && o->allow_other)
        r = set_flag(fs, "allow_other");
    snprintf(num, sizeof(num), "%u", o->max_read);
    if (!r && o->has_max_read)
        r = set_string(fs, "max_read", num);
    if (!r && fl->ro)
        r = set_flag(fs, "ro");
    if (!r && fl->sync)
        r = set_flag(fs, "sync");
    if (!r && fl->dirsync)
        r = set_flag(fs, "dirsync");
    if (!r && fl->lazytime)
        r = set_flag(fs, "lazytime");
    if (r < 0) {
        kernel_words(fs, msg, size);
        return r;
    }
    return move_fd(fs);
}

/* What a child that made a context answers, with the context. */
struct made {
    int err;
    char msg[120];
};

/* fuse_context as the container's user namespace. A file system context
 * belongs to the user namespace of whoever opened it, FUSE takes only a
 * /dev/fuse file opened in that same namespace (the caller's), and
 * user_id/group_id count in the terms of whoever sets them (kernels >= 6.11;
 * before, in the context's: the same here). We cannot leave a user namespace
 * once in it, so a child enters it, makes the context, hands it over and
 * exits; the creation, fsmount and move_mount stay here, with the host's
 * privilege over the namespace (the kernel forces nodev, and only the
 * namespace's own processes may use the mount, allow_other or not). The
 * child is charged as we are now, keeps only what it needs (the caller's
 * /dev/fuse at the number fd= names, which ours keeps until the creation),
 * and cannot be traced (not dumpable: its memory is the host namespace's);
 * the tenant's root may signal it, which fails only its own request. One that
 * does not answer within RV_BROKER_LOCK_MS is killed. Runs before the node's
 * table lock. */
static int fuse_context_as(int userns, const struct mount_args *a, const struct rv_fuse_opts *o,
                           const char *subtype, const struct rv_mount_flags *fl, int fuse_fd,
                           char *msg, size_t size)
{
    struct made made = { .err = EIO };
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &made, sizeof(made) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf) };
    struct pollfd pfd;
    int sp[2], fs = -1, status;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return -errno;
    pid = fork();
    if (pid == 0) {
        int keep[3] = { sp[1], userns, fuse_fd };
        prctl(PR_SET_DUMPABLE, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (rv_close_all_but(keep, 3) < 0 || setns(userns, CLONE_NEWUSER) < 0)
            fs = -errno;
        else
            fs = fuse_context(a, o, subtype, fl, fuse_fd, made.msg, sizeof(made.msg));
        made.err = fs < 0 ? -fs : 0;
        if (fs < 0) {
            m.msg_control = NULL;
            m.msg_controllen = 0;
        } else {
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fs, sizeof(int));
        }
        _exit(sendmsg(sp[1], &m, MSG_NOSIGNAL) < 0);
    }
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        return -EAGAIN;   /* the container's pids limit, most likely */
    }
    pfd = (struct pollfd){ .fd = sp[0], .events = POLLIN };
    if (poll(&pfd, 1, RV_BROKER_LOCK_MS) == 1 && recvmsg(sp[0], &m, MSG_CMSG_CLOEXEC) > 0 &&
        rv_msg_take_fds(&m, &fs, 0, 1) == 1 && made.err) {
        close(fs);
        fs = -1;
    }
    close(sp[0]);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    made.msg[sizeof(made.msg) - 1] = '\0';
    snprintf(msg, size, "%s", made.msg);
    return fs >= 0 ? fs : -(made.err ? made.err : EIO);
}

/* In a child: take on the caller's credentials (in its user namespace, its
 * supplementary groups, file-system ids and effective capabilities) and ask
 * the kernel whether they may write target (and search it, a directory).
 * Returns 0 or an errno. */
static int access_as(const struct rv_mount_caller *ids, int userns, int target, bool dir)
{
    struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };   /* capability v3 */
    struct { uint32_t eff, perm, inh; } cap[2];
    struct stat st;

    if (userns >= 0 && setns(userns, CLONE_NEWUSER) < 0)
        return errno;
    if (setgroups(ids->n_groups, ids->groups) < 0)
        return errno;
    setfsgid(ids->fsgid);
    setfsuid(ids->fsuid);
    if ((gid_t)setfsgid((gid_t)-1) != ids->fsgid || (uid_t)setfsuid((uid_t)-1) != ids->fsuid)
        return EPERM;
    /* a new fsuid dropped the file capabilities: the caller's, no more */
    if (syscall(SYS_capget, &hdr, cap) < 0)
        return errno;
    for (int i = 0; i < 2; i++) {
        cap[i].eff = (uint32_t)(ids->cap_eff >> (32 * i)) & cap[i].perm;
        cap[i].inh = 0;
    }
    if (syscall(SYS_capset, &hdr, cap) < 0)
        return errno;
    if (syscall(RV_NR_faccessat2, target, "", W_OK | (dir ? X_OK : 0), AT_EACCESS | AT_EMPTY_PATH) < 0)
        return errno;
    if (dir && (fstat(target, &st) < 0 || ((st.st_mode & S_ISVTX) && st.st_uid != ids->fsuid)))
        return EPERM;
    return 0;
}

/* fusermount's rule for a caller that is not the container's root: it must
 * be able to write the mount point with its own credentials (and search it, a
 * directory), and own a sticky directory; so a user cannot put a file system
 * of its own over what root reads (/etc/shadow, sudoers, root's scripts).
 * The kernel decides (modes, ACLs, capabilities, a read-only mount, an
 * immutable file), asked by a child as the caller: this process keeps the
 * host's credentials. The target is on the container's root file system or
 * a volume (the walk and the place said so), never on a tenant's FUSE. The
 * container's root mounts where mount(2) would let it, as libfuse does.
 * Returns 0 or a negative errno. */
static int caller_may_mount_on(struct rv_broker_ctx *ctx, const struct caller *c, int target,
                               bool dir)
{
    struct pollfd pfd;
    int status = 0, r = -EPERM;
    pid_t pid;

    if (c->ids.fsuid == 0)
        return 0;
    if (!c->ids.creds_ok)
        return -EPERM;   /* its groups or capabilities unknown: not as the caller */
    pid = fork();
    if (pid == 0) {
        int userns = c->ns == NS_CONTAINER ? ctx->container_userns : -1;
        int keep[2] = { target, userns }, e;
        prctl(PR_SET_DUMPABLE, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        e = rv_close_all_but(keep, 2) < 0 ? EPERM : access_as(&c->ids, userns, target, dir);
        _exit(e > 0 && e < 256 ? e : e ? EPERM : 0);
    }
    if (pid < 0)
        return -EAGAIN;   /* the container's pids limit, most likely */
    pfd = (struct pollfd){ .fd = rv_pidfd_open(pid, 0), .events = POLLIN };
    if (pfd.fd < 0 || poll(&pfd, 1, RV_BROKER_LOCK_MS) != 1)
        kill(pid, SIGKILL);   /* no answer in time (or no way to wait for one): refused */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pfd.fd >= 0)
        close(pfd.fd);
    if (WIFEXITED(status))
        r = -WEXITSTATUS(status);
    return r;
}

/* Lazily detach the mount fd points at (through /proc/thread-self/fd/N of the
 * broker's /proc, so exactly that mount, whatever its path says now). */
static int detach_fd(struct rv_broker_ctx *ctx, int fd)
{
    char p[64];

    snprintf(p, sizeof(p), "thread-self/fd/%d", fd);
    if (fchdir(ctx->hostproc) < 0 || umount2(p, MNT_DETACH) < 0)
        return -errno;
    return 0;
}

/* The work for a container is charged to the container's own cgroups
 * (memory, kernel memory included, and pids), as `runc exec` joins them: a
 * FUSE mount's superblock, connection and mount are kernel memory. Joined
 * for the request, left after it (a worker outside a request holds nothing
 * of the container's, and never keeps its cgroup from being removed). */
static int charge(struct rv_broker_ctx *ctx, bool join)
{
    const int *fds = join ? ctx->cg_join : ctx->cg_home;

    if (ctx->charged == join)
        return 0;
    ctx->charged = join;
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
            return -1;
    return 0;
}

/* One mount of the container at a time, from the walk to the attach,
 * whichever worker serves it (a replaced one that woke up included): two
 * calls for the same target cannot both find it free and stack two mounts. */
static int mount_lock(struct rv_broker_ctx *ctx)
{
    struct timespec until;
    int r;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RV_BROKER_LOCK_MS / 1000;
    r = pthread_mutex_timedlock(&ctx->shared->mount_lock, &until);
    if (r == EOWNERDEAD)
        r = pthread_mutex_consistent(&ctx->shared->mount_lock);
    return r == 0 ? 0 : -EAGAIN;
}

/* The file system from its context, charged to the container (the worker is
 * in its cgroups), before the node's lock: creating the superblock and its
 * mount allocates kernel memory, which a container at its memory limit makes
 * wait (reclaim; memory.high throttles on the way back from the call). Its
 * root is asked nothing (AT_STATX_DONT_SYNC). The caller's /dev/fuse goes as
 * soon as the superblock holds the connection. */
static int fs_create(struct caller *c, const struct rv_mount_flags *fl, struct rv_broker_mount *m,
                     const char **why)
{
    int r = rv_fsconfig(c->fs, RV_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ? -errno : 0;

    close(c->fuse_fd);
    c->fuse_fd = -1;
    if (r < 0)
        REFUSE(refusal(c, "fsconfig create", c->fs), r);
    if ((c->mnt = rv_fsmount(c->fs, RV_FSMOUNT_CLOEXEC, fl->attrs)) < 0)
        REFUSE("fsmount", -errno);
    if (mount_of(c->mnt, m, NULL, NULL) < 0)
        REFUSE("mount id of the new mount", -EPERM);
    return 0;
}

/* Under the node's table lock, in the broker's own cgroups, where nothing may
 * wait on a tenant: count what the container and the node hold (file systems
 * the kernel has not freed, however they were detached) and enter the new
 * one; fusectl is the node's own. One over a cap is refused, and freed with
 * c->mnt and c->fs. Attaching it (move_mount) is the caller's, after. */
static int fs_count(struct rv_broker_ctx *ctx, const struct rv_broker_mount *m, const char **why)
{
    uint32_t dev = (m->dev_major << 20) | m->dev_minor;   /* fusectl names it by dev_t */
    uint64_t ino;

    ctx->cap_hit = rv_held_admit(ctx->held, ctx->fusectl, ctx->key, ctx->max_mounts,
                                 ctx->max_mounts_node);
    if (ctx->cap_hit == 1)
        REFUSE("the container holds fuse.max_mounts FUSE file systems", -ENOSPC);
    if (ctx->cap_hit == 2)
        REFUSE("the node holds fuse.max_mounts_node FUSE file systems", -ENOSPC);
    if (rv_held_ino(ctx->fusectl, dev, &ino) < 0)
        REFUSE("the new file system's connection is not in fusectl", -EPERM);
    if (rv_held_add(ctx->held, ctx->key, dev, ino) < 0)
        REFUSE("the node's table of FUSE file systems is full", -ENOSPC);
    return 0;
}

static int mount_locked(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                        struct caller *c, struct mount_args *a, struct place *pl,
                        const struct rv_mount_flags *fl, const struct rv_fuse_opts *o,
                        const char *subtype, const char **why)
{
    struct rv_broker_mount m;
    char name[NAME_MAX + 1];
    struct rv_statx sx;
    struct stat st;
    int r;

    if ((r = walk(ctx, pl, c, a->target, true, &c->parent, name)) < 0)
        REFUSE(r == -EPERM ? "target: a path through a place that is not the container's root "
                             "file system or a volume (/proc, /sys, a FUSE mount, ...)"
                           : "target", r);
    c->target = r;
    /* the type from the inode as cached: a FUSE daemon is not asked */
    if (rv_statx(c->target, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_TYPE, &sx) < 0)
        REFUSE("target", -errno);
    if (!S_ISDIR(sx.stx_mode) && !S_ISREG(sx.stx_mode))
        REFUSE("target is neither a directory nor a regular file", -EPERM);
    if (S_ISDIR(sx.stx_mode) != ((o->rootmode & S_IFMT) == S_IFDIR))
        REFUSE("rootmode does not match the target", -ENOTDIR);
    if ((r = place_for_mount(ctx, pl, c->target, c->parent, why)) < 0)
        return r;
    if (charge(ctx, true) < 0)
        REFUSE("cannot join the container's cgroups (to charge it for the mount)", -ENOMEM);
    if (c->ids.fsuid != 0 && !c->ids.creds_ok) {
        snprintf(c->why, sizeof(c->why), "the caller (uid %u in its user namespace, not root) cannot "
                 "be checked as itself for fusermount's rule (may it write the mount point?): %s",
                 (unsigned)c->ids.fsuid, c->ids.creds_why ? c->ids.creds_why : "its credentials unread");
        REFUSE(c->why, -EPERM);
    }
    if ((r = caller_may_mount_on(ctx, c, c->target, S_ISDIR(sx.stx_mode))) < 0) {
        snprintf(c->why, sizeof(c->why), "the caller (uid %u in its user namespace, not root) "
                 "may not write the mount point: %s (fusermount's rule)", (unsigned)c->ids.fsuid,
                 strerror(-r));
        REFUSE(c->why, r == -EAGAIN ? r : -EPERM);
    }
    /* The caller's own descriptor, which must be /dev/fuse; held only until
     * the superblock exists (it must not keep a connection alive while
     * anything below waits). */
    c->fuse_fd = rv_pidfd_getfd(c->pidfd, o->fd, 0);
    if (c->fuse_fd < 0)
        REFUSE("fd= is not an open descriptor of the caller", -EINVAL);
    if (fstat(c->fuse_fd, &st) < 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != makedev(RV_FUSE_MAJOR, RV_FUSE_MINOR))
        REFUSE("fd= is not /dev/fuse", -EINVAL);
    /* the context before the node's lock: nothing under it waits on a tenant */
    if (c->ns == NS_CONTAINER)
        r = fuse_context_as(ctx->container_userns, a, o, subtype, fl, c->fuse_fd, c->why,
                            sizeof(c->why));
    else
        r = fuse_context(a, o, subtype, fl, c->fuse_fd, c->why, sizeof(c->why));
    if (r < 0)
        REFUSE(refusal(c, "fsconfig", -1), r);
    c->fs = r;
    if ((r = fs_create(c, fl, &m, why)) < 0)
        return r;
    m.owner = (unsigned)o->user_id;
    if (charge(ctx, false) < 0)
        REFUSE("cannot go back to the broker's own cgroups (to take the node's lock)", -ENOMEM);
    if (rv_held_lock(ctx->held) < 0)
        REFUSE("the node's table of FUSE file systems is busy", -EAGAIN);
    r = fs_count(ctx, &m, why);
    rv_held_unlock(ctx->held);
    if (r < 0)
        return r;
    /* After the node's lock: this may wait as long as the tenant holds the
     * target's inode lock, which only its own requests wait for. A move that
     * fails leaves the file system to be freed with c->mnt and c->fs (closed
     * with the caller's handles), and its entry in the table with it. */
    if (rv_move_mount(c->mnt, "", c->target, "", RV_MOVE_MOUNT_F_EMPTY_PATH | RV_MOVE_MOUNT_T_EMPTY_PATH) < 0)
        REFUSE("move_mount", -errno);
    if (answer(ctx, n->id, 0) < 0) {
        /* The caller is gone (killed, or interrupted and restarting): no one
         * knows of this mount; take it away (the table lets it go when the
         * kernel frees it). */
        detach_fd(ctx, c->mnt);
        REFUSE("mounted, but the caller was gone: detached again", GONE);
    }
    /* after the node's lock: a record may wait for the supervisor to read */
    record(ctx, RV_EV_MOUNTED, &m);
    REFUSE(c->mounted, ANSWERED);
}

static int do_mount(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                    struct caller *c, struct mount_args *a, struct place *pl, const char **why)
{
    struct rv_mount_flags fl;
    struct rv_fuse_opts o;
    char subtype[RV_FUSE_SUBTYPE_MAX];
    int r;

    if ((r = rv_mountreq_flags(n->data.args[3], &fl)) < 0)
        REFUSE("flags (bind, move, remount, propagation or unknown)", r);
    if (n->data.args[2] == 0)
        REFUSE("no file system type", -EINVAL);
    if ((r = read_string(c->mem, n->data.args[2], a->fstype, sizeof(a->fstype), -EINVAL)) < 0)
        REFUSE("file system type unreadable", r);
    if ((r = read_string(c->mem, n->data.args[1], a->target, sizeof(a->target), -ENAMETOOLONG)) < 0)
        REFUSE("target unreadable", r);
    if ((r = rv_mountreq_fstype(a->fstype, subtype)) < 0)
        REFUSE("file system type", r);
    a->has_source = n->data.args[0] != 0;
    if (a->has_source &&
        (r = read_string(c->mem, n->data.args[0], a->source, sizeof(a->source), -EINVAL)) < 0)
        REFUSE("source unreadable", r);
    if (n->data.args[4] == 0)
        REFUSE("no options (fd= is required)", -EINVAL);
    if ((r = read_string(c->mem, n->data.args[4], a->data, sizeof(a->data), -EINVAL)) < 0)
        REFUSE("options unreadable", r);
    if (c->ns == NS_OTHER)
        REFUSE("the caller is in a user namespace neither the host's nor the container's", -EPERM);
    /* allow_other: where the node allows it, or asked by the container's root
     * in its own user namespace (the mount is then the namespace's alone);
     * never by another user there, who would put its files before root */
    if ((r = rv_mountreq_options(a->data, &c->ids,
                                 ctx->allow_other || (c->ns == NS_CONTAINER && c->ids.fsuid == 0),
                                 &o)) < 0)
        REFUSE(r == -EPERM ? "options (allow_other without fuse.allow_other and not from the "
                             "container's root in its own user namespace, or user_id/group_id "
                             "not the caller's)"
                           : "options", r);
    c->mounted = !o.allow_other ? "mounted"
                 : ctx->allow_other ? "mounted (allow_other: fuse.allow_other)"
                                    : "mounted (allow_other: the container's root, in its user namespace)";
    if (*o.subtype) {
        if (*subtype)
            REFUSE("subtype given twice", -EINVAL);
        strcpy(subtype, o.subtype);
    }
    if ((r = enter(ctx, c, pl)) < 0)
        REFUSE("cannot enter the container's mount namespace (the caller is in another mount or "
               "user namespace?)", r);
    if (!ctx->held || ctx->fusectl < 0)
        REFUSE("the node's table of FUSE file systems is unavailable (see the broker's start)", -EPERM);
    if ((r = mount_lock(ctx)) < 0)
        REFUSE("another mount of this container is blocked", r);
    r = mount_locked(ctx, n, c, a, pl, &fl, &o, subtype, why);
    pthread_mutex_unlock(&ctx->shared->mount_lock);
    return r;
}

/* umount2 without MNT_DETACH must see whether the mount is busy, which our
 * own fd on it would make it: unmount by name from its parent directory
 * (from the walk) instead, after checking that the name still holds this
 * mount. Requests run one at a time (a replaced worker still inside one makes
 * this EBUSY), and mount points cannot be renamed. The target may be a
 * regular file (a FUSE mount over one file). */
static int umount_by_name(struct caller *c, const char *name, const struct rv_broker_mount *m,
                          int flags)
{
    cleanup_close int again = -1;
    struct rv_broker_mount m2;
    bool root;

    if (c->parent < 0 || !*name)
        return -EINVAL;
    again = openat(c->parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (again < 0 || mount_of(again, &m2, &root, NULL) < 0 || !root || m2.mnt_id != m->mnt_id)
        return -EBUSY;
    close(move_fd(again));
    close(c->target);
    c->target = -1;
    if (fchdir(c->parent) < 0 || umount2(name, flags | UMOUNT_NOFOLLOW) < 0)
        return -errno;
    return 0;
}

static int do_umount(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                     enum rv_broker_call call, struct caller *c, struct mount_args *a,
                     struct place *pl, const char **why)
{
    uint64_t flags = call == RV_CALL_UMOUNT2 ? n->data.args[1] : 0;
    const struct rv_broker_mount *made;
    char name[NAME_MAX + 1];
    struct rv_broker_mount m;
    bool root;
    int r;

    if ((r = rv_mountreq_umount_flags(flags)) < 0)
        REFUSE("flags", r);
    if ((r = read_string(c->mem, n->data.args[0], a->target, sizeof(a->target), -ENAMETOOLONG)) < 0)
        REFUSE("target unreadable", r);
    if ((r = enter(ctx, c, pl)) < 0)
        REFUSE("cannot enter the container's mount namespace (the caller is in another mount or "
               "user namespace?)", r);
    if ((r = walk(ctx, pl, c, a->target, !(flags & UMOUNT_NOFOLLOW), &c->parent, name)) < 0)
        REFUSE(r == -EPERM ? "target: a path through a place that is not the container's root "
                             "file system or a volume (/proc, /sys, a FUSE mount, ...)"
                           : "target", r);
    c->target = r;
    if ((r = mount_of(c->target, &m, &root, NULL)) < 0)
        REFUSE("target's mount unknown", -EPERM);
    if (!root)
        REFUSE("not a mount point", -EINVAL);
    if (!(made = rv_mount_set_find(ctx->mounts, &m)))
        REFUSE("not a FUSE mount this broker made", -EPERM);
    /* fusermount's rule: the container's root, or the user who mounted it */
    if (c->ids.fsuid != 0 && c->ids.uid != made->owner && c->ids.fsuid != made->owner)
        REFUSE("another user's FUSE mount (only its user or the container's root may unmount "
               "it: fusermount's rule)", -EPERM);
    if (flags & MNT_DETACH)
        r = detach_fd(ctx, c->target);
    else if (ctx->others_busy)
        REFUSE("another request of this container is blocked; umount -l works", -EBUSY);
    else
        r = umount_by_name(c, name, &m, (int)(flags & ~(uint64_t)UMOUNT_NOFOLLOW));
    if (r < 0)
        REFUSE("umount", r);
    record(ctx, RV_EV_UNMOUNTED, &m);
    REFUSE("unmounted", 0);
}

static const char *call_name(enum rv_broker_call call)
{
    return call == RV_CALL_MOUNT ? "mount" : call == RV_CALL_UMOUNT ? "umount" : "umount2";
}

/* Served calls at debug level; refusals one by one at first, then every
 * 1000th. The tenant's strings as they came: rv_log escapes them. */
static void log_result(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                       enum rv_broker_call call, const struct mount_args *a, int r, const char *why)
{
    if (r == 0 || r == GONE) {
        ctx->served++;
        rv_log(RV_DEBUG, "fuse broker: %s%s%.63s `%.199s` (tid %u): %s", call_name(call),
               *a->fstype ? " " : "", a->fstype, a->target, n->pid, why);
        return;
    }
    if (++ctx->refused > LOG_REFUSALS && ctx->refused % 1000 != 0)
        return;
    rv_log(RV_INFO, "fuse broker: refused (%s, %lu so far): %s%s%.63s `%.199s` (tid %u): %s",
           strerror(-r), ctx->refused, call == RV_CALL_OTHER ? "system call" : call_name(call),
           *a->fstype ? " " : "", a->fstype, a->target, n->pid, why);
}

/* A cap met: said once per container (every worker asks the same flag), not
 * once per request. */
static void log_cap(struct rv_broker_ctx *ctx)
{
    ctx->refused++;
    if (ctx->cap_hit == 1 && !atomic_exchange(&ctx->shared->said_cap, 1))
        rv_log(RV_WARN, "fuse broker: the container holds %u FUSE file systems (fuse.max_mounts, "
               "detached ones included until the kernel frees them): further mounts get ENOSPC "
               "(said once)", ctx->max_mounts);
    else if (ctx->cap_hit == 2 && !atomic_exchange(&ctx->shared->said_node, 1))
        rv_log(RV_WARN, "fuse broker: the node holds %u FUSE file systems made by brokers "
               "(fuse.max_mounts_node): further mounts get ENOSPC (said once per container; "
               "resview doctor shows who holds them)", ctx->max_mounts_node);
}

int rv_broker_handle(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n)
{
    enum rv_broker_call call = rv_broker_call(n->data.arch, n->data.nr);
    struct place pl = { .n_seen = 0 };
    struct mount_args a;
    struct caller c;
    const char *why = "";
    bool uncharged;
    int pre, r;

    a.fstype[0] = a.source[0] = a.target[0] = a.data[0] = '\0';
    a.has_source = false;
    ctx->cap_hit = 0;
    if (call == RV_CALL_OTHER) {
        r = -ENOSYS;
        why = "not a call the broker answers";
        answer(ctx, n->id, r);
        log_result(ctx, n, call, &a, r, why);
        rv_broker_count_answer(ctx->metrics_dir, call, r);
        return 0;
    }
    if (caller_open(ctx, n, &c, &pre) < 0) {
        caller_close(&c);
        return 0;   /* gone before its arguments were read */
    }
    if (pre < 0) {
        r = pre;
        why = "cannot open the caller's process";
    } else if (call == RV_CALL_MOUNT) {
        r = do_mount(ctx, n, &c, &a, &pl, &why);
    } else {
        r = do_umount(ctx, n, call, &c, &a, &pl, &why);
    }
    if (r == ANSWERED)
        r = 0;
    else if (r <= 0 && answer(ctx, n->id, r) < 0)
        r = GONE;
    caller_close(&c);
    free(pl.mountinfo);
    uncharged = charge(ctx, false) == 0;
    /* Back home: the mount namespace (which also resets root and cwd). Only
     * then log: the log file is opened by its path, which inside the
     * container would name whatever the tenant put there. */
    if (setns(ctx->home_mntns, CLONE_NEWNS) < 0)
        return -1;
    if (!uncharged)
        rv_log(RV_WARN, "fuse broker: cannot go back to the broker's own cgroups: %s",
               strerror(errno));
    if (ctx->cap_hit)
        log_cap(ctx);
    else
        log_result(ctx, n, call, &a, r, why);
    rv_broker_count_answer(ctx->metrics_dir, call, r == GONE ? 0 : r);
    return 0;
}
