/* util.c - errors, bounded file I/O and the atomic rewrite. */
#define _GNU_SOURCE
#include "resview/util.h"
#include "resview/sys.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>

int rv_fail(struct rv_error *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!err)
        return -1;
    err->errnum = errnum;
    va_start(ap, fmt);
    n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (errnum && (size_t)n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(errnum));
    return -1;
}

int rv_wrap(struct rv_error *err, const char *fmt, ...)
{
    char prefix[RV_ERRMSG_MAX], old[RV_ERRMSG_MAX];
    va_list ap;

    if (!err)
        return -1;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    return -1;
}

int rv_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return n;
}

int rv_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
                    struct stat *st, struct rv_error *err)
{
    cleanup_close int fd = -1;
    cleanup_free char *buf = NULL;
    struct stat sb;
    size_t have = 0;

    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rv_fail(err, errno, "open `%s`", path);
    if (fstat(fd, &sb) < 0)
        return rv_fail(err, errno, "stat `%s`", path);
    if (!S_ISREG(sb.st_mode))
        return rv_fail(err, 0, "`%s` is not a regular file", path);
    if ((uint64_t)sb.st_size > max)
        return rv_fail(err, 0, "`%s` is too large (%jd bytes, limit %zu)", path,
                       (intmax_t)sb.st_size, max);
    buf = malloc((size_t)sb.st_size + 1);
    if (!buf)
        return rv_fail(err, ENOMEM, "read `%s`", path);
    /* The size may change under us: read at most st_size + 1 to notice growth. */
    for (;;) {
        ssize_t r = read(fd, buf + have, (size_t)sb.st_size + 1 - have);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return rv_fail(err, errno, "read `%s`", path);
        }
        if (r == 0)
            break;
        have += (size_t)r;
        if (have > (size_t)sb.st_size)
            return rv_fail(err, 0, "`%s` changed while being read", path);
    }
    buf[have] = '\0';
    if (st)
        *st = sb;
    if (len)
        *len = have;
    *out = move_ptr(buf);
    return 0;
}

int rv_read_small(const char *path, char *buf, size_t size)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    ssize_t r;

    if (fd < 0)
        return -1;
    do
        r = read(fd, buf, size - 1);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    buf[r] = '\0';
    while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
        buf[--r] = '\0';
    return 0;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The temporary file: unnamed (O_TMPFILE) where the file system allows, so
 * that a writer killed while writing leaves nothing behind; else named, with
 * our pid, which makes the name unique among concurrent writers (O_EXCL
 * catches the rest). *named tells which. */
static int open_temp(int dirfd, const char *tmp, bool *named)
{
    int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

    *named = fd < 0;
    if (fd >= 0)
        return fd;
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST) {
        /* Left over by a writer with our pid that was killed: it is ours to remove. */
        unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    }
    return fd;
}

/* Whether pid can no longer write: gone, or a zombie waiting to be reaped. */
static bool writer_dead(long pid)
{
    char path[64], buf[512];
    const char *paren;

    if (kill((pid_t)pid, 0) < 0)
        return errno == ESRCH;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (rv_read_small(path, buf, sizeof(buf)) < 0)
        return errno == ENOENT;
    paren = strrchr(buf, ')');
    return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Remove ".NAME.resview-PID.tmp" files whose writer is dead: left by a writer
 * killed in the instant between naming its file and the rename. The entries
 * are read straight off dirfd when it is readable (two calls for a small
 * directory, on the hot path of every create), else off a fresh descriptor. */
static void remove_stale_temps(int dirfd, const char *name)
{
    char prefix[NAME_MAX + 1], buf[4096] __attribute__((aligned(8)));
    int n = snprintf(prefix, sizeof(prefix), ".%.200s.resview-", name);
    cleanup_close int own = -1;
    int fd = dirfd;
    long got;

    if (lseek(fd, 0, SEEK_SET) < 0) {
        own = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = own;
    }
    while (fd >= 0 && (got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64 *de = (struct dirent64 *)(buf + off);
            char *end;
            long pid;
            off += de->d_reclen;
            if (strncmp(de->d_name, prefix, (size_t)n) != 0)
                continue;
            pid = strtol(de->d_name + n, &end, 10);
            if (pid > 0 && pid != getpid() && strcmp(end, ".tmp") == 0 && writer_dead(pid))
                unlinkat(dirfd, de->d_name, 0);
        }
    }
}

int rv_write_atomic_at(int dirfd, const char *name, const char *data, size_t len,
                       const struct stat *st, unsigned flags, struct rv_error *err)
{
    char tmp[NAME_MAX + 1], fdpath[64];
    cleanup_close int fd = -1;
    mode_t mode = st ? (st->st_mode & 07777) : 0644;
    bool named;
    int e;

    if (rv_snprintf(tmp, sizeof(tmp), ".%.200s.resview-%d.tmp", name, (int)getpid()) < 0)
        return rv_fail(err, errno, "temporary name for `%s`", name);
    fd = open_temp(dirfd, tmp, &named);
    if (fd < 0)
        return rv_fail(err, errno, "create temporary file for `%s`", name);
    if (write_all(fd, data, len) < 0 || ((flags & RV_WRITE_DURABLE) && fsync(fd) < 0)) {
        e = errno;
        rv_fail(err, e, "write `%s`", name);
        goto fail;
    }
    if ((st && fchown(fd, st->st_uid, st->st_gid) < 0 && errno != EPERM) || fchmod(fd, mode) < 0) {
        e = errno;
        rv_fail(err, e, "set owner and mode of `%s`", name);
        goto fail;
    }
    /* An unnamed file gets its name only now, for the instant before the rename. */
    if (!named) {
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
        unlinkat(dirfd, tmp, 0);
        if (linkat(AT_FDCWD, fdpath, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0)
            return rv_fail(err, errno, "name the temporary file for `%s`", name);
        named = true;
    }
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        e = errno;
        rv_fail(err, e, "replace `%s`", name);
        goto fail;
    }
    if (flags & RV_WRITE_SWEEP)
        remove_stale_temps(dirfd, name);
    return 0;
fail:
    if (named)
        unlinkat(dirfd, tmp, 0);
    return -1;
}

unsigned rv_msg_take_fds(struct msghdr *m, int *fds, unsigned n, unsigned max)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (n < max)
                fds[n++] = fd;
            else
                close(fd);
        }
    }
    return n;
}

long rv_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int rv_wait_readable(int fd, long deadline)
{
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        long left = deadline - rv_now_ms();
        int r;
        if (left <= 0)
            return 0;
        r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int rv_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int rv_parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return -1;
    *out = v;
    return 0;
}

bool rv_safe_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (; *s; s++)
        if (*s == '/' || (unsigned char)*s < 0x20)
            return false;
    return true;
}

int rv_mkdir_p(const char *path, mode_t mode, struct rv_error *err)
{
    char buf[PATH_MAX];

    if (rv_snprintf(buf, sizeof(buf), "%s", path) < 0)
        return rv_fail(err, errno, "mkdir `%s`", path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return rv_fail(err, errno, "mkdir `%s`", buf);
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

int rv_close_all_but(int *keep, unsigned n)
{
    unsigned from = 0;

    for (unsigned i = 1; i < n; i++)   /* a handful: insertion sort */
        for (unsigned j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    for (unsigned i = 0; i < n; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < from)
            continue;
        if ((unsigned)keep[i] > from && rv_close_range(from, (unsigned)keep[i] - 1, 0) < 0)
            return -1;
        from = (unsigned)keep[i] + 1;
    }
    return rv_close_range(from, ~0u, 0);
}
