/* repair.c - re-attach LXCFS views in running containers. */
#define _GNU_SOURCE
#include "resview/repair.h"
#include "resview/hook.h"
#include "resview/inject.h"
#include "resview/lxcfs.h"
#include "resview/log.h"
#include "resview/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

struct ns_seen {
    ino_t *ino;
    size_t n, cap;
};

static bool seen_add(struct ns_seen *s, ino_t ino)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->ino[i] == ino)
            return false;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        ino_t *p = realloc(s->ino, cap * sizeof(*p));
        if (!p)
            return true;   /* out of memory: at worst a namespace is looked at twice */
        s->ino = p;
        s->cap = cap;
    }
    s->ino[s->n++] = ino;
    return true;
}

static ino_t ns_inode(pid_t pid)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

struct repair_ctx {
    const struct rv_config *cfg;
    const struct rv_repair_opts *o;
    struct rv_repair_stats *st;
    FILE *out;
    struct rv_lxcfs lx;
    struct ns_seen seen;
    struct rv_inject req;     /* reused: large */
    dev_t keep[RV_KEEP_DEVS_MAX];
    unsigned n_keep;
    int lockfd;
};

static bool offered(const struct rv_lxcfs *lx, const char *rel)
{
    for (unsigned i = 0; i < lx->n; i++)
        if (strcmp(lx->files[i], rel) == 0)
            return true;
    return false;
}

static void report(struct repair_ctx *c, const char *what, int r, const struct rv_error *err)
{
    const struct rv_inject *q = &c->req;

    if (r < 0 || q->n_failed) {
        const char *first = "";
        for (unsigned i = 0; i < q->n && !*first; i++)
            if (q->views[i].state == RV_VIEW_FAILED)
                first = q->views[i].why;
        c->st->failed++;
        fprintf(c->out, "failed   %s: %s%s%s\n", what, r < 0 ? err->msg : "", r < 0 && *first ? "; " : "",
                first);
        rv_log(RV_WARN, "repair %s: %s%s%s", what, r < 0 ? err->msg : "", r < 0 && *first ? "; " : "", first);
    } else if (q->n_mounted) {
        c->st->repaired++;
        fprintf(c->out, "repaired %s: %u views mounted, %u stale detached\n", what, q->n_mounted,
                q->n_detached);
        rv_log(RV_INFO, "repair %s: %u views mounted, %u stale detached", what, q->n_mounted,
               q->n_detached);
    } else {
        c->st->healthy++;
    }
}

static void req_init(struct repair_ctx *c, pid_t pid, unsigned long long start)
{
    memset(&c->req, 0, sizeof(c->req));
    c->req.pid = pid;
    c->req.start_time = start;
    c->req.live_dev = c->lx.dev;
    c->req.replace_foreign = true;
    memcpy(c->req.keep_devs, c->keep, sizeof(c->keep));
    c->req.n_keep = c->n_keep;
    snprintf(c->req.lxcfs_root, sizeof(c->req.lxcfs_root), "%s", c->cfg->lxcfs_root);
}

