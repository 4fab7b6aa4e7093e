/* inject.c - LXCFS views into a container's mount namespace. */
#define _GNU_SOURCE
#include "resview/inject.h"
#include "resview/bounded.h"
#include "resview/proc.h"
#include "syscalls.h"
#include "resview/viewhold.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#define STALE_ROUNDS 8    /* stacked stale mounts taken off one target, at most */

const char *rv_view_state_name(enum rv_view_state s)
{
    switch (s) {
    case RV_VIEW_MOUNTED: return "mounted";
    case RV_VIEW_PRESENT: return "present";
    case RV_VIEW_SKIPPED: return "skipped";
    case RV_VIEW_FAILED: return "failed";
    default: return "todo";
    }
}

int rv_inject_of_pid(struct rv_inject *req, pid_t pid, struct rv_error *err)
{
    char path[64];
    struct statx sx;
    struct stat ns;
    cleanup_close int piddir = -1;

    req->pid = pid;
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if ((piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        rv_pid_start_time(piddir, &req->start_time) < 0)
        return rv_fail(err, errno, "process %d is gone", (int)pid);
    if (fstatat(piddir, "ns/mnt", &ns, 0) < 0)
        return rv_fail(err, errno, "process %d: its mount namespace", (int)pid);
    req->want_mntns = ns.st_ino;
    if (rv_statx(piddir, "root", AT_STATX_DONT_SYNC, STATX_INO, &sx) < 0)
        return rv_fail(err, errno, "process %d: its root", (int)pid);
    req->root_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    req->root_ino = sx.stx_ino;
    return 0;
}

int rv_inject_add(struct rv_inject *req, const char *src, const char *dst)
{
    struct rv_view *v;

    if (req->n >= RV_VIEWS_MAX)
        return -1;
    v = &req->views[req->n];
    memset(v, 0, sizeof(*v));
    while (*src == '/')
        src++;
    while (*dst == '/')
        dst++;
    if (rv_snprintf(v->src, sizeof(v->src), "%s", src) < 0 ||
        rv_snprintf(v->dst, sizeof(v->dst), "%s", dst) < 0 || !*v->src || !*v->dst)
        return -1;
    req->n++;
    return 0;
}

/* Called by walk_each for each component reached (fd on it, path's first
 * len bytes name it, last: it is the target): 0 goes on, -1 (errno set)
 * stops the walk. */
typedef int (*walk_step)(void *arg, int fd, size_t len, bool last);

/* Resolve path under dirfd as if dirfd were "/", following no symlink on
 * the way (a trailing symlink is opened as itself, O_PATH|O_NOFOLLOW), no
 * magic link, no "..", one component at a time; step (if any) sees each
 * component before anything is looked up in it. */
static int walk_each(int dirfd, const char *path, unsigned long flags, walk_step step, void *arg)
{
    char buf[PATH_MAX], *save = NULL, *comp, *next;
    cleanup_close int cur = -1;

    if (rv_snprintf(buf, sizeof(buf), "%s", path) < 0)
        return -1;
    cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return -1;
    comp = strtok_r(buf, "/", &save);
    while (comp) {
        struct stat st;
        int fd, e;
        next = strtok_r(NULL, "/", &save);
        if (strcmp(comp, ".") == 0) {
            comp = next;
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            errno = EXDEV;
            return -1;
        }
        fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (next ? 0 : (int)flags));
        if (fd < 0)
            return -1;
        if (step && step(arg, fd, (size_t)(comp - buf) + strlen(comp), !next) < 0) {
            e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        e = !next ? 0 : fstat(fd, &st) < 0 ? errno
                  : S_ISDIR(st.st_mode) ? 0 : S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        if (e) {
            close(fd);
            errno = e;
            return -1;
        }
        close(cur);
        cur = fd;
        comp = next;
    }
    return move_fd(cur);
}

/* openat2() where the kernel has it (5.6), else walk_each. */
static int openat2_path(int dirfd, const char *path, unsigned long flags)
{
    static bool no_openat2;
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | flags,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd;

    if (!no_openat2) {
        fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        if (fd >= 0 || errno != ENOSYS)
            return fd;
        no_openat2 = true;
    }
    return walk_each(dirfd, path, flags, NULL, NULL);
}

bool rv_inject_walkable(const char *type)
{
    static const char *const local[] = {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "squashfs",
        "tmpfs", "ramfs", "devtmpfs", "proc", "sysfs",
    };

    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
        if (strcmp(type, local[i]) == 0)
            return true;
    return false;
}

static bool is_fuse(const char *type)
{
    return strcmp(type, "fuse") == 0 || strcmp(type, "fuseblk") == 0 ||
           strncmp(type, "fuse.", 5) == 0;
}

#define PINS_MAX 8

/* For check_mounts: what mounts descriptors are on, from fdinfo and the
 * process's mountinfo (no allocation: this runs in the bounded child). A
 * mount id is only reused once its mount is freed: each one looked up stays
 * pinned by a descriptor, so that a later descriptor with the same id is on
 * the same mount. */
struct walk_ctx {
    int self;                          /* our /proc/self: our mountinfo, read once we are
                                          in the container's namespace (at its root: a
                                          chrooted process's own would not list the
                                          mount its root is on) */
    int fdinfo;                        /* our /proc/self/fdinfo */
    int ownns;                         /* our mount namespace, to come back for the clones */
    struct { int pin; struct rv_mount_info mi; } known[PINS_MAX];
    unsigned n;
    char scratch[16384];
};

static void walk_ctx_init(struct walk_ctx *w)
{
    w->self = w->fdinfo = w->ownns = -1;
    w->n = 0;
}

static int walk_ctx_open(struct walk_ctx *w)
{
    w->self = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    w->fdinfo = open("/proc/self/fdinfo", O_PATH | O_DIRECTORY | O_CLOEXEC);
    w->ownns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    return w->self < 0 || w->fdinfo < 0 || w->ownns < 0 ? -1 : 0;
}

static void walk_ctx_close(struct walk_ctx *w)
{
    for (unsigned i = 0; i < w->n; i++)
        close(w->known[i].pin);
    w->n = 0;
    if (w->self >= 0)
        close(w->self);
    if (w->fdinfo >= 0)
        close(w->fdinfo);
    if (w->ownns >= 0)
        close(w->ownns);
    w->self = w->fdinfo = w->ownns = -1;
}

/* The mount fd is on: 0, or -1 (errno; ENOENT: not in the process's mount table). */
static int mount_of(struct walk_ctx *w, int fd, struct rv_mount_info *mi)
{
    unsigned long long id;
    int f, r;

    if (rv_fd_mnt_id(w->fdinfo, fd, &id) < 0)
        return -1;
    for (unsigned i = 0; i < w->n; i++)
        if (w->known[i].mi.id == id) {
            *mi = w->known[i].mi;
            return 0;
        }
    /* read after fd pins the mount: the line found is that mount's */
    f = openat(w->self, "mountinfo", O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return -1;
    r = rv_mountinfo_lookup(f, id, mi, w->scratch, sizeof(w->scratch));
    close(f);
    if (r < 0)
        return -1;
    if (w->n < PINS_MAX) {
        int pin = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (pin >= 0)
            w->known[w->n++] = (typeof(w->known[0])){ pin, *mi };
    }
    return 0;
}

/* A refusal of the whole request: the path is on a mount root does not look into. */
static int refuse_mount(struct rv_inject *req, const char *where, size_t len,
                        const struct rv_mount_info *mi)
{
    req->refused = true;
    if (mi)
        snprintf(req->error, sizeof(req->error), "`/%.*s` is on %s%s: root looks nothing up "
                 "through a file system a user may control", (int)len, where,
                 mi->type[0] ? mi->type : "a file system of an unknown type",
                 is_fuse(mi->type) || strcmp(mi->type, "overlay") == 0 ? "" : " (not a local one)");
    else
        snprintf(req->error, sizeof(req->error), "`/%.*s`: its mount is not in the mount table "
                 "of the namespace of process %d (%s)", (int)len, where, (int)req->pid,
                 strerror(errno));
    errno = EPERM;
    return -1;
}

/* The process's root, checked: on a walkable mount (before anything asks it). */
static int check_root_mount(struct rv_inject *req, struct walk_ctx *w, int rootfd)
{
    struct rv_mount_info mi;

    if (mount_of(w, rootfd, &mi) < 0)
        return refuse_mount(req, "", 0, NULL);
    if (!req->trusted_root && !rv_inject_walkable(mi.type))
        return refuse_mount(req, "", 0, &mi);
    return 0;
}

/* walk_each's step for check_mounts: a name is looked up only in a
 * directory on a mount that is walkable (the walk stops before it looks into
 * one that is not); the last component is opened as itself. */
struct checked {
    struct rv_inject *req;
    struct walk_ctx *w;
    const char *path;
    struct rv_mount_info at, *mi, *dir_mi;   /* the mount of the directory reached */
    bool *own, reached;
};

static int checked_step(void *arg, int fd, size_t len, bool last)
{
    struct checked *k = arg;
    struct rv_mount_info here;

    if (mount_of(k->w, fd, &here) < 0)
        return refuse_mount(k->req, k->path, len, NULL);
    if (last) {
        *k->mi = here;
        *k->dir_mi = k->at;
        *k->own = here.id != k->at.id;
        k->reached = true;
        return 0;
    }
    if (!rv_inject_walkable(here.type))
        return refuse_mount(k->req, k->path, len, &here);
    k->at = here;
    return 0;
}

/* The target's fd, *mi its mount, *dir_mi the mount of the directory it is
 * in, *own whether *mi is a mount of its own (a mount root: a view, or a
 * mount over the target). The root was checked (check_root_mount). */
static int walk_checked(struct rv_inject *req, struct walk_ctx *w, int rootfd, const char *path,
                        struct rv_mount_info *mi, struct rv_mount_info *dir_mi, bool *own)
{
    struct checked k = { .req = req, .w = w, .path = path, .mi = mi, .dir_mi = dir_mi, .own = own };
    int fd;

    if (mount_of(w, rootfd, &k.at) < 0)
        return refuse_mount(req, "", 0, NULL);
    fd = walk_each(rootfd, path, 0, checked_step, &k);
    if (fd >= 0 && !k.reached) {
        close(fd);
        errno = ENOENT;     /* an empty path: not a target */
        return -1;
    }
    return fd;
}

static void view_set(struct rv_view *v, enum rv_view_state s, const char *fmt, ...)
    RV_PRINTF(3, 4);
static void view_set(struct rv_view *v, enum rv_view_state s, const char *fmt, ...)
{
    va_list ap;

    v->state = s;
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(v->why, sizeof(v->why), fmt, ap);
        va_end(ap);
    }
}

static bool keep_dev(const struct rv_inject *req, dev_t d)
{
    for (unsigned i = 0; i < req->n_keep; i++)
        if (req->keep_devs[i] == d)
            return true;
    return false;
}

/* Find the container's root directory: after pivot_root it is the process's
 * root; before (runc's prestart), the rootfs at its host path inside the
 * container's namespace. The directory found must be the rootfs we were
 * given (device and inode), so nothing in the container can redirect us. */
static int open_root(struct rv_inject *req, int piddir)
{
    cleanup_close int proot = -1;
    struct stat want, have;
    int fd;

    proot = openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (proot < 0) {
        if (errno == ENOENT || errno == ESRCH)
            req->gone = true;
        snprintf(req->error, sizeof(req->error), "open /proc/%d/root: %s", (int)req->pid,
                 strerror(errno));
        return -1;
    }
    req->root_how = "process root";
    if (!req->rootfs[0]) {
        /* AT_STATX_DONT_SYNC: the root may be a user's FUSE or overlay (its
         * type is checked once in the namespace, check_root_mount): no
         * request for its attributes */
        struct statx sx;
        if (req->root_ino &&
            (rv_statx(proot, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &sx) < 0 ||
             makedev(sx.stx_dev_major, sx.stx_dev_minor) != req->root_dev ||
             sx.stx_ino != req->root_ino)) {
            req->refused = true;
            snprintf(req->error, sizeof(req->error), "the root of process %d is not the "
                     "recorded one", (int)req->pid);
            return -1;
        }
        return move_fd(proot);
    }
    /* the root recorded at the first injection (after pivot_root) */
    if (req->root_ino && fstat(proot, &have) == 0 && have.st_dev == req->root_dev &&
        have.st_ino == req->root_ino)
        return move_fd(proot);
    if (stat(req->rootfs, &want) < 0) {
        /* the host path is gone (unmounted): the recorded identity still
         * recognises the root of a running container */
        if (req->root_ino && fstat(proot, &have) == 0 && have.st_dev == req->root_dev &&
            have.st_ino == req->root_ino)
            return move_fd(proot);
        snprintf(req->error, sizeof(req->error), "rootfs `%s`: %s", req->rootfs,
                 strerror(errno));
        return -1;
    }
    req->root_dev = want.st_dev;
    req->root_ino = want.st_ino;
    if (fstat(proot, &have) == 0 && have.st_dev == want.st_dev && have.st_ino == want.st_ino)
        return move_fd(proot);
    fd = openat2_path(proot, req->rootfs, O_DIRECTORY);
    if (fd >= 0 && fstat(fd, &have) == 0 && have.st_dev == want.st_dev &&
        have.st_ino == want.st_ino) {
        req->root_how = "rootfs path";
        return fd;
    }
    if (fd >= 0)
        close(fd);
    snprintf(req->error, sizeof(req->error),
             "rootfs `%s` is neither the root of process %d nor visible in its mount namespace",
             req->rootfs, (int)req->pid);
    return -1;
}

/* Whether the namespace nsfd is the one at path (0 where path cannot be
 * looked at: pid 1's, for a hook that is not root). */
static bool same_ns(const struct stat *ns, const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && st.st_dev == ns->st_dev && st.st_ino == ns->st_ino;
}

/* A container's namespace is not ours (but where we run inside it: enroot's
 * hooks), nor the host's, pid 1's where we may look at it (a spec with no
 * mount namespace, a VM-based runtime's process on the host: a view there
 * would cover the host's own /proc). */
static int check_not_host(struct rv_inject *req, int nsfd)
{
    struct stat ns;

    if (fstat(nsfd, &ns) == 0 && (req->in_its_ns || !same_ns(&ns, "/proc/self/ns/mnt")) &&
        !same_ns(&ns, "/proc/1/ns/mnt"))
        return 0;
    req->host_ns = true;
    snprintf(req->error, sizeof(req->error), "process %d is in the host's mount namespace, not a "
             "container's (a runtime without one, or a VM-based runtime): no views", (int)req->pid);
    return -1;
}

int rv_inject_check_host_ns(struct rv_inject *req)
{
    char path[64];
    cleanup_close int nsfd = -1;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)req->pid);
    if ((nsfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;   /* gone: rv_inject_run says so */
    return check_not_host(req, nsfd);
}

/* The namespace is a container's (check_not_host), the recorded one
 * (want_mntns), and a user's (check_owner): owned by a user namespace that
 * uid created, not by ours. */
static int check_namespace(struct rv_inject *req, int nsfd)
{
    struct stat ns, own, self;
    cleanup_close int userns = -1;
    uid_t owner;

    if (check_not_host(req, nsfd) < 0)
        return -1;
    if (req->want_mntns && (fstat(nsfd, &ns) < 0 || ns.st_ino != req->want_mntns)) {
        req->gone = true;
        snprintf(req->error, sizeof(req->error), "process %d left mount namespace %llu",
                 (int)req->pid, (unsigned long long)req->want_mntns);
        return -1;
    }
    if (!req->check_owner)
        return 0;
    userns = ioctl(nsfd, NS_GET_USERNS);
    if (userns < 0 || ioctl(userns, NS_GET_OWNER_UID, &owner) < 0 || fstat(userns, &own) < 0 ||
        stat("/proc/self/ns/user", &self) < 0) {
        req->refused = true;
        snprintf(req->error, sizeof(req->error), "owner of the mount namespace of %d: %s",
                 (int)req->pid, strerror(errno));
        return -1;
    }
    if (own.st_ino == self.st_ino || owner != req->owner) {
        req->refused = true;
        snprintf(req->error, sizeof(req->error), "the mount namespace of %d is not one uid %u "
                 "made (%s)", (int)req->pid, (unsigned)req->owner,
                 own.st_ino == self.st_ino ? "it belongs to the host's user namespace"
                                           : "another user's");
        return -1;
    }
    return 0;
}

/* umount2() takes a path: reach the mount through our /proc/self/fd. */
static int detach_fd(int procfd_dir, int fd)
{
    char name[16];

    snprintf(name, sizeof(name), "%d", fd);
    if (fchdir(procfd_dir) < 0)
        return -1;
    return umount2(name, MNT_DETACH);
}

/* What is at the target now: 1 = a live view (leave it), 2 = a stale view
 * (take it off), 0 = something else (mount over it). */
static int classify(const struct rv_inject *req, int fd, struct rv_view *v)
{
    struct statx sx;
    struct statfs sfs;
    dev_t dev;

    /* AT_STATX_DONT_SYNC: no FUSE request, so a dead mount cannot block us */
    if (rv_statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) < 0) {
        view_set(v, RV_VIEW_FAILED, "statx: %s", strerror(errno));
        return -1;
    }
    if (S_ISLNK(sx.stx_mode)) {
        view_set(v, RV_VIEW_SKIPPED, "target is a symlink");
        return -1;
    }
    if (!S_ISREG(sx.stx_mode)) {
        view_set(v, RV_VIEW_SKIPPED, "target is not a regular file");
        return -1;
    }
    dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    if (dev == req->live_dev)
        return 1;
    if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
        !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
        return 0;
    /* a mount of its own: a dead FUSE file system answers ENOTCONN */
    if (fstatfs(fd, &sfs) < 0)
        return errno == ENOTCONN ? 2 : 0;
    if ((unsigned long)sfs.f_type != RV_FUSE_SUPER_MAGIC || keep_dev(req, dev))
        return 0;
    return req->replace_foreign ? 2 : 0;
}

