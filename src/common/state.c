/* state.c - per-container record directories, and records of users' hooks. */
#define _GNU_SOURCE
#include "resview/state.h"
#include "resview/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>

#define RECORD_MAX (1u << 20)
#define USER_TEMP_MAX_S 60     /* a writer's temporary file lives for milliseconds */

static int record_dir(const struct rv_config *cfg, const char *id, char *out, size_t size,
                      struct rv_error *err)
{
    if (!rv_safe_name(id))
        return rv_fail(err, 0, "container id is not a valid file name");
    if (rv_snprintf(out, size, "%s/containers/%s", cfg->state_dir, id) < 0)
        return rv_fail(err, ENAMETOOLONG, "state directory");
    return 0;
}

/* state_dir (0711: users reach users/ through it) and containers/ (0700) */
static int make_parents(const struct rv_config *cfg, struct rv_error *err)
{
    char dir[PATH_MAX];

    if (rv_mkdir_p(cfg->state_dir, 0711, err) < 0)
        return -1;
    if (rv_snprintf(dir, sizeof(dir), "%s/containers", cfg->state_dir) < 0)
        return rv_fail(err, ENAMETOOLONG, "state directory");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return rv_fail(err, errno, "mkdir `%s`", dir);
    return 0;
}

/* The record directory of id, opened and locked (flock, exclusive): every
 * writer and remover holds it, so that a remover never deletes a file that a
 * replace-if-unchanged (rv_state_replace) is about to check, and the other
 * way round. A directory removed while we waited for its lock is created
 * again (create) or reported as missing (ENOENT). */
static int open_locked(const struct rv_config *cfg, const char *id, bool create, char *dir,
                       size_t size, struct rv_error *err)
{
    if (record_dir(cfg, id, dir, size, err) < 0)
        return -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        struct stat st;
        int fd;

        if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
            if (errno != ENOENT)
                return rv_fail(err, errno, "mkdir `%s`", dir);
            if (make_parents(cfg, err) < 0)
                return -1;
            if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return rv_fail(err, errno, "mkdir `%s`", dir);
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return rv_fail(err, errno, "open `%s`", dir);
        while (flock(fd, LOCK_EX) < 0) {
            if (errno != EINTR) {
                int e = errno;
                close(fd);
                return rv_fail(err, e, "lock `%s`", dir);
            }
        }
        if (fstat(fd, &st) == 0 && st.st_nlink > 0)
            return fd;
        close(fd);             /* removed meanwhile */
        if (!create)
            return rv_fail(err, ENOENT, "open `%s`", dir);
    }
    return rv_fail(err, EAGAIN, "`%s` keeps being removed", dir);
}

int rv_state_write(const struct rv_config *cfg, const char *id, const char *file,
                   const json_t *doc, struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1;
    size_t len;

    if (rv_json_dump(doc, &text, &len, err) < 0)
        return -1;
    dfd = open_locked(cfg, id, true, dir, sizeof(dir), err);
    if (dfd < 0)
        return -1;
    /* runtime state under /run, in the container's own directory: gone at
     * reboot and with the container, so no fsync and no sweep */
    return rv_write_atomic_at(dfd, file, text, len, NULL, 0, err);
}

static int read_at(int dfd, const char *file, json_t **doc, struct stat *st, struct rv_error *err)
{
    cleanup_free char *text = NULL;
    size_t len;

    if (rv_read_file_at(dfd, file, RECORD_MAX, &text, &len, st, err) < 0) {
        errno = err->errnum;
        return -1;
    }
    return rv_json_parse(text, len, file, doc, err);
}

int rv_state_read(const struct rv_config *cfg, const char *id, const char *file, json_t **doc,
                  struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_close int dfd = -1;

    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0)
        return -1;
    dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0) {
        int e = errno;
        rv_fail(err, e, "open `%s`", dir);
        errno = e;
        return -1;
    }
    return read_at(dfd, file, doc, NULL, err);
}

int rv_state_read_ref(const struct rv_config *cfg, const char *id, const char *file,
                      json_t **doc, struct rv_state_ref *ref, struct rv_error *err)
{
    char dir[PATH_MAX];
    struct stat st;

    ref->dirfd = -1;
    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0)
        return -1;
    ref->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (ref->dirfd < 0) {
        int e = errno;
        rv_fail(err, e, "open `%s`", dir);
        errno = e;
        return -1;
    }
    if (read_at(ref->dirfd, file, doc, &st, err) < 0) {
        int e = errno;
        rv_state_ref_close(ref);
        errno = e;
        return -1;
    }
    ref->ino = st.st_ino;
    return 0;
}