static int repair_record(const char *id, void *arg)
{
    struct repair_ctx *c = arg;
    struct rv_error err;
    cleanup_json json_t *rec = NULL;
    cleanup_json json_t *upd = NULL;
    json_t *wanted, *w;
    json_int_t pid, start;
    const char *rootfs;
    size_t i;
    int r;

    if (rv_state_read(c->cfg, id, RV_VIEWS_FILE, &rec, &err) < 0) {
        if (errno == ENOENT && c->o->n_ids == 0)
            return 0;   /* a record of the shim only (views off): not ours */
        c->st->failed++;
        fprintf(c->out, "failed   %s: %s\n", id, err.msg);
        return 0;
    }
    pid = json_integer_value(json_object_get(rec, "pid"));
    start = json_integer_value(json_object_get(rec, "start_time"));
    rootfs = json_string_value(json_object_get(rec, "rootfs"));
    wanted = json_object_get(rec, "wanted");
    if (pid <= 0 || pid > INT32_MAX || start <= 0 || !rootfs || !json_is_array(wanted)) {
        c->st->failed++;
        fprintf(c->out, "failed   %s: malformed record\n", id);
        return 0;
    }
    req_init(c, (pid_t)pid, (unsigned long long)start);
    if (rv_snprintf(c->req.rootfs, sizeof(c->req.rootfs), "%s", rootfs) < 0) {
        c->st->failed++;
        fprintf(c->out, "failed   %s: rootfs path too long\n", id);
        return 0;
    }
    {
        const char *rid = json_string_value(json_object_get(rec, "root_id"));
        unsigned maj, min;
        unsigned long long ino;
        if (rid && sscanf(rid, "%u:%u:%llu", &maj, &min, &ino) == 3) {
            c->req.root_dev = makedev(maj, min);
            c->req.root_ino = (ino_t)ino;
        }
    }
    json_array_foreach(wanted, i, w) {
        const char *rel = json_string_value(w);
        if (rel && rv_lxcfs_is_candidate(rel) && offered(&c->lx, rel))
            rv_inject_add(&c->req, rel, rel);
    }
    c->req.key = ns_inode((pid_t)pid);
    seen_add(&c->seen, c->req.key);
    r = rv_inject(&c->req, RV_REPAIR_TIMEOUT_MS, &err);
    if (c->req.gone) {
        struct rv_error e2;
        c->st->dropped++;
        if (rv_state_remove(c->cfg, id, &e2) < 0)
            rv_log(RV_WARN, "drop the record of %s: %s", id, e2.msg);
        else
            rv_log(RV_INFO, "dropped the record of %s: process %d is gone", id, (int)pid);
        fprintf(c->out, "dropped  %s: process %d is gone\n", id, (int)pid);
        return 0;
    }
    c->st->scanned++;
    report(c, id, r, &err);
    /* keep wanted as recorded (views LXCFS does not offer today may come later) */
    upd = rv_views_record(&c->req, r < 0 || c->req.n_failed ? "failed" : "ok", NULL);
    if (upd) {
        json_object_set(upd, "wanted", wanted);
        if (rv_state_write(c->cfg, id, RV_VIEWS_FILE, upd, &err) < 0)
            rv_log(RV_WARN, "update the record of %s: %s", id, err.msg);
    }
    return 0;
}

/* Devices of other live LXCFS mounts on this host: their views are not stale. */
static void find_other_live(struct repair_ctx *c)
{
    struct libmnt_table *tb = mnt_new_table();
    struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
    struct libmnt_fs *fs;

    if (tb && it && mnt_table_parse_file(tb, "/proc/self/mountinfo") == 0)
        while (mnt_table_next_fs(tb, it, &fs) == 0 && c->n_keep < RV_KEEP_DEVS_MAX) {
            const char *type = mnt_fs_get_fstype(fs), *root = mnt_fs_get_root(fs);
            struct rv_lxcfs other;
            struct rv_error err;
            if (!type || strcmp(type, "fuse.lxcfs") != 0 || !root || strcmp(root, "/") != 0 ||
                mnt_fs_get_devno(fs) == c->lx.dev || !mnt_fs_get_target(fs))
                continue;
            if (rv_lxcfs_discover(mnt_fs_get_target(fs), 1000, &other, &err) == 0 && other.live &&
                other.dev == mnt_fs_get_devno(fs))
                c->keep[c->n_keep++] = other.dev;
        }
    mnt_free_iter(it);
    mnt_unref_table(tb);
}

static bool is_keep(const struct repair_ctx *c, dev_t d)
{
    for (unsigned i = 0; i < c->n_keep; i++)
        if (c->keep[i] == d)
            return true;
    return false;
}

