/* node_install.c - versioned binaries on the host and the atomic switch of
 * the stable path (node.h). */
#define _GNU_SOURCE
#include "resview/node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static void fnv(uint64_t *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        *h ^= p[i];
        *h *= FNV_PRIME;
    }
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
    return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Sorted entries of dirfd (without . and ..). */
static int list_dir(int dirfd, struct dirent ***out, struct rv_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
    int n = scandir(path, out, skip_dots, by_name);
    return n < 0 ? rv_fail(err, errno, "list directory") : n;
}

static void free_list(struct dirent **l, int n)
{
    for (int i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static int hash_tree(int dirfd, uint64_t *h, unsigned depth, struct rv_error *err)
{
    struct dirent **l = NULL;
    int n, rc = 0;

    if (depth > 16)
        return rv_fail(err, ELOOP, "payload too deep");
    if ((n = list_dir(dirfd, &l, err)) < 0)
        return -1;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = l[i]->d_name;
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = rv_fail(err, errno, "stat `%s`", name);
            break;
        }
        uint32_t mode = (uint32_t)st.st_mode & (S_IFMT | 0777);
        fnv(h, name, strlen(name) + 1);
        fnv(h, &mode, sizeof(mode));
        if (S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                rc = rv_fail(err, errno, "open `%s`", name);
                break;
            }
            rc = hash_tree(fd, h, depth + 1, err);
            close(fd);
            if (rc < 0)
                rv_wrap(err, "%s", name);
        } else if (S_ISREG(st.st_mode)) {
            char buf[65536];
            ssize_t r;
            int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                rc = rv_fail(err, errno, "open `%s`", name);
                break;
            }
            while ((r = read(fd, buf, sizeof(buf))) > 0)
                fnv(h, buf, (size_t)r);
            if (r < 0)
                rc = rv_fail(err, errno, "read `%s`", name);
            close(fd);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t r = readlinkat(dirfd, name, target, sizeof(target));
            if (r < 0)
                rc = rv_fail(err, errno, "readlink `%s`", name);
            else
                fnv(h, target, (size_t)r);
        } else {
            rc = rv_fail(err, 0, "`%s` is not a file, directory or symlink", name);
        }
    }
    free_list(l, n);
    return rc;
}

int rv_node_tree_id(const char *dir, const char *version, char *id, size_t size, struct rv_error *err)
{
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint64_t h = FNV_OFFSET;

    if (fd < 0)
        return rv_fail(err, errno, "open `%s`", dir);
    if (hash_tree(fd, &h, 0, err) < 0)
        return rv_wrap(err, "`%s`", dir);
    if (rv_snprintf(id, size, "%s-%016" PRIx64, version, h) < 0)
        return rv_fail(err, ENAMETOOLONG, "version");
    return 0;
}

static int copy_file(int sfd, int dfd, const char *name, mode_t mode, struct rv_error *err)
{
    cleanup_close int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_close int out = -1;
    char buf[65536];
    ssize_t r;

    if (in < 0)
        return rv_fail(err, errno, "open `%s`", name);
    out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return rv_fail(err, errno, "create `%s`", name);
    while ((r = read(in, buf, sizeof(buf))) > 0) {
        for (ssize_t o = 0; o < r;) {
            ssize_t w = write(out, buf + o, (size_t)(r - o));
            if (w < 0)
                return rv_fail(err, errno, "write `%s`", name);
            o += w;
        }
    }
    if (r < 0)
        return rv_fail(err, errno, "read `%s`", name);
    if (fchmod(out, mode & 0777) < 0 || fsync(out) < 0)
        return rv_fail(err, errno, "`%s`", name);
    return 0;
}