int rv_state_replace(const struct rv_state_ref *ref, const char *file, const json_t *doc,
                     struct rv_error *err)
{
    cleanup_free char *text = NULL;
    struct stat st;
    size_t len;
    int r;

    if (rv_json_dump(doc, &text, &len, err) < 0)
        return -1;
    while (flock(ref->dirfd, LOCK_EX) < 0)
        if (errno != EINTR)
            return rv_fail(err, errno, "lock the record");
    if (fstat(ref->dirfd, &st) < 0 || st.st_nlink == 0 ||
        fstatat(ref->dirfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != ref->ino)
        r = 0;   /* deleted, or a new record under the same id */
    else
        r = rv_write_atomic_at(ref->dirfd, file, text, len, NULL, 0, err) < 0 ? -1 : 1;
    flock(ref->dirfd, LOCK_UN);
    return r;
}

void rv_state_ref_close(struct rv_state_ref *ref)
{
    if (ref->dirfd >= 0)
        close(ref->dirfd);
    ref->dirfd = -1;
}

/* Remove the record directory dir, open and locked as dfd. */
static int remove_locked(int dfd, const char *dir, struct rv_error *err)
{
    struct stat a, b;
    DIR *d;
    struct dirent *de;
    int fd;

    fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return rv_fail(err, errno, "open `%s`", dir);
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dfd, de->d_name, 0);
    closedir(d);
    /* the name still ours (it is: removers hold the lock), then remove it */
    if (fstat(dfd, &a) == 0 && lstat(dir, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino && rmdir(dir) < 0 && errno != ENOENT)
        return rv_fail(err, errno, "remove `%s`", dir);
    return 0;
}

int rv_state_remove(const struct rv_config *cfg, const char *id, struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_close int dfd = open_locked(cfg, id, false, dir, sizeof(dir), err);

    if (dfd < 0)
        return err->errnum == ENOENT ? 0 : -1;
    return remove_locked(dfd, dir, err);
}

/* Whether the directory holds no file (a writer's temporary ones aside). */
static bool no_files(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    bool empty = d != NULL;

    if (!d && fd >= 0)
        close(fd);
    while (d && empty && (de = readdir(d)))
        empty = de->d_name[0] == '.';
    if (d)
        closedir(d);
    return empty;
}

int rv_state_remove_if(const struct rv_config *cfg, const char *id,
                       const struct rv_state_ref *ref, const char *file, struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_close int own = -1;
    struct stat st;
    int dfd, r;

    if (!ref) {
        own = open_locked(cfg, id, false, dir, sizeof(dir), err);
        if (own < 0)
            return err->errnum == ENOENT ? 0 : -1;
        return no_files(own) ? (remove_locked(own, dir, err) < 0 ? -1 : 1) : 0;
    }
    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0)
        return -1;
    dfd = ref->dirfd;
    while (flock(dfd, LOCK_EX) < 0)
        if (errno != EINTR)
            return rv_fail(err, errno, "lock `%s`", dir);
    if (fstat(dfd, &st) < 0 || st.st_nlink == 0 ||
        fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != ref->ino)
        r = 0;
    else
        r = remove_locked(dfd, dir, err) < 0 ? -1 : 1;
    flock(dfd, LOCK_UN);
    return r;
}