static void resolve_failed(struct rv_view *v)
{
    if (errno == ENOENT)
        view_set(v, RV_VIEW_SKIPPED, "target missing");
    else if (errno == ELOOP || errno == EXDEV)
        view_set(v, RV_VIEW_SKIPPED, "a symlink on the way to the target");
    else if (errno == ENOTDIR)
        view_set(v, RV_VIEW_SKIPPED, "a parent of the target is not a directory");
    else
        view_set(v, RV_VIEW_FAILED, "resolve target: %s", strerror(errno));
}

/* classify() for check_mounts, from what the mount table says. A view's
 * target is a file of the container's procfs (proc/...) or sysfs (sys/...),
 * nothing else: a user's own tmpfs there could hold the target's inode lock
 * for ever (a write faulting on the user's FUSE), and move_mount waits for
 * it. A FUSE mount on the target is a view (live: its device is the live
 * LXCFS's); any other mount on it, or a stale view, is taken off without a
 * request to it; only procfs or sysfs is asked (statx) what the target is. */
static int classify_checked(struct rv_inject *req, int fd, const struct rv_mount_info *mi,
                            const struct rv_mount_info *dir_mi, bool own, struct rv_view *v)
{
    const char *want = strncmp(v->dst, "proc/", 5) == 0 ? "proc"
                       : strncmp(v->dst, "sys/", 4) == 0 ? "sysfs" : NULL;

    if (!want || strcmp(dir_mi->type, want) != 0) {
        req->refused = true;
        snprintf(req->error, sizeof(req->error), "`/%s` is on %s, not %s: no view goes there",
                 v->dst, dir_mi->type[0] ? dir_mi->type : "an unknown file system",
                 want ? want : "proc or sysfs");
        view_set(v, RV_VIEW_FAILED, "refused");
        return -1;
    }
    if (own) {
        dev_t dev = makedev(mi->maj, mi->min);
        if (is_fuse(mi->type) && dev == req->live_dev)
            return 1;
        if (is_fuse(mi->type) && keep_dev(req, dev))
            return 0;
        return 2;
    }
    return classify(req, fd, v);
}

