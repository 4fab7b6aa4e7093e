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
 *  3. take the caller's /dev/fuse descriptor with pidfd_getfd (the number in
 *     fd= is never trusted), enter its mount namespace, take its root and
 *     cwd, resolve the target there without magic links (/proc/PID/root and
 *     friends), so nothing outside the container's own tree can be named;
 *  4. mount with fsopen/fsconfig/fsmount/move_mount onto the resolved target
 *     fd with options rebuilt here and nosuid,nodev forced; unmount only
 *     FUSE mounts this broker made;
 *  5. answer; a mount whose caller is gone by then is taken away again.
 * The fresh FUSE mount is never stat'ed or read: the daemon that must answer
 * may be the very caller blocked in mount(2). The answer is never
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/mountreq.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

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

bool rv_mount_set_has(const struct rv_mount_set *s, const struct rv_broker_mount *m)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i].mnt_id == m->mnt_id && s->m[i].dev_major == m->dev_major &&
            s->m[i].dev_minor == m->dev_minor)
            return true;
    return false;
}

/* Handles on the calling thread, and the descriptors the work opens: all
 * closed after the answer (closing a namespace or a /dev/fuse file can take
 * milliseconds that the caller need not wait for). */
struct caller {
    pid_t tid;
    int pidfd, mem, mntns, userns, root, cwd;
    int fuse_fd, target, fs, mnt;
    struct rv_mount_caller ids;
};