/* One namespace, through one of its processes: stale LXCFS views -> fresh. */
static void scan_namespace(struct repair_ctx *c, pid_t pid, int piddir, ino_t ns)
{
    struct libmnt_table *tb = NULL;
    struct libmnt_iter *it = NULL;
    struct libmnt_fs *fs;
    unsigned long long start;
    struct rv_error err;
    char what[64];
    FILE *f = NULL;
    int fd, r;

    if (rv_pid_start_time(piddir, &start) < 0)
        return;
    fd = openat(piddir, "mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || !(f = fdopen(fd, "r"))) {
        if (fd >= 0)
            close(fd);
        return;
    }
    c->st->namespaces++;
    req_init(c, pid, start);
    c->req.key = ns;
    tb = mnt_new_table();
    it = mnt_new_iter(MNT_ITER_FORWARD);
    if (tb && it && mnt_table_parse_stream(tb, f, "mountinfo") == 0)
        while (mnt_table_next_fs(tb, it, &fs) == 0) {
            const char *type = mnt_fs_get_fstype(fs), *root = mnt_fs_get_root(fs);
            const char *target = mnt_fs_get_target(fs);
            dev_t dev = mnt_fs_get_devno(fs);
            bool dup = false;
            if (!type || strcmp(type, "fuse.lxcfs") != 0 || !root || !target ||
                !rv_lxcfs_is_candidate(root + (root[0] == '/')) || dev == c->lx.dev ||
                is_keep(c, dev) || !offered(&c->lx, root + (root[0] == '/')))
                continue;
            for (unsigned i = 0; i < c->req.n; i++)
                dup |= strcmp(c->req.views[i].dst, target + (target[0] == '/')) == 0;
            if (!dup)
                rv_inject_add(&c->req, root, target);
        }
    mnt_free_iter(it);
    mnt_unref_table(tb);
    fclose(f);
    if (c->req.n == 0)
        return;
    c->st->scanned++;
    snprintf(what, sizeof(what), "namespace of pid %d", (int)pid);
    r = rv_inject(&c->req, RV_REPAIR_TIMEOUT_MS, &err);
    if (c->req.gone)
        return;
    report(c, what, r, &err);
}

static void scan_all(struct repair_ctx *c)
{
    DIR *d = opendir("/proc");
    struct dirent *de;

    if (!d)
        return;
    seen_add(&c->seen, ns_inode(getpid()));
    find_other_live(c);
    while ((de = readdir(d))) {
        uint64_t pid;
        struct stat st;
        int piddir;
        if (rv_parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
            continue;
        piddir = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir < 0)
            continue;
        if (fstatat(piddir, "ns/mnt", &st, 0) == 0 && seen_add(&c->seen, st.st_ino))
            scan_namespace(c, (pid_t)pid, piddir, st.st_ino);
        close(piddir);
    }
    closedir(d);
}

int rv_repair(const struct rv_config *cfg, const struct rv_repair_opts *o,
              struct rv_repair_stats *st, FILE *out, struct rv_error *err)
{
    cleanup_free struct repair_ctx *c = calloc(1, sizeof(*c));

    memset(st, 0, sizeof(*st));
    if (!c)
        return rv_fail(err, ENOMEM, "repair");
    c->lockfd = -1;
    c->cfg = cfg;
    c->o = o;
    c->st = st;
    c->out = out;
    for (int waited = 0;; waited += 50) {
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        if (rv_lxcfs_discover(cfg->lxcfs_root, 2000, &c->lx, err) < 0)
            return -1;
        if (c->lx.live || waited >= o->wait_ms)
            break;
        nanosleep(&nap, NULL);
    }
    if (!c->lx.live) {
        free(c->seen.ino);
        return rv_fail(err, 0, "LXCFS is not answering: %s", c->lx.why);
    }
    /* one repair at a time (watch, the lxcfs.service drop-in, a person) */
    {
        char lock[PATH_MAX];
        struct rv_error e2;
        if (rv_snprintf(lock, sizeof(lock), "%s/repair.lock", cfg->state_dir) >= 0 &&
            rv_mkdir_p(cfg->state_dir, 0700, &e2) == 0) {
            c->lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (c->lockfd >= 0)
                while (flock(c->lockfd, LOCK_EX) < 0 && errno == EINTR)
                    ;
        }
    }
    if (o->n_ids > 0) {
        for (int i = 0; i < o->n_ids; i++) {
            if (!rv_safe_name(o->ids[i])) {
                st->failed++;
                fprintf(out, "failed   %s: not a container id\n", o->ids[i]);
                continue;
            }
            repair_record(o->ids[i], c);
        }
    } else {
        rv_state_foreach(cfg, repair_record, c);
    }
    if (o->all)
        scan_all(c);
    if (c->lockfd >= 0)
        close(c->lockfd);   /* releases the lock */
    free(c->seen.ino);
    return 0;
}