/* Resolve v's target and classify what is there: a descriptor and *what,
 * or -1 with v's state set (and req->refused for a check_mounts refusal). */
static int target_open(struct rv_inject *req, struct walk_ctx *w, int rootfd, struct rv_view *v,
                       int *what)
{
    struct rv_mount_info mi, dir_mi;
    bool own = false;
    int fd;

    if (req->check_mounts)
        fd = walk_checked(req, w, rootfd, v->dst, &mi, &dir_mi, &own);
    else
        fd = openat2_path(rootfd, v->dst, 0);
    if (fd < 0) {
        if (req->refused)
            view_set(v, RV_VIEW_FAILED, "refused");
        else
            resolve_failed(v);
        return -1;
    }
    *what = req->check_mounts ? classify_checked(req, fd, &mi, &dir_mi, own, v)
                              : classify(req, fd, v);
    if (*what < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Directories of the LXCFS tree, each looked up once (every FUSE lookup is a
 * round trip to the daemon: LXCFS lets the kernel cache no entries). */
struct src_dirs {
    char name[4][RV_VIEW_PATH];
    int fd[4];          /* -1 missing */
    unsigned n;
};

static int open_src_tree(int lxroot, const char *src, struct src_dirs *d,
                         const struct rv_viewhold *held, unsigned *n_held)
{
    const char *slash = strrchr(src, '/');
    size_t len = slash ? (size_t)(slash - src) : 0;
    unsigned i;
    int dfd = rv_viewhold_fd(held, src);

    /* held open by watch: a clone without a lookup (else looked up below);
     * or known to be absent */
    if (dfd >= 0) {
        int fd = rv_open_tree(dfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (fd >= 0) {
            ++*n_held;
            return fd;
        }
    } else if (errno == ENOENT) {
        return -1;
    }
    dfd = lxroot;

    if (slash) {
        for (i = 0; i < d->n; i++)
            if (strlen(d->name[i]) == len && strncmp(d->name[i], src, len) == 0)
                break;
        if (i == d->n) {
            char dir[RV_VIEW_PATH];
            if (d->n == 4 || len >= sizeof(dir))
                return rv_open_tree(lxroot, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
            memcpy(dir, src, len);
            dir[len] = '\0';
            memcpy(d->name[d->n], dir, len + 1);
            d->fd[d->n] = openat(lxroot, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            d->n++;
        }
        dfd = d->fd[i];
        if (dfd < 0) {
            errno = ENOENT;
            return -1;
        }
    }
    return rv_open_tree(dfd, slash ? slash + 1 : src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
}

/* seen: the target's descriptor from the first look, with nothing on it
 * (taken over; -1: resolve it here) */
static void inject_one(struct rv_inject *req, struct walk_ctx *w, struct rv_view *v, int rootfd,
                       int procfd, int tree, int seen)
{
    for (unsigned round = 0; round <= STALE_ROUNDS; round++) {
        int what = 0;
        cleanup_close int fd = round == 0 && seen >= 0 ? seen : target_open(req, w, rootfd, v, &what);

        if (fd < 0)
            return;
        if (what == 1) {
            view_set(v, RV_VIEW_PRESENT, NULL);
            return;
        }
        if (what == 2) {
            if (detach_fd(procfd, fd) < 0) {
                /* EINVAL: no longer a mount (someone else detached it): look again */
                if (errno == EINVAL)
                    continue;
                view_set(v, RV_VIEW_FAILED, "detach the stale view: %s", strerror(errno));
                return;
            }
            v->detached++;
            req->n_detached++;
            continue;
        }
        if (tree >= 0) {
            if (rv_move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                view_set(v, RV_VIEW_FAILED, "move_mount: %s", strerror(errno));
            else
                view_set(v, RV_VIEW_MOUNTED, NULL);
            return;
        }
        /* Fallback: bind from the host path, visible here before pivot_root. */
        {
            char src[PATH_MAX + RV_VIEW_PATH + 2], name[16];
            cleanup_close int nfd = -1;

            snprintf(name, sizeof(name), "%d", fd);
            if (rv_snprintf(src, sizeof(src), "%s/%s", req->lxcfs_root, v->src) < 0 ||
                fchdir(procfd) < 0 || mount(src, name, "none", MS_BIND, NULL) < 0) {
                view_set(v, RV_VIEW_FAILED, "bind `%s`: %s", src, strerror(errno));
                return;
            }
            {
                int again = 0;
                nfd = target_open(req, w, rootfd, v, &again);
            }
            snprintf(name, sizeof(name), "%d", nfd);
            if (nfd < 0 || fchdir(procfd) < 0 ||
                mount("none", name, "none",
                      MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      NULL) < 0 || mount("none", name, "none", MS_PRIVATE, NULL) < 0) {
                int e = errno;
                if (nfd >= 0)
                    detach_fd(procfd, nfd);
                view_set(v, RV_VIEW_FAILED, "make the bind read-only and private: %s", strerror(e));
                return;
            }
            view_set(v, RV_VIEW_MOUNTED, NULL);
            return;
        }
    }
    view_set(v, RV_VIEW_FAILED, "more than %d stale mounts stacked on the target", STALE_ROUNDS);
}

int rv_inject_run(struct rv_inject *req)
{
    char path[64];
    cleanup_close int piddir = -1, nsfd = -1, rootfd = -1, procfd = -1, lxroot = -1;
    int trees[RV_VIEWS_MAX], seen[RV_VIEWS_MAX];
    unsigned long long start;
    /* Private: a clone of LXCFS's mount is its peer where that mount is
     * shared (every mount is, on a systemd host), and a mount the tenant
     * puts over its view would then appear over LXCFS's own file on the
     * host and in every other container's view. */
    struct mount_attr attr = {
        .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        .propagation = MS_PRIVATE,
    };
    bool legacy = req->legacy_bind, work = false;
    struct src_dirs dirs = { .n = 0 };
    struct rv_viewhold held;
    struct walk_ctx w;
    int r = 0;

    req->gone = req->refused = req->host_ns = false;
    req->error[0] = '\0';
    req->n_mounted = req->n_present = req->n_skipped = req->n_failed = req->n_detached = 0;
    req->n_held = 0;
    rv_viewhold_init(&held);
    walk_ctx_init(&w);
    for (unsigned i = 0; i < req->n; i++)
        trees[i] = seen[i] = -1;
    /* Pin the process: everything below goes through this /proc/PID directory. */
    snprintf(path, sizeof(path), "/proc/%d", (int)req->pid);
    piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0 || rv_pid_start_time(piddir, &start) < 0 ||
        (req->start_time && start != req->start_time)) {
        req->gone = true;
        snprintf(req->error, sizeof(req->error), "process %d is gone", (int)req->pid);
        return -1;
    }
    req->start_time = start;
    nsfd = openat(piddir, "ns/mnt", O_RDONLY | O_CLOEXEC);
    procfd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
    lxroot = open(req->lxcfs_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (nsfd < 0 || procfd < 0 || lxroot < 0) {
        if (nsfd < 0 && (errno == ENOENT || errno == ESRCH))
            req->gone = true;
        snprintf(req->error, sizeof(req->error), "open the namespace of %d, /proc/self/fd, `%s`: %s",
                 (int)req->pid, req->lxcfs_root, strerror(errno));
        return -1;
    }
    if (check_namespace(req, nsfd) < 0)
        return -1;
    if (req->check_mounts && walk_ctx_open(&w) < 0) {
        snprintf(req->error, sizeof(req->error), "open /proc/self: %s", strerror(errno));
        walk_ctx_close(&w);
        return -1;
    }
    rootfd = open_root(req, piddir);
    if (rootfd < 0) {
        walk_ctx_close(&w);
        return -1;
    }
    /* A user's: the targets are looked at from inside the namespace (its
     * mount table as seen from its root), its root's type first; then back
     * to our namespace for the clones. */
    if (req->check_mounts) {
        if (setns(nsfd, CLONE_NEWNS) < 0) {
            snprintf(req->error, sizeof(req->error), "enter the mount namespace of %d: %s",
                     (int)req->pid, strerror(errno));
            r = -1;
            goto count;
        }
        if (check_root_mount(req, &w, rootfd) < 0) {
            r = -1;
            goto count;
        }
    }
    /* Look at every target from here first: a live view already there needs
     * nothing, and a clone made for nothing costs an RCU grace period when
     * its fd is closed. A target with nothing on it is kept for the mount:
     * resolved inside the root, it is the container's wherever we are. */
    for (unsigned i = 0; i < req->n; i++) {
        struct rv_view *v = &req->views[i];
        cleanup_close int fd = -1;
        int what = 0;
        if (v->state != RV_VIEW_TODO)
            continue;
        fd = target_open(req, &w, rootfd, v, &what);
        if (req->refused) {
            r = -1;
            goto count;
        }
        if (fd < 0)
            continue;
        if (what == 1)
            view_set(v, RV_VIEW_PRESENT, NULL);
        else if (what >= 0)
            work = true;
        if (what == 0)
            seen[i] = move_fd(fd);
    }
    if (!work)
        goto count;
    if (req->check_mounts && setns(w.ownns, CLONE_NEWNS) < 0) {
        snprintf(req->error, sizeof(req->error), "back to our mount namespace: %s", strerror(errno));
        r = -1;
        goto count;
    }
    /* Clones of the LXCFS files, made here, where they are visible. */
    if (req->have_held && req->held.dev == req->live_dev) {
        held = req->held;
        req->have_held = false;
    } else if (req->holder[0] && !legacy) {
        rv_viewhold_get(req->holder, req->live_dev, &held);
    }
    for (unsigned i = 0; i < req->n && !legacy; i++) {
        if (req->views[i].state != RV_VIEW_TODO)
            continue;
        trees[i] = open_src_tree(lxroot, req->views[i].src, &dirs, &held, &req->n_held);
        if (trees[i] < 0 && errno == ENOSYS) {
            legacy = true;
            break;
        }
        if (trees[i] < 0) {
            if (errno == ENOENT)
                view_set(&req->views[i], RV_VIEW_SKIPPED, "not offered by LXCFS");
            else
                view_set(&req->views[i], RV_VIEW_SKIPPED, "`%s/%s`: %s", req->lxcfs_root,
                         req->views[i].src, strerror(errno));
            continue;
        }
        if (rv_mount_setattr(trees[i], "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
            view_set(&req->views[i], RV_VIEW_FAILED, "mount_setattr: %s", strerror(errno));
            close(trees[i]);
            trees[i] = -1;
        }
    }
    if (setns(nsfd, CLONE_NEWNS) < 0) {
        snprintf(req->error, sizeof(req->error), "enter the mount namespace of %d: %s",
                 (int)req->pid, strerror(errno));
        r = -1;
    }
    for (unsigned i = 0; i < req->n && r == 0; i++) {
        struct rv_view *v = &req->views[i];
        if (v->state == RV_VIEW_TODO && (legacy || trees[i] >= 0))
            inject_one(req, &w, v, rootfd, procfd, legacy ? -1 : trees[i], move_fd(seen[i]));
        if (req->refused)
            r = -1;
    }
count:
    walk_ctx_close(&w);
    rv_viewhold_close(&held);
    for (unsigned i = 0; i < dirs.n; i++)
        if (dirs.fd[i] >= 0)
            close(dirs.fd[i]);
    for (unsigned i = 0; i < req->n; i++) {
        if (trees[i] >= 0)
            close(trees[i]);
        if (seen[i] >= 0)
            close(seen[i]);
        switch (req->views[i].state) {
        case RV_VIEW_MOUNTED: req->n_mounted++; break;
        case RV_VIEW_PRESENT: req->n_present++; break;
        case RV_VIEW_SKIPPED: req->n_skipped++; break;
        default: req->n_failed++; break;
        }
    }
    return r < 0 || req->n_failed ? -1 : 0;
}

static int inject_child(void *arg)
{
    return rv_inject_run(arg) < 0 ? 1 : 0;
}

int rv_inject(struct rv_inject *req, int timeout_ms, struct rv_error *err)
{
    struct rv_inject *shared = rv_shared_alloc(sizeof(*shared));
    struct rv_error e;
    int status, r;

    req->error[0] = '\0';
    if (!shared)
        return rv_fail(err, errno, "pid %d: shared memory", (int)req->pid);
    *shared = *req;
    r = rv_run_bounded_key(req->key, inject_child, shared, timeout_ms, &status, &e);
    *req = *shared;
    rv_shared_free(shared, sizeof(*shared));
    if (r < 0) {
        /* killed half-way, or not tried: count every view as failed */
        if (e.errnum == ETIMEDOUT || e.errnum == EBUSY) {
            req->n_failed = req->n;
            snprintf(req->error, sizeof(req->error), "%s: %s",
                     e.errnum == EBUSY ? "not tried" : "timed out", e.msg);
        }
        rv_fail(err, 0, "pid %d: %s", (int)req->pid, req->error[0] ? req->error : e.msg);
        err->errnum = e.errnum;
        return -1;
    }
    if (req->error[0])
        return rv_fail(err, 0, "%s", req->error);
    if (status > 1)
        return rv_fail(err, 0, "pid %d: injecting child died (status %d)", (int)req->pid, status);
    return 0;
}