static void caller_close(struct caller *c)
{
    int *fds[] = { &c->pidfd, &c->mem, &c->mntns, &c->userns, &c->root, &c->cwd,
                   &c->fuse_fd, &c->target, &c->fs, &c->mnt };
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
    c->fuse_fd = c->target = c->fs = c->mnt = -1;
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

/* Enter the caller's mount namespace, root and working directory. User
 * namespaces other than the broker's are not supported (the /dev/fuse file
 * would belong to another user namespace than the mount). */
static int enter(const struct caller *c)
{
    struct stat mine, theirs;

    if (stat("/proc/self/ns/user", &mine) < 0 || fstat(c->userns, &theirs) < 0 ||
        mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev)
        return -EPERM;
    if (setns(c->mntns, CLONE_NEWNS) < 0 || fchdir(c->root) < 0 || chroot(".") < 0 ||
        fchdir(c->cwd) < 0)
        return -EPERM;
    return 0;
}

/* The target as the caller's own call would find it, but never through a
 * magic link (/proc/PID/root, /proc/PID/fd/N): we are chrooted into the
 * caller's root, so absolute paths, absolute symlinks and ".." stay inside. */
static int resolve(const char *target, bool nofollow)
{
    struct rv_open_how how = {
        .flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
        .resolve = RV_RESOLVE_NO_MAGICLINKS,
    };
    int fd;

    if (!*target)
        return -ENOENT;
    fd = rv_openat2(AT_FDCWD, target, &how);
    return fd < 0 ? -errno : fd;
}

/* Mount id, device and mount-root flag of an fd, without asking a FUSE
 * daemon (mask 0 and AT_STATX_DONT_SYNC: FUSE answers from the inode). */
static int mount_of(int fd, struct rv_broker_mount *m, bool *is_root)
{
    struct rv_statx sx;

    if (rv_statx(fd, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, 0, &sx) < 0)
        return -errno;
    if (!(sx.stx_mask & RV_STATX_MNT_ID))
        return -ENOSYS;
    m->mnt_id = (int)sx.stx_mnt_id;
    m->dev_major = sx.stx_dev_major;
    m->dev_minor = sx.stx_dev_minor;
    if (is_root)
        *is_root = (sx.stx_attributes_mask & RV_STATX_ATTR_MOUNT_ROOT) &&
                   (sx.stx_attributes & RV_STATX_ATTR_MOUNT_ROOT);
    return 0;
}

/* The mount holding the target, from the caller's mountinfo: its type and
 * whether it propagates to peers (shared). A container's mount table is
 * small: a page or two on the stack first. */
static int target_mount(struct rv_broker_ctx *ctx, int mnt_id, char *fstype, size_t size,
                        bool *shared)
{
    cleanup_close int fd = openat(ctx->hostproc, "thread-self/mountinfo", O_RDONLY | O_CLOEXEC);
    cleanup_free char *heap = NULL;
    char small[16384], *text = small;
    size_t have = 0, cap = sizeof(small) - 1;
    unsigned maj, min;
    ssize_t r;

    if (fd < 0)
        return -EPERM;
    for (;;) {
        if (have == cap) {
            char *nt;
            if (cap >= MOUNTINFO_MAX || !(nt = realloc(heap, cap * 4 + 1)))
                return -EPERM;
            if (!heap)
                memcpy(nt, small, have);
            heap = text = nt;
            cap = cap * 4;
        }
        r = read(fd, text + have, cap - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -EPERM;
        if (r == 0)
            break;
        have += (size_t)r;
    }
    text[have] = '\0';
    return rv_mountinfo_find(text, mnt_id, fstype, size, &maj, &min, shared) < 0 ? -EPERM : 0;
}

/* Places a tenant's FUSE mount must not cover: the container's root and the
 * runtime's own /proc, /sys and /dev, and any kernel file system. A FUSE
 * file system over them would feed made-up /proc files to the runtime's next
 * `exec` into the container (the procfs-overmount attacks on runc) or hide
 * what the runtime masked. The path is the target's as seen from the
 * caller's root (we are chrooted there). */
static bool forbidden_place(struct rv_broker_ctx *ctx, int fd, const char *fstype)
{
    static const char *const kernel_fs[] = {
        "proc", "sysfs", "devpts", "devtmpfs", "mqueue", "cgroup", "cgroup2", "securityfs",
        "debugfs", "tracefs", "bpf", "pstore", "efivarfs", "configfs", "binfmt_misc", "fusectl",
        "hugetlbfs", "selinuxfs", "nsfs", "autofs", "rpc_pipefs", NULL };
    static const char *const dirs[] = { "/proc", "/sys", "/dev", NULL };
    char p[64], path[PATH_MAX + 1];
    ssize_t n;

    for (size_t i = 0; kernel_fs[i]; i++)
        if (strcmp(fstype, kernel_fs[i]) == 0)
            return true;
    snprintf(p, sizeof(p), "thread-self/fd/%d", fd);
    n = readlinkat(ctx->hostproc, p, path, sizeof(path) - 1);
    if (n <= 0 || n >= (ssize_t)sizeof(path) - 1 || path[0] != '/')
        return true;
    path[n] = '\0';
    if (strcmp(path, "/") == 0)
        return true;
    for (size_t i = 0; dirs[i]; i++) {
        size_t l = strlen(dirs[i]);
        if (strncmp(path, dirs[i], l) == 0 && (path[l] == '\0' || path[l] == '/'))
            return true;
    }
    return false;
}

struct mount_args {
    char fstype[RV_MOUNT_STR_MAX], source[RV_MOUNT_STR_MAX], target[RV_MOUNT_STR_MAX];
    char data[RV_MOUNT_DATA_MAX];
    bool has_source;
};

static int set_string(int fs, const char *key, const char *val)
{
    return rv_fsconfig(fs, RV_FSCONFIG_SET_STRING, key, val, 0) < 0 ? -errno : 0;
}

static int set_flag(int fs, const char *key)
{
    return rv_fsconfig(fs, RV_FSCONFIG_SET_FLAG, key, NULL, 0) < 0 ? -errno : 0;
}

/* fsopen("fuse") with the options rebuilt from what was checked. */
static int fuse_context(const struct mount_args *a, const struct rv_fuse_opts *o,
                        const char *subtype, const struct rv_mount_flags *fl, int fuse_fd)
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
    if (!r && rv_fsconfig(fs, RV_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        r = -errno;
    return r < 0 ? r : move_fd(fs);
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

static int do_mount(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                    struct caller *c, struct mount_args *a, const char **why)
{
    struct rv_mount_flags fl;
    struct rv_fuse_opts o;
    struct rv_broker_mount m;
    char subtype[RV_FUSE_SUBTYPE_MAX];
    char fstype[256];
    struct rv_statx sx;
    struct stat st;
    bool shared;
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
    if ((r = rv_mountreq_options(a->data, &c->ids, ctx->allow_other, &o)) < 0)
        REFUSE(r == -EPERM ? "options (allow_other, or user_id/group_id not the caller's)"
                           : "options", r);
    if (*o.subtype) {
        if (*subtype)
            REFUSE("subtype given twice", -EINVAL);
        strcpy(subtype, o.subtype);
    }
    /* The caller's own descriptor, which must be /dev/fuse. */
    c->fuse_fd = rv_pidfd_getfd(c->pidfd, o.fd, 0);
    if (c->fuse_fd < 0)
        REFUSE("fd= is not an open descriptor of the caller", -EINVAL);
    if (fstat(c->fuse_fd, &st) < 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != makedev(RV_FUSE_MAJOR, RV_FUSE_MINOR))
        REFUSE("fd= is not /dev/fuse", -EINVAL);
    if ((r = enter(c)) < 0)
        REFUSE("cannot enter the caller's namespaces (user namespace?)", r);
    if ((r = resolve(a->target, false)) < 0)
        REFUSE("target", r);
    c->target = r;
    /* the type from the inode as cached: a FUSE daemon is not asked */
    if (rv_statx(c->target, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_TYPE, &sx) < 0)
        REFUSE("target", -errno);
    if (!S_ISDIR(sx.stx_mode) && !S_ISREG(sx.stx_mode))
        REFUSE("target is neither a directory nor a regular file", -EPERM);
    if (S_ISDIR(sx.stx_mode) != ((o.rootmode & S_IFMT) == S_IFDIR))
        REFUSE("rootmode does not match the target", -ENOTDIR);
    if ((r = mount_of(c->target, &m, NULL)) < 0 ||
        (r = target_mount(ctx, m.mnt_id, fstype, sizeof(fstype), &shared)) < 0)
        REFUSE("target's mount unknown", r);
    if (shared)
        REFUSE("target is on a shared mount (it would propagate out)", -EPERM);
    if (forbidden_place(ctx, c->target, fstype))
        REFUSE("target is /, in /proc, /sys or /dev, or on a kernel file system", -EPERM);
    if ((r = fuse_context(a, &o, subtype, &fl, c->fuse_fd)) < 0)
        REFUSE("fsconfig", r);
    c->fs = r;
    if ((c->mnt = rv_fsmount(c->fs, RV_FSMOUNT_CLOEXEC, fl.attrs)) < 0)
        REFUSE("fsmount", -errno);
    if (rv_move_mount(c->mnt, "", c->target, "", RV_MOVE_MOUNT_F_EMPTY_PATH | RV_MOVE_MOUNT_T_EMPTY_PATH) < 0)
        REFUSE("move_mount", -errno);
    if (mount_of(c->mnt, &m, NULL) < 0) {
        detach_fd(ctx, c->mnt);
        REFUSE("mount id of the new mount", -EPERM);
    }
    if (answer(ctx, n->id, 0) < 0) {
        /* The caller is gone (killed, or interrupted and restarting): no one
         * knows of this mount; take it away. */
        detach_fd(ctx, c->mnt);
        REFUSE("mounted, but the caller was gone: detached again", GONE);
    }
    record(ctx, RV_EV_MOUNTED, &m);
    REFUSE("mounted", ANSWERED);
}

/* umount2 without MNT_DETACH must see whether the mount is busy, which our
 * own fd on it would make it: unmount by name from its (held) parent
 * directory instead. Requests run one at a time (a replaced worker still
 * inside one makes this EBUSY), and mount points cannot be renamed, so the
 * name still holds this mount. */
static int umount_by_name(struct rv_broker_ctx *ctx, int *target,
                          const struct rv_broker_mount *m, int flags)
{
    char p[64], path[PATH_MAX + 1];
    cleanup_close int parent = -1, again = -1;
    struct rv_broker_mount m2;
    const char *name;
    bool root;
    ssize_t n;

    snprintf(p, sizeof(p), "thread-self/fd/%d", *target);
    n = readlinkat(ctx->hostproc, p, path, sizeof(path) - 1);
    if (n <= 0 || n >= (ssize_t)sizeof(path) - 1)
        return -EINVAL;
    path[n] = '\0';
    name = strrchr(path, '/');
    name = name ? name + 1 : path;
    if (!*name || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
        return -EINVAL;
    parent = openat(*target, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0)
        return -errno;
    again = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (again < 0 || mount_of(again, &m2, &root) < 0 || !root || m2.mnt_id != m->mnt_id)
        return -EBUSY;
    close(move_fd(again));
    close(move_fd(*target));
    if (fchdir(parent) < 0 || umount2(name, flags | UMOUNT_NOFOLLOW) < 0)
        return -errno;
    return 0;
}

static int do_umount(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                     enum rv_broker_call call, struct caller *c, struct mount_args *a,
                     const char **why)
{
    uint64_t flags = call == RV_CALL_UMOUNT2 ? n->data.args[1] : 0;
    struct rv_broker_mount m;
    bool root;
    int r;

    if ((r = rv_mountreq_umount_flags(flags)) < 0)
        REFUSE("flags", r);
    if ((r = read_string(c->mem, n->data.args[0], a->target, sizeof(a->target), -ENAMETOOLONG)) < 0)
        REFUSE("target unreadable", r);
    if ((r = enter(c)) < 0)
        REFUSE("cannot enter the caller's namespaces (user namespace?)", r);
    if ((r = resolve(a->target, flags & UMOUNT_NOFOLLOW)) < 0)
        REFUSE("target", r);
    c->target = r;
    if ((r = mount_of(c->target, &m, &root)) < 0)
        REFUSE("target's mount unknown", -EPERM);
    if (!root)
        REFUSE("not a mount point", -EINVAL);
    if (!rv_mount_set_has(ctx->mounts, &m))
        REFUSE("not a FUSE mount this broker made", -EPERM);
    if (flags & MNT_DETACH)
        r = detach_fd(ctx, c->target);
    else if (ctx->others_busy)
        REFUSE("another request of this container is blocked; umount -l works", -EBUSY);
    else
        r = umount_by_name(ctx, &c->target, &m, (int)(flags & ~(uint64_t)UMOUNT_NOFOLLOW));
    if (r < 0)
        REFUSE("umount", r);
    record(ctx, RV_EV_UNMOUNTED, &m);
    REFUSE("unmounted", 0);
}

/* Printable copy of a tenant string for the log. */
static void printable(char *dst, size_t size, const char *src)
{
    size_t i;

    for (i = 0; src[i] && i + 1 < size; i++)
        dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? '?' : src[i];
    dst[i] = '\0';
}

static const char *call_name(enum rv_broker_call call)
{
    return call == RV_CALL_MOUNT ? "mount" : call == RV_CALL_UMOUNT ? "umount" : "umount2";
}

/* Served calls at debug level; refusals one by one at first, then every 1000th. */
static void log_result(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n,
                       enum rv_broker_call call, const struct mount_args *a, int r, const char *why)
{
    char fstype[64], target[200];

    if (r == 0 || r == GONE) {
        ctx->served++;
        printable(fstype, sizeof(fstype), a->fstype);
        printable(target, sizeof(target), a->target);
        rv_log(RV_DEBUG, "fuse broker: %s%s%s `%s` (tid %u): %s", call_name(call),
               *fstype ? " " : "", fstype, target, n->pid, why);
        return;
    }
    if (++ctx->refused > LOG_REFUSALS && ctx->refused % 1000 != 0)
        return;
    printable(fstype, sizeof(fstype), a->fstype);
    printable(target, sizeof(target), a->target);
    rv_log(RV_INFO, "fuse broker: refused (%s, %lu so far): %s%s%s `%s` (tid %u): %s",
           strerror(-r), ctx->refused, call == RV_CALL_OTHER ? "system call" : call_name(call),
           *fstype ? " " : "", fstype, target, n->pid, why);
}

int rv_broker_handle(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n)
{
    enum rv_broker_call call = rv_broker_call(n->data.arch, n->data.nr);
    struct mount_args a;
    struct caller c;
    const char *why = "";
    int pre, r;

    a.fstype[0] = a.source[0] = a.target[0] = a.data[0] = '\0';
    a.has_source = false;
    if (call == RV_CALL_OTHER) {
        r = -ENOSYS;
        why = "not a call the broker answers";
        answer(ctx, n->id, r);
        log_result(ctx, n, call, &a, r, why);
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
        r = do_mount(ctx, n, &c, &a, &why);
    } else {
        r = do_umount(ctx, n, call, &c, &a, &why);
    }
    if (r == ANSWERED)
        r = 0;
    else if (r <= 0 && answer(ctx, n->id, r) < 0)
        r = GONE;
    caller_close(&c);
    log_result(ctx, n, call, &a, r, why);
    /* back home: the mount namespace (which also resets root and cwd) */
    return setns(ctx->home_mntns, CLONE_NEWNS) < 0 ? -1 : 0;
}