static int copy_tree(int sfd, int dfd, unsigned depth, struct rv_error *err)
{
    struct dirent **l = NULL;
    int n, rc = 0;

    if (depth > 16)
        return rv_fail(err, ELOOP, "payload too deep");
    if ((n = list_dir(sfd, &l, err)) < 0)
        return -1;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = l[i]->d_name;
        struct stat st;
        if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = rv_fail(err, errno, "stat `%s`", name);
        } else if (S_ISDIR(st.st_mode)) {
            int s2 = -1, d2 = -1;
            if (mkdirat(dfd, name, 0755) < 0 ||
                (s2 = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
                (d2 = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                rc = rv_fail(err, errno, "directory `%s`", name);
            else if ((rc = copy_tree(s2, d2, depth + 1, err)) == 0 && fsync(d2) < 0)
                rc = rv_fail(err, errno, "fsync `%s`", name);
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(sfd, dfd, name, st.st_mode, err);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t r = readlinkat(sfd, name, target, sizeof(target) - 1);
            if (r < 0)
                rc = rv_fail(err, errno, "readlink `%s`", name);
            else {
                target[r] = '\0';
                if (symlinkat(target, dfd, name) < 0)
                    rc = rv_fail(err, errno, "symlink `%s`", name);
            }
        }
    }
    free_list(l, n);
    return rc;
}

int rv_remove_tree_at(int dirfd, const char *name, struct rv_error *err)
{
    struct stat st;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : rv_fail(err, errno, "stat `%s`", name);
    if (S_ISDIR(st.st_mode)) {
        cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct dirent **l = NULL;
        int n, rc = 0;
        if (fd < 0)
            return rv_fail(err, errno, "open `%s`", name);
        if ((n = list_dir(fd, &l, err)) < 0)
            return -1;
        for (int i = 0; i < n && rc == 0; i++)
            rc = rv_remove_tree_at(fd, l[i]->d_name, err);
        free_list(l, n);
        if (rc < 0)
            return rv_wrap(err, "%s", name);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
            return rv_fail(err, errno, "remove `%s`", name);
        return 0;
    }
    if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
        return rv_fail(err, errno, "remove `%s`", name);
    return 0;
}

/* Point prefix/link at target with one rename (atomic for every reader). */
static int switch_link(int pfd, const char *link, const char *target, struct rv_error *err)
{
    char tmp[64];

    snprintf(tmp, sizeof(tmp), ".%s.tmp-%d", link, (int)getpid());
    unlinkat(pfd, tmp, 0);
    if (symlinkat(target, pfd, tmp) < 0)
        return rv_fail(err, errno, "symlink `%s`", tmp);
    if (renameat(pfd, tmp, pfd, link) < 0) {
        int e = errno;
        unlinkat(pfd, tmp, 0);
        return rv_fail(err, e, "rename `%s` to `%s`", tmp, link);
    }
    return 0;
}

static int read_link(int pfd, const char *link, char *out, size_t size)
{
    ssize_t r = readlinkat(pfd, link, out, size - 1);
    if (r < 0) {
        out[0] = '\0';
        return -1;
    }
    out[r] = '\0';
    return 0;
}

int rv_node_install(const char *prefix, const char *payload, const char *version, char *id,
                    size_t id_size, bool *changed, struct rv_error *err)
{
    cleanup_close int pfd = -1, vfd = -1;
    char vdir[RV_NODE_ID_MAX + 16], cur[PATH_MAX], path[PATH_MAX];
    struct stat st;

    *changed = false;
    if (rv_node_tree_id(payload, version, id, id_size, err) < 0)
        return rv_wrap(err, "payload");
    if (rv_mkdir_p(prefix, 0755, err) < 0)
        return -1;
    pfd = open(prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return rv_fail(err, errno, "open `%s`", prefix);
    if (mkdirat(pfd, "versions", 0755) < 0 && errno != EEXIST)
        return rv_fail(err, errno, "mkdir `%s/versions`", prefix);
    vfd = openat(pfd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd < 0)
        return rv_fail(err, errno, "open `%s/versions`", prefix);
    if (rv_snprintf(vdir, sizeof(vdir), "versions/%s", id) < 0)
        return rv_fail(err, ENAMETOOLONG, "version");

    if (fstatat(vfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        char have[RV_NODE_ID_MAX];
        if (rv_snprintf(path, sizeof(path), "%s/%s", prefix, vdir) < 0)
            return rv_fail(err, ENAMETOOLONG, "version");
        if (!S_ISDIR(st.st_mode) || rv_node_tree_id(path, version, have, sizeof(have), err) < 0 ||
            strcmp(have, id) != 0) {
            /* damaged: set it aside (a rename never disturbs a running binary) */
            char aside[RV_NODE_ID_MAX + 64];
            snprintf(aside, sizeof(aside), ".damaged-%s-%ld", id, (long)time(NULL));
            if (renameat(vfd, id, vfd, aside) < 0)
                return rv_fail(err, errno, "set aside the damaged `%s`", path);
            fprintf(stderr, "resview node: `%s` differed from the image; set aside as `%s`\n", path, aside);
        }
    }
    if (fstatat(vfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        char tmp[RV_NODE_ID_MAX + 32];
        cleanup_close int sfd = open(payload, O_RDONLY | O_DIRECTORY | O_CLOEXEC), tfd = -1;
        if (sfd < 0)
            return rv_fail(err, errno, "open `%s`", payload);
        snprintf(tmp, sizeof(tmp), ".tmp-%s-%d", id, (int)getpid());
        if (rv_remove_tree_at(vfd, tmp, err) < 0)
            return -1;
        if (mkdirat(vfd, tmp, 0755) < 0 ||
            (tfd = openat(vfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return rv_fail(err, errno, "create `%s/versions/%s`", prefix, tmp);
        int rc = copy_tree(sfd, tfd, 0, err);
        if (rc == 0 && fsync(tfd) < 0)
            rc = rv_fail(err, errno, "fsync");
        if (rc == 0 && renameat(vfd, tmp, vfd, id) < 0)
            rc = rv_fail(err, errno, "rename");
        if (rc < 0) {
            struct rv_error e2;
            rv_remove_tree_at(vfd, tmp, &e2);
            return rv_wrap(err, "install into `%s/versions/%s`", prefix, id);
        }
        fsync(vfd);
    }
    read_link(pfd, "current", cur, sizeof(cur));
    if (strcmp(cur, vdir) != 0) {
        if (cur[0] && switch_link(pfd, "previous", cur, err) < 0)
            return -1;
        if (switch_link(pfd, "current", vdir, err) < 0)
            return -1;
        *changed = true;
    }
    fsync(pfd);
    return 0;
}

int rv_node_intact(const char *prefix, const char *payload, const char *version, char *why,
                   size_t why_size, struct rv_error *err)
{
    char want[RV_NODE_ID_MAX], have[RV_NODE_ID_MAX], cur[PATH_MAX], path[PATH_MAX];
    cleanup_close int pfd = open(prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct rv_error e2;

    if (rv_node_tree_id(payload, version, want, sizeof(want), err) < 0)
        return rv_wrap(err, "payload");
    if (pfd < 0 || read_link(pfd, "current", cur, sizeof(cur)) < 0) {
        snprintf(why, why_size, "`%s/current` is missing", prefix);
        return 0;
    }
    if (strncmp(cur, "versions/", 9) != 0 || strcmp(cur + 9, want) != 0) {
        snprintf(why, why_size, "`%s/current` points to `%s`, not to this image's `versions/%s`",
                 prefix, cur, want);
        return 0;
    }
    if (rv_snprintf(path, sizeof(path), "%s/current/", prefix) < 0)
        return rv_fail(err, ENAMETOOLONG, "`%s`", prefix);
    if (rv_node_tree_id(path, version, have, sizeof(have), &e2) < 0) {
        snprintf(why, why_size, "%s", e2.msg);
        return 0;
    }
    if (strcmp(have, want) != 0) {
        snprintf(why, why_size, "the files in `%s` differ from this image's", path);
        return 0;
    }
    return 1;
}

/* dev/ino of the regular files under dirfd (recursively), appended to ids. */
struct inodes {
    dev_t *dev;
    ino_t *ino;
    size_t n, cap;
};

static int collect_inodes(int dirfd, struct inodes *s, unsigned depth, struct rv_error *err)
{
    struct dirent **l = NULL;
    int n, rc = 0;

    if (depth > 16 || (n = list_dir(dirfd, &l, err)) < 0)
        return depth > 16 ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++) {
        struct stat st;
        if (fstatat(dirfd, l[i]->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd, l[i]->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                rc = collect_inodes(fd, s, depth + 1, err);
                close(fd);
            }
        } else if (S_ISREG(st.st_mode)) {
            if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 16;
                dev_t *d = realloc(s->dev, cap * sizeof(*d));
                if (d)
                    s->dev = d;
                ino_t *in = realloc(s->ino, cap * sizeof(*in));
                if (in)
                    s->ino = in;
                if (!d || !in) {
                    rc = rv_fail(err, ENOMEM, "inodes");
                    break;
                }
                s->cap = cap;
            }
            s->dev[s->n] = st.st_dev;
            s->ino[s->n++] = st.st_ino;
        }
    }
    free_list(l, n);
    return rc;
}

/* Whether some process executes one of the files in s; *pid: which. */
static bool in_use(const struct inodes *s, pid_t *pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool found = false;

    if (!d)
        return true;   /* cannot tell: keep it */
    while (!found && (e = readdir(d))) {
        char path[64];
        struct stat st;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/exe", e->d_name);
        if (stat(path, &st) < 0)
            continue;
        for (size_t i = 0; i < s->n && !found; i++)
            if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino) {
                found = true;
                *pid = atoi(e->d_name);
            }
    }
    closedir(d);
    return found;
}

static int version_in_use(int vfd, const char *name, bool *busy, pid_t *pid, struct rv_error *err)
{
    struct inodes s = { 0 };
    int fd = openat(vfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = 0;

    *busy = false;
    if (fd < 0)
        return 0;
    rc = collect_inodes(fd, &s, 0, err);
    close(fd);
    if (rc == 0)
        *busy = in_use(&s, pid);
    free(s.dev);
    free(s.ino);
    return rc;
}

int rv_node_prune(const char *prefix, struct rv_error *err)
{
    cleanup_close int pfd = open(prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC), vfd = -1;
    char cur[PATH_MAX], prev[PATH_MAX];
    struct dirent **l = NULL;
    int n, removed = 0, rc = 0;

    if (pfd < 0)
        return rv_fail(err, errno, "open `%s`", prefix);
    vfd = openat(pfd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd < 0)
        return errno == ENOENT ? 0 : rv_fail(err, errno, "open `%s/versions`", prefix);
    read_link(pfd, "current", cur, sizeof(cur));
    read_link(pfd, "previous", prev, sizeof(prev));
    if ((n = list_dir(vfd, &l, err)) < 0)
        return -1;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = l[i]->d_name;
        bool busy;
        pid_t pid;
        if ((!strncmp(cur, "versions/", 9) && !strcmp(cur + 9, name)) ||
            (!strncmp(prev, "versions/", 9) && !strcmp(prev + 9, name)) ||
            strncmp(name, ".tmp-", 5) == 0)
            continue;
        if (version_in_use(vfd, name, &busy, &pid, err) < 0 || busy)
            continue;
        if ((rc = rv_remove_tree_at(vfd, name, err)) == 0)
            removed++;
    }
    free_list(l, n);
    return rc < 0 ? -1 : removed;
}

int rv_node_remove(const char *prefix, struct rv_error *err)
{
    cleanup_close int pfd = open(prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC), vfd = -1;
    struct dirent **l = NULL;
    int n, rc = 0;

    if (pfd < 0)
        return errno == ENOENT ? 0 : rv_fail(err, errno, "open `%s`", prefix);
    vfd = openat(pfd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd >= 0) {
        if ((n = list_dir(vfd, &l, err)) < 0)
            return -1;
        for (int i = 0; i < n && rc == 0; i++) {
            bool busy;
            pid_t pid;
            if (version_in_use(vfd, l[i]->d_name, &busy, &pid, err) < 0)
                rc = -1;
            else if (busy)
                rc = rv_fail(err, EBUSY, "`%s/versions/%s` is executed by process %d", prefix,
                             l[i]->d_name, (int)pid);
        }
        free_list(l, n);
        if (rc < 0)
            return -1;
    }
    if (unlinkat(pfd, "current", 0) < 0 && errno != ENOENT)
        return rv_fail(err, errno, "remove `%s/current`", prefix);
    if (unlinkat(pfd, "previous", 0) < 0 && errno != ENOENT)
        return rv_fail(err, errno, "remove `%s/previous`", prefix);
    return rv_remove_tree_at(pfd, "versions", err);
}