bool rv_state_exists(const struct rv_config *cfg, const char *id)
{
    char dir[PATH_MAX];
    struct stat st;

    return record_dir(cfg, id, dir, sizeof(dir), NULL) == 0 && lstat(dir, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

/* The path of one file of id's record (-1, errno EINVAL: none). */
static int record_file(const struct rv_config *cfg, const char *id, const char *file, char *out,
                       size_t size)
{
    if (!rv_safe_name(id) || rv_snprintf(out, size, "%s/containers/%s/%s", cfg->state_dir, id, file) < 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int rv_state_unlink(const struct rv_config *cfg, const char *id, const char *file)
{
    char path[PATH_MAX];

    if (record_file(cfg, id, file, path, sizeof(path)) < 0)
        return -1;
    return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int rv_state_stat(const struct rv_config *cfg, const char *id, const char *file, struct stat *st)
{
    char path[PATH_MAX];

    return record_file(cfg, id, file, path, sizeof(path)) < 0 ? -1 : lstat(path, st);
}

int rv_state_foreach(const struct rv_config *cfg, int (*fn)(const char *id, void *arg), void *arg)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *de;
    int r = 0;

    if (rv_snprintf(dir, sizeof(dir), "%s/containers", cfg->state_dir) < 0)
        return -1;
    d = opendir(dir);
    if (!d)
        return 0;
    /* every id runc accepts is a valid file name; ".x" ones too */
    while (r == 0 && (de = readdir(d)))
        if (rv_safe_name(de->d_name))
            r = fn(de->d_name, arg);
    closedir(d);
    return r;
}

/* Start time of a live process (not a zombie: nobody may reap an orphan). */
static int pid_start(pid_t pid, unsigned long long *start)
{
    char path[64], buf[1024];
    const char *paren;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (rv_read_small(path, buf, sizeof(buf)) < 0 || !(paren = strrchr(buf, ')')) ||
        paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
        return -1;
    return rv_parse_stat_start(buf, start);
}

static int stuck_path(const struct rv_config *cfg, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/lxcfs-stuck", cfg->state_dir);
}

pid_t rv_state_lxcfs_stuck(const struct rv_config *cfg, bool *stale)
{
    char path[PATH_MAX], buf[PATH_MAX + 64];
    unsigned long long want, have;
    int pid, at = 0;

    *stale = false;
    if (stuck_path(cfg, path, sizeof(path)) < 0 || rv_read_small(path, buf, sizeof(buf)) < 0)
        return 0;
    /* "PID START LXCFS_ROOT": only a probe of this LXCFS counts */
    if (sscanf(buf, "%d %llu %n", &pid, &want, &at) < 2 || !at || strcmp(buf + at, cfg->lxcfs_root))
        return 0;
    if (pid > 0 && pid_start(pid, &have) == 0 && have == want)
        return pid;
    *stale = true;
    return 0;
}

void rv_state_lxcfs_mark(const struct rv_config *cfg, pid_t pid)
{
    char path[PATH_MAX], text[PATH_MAX + 64];
    unsigned long long start;
    struct rv_error err;
    int dfd, n;

    if (pid_start(pid, &start) < 0 || stuck_path(cfg, path, sizeof(path)) < 0 ||
        rv_mkdir_p(cfg->state_dir, 0711, &err) < 0)
        return;
    dfd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    n = snprintf(text, sizeof(text), "%d %llu %s\n", (int)pid, start, cfg->lxcfs_root);
    if (dfd >= 0 && n > 0 && (size_t)n < sizeof(text))
        rv_write_atomic_at(dfd, "lxcfs-stuck", text, (size_t)n, NULL, RV_WRITE_SWEEP, &err);
    if (dfd >= 0)
        close(dfd);
}

void rv_state_lxcfs_unmark(const struct rv_config *cfg)
{
    char path[PATH_MAX];

    if (stuck_path(cfg, path, sizeof(path)) == 0)
        unlink(path);
}

static int users_dir(const struct rv_config *cfg, char *out, size_t size, struct rv_error *err)
{
    if (rv_snprintf(out, size, "%s/users", cfg->host_state_dir) < 0)
        return rv_fail(err, ENAMETOOLONG, "state directory");
    return 0;
}

/* users/ as resview made it: a root-owned sticky directory. */
static bool users_dir_ok(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && st->st_uid == 0 && (st->st_mode & 07777) == 01733;
}

int rv_state_users_prepare(const struct rv_config *cfg, struct rv_error *err)
{
    char dir[PATH_MAX];
    struct stat st;

    if (users_dir(cfg, dir, sizeof(dir), err) < 0 || rv_mkdir_p(cfg->state_dir, 0711, err) < 0)
        return -1;
    /* an older state_dir may be 0700 */
    if (stat(cfg->state_dir, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0011) != 0011 &&
        chmod(cfg->state_dir, (st.st_mode & 07777) | 0011) < 0)
        return rv_fail(err, errno, "chmod `%s`", cfg->state_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return rv_fail(err, errno, "mkdir `%s`", dir);
    if (lstat(dir, &st) < 0)
        return rv_fail(err, errno, "`%s`", dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
        return rv_fail(err, 0, "`%s` is not a directory of root's", dir);
    /* 1733 whatever the umask: everyone may add, nobody may list or remove another's */
    if ((st.st_mode & 07777) != 01733 && chmod(dir, 01733) < 0)
        return rv_fail(err, errno, "chmod `%s`", dir);
    return 0;
}

int rv_state_user_write(const struct rv_config *cfg, const json_t *doc, char *name, size_t size,
                        struct rv_error *err)
{
    char dir[PATH_MAX], file[64];
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1;
    unsigned long long rnd;
    struct stat st;
    size_t len;

    if (users_dir(cfg, dir, sizeof(dir), err) < 0 || rv_json_dump(doc, &text, &len, err) < 0)
        return -1;
    if (len > RV_USER_RECORD_MAX)
        return rv_fail(err, EFBIG, "record larger than %u bytes", RV_USER_RECORD_MAX);
    /* O_PATH: users may write and search users/, not read it */
    dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0)
        return rv_fail(err, errno, "open `%s`%s", dir,
                       errno == ENOENT ? " (root creates it: `resview repair` or `resview watch`)" : "");
    /* root's sticky directory (in a user namespace root shows as another
     * uid: not ours is what can be checked) */
    if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 07777) != 01733 ||
        st.st_uid == geteuid())
        return rv_fail(err, 0, "`%s` is not root's sticky directory (mode 1733)", dir);
    /* unguessable: another user cannot take the name first */
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return rv_fail(err, errno, "random name");
    /* the owner is the file's (a uid inside a user namespace would mislead) */
    snprintf(file, sizeof(file), "enroot-%016llx", rnd);
    if (rv_write_atomic_at(dfd, file, text, len, NULL, RV_WRITE_SWEEP, err) < 0)
        return rv_wrap(err, "`%s`", dir);
    if (name)
        snprintf(name, size, "%s", file);
    return 0;
}

/* Remove a directory a user made in users/, with what it holds (as deep as
 * REMOVE_DEPTH: deeper, it stays until the next run), following no symlink. */
#define REMOVE_DEPTH 8
static void remove_tree_at(int dfd, const char *name, int depth)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
            unlinkat(dirfd(d), de->d_name, 0) < 0 && errno == EISDIR && depth < REMOVE_DEPTH)
            remove_tree_at(dirfd(d), de->d_name, depth + 1);
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

struct uid_count {
    uid_t uid;
    unsigned n;
    unsigned long long bytes;
};

/* Count one more file of uid of size bytes; false past the per-user limits. */
static bool within_limit(struct uid_count **tab, size_t *n, uid_t uid, off_t size)
{
    struct uid_count *p = NULL;

    for (size_t i = 0; i < *n && !p; i++)
        if ((*tab)[i].uid == uid)
            p = &(*tab)[i];
    if (!p) {
        p = realloc(*tab, (*n + 1) * sizeof(**tab));
        if (!p)
            return false;
        *tab = p;
        p = &p[(*n)++];
        *p = (struct uid_count){ uid, 0, 0 };
    }
    if (p->n + 1 > RV_USER_RECORDS_MAX || p->bytes + (unsigned long long)size > RV_USER_BYTES_MAX)
        return false;
    p->n++;
    p->bytes += (unsigned long long)size;
    return true;
}

int rv_state_users_foreach(const struct rv_config *cfg,
                           int (*fn)(const char *name, uid_t uid, const struct stat *st,
                                     json_t *doc, void *arg),
                           void *arg, struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_free struct uid_count *counts = NULL;
    size_t n_counts = 0;
    struct stat st;
    struct dirent *de;
    time_t now = time(NULL);
    DIR *d;
    int dfd;

    if (users_dir(cfg, dir, sizeof(dir), err) < 0)
        return -1;
    d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : rv_fail(err, errno, "open `%s`", dir);
    dfd = dirfd(d);
    if (fstat(dfd, &st) < 0 || !users_dir_ok(&st)) {
        closedir(d);
        return rv_fail(err, 0, "`%s` is not root's sticky directory (mode 1733)", dir);
    }
    while ((de = readdir(d))) {
        cleanup_close int fd = -1;
        cleanup_free char *text = NULL;
        json_t *doc = NULL;
        bool drop = true;
        ssize_t got;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid != 0 &&
            st.st_size <= (off_t)RV_USER_RECORD_MAX &&
            within_limit(&counts, &n_counts, st.st_uid, st.st_size)) {
            /* dot names: a writer's file before its rename (rv_write_atomic_at);
             * counted, and removed once it cannot be one any more */
            if (de->d_name[0] == '.') {
                if (now - st.st_ctime < USER_TEMP_MAX_S)
                    continue;
            } else {
                text = malloc((size_t)st.st_size + 1);
                got = text ? read(fd, text, (size_t)st.st_size) : -1;
                if (got < 0)
                    continue;     /* not read this time */
                struct rv_error perr;
                text[got] = '\0';
                if (rv_json_parse(text, (size_t)got, de->d_name, &doc, &perr) < 0)
                    doc = NULL;
                drop = fn(de->d_name, st.st_uid, &st, doc, arg) == 1;
                json_decref(doc);
            }
        }
        /* symlinks, FIFOs, directories, root's or oversized files, files past
         * their owner's share: not records; and records fn is done with */
        if (drop && unlinkat(dfd, de->d_name, 0) < 0 && errno == EISDIR)
            remove_tree_at(dfd, de->d_name, 0);
    }
    closedir(d);
    return 0;
}
