/* repair.c - re-attach LXCFS views in running containers. */
#define _GNU_SOURCE
#include "resview/repair.h"
#include "resview/bounded.h"
#include "resview/hook.h"
#include "resview/inject.h"
#include "resview/lxcfs.h"
#include "resview/log.h"
#include "resview/metrics.h"
#include "resview/proc.h"
#include "resview/state.h"
#include "owners.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <linux/nsfs.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
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

static bool seen_has(const struct ns_seen *s, ino_t ino)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->ino[i] == ino)
            return true;
    return false;
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
    struct rv_lxcfs_servers servers;   /* where the LXCFS serving lx runs: never there */
    struct ns_seen seen;
    struct rv_inject req;     /* reused: large */
    dev_t keep[RV_KEEP_DEVS_MAX];
    unsigned n_keep;
    int lockfd;               /* repair.lock: a byte per container (container_lock) */
    int stalled_dfd;          /* state_dir/stalled: what root's containers cost (owners.h) */
    long pass_deadline;       /* rv_now_ms(): a background pass ends then (0: named) */
    int phase;                /* 0: every record; 1: those not remembered; 2: the others */
    unsigned postponed;       /* records phase 1 left to phase 2 */
    struct ns_pid { ino_t ns; pid_t pid; } *ns_map;   /* see ns_map_build() */
    size_t ns_map_n, ns_map_cap;
    bool ns_map_built;
    struct rv_owners owners;  /* users' records: root's memory of their owners */
    long users_deadline;      /* rv_now_ms(): the users' pass ends then */
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
        rv_print_line(c->out, "failed   %s: %s%s%s", what, r < 0 ? err->msg : "", r < 0 && *first ? "; " : "",
                first);
        rv_log(RV_WARN, "repair %s: %s%s%s", what, r < 0 ? err->msg : "", r < 0 && *first ? "; " : "", first);
    } else if (q->n_mounted) {
        c->st->repaired++;
        rv_print_line(c->out, "repaired %s: %u views mounted, %u stale detached", what, q->n_mounted,
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

/* Mount namespace inode -> a process in it, for every process (built once,
 * only when a record's own process is gone). Reads nothing but /proc. */
static void ns_map_build(struct repair_ctx *c)
{
    DIR *d;
    struct dirent *de;

    if (c->ns_map_built)
        return;
    c->ns_map_built = true;
    d = opendir("/proc");
    while (d && (de = readdir(d))) {
        uint64_t pid;
        struct stat st;
        char path[64];
        if (rv_parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
            continue;
        snprintf(path, sizeof(path), "%s/ns/mnt", de->d_name);
        if (fstatat(dirfd(d), path, &st, 0) < 0)
            continue;
        if (c->ns_map_n == c->ns_map_cap) {
            size_t cap = c->ns_map_cap ? c->ns_map_cap * 2 : 256;
            struct ns_pid *p = realloc(c->ns_map, cap * sizeof(*p));
            if (!p)
                break;
            c->ns_map = p;
            c->ns_map_cap = cap;
        }
        c->ns_map[c->ns_map_n++] = (struct ns_pid){ st.st_ino, (pid_t)pid };
    }
    if (d)
        closedir(d);
}

/* Whether pid's root directory is dev:ino. AT_STATX_DONT_SYNC: the root
 * may be on a FUSE file system the tenant runs (enroot's fuse-overlayfs); no
 * request goes to it. */
static bool root_is(pid_t pid, dev_t dev, ino_t ino)
{
    char path[64];
    struct statx sx;

    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
    return statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_INO, &sx) == 0 && sx.stx_ino == ino &&
           makedev(sx.stx_dev_major, sx.stx_dev_minor) == dev;
}

/* Whether pid's mount namespace is owned by a user namespace uid made. */
static bool owned_by(pid_t pid, uid_t uid)
{
    char path[64];
    cleanup_close int ns = -1, user = -1;
    uid_t owner;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    ns = open(path, O_RDONLY | O_CLOEXEC);
    user = ns >= 0 ? ioctl(ns, NS_GET_USERNS) : -1;
    return user >= 0 && ioctl(user, NS_GET_OWNER_UID, &owner) == 0 && owner == uid;
}

enum { LOCATED, NOT_YET, GONE, SELF, SKIPPED };

/* Whether the LXCFS serving the views runs in pid's mount namespace (or we
 * cannot tell): then nothing is mounted there; said and counted (a user's
 * record as refused: it is removed). */
static bool self_served(struct repair_ctx *c, const char *what)
{
    char why[320];

    if (rv_lxcfs_ns_check(&c->servers, c->req.pid, why, sizeof(why)) == 0)
        return false;
    if (c->req.check_owner)
        c->st->refused++;     /* a user's record: removed, as for every refusal */
    else
        c->st->self_served++;
    rv_print_line(c->out, "refused  %s: %s", what, why);
    rv_log(RV_WARN, "repair %s: %s", what, why);
    return true;
}

/* A live process of the recorded container, whose identity is its mount
 * namespace and its root: the recorded process if it is still there, else
 * any process in the namespace with the recorded root (an enroot container
 * under pyxis outlives the process enroot named: the job's tasks joined its
 * namespaces). The root matters: namespace inodes are reused once a
 * namespace is gone. NOT_YET: the recorded process, before its pivot_root. */
static int locate(struct repair_ctx *c, ino_t ns)
{
    unsigned long long start;
    char path[64];
    int piddir;

    if (c->req.pid > 0 && ns_inode(c->req.pid) == ns) {
        snprintf(path, sizeof(path), "/proc/%d", (int)c->req.pid);
        piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir >= 0 && rv_pid_start_time(piddir, &start) == 0 &&
            start == c->req.start_time) {
            close(piddir);
            return !c->req.root_ino || root_is(c->req.pid, c->req.root_dev, c->req.root_ino)
                       ? LOCATED : NOT_YET;
        }
        if (piddir >= 0)
            close(piddir);
    }
    if (!c->req.root_ino)
        return GONE;
    ns_map_build(c);
    for (size_t i = 0; i < c->ns_map_n; i++) {
        if (c->ns_map[i].ns != ns)
            continue;
        /* A namespace keeps its owner for life: one of a user's records that
         * another owner's namespace now answers is one whose inode number was
         * used again after the recorded namespace ended: gone. */
        if ((c->req.check_owner && !owned_by(c->ns_map[i].pid, c->req.owner)) ||
            !root_is(c->ns_map[i].pid, c->req.root_dev, c->req.root_ino))
            continue;
        snprintf(path, sizeof(path), "/proc/%d", (int)c->ns_map[i].pid);
        piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir < 0)
            continue;
        if (rv_pid_start_time(piddir, &start) == 0) {
            close(piddir);
            c->req.pid = c->ns_map[i].pid;
            c->req.start_time = start;   /* checked again by the injector */
            return LOCATED;
        }
        close(piddir);
    }
    return GONE;
}

/* The request from a views record; false if it is malformed. */
static bool req_from_record(struct repair_ctx *c, json_t *rec, bool with_rootfs)
{
    json_int_t pid = json_integer_value(json_object_get(rec, "pid"));
    json_int_t start = json_integer_value(json_object_get(rec, "start_time"));
    json_int_t mntns = json_integer_value(json_object_get(rec, "mntns"));
    const char *rootfs = json_string_value(json_object_get(rec, "rootfs"));
    const char *rid = json_string_value(json_object_get(rec, "root_id"));
    json_t *wanted = json_object_get(rec, "wanted"), *w;
    unsigned maj, min;
    unsigned long long ino;
    size_t i;

    if (pid <= 0 || pid > INT32_MAX || start <= 0 || mntns < 0 || !json_is_array(wanted) ||
        (with_rootfs && !rootfs))
        return false;
    req_init(c, (pid_t)pid, (unsigned long long)start);
    c->req.want_mntns = (ino_t)mntns;
    if (with_rootfs && rv_snprintf(c->req.rootfs, sizeof(c->req.rootfs), "%s", rootfs) < 0)
        return false;
    if (rid && sscanf(rid, "%u:%u:%llu", &maj, &min, &ino) == 3) {
        c->req.root_dev = makedev(maj, min);
        c->req.root_ino = (ino_t)ino;
    }
    json_array_foreach(wanted, i, w) {
        const char *rel = json_string_value(w);
        if (rel && rv_lxcfs_is_candidate(rel) && offered(&c->lx, rel))
            rv_inject_add(&c->req, rel, rel);
    }
    return true;
}

/* One repair of a container at a time, and none waits for another's: an
 * OFD lock on repair.lock's byte at the container's key (its mount
 * namespace's inode), never the whole file. Waits up to ms (0: not at all);
 * false when not had. */
static bool container_lock(struct repair_ctx *c, unsigned long long key, int ms)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)key, .l_len = 1 };
    long deadline = rv_now_ms() + ms;

    if (c->lockfd < 0 || key > INT64_MAX)
        return true;   /* no lock file: as before there was one (a read-only state_dir) */
    while (fcntl(c->lockfd, F_OFD_SETLK, &fl) < 0) {
        struct timespec nap = { 0, 20 * 1000 * 1000 };
        if (errno == EINTR)
            continue;
        if ((errno != EAGAIN && errno != EACCES) || rv_now_ms() >= deadline)
            return errno != EAGAIN && errno != EACCES;   /* no OFD locks: unlocked */
        nanosleep(&nap, NULL);
    }
    return true;
}

static void container_unlock(struct repair_ctx *c, unsigned long long key)
{
    struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = (off_t)key, .l_len = 1 };

    if (c->lockfd >= 0 && key <= INT64_MAX)
        fcntl(c->lockfd, F_OFD_SETLK, &fl);
}

/* Whether root remembers the container of this key (state_dir/stalled/KEY). */
static bool remembered(const struct repair_ctx *c, unsigned long long key)
{
    char name[32];

    snprintf(name, sizeof(name), "%llu", key);
    return c->stalled_dfd >= 0 && key && faccessat(c->stalled_dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* rv_inject(&c->req) for one of root's containers (c->req.key set), as the
 * users' pass does for a user's: under the container's own lock, skipped in
 * a background pass while root remembers it stalling (a child of an earlier
 * repair still stuck in its file systems, or a back-off: owners.h), and
 * charged what it cost. A person who names it gets it tried again.
 * SKIPPED (said, counted) or LOCATED (*r, err: rv_inject's). */
static int inject_charged(struct repair_ctx *c, const char *what, bool is_id, int *r,
                          struct rv_error *err)
{
    struct rv_owners t = { .cfg = c->cfg, .dir = "stalled" };
    struct rv_owner *own;
    char label[320], why[256];
    long long now = time(NULL);
    bool named = c->o->named;
    long t0, spent;
    bool slow;

    if (!container_lock(c, c->req.key, named ? RV_REPAIR_TIMEOUT_MS + 1000 : 0)) {
        if (named) {
            c->st->failed++;
            rv_print_line(c->out, "failed   %s: another repair has been on it for over %d ms", what,
                          RV_REPAIR_TIMEOUT_MS + 1000);
        } else {
            c->st->deferred++;
            rv_print_line(c->out, "later    %s: another repair is on it", what);
        }
        return SKIPPED;
    }
    snprintf(label, sizeof(label), "the views of %s", what);
    own = rv_owner_get_key(&t, c->req.key, label);
    if (own) {
        own->stuck_alone_ok = true;
        rv_owner_of(own, c->req.pid, c->req.start_time);
    }
    if (own && rv_owner_blocked(own, now, why, sizeof(why)) &&
        (!named || own->n_stuck >= RV_OWNER_STUCK_MAX)) {
        if (named) {
            c->st->failed++;
            rv_print_line(c->out, "failed   %s: not tried: %s", what, why);
        } else {
            c->st->stalled++;
            rv_print_line(c->out, "stalled  %s: %s%s%s%s", what, why,
                          is_id ? "; `resview repair " : "", is_id ? what : "", is_id ? "` tries it now" : "");
        }
        rv_log(RV_WARN, "repair %s: skipped: %s", what, why);
        rv_owners_save(&t);
        container_unlock(c, c->req.key);
        return SKIPPED;
    }
    t0 = rv_now_ms();
    *r = rv_inject(&c->req, RV_REPAIR_TIMEOUT_MS, err);
    spent = rv_now_ms() - t0;
    slow = (*r < 0 && (err->errnum == ETIMEDOUT || err->errnum == EBUSY)) || spent >= RV_REPAIR_SLOW_MS;
    if (own) {
        rv_owner_charge(own, spent, slow, *r < 0 ? rv_bounded_left_behind() : 0, now);
        if (!slow && !own->n_stuck) {
            own->level = 0;   /* it answers: forgotten */
            own->until = own->last_timeout = 0;
            own->dirty = true;
        }
    }
    rv_owners_save(&t);   /* before the lock goes: the next repair reads it */
    container_unlock(c, c->req.key);
    return LOCATED;
}

/* Whether a background pass has spent its time: the container is left for
 * the next one (counted; said once at the end). */
static bool out_of_time(struct repair_ctx *c)
{
    if (!c->pass_deadline || rv_now_ms() < c->pass_deadline)
        return false;
    c->st->deferred++;
    return true;
}

/* Locate and inject c->req: LOCATED (done and reported, unless refused),
 * NOT_YET (nothing done), GONE, SELF, SKIPPED (root's: said). */
static int attach(struct repair_ctx *c, const char *what, struct rv_error *err, int *r)
{
    if (c->req.want_mntns) {
        int where = locate(c, c->req.want_mntns);
        if (where != LOCATED)
            return where;
    }
    if (self_served(c, what))
        return SELF;
    c->req.key = c->req.want_mntns ? c->req.want_mntns : ns_inode(c->req.pid);
    if (c->req.check_owner) {
        *r = rv_inject(&c->req, RV_REPAIR_TIMEOUT_MS, err);   /* charged to its owner */
    } else if (inject_charged(c, what, true, r, err) == SKIPPED) {
        seen_add(&c->seen, c->req.key);
        return SKIPPED;
    }
    if (!c->req.refused)
        seen_add(&c->seen, c->req.key);   /* --all need not look at it again */
    if (c->req.gone)
        return GONE;
    if (!c->req.refused) {
        c->st->scanned++;
        report(c, what, *r, err);
    }
    return LOCATED;
}

/* A record without views (the shim's variables only: LXCFS off for the
 * container, or a create the runtime refused): gone once the runtime's own
 * state of the container is gone (<runtime_root>/<id>, recorded by the
 * shim). Younger records are left alone: their create may not have reached
 * the runtime yet. A record of neither kind (a shim killed while writing) is
 * gone as well. */
static void env_only(struct repair_ctx *c, const char *id)
{
    cleanup_json json_t *env = NULL;
    struct rv_state_ref ref = { -1, 0 };
    struct rv_error err;
    struct stat rec, rt;
    const char *root = NULL;
    char path[PATH_MAX];
    int removed;

    if (rv_state_stat(c->cfg, id, "env", &rec) == 0) {
        if (rv_state_read_ref(c->cfg, id, "env", &env, &ref, &err) < 0)
            return;
        root = json_string_value(json_object_get(env, "runtime_root"));
        if (!root || rv_snprintf(path, sizeof(path), "%s/%s", root, id) < 0 ||
            lstat(path, &rt) == 0 || errno != ENOENT ||
            time(NULL) - rec.st_mtime < RV_RECORD_GRACE_S) {
            rv_state_ref_close(&ref);
            return;   /* there, too young, or no way to tell */
        }
        removed = rv_state_remove_if(c->cfg, id, &ref, "env", &err);
        rv_state_ref_close(&ref);
    } else if (rv_state_stat(c->cfg, id, ".", &rec) == 0 &&
               time(NULL) - rec.st_mtime >= RV_RECORD_GRACE_S) {
        removed = rv_state_remove_if(c->cfg, id, NULL, NULL, &err);
    } else {
        return;
    }
    if (removed < 0)
        rv_log(RV_WARN, "drop the record of %s: %s", id, err.msg);
    if (removed != 1)
        return;
    c->st->dropped++;
    rv_log(RV_INFO, "dropped the record of %s: no such container", id);
    rv_print_line(c->out, "dropped  %s: no such container%s%s", id, root ? " in " : "",
            root ? root : "");
}

static int repair_record(const char *id, void *arg)
{
    struct repair_ctx *c = arg;
    struct rv_error err;
    struct rv_state_ref ref;
    cleanup_json json_t *rec = NULL;
    cleanup_json json_t *upd = NULL;
    int r = 0;

    if (rv_state_read_ref(c->cfg, id, RV_VIEWS_FILE, &rec, &ref, &err) < 0) {
        if (c->phase == 2)
            return 0;
        if (errno == ENOENT) {
            env_only(c, id);
            if (c->o->n_ids == 0 || rv_state_exists(c->cfg, id))
                return 0;
        }
        c->st->failed++;
        rv_print_line(c->out, "failed   %s: %s", id, err.msg);
        return 0;
    }
    if (!req_from_record(c, rec, true)) {
        if (c->phase != 2) {
            c->st->failed++;
            rv_print_line(c->out, "failed   %s: malformed record", id);
        }
        rv_state_ref_close(&ref);
        return 0;
    }
    /* a background pass: containers root remembers stalling after all the
     * others, and none once the pass's time is spent */
    if (c->phase) {
        unsigned long long key = c->req.want_mntns ? c->req.want_mntns : ns_inode(c->req.pid);
        bool later = remembered(c, key);
        if ((c->phase == 1 && later) || (c->phase == 2 && (!later || seen_has(&c->seen, key)))) {
            c->postponed += c->phase == 1;
            rv_state_ref_close(&ref);
            return 0;
        }
    }
    if (out_of_time(c)) {
        rv_state_ref_close(&ref);
        return 0;
    }
    switch (attach(c, id, &err, &r)) {
    case NOT_YET:
    case SELF:
    case SKIPPED:
        rv_state_ref_close(&ref);
        return 0;
    case GONE: {
        /* a record written meanwhile (a new container, same id) stays */
        struct rv_error e2;
        int removed = rv_state_remove_if(c->cfg, id, &ref, RV_VIEWS_FILE, &e2);
        if (removed < 0)
            rv_log(RV_WARN, "drop the record of %s: %s", id, e2.msg);
        if (removed == 1) {
            c->st->dropped++;
            rv_log(RV_INFO, "dropped the record of %s: its container is gone", id);
            rv_print_line(c->out, "dropped  %s: process %d is gone", id, (int)c->req.pid);
        }
        rv_state_ref_close(&ref);
        return 0;
    }
    }
    /* Write back what is there now, unless the record changed meanwhile
     * (deleted, or a new container under the same id). Keep wanted as
     * recorded: views LXCFS does not offer today may come later. */
    upd = rv_views_record(&c->req, r < 0 || c->req.n_failed ? "failed" : "ok", NULL);
    if (upd) {
        json_object_set(upd, "wanted", json_object_get(rec, "wanted"));
        if (rv_state_replace(&ref, RV_VIEWS_FILE, upd, &err) < 0)
            rv_log(RV_WARN, "update the record of %s: %s", id, err.msg);
    }
    rv_state_ref_close(&ref);
    return 0;
}

/* A record a user's hook left in users/ (enroot run by that user). Nothing in
 * it is trusted: the injector checks that the namespace is one the file's
 * owner made, and that the process's root is the recorded rootfs; the host
 * path of the rootfs is not used; nothing is looked up through a file system
 * the user may control (inject.h, check_mounts). What it costs is charged to
 * its owner (owners.h). Returns 1 to have the file removed. */
static int repair_user_record(const char *name, uid_t uid, const struct stat *fst, json_t *rec,
                              void *arg)
{
    struct repair_ctx *c = arg;
    struct rv_owner *own = rv_owner_get(&c->owners, uid);
    struct rv_error err;
    char what[320], why[256];
    long long now = time(NULL), first;
    long t0;
    int r = 0, where;

    snprintf(what, sizeof(what), "user %u's container (record %s)", (unsigned)uid, name);
    if (!own)
        return 0;
    first = rv_owner_first_seen(own, (unsigned long long)fst->st_ino, now);
    if (rv_now_ms() >= c->users_deadline) {
        c->st->later++;    /* the users' pass is over: the next run */
        return 0;
    }
    if (rv_owner_blocked(own, now, why, sizeof(why))) {
        c->st->later++;
        if (!own->said) {
            own->said = true;
            rv_log(RV_WARN, "repair: user %u's records skipped: %s", (unsigned)uid, why);
            rv_print_line(c->out, "skipped  user %u's records: %s", (unsigned)uid, why);
        }
        return 0;
    }
    if (!rec || !req_from_record(c, rec, false) || !c->req.want_mntns || !c->req.root_ino) {
        c->st->refused++;
        rv_print_line(c->out, "refused  %s: not a record", what);
        return 1;
    }
    c->req.check_owner = true;
    c->req.owner = uid;
    c->req.check_mounts = true;
    t0 = rv_now_ms();
    where = attach(c, what, &err, &r);
    rv_owner_charge(own, rv_now_ms() - t0,
                    where == LOCATED && r < 0 && (err.errnum == ETIMEDOUT || err.errnum == EBUSY),
                    where == LOCATED ? rv_bounded_left_behind() : 0, now);
    switch (where) {
    case NOT_YET:
        /* by root's clock: the user sets the file's times */
        if (now - first < RV_USER_NOT_YET_S)
            return 0;
        c->st->dropped++;
        rv_print_line(c->out, "dropped  %s: its process has not reached the recorded root in "
                      "%d s", what, RV_USER_NOT_YET_S);
        return 1;
    case SELF:
        return 1;
    case GONE:
        c->st->dropped++;
        rv_print_line(c->out, "dropped  %s: gone", what);
        return 1;
    }
    if (c->req.refused) {
        c->st->refused++;
        rv_log(RV_WARN, "repair: refused the record %s of user %u: %s", name, (unsigned)uid,
               c->req.error);
        rv_print_line(c->out, "refused  %s: %s", what, c->req.error);
        return 1;
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

/* Whether the mount namespace of piddir is a user's: owned by a user
 * namespace that a user other than root made. Its views are repaired through
 * the user's records (outside repair.lock, charged to the user), not here. */
static bool users_namespace(int piddir)
{
    cleanup_close int ns = openat(piddir, "ns/mnt", O_RDONLY | O_CLOEXEC), user = -1;
    uid_t owner;

    user = ns >= 0 ? ioctl(ns, NS_GET_USERNS) : -1;
    return user >= 0 && ioctl(user, NS_GET_OWNER_UID, &owner) == 0 && owner != 0;
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
    snprintf(what, sizeof(what), "namespace of pid %d", (int)pid);
    if (self_served(c, what) || out_of_time(c) || inject_charged(c, what, false, &r, &err) == SKIPPED)
        return;
    c->st->scanned++;
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
        if (fstatat(piddir, "ns/mnt", &st, 0) == 0 && seen_add(&c->seen, st.st_ino) &&
            !users_namespace(piddir))
            scan_namespace(c, (pid_t)pid, piddir, st.st_ino);
        close(piddir);
    }
    closedir(d);
}

/* state_dir/repair.lock, opened (never flocked as a whole: container_lock). */
static int repair_lock_open(const struct rv_config *cfg)
{
    char lock[PATH_MAX];
    struct rv_error e2;

    if (rv_snprintf(lock, sizeof(lock), "%s/repair.lock", cfg->state_dir) < 0 ||
        rv_mkdir_p(cfg->state_dir, 0711, &e2) < 0)
        return -1;
    return open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* flock state_dir/name: wait up to ms (-1: for as long as it takes); the
 * descriptor, or -1 (no lock: not made, or not had in time). */
static int lock_wait(const struct rv_config *cfg, const char *name, int ms)
{
    char lock[PATH_MAX];
    struct rv_error e2;
    long deadline = rv_now_ms() + ms;
    int fd;

    if (rv_snprintf(lock, sizeof(lock), "%s/%s", cfg->state_dir, name) < 0 ||
        rv_mkdir_p(cfg->state_dir, 0711, &e2) < 0)
        return -1;
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, ms < 0 ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
        struct timespec nap = { 0, 20 * 1000 * 1000 };
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK || rv_now_ms() >= deadline) {
            close(fd);
            return -1;
        }
        nanosleep(&nap, NULL);
    }
    return fd;
}

int rv_repair(const struct rv_config *cfg, const struct rv_repair_opts *o,
              struct rv_repair_stats *st, FILE *out, struct rv_error *err)
{
    cleanup_free struct repair_ctx *c = calloc(1, sizeof(*c));

    memset(st, 0, sizeof(*st));
    if (!c)
        return rv_fail(err, ENOMEM, "repair");
    /* where hooks running as users record their containers (gone after a
     * reboot with /run: every repair and watch makes it again) */
    {
        struct rv_error e2;
        if (rv_state_users_prepare(cfg, &e2) < 0)
            rv_log(RV_WARN, "repair: %s", e2.msg);
    }
    c->lockfd = c->stalled_dfd = -1;
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
    rv_lxcfs_servers_find(cfg->lxcfs_root, c->lx.dev, true, &c->servers);
    /* Root's containers (watch, the lxcfs.service drop-in, Synchronize, a
     * person at once): one repair of each container at a time, under its own
     * lock; nothing shared is held while a container's file systems may make
     * us wait. A background pass has RV_REPAIR_PASS_MS, the containers root
     * remembers stalling last. */
    {
        char dir[PATH_MAX];
        c->lockfd = repair_lock_open(cfg);
        c->stalled_dfd = rv_snprintf(dir, sizeof(dir), "%s/stalled", cfg->state_dir) < 0 ? -1 :
                         open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (!o->named) {
            c->pass_deadline = rv_now_ms() + RV_REPAIR_PASS_MS;
            c->phase = 1;
        }
        for (;;) {
            if (o->n_ids > 0) {
                for (int i = 0; i < o->n_ids; i++) {
                    if (!rv_safe_name(o->ids[i])) {
                        if (c->phase < 2) {
                            st->failed++;
                            rv_print_line(out, "failed   %s: not a container id", o->ids[i]);
                        }
                        continue;
                    }
                    repair_record(o->ids[i], c);
                }
            } else {
                rv_state_foreach(cfg, repair_record, c);
            }
            if (c->phase != 1 || !c->postponed)
                break;
            c->phase = 2;
        }
        if (o->all)
            scan_all(c);
        if (st->deferred)
            rv_print_line(out, "later    %u container%s: %s", st->deferred, st->deferred == 1 ? "" : "s",
                          "left for the next pass (its time was over, or another repair was on them)");
        if (!o->named) {
            struct rv_owners t = { .cfg = cfg, .dir = "stalled" };
            rv_owners_sweep(&t);   /* containers that are gone */
        }
        if (c->stalled_dfd >= 0)
            close(c->stalled_dfd);
        if (c->lockfd >= 0)
            close(c->lockfd);
        c->lockfd = c->stalled_dfd = -1;
    }
    /* Users' records after it, outside repair.lock: what a user can make
     * root wait for never delays root's containers. Under a lock of their
     * own, waited for no longer than a users' pass may take. */
    if (o->n_ids == 0 && !o->no_users) {
        int fd = lock_wait(cfg, "users.lock", RV_USERS_PASS_MS + 1000);
        struct rv_error e2;
        if (fd < 0) {
            rv_print_line(out, "skipped  users' records: another repair is still on them");
        } else {
            c->owners.cfg = cfg;
            c->users_deadline = rv_now_ms() + RV_USERS_PASS_MS;
            if (rv_state_users_foreach(cfg, repair_user_record, c, &e2) < 0)
                rv_log(RV_WARN, "repair: users' records: %s", e2.msg);
            rv_owners_save(&c->owners);
            close(fd);
        }
    }
    free(c->seen.ino);
    free(c->ns_map);
    rv_metrics_addv(cfg->host_state_dir, (struct rv_metric_inc[]){ { RV_M_REPAIR_REPAIRED, st->repaired },
                                                                  { RV_M_REPAIR_FAILED, st->failed } }, 2);
    return 0;
}

/* --- views that do not answer ------------------------------------------- */

struct check_ctx {
    const struct rv_config *cfg;
    const struct rv_lxcfs_servers *servers;
    int per_read_ms;
    long deadline;
    FILE *out;
    unsigned faults, answered, skipped;
};

struct read_job {
    char path[PATH_MAX];
    int errnum;
};

/* In the bounded child: one byte of one view, as the container sees it. */
static int read_child(void *arg)
{
    struct read_job *j = arg;
    char ch;
    int fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0 || read(fd, &ch, 1) < 0) {
        j->errnum = errno;
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    return 0;
}

static int check_record(const char *id, void *arg)
{
    struct check_ctx *k = arg;
    cleanup_json json_t *rec = NULL;
    struct rv_error err;
    json_t *mounted;
    json_int_t pid, start;
    const char *view;
    struct read_job *j;
    unsigned long long st;
    char path[64], why[320];
    int piddir, status, left;

    if (rv_state_read(k->cfg, id, RV_VIEWS_FILE, &rec, &err) < 0)
        return 0;
    pid = json_integer_value(json_object_get(rec, "pid"));
    start = json_integer_value(json_object_get(rec, "start_time"));
    mounted = json_object_get(rec, "mounted");
    view = json_string_value(json_array_get(mounted, 0));
    if (pid <= 0 || pid > INT32_MAX || !view || !rv_lxcfs_is_candidate(view))
        return 0;
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0)
        return 0;
    if (rv_pid_start_time(piddir, &st) < 0 || st != (unsigned long long)start) {
        close(piddir);
        return 0;   /* gone; repair drops the record */
    }
    close(piddir);
    if (rv_lxcfs_ns_check(k->servers, (pid_t)pid, why, sizeof(why)) == 1) {
        /* read nothing: that read is the one that would hang. The record
         * may be older than the agent's detaching them: the mount table says */
        char targets[256];
        if (rv_lxcfs_views_in_ns((pid_t)pid, targets, sizeof(targets)) > 0) {
            k->faults++;
            rv_print_line(k->out, "fault    %s: LXCFS views (%s) are mounted where %s", id, targets, why);
        }
        return 0;
    }
    left = (int)(k->deadline - rv_now_ms());
    if (left <= 0) {
        k->skipped++;
        return 0;
    }
    j = rv_shared_alloc(sizeof(*j));
    if (!j)
        return 0;
    snprintf(j->path, sizeof(j->path), "/proc/%d/root/%s", (int)pid, view);
    if (rv_run_bounded_key(ns_inode((pid_t)pid) | (1ull << 62), read_child, j,
                           left < k->per_read_ms ? left : k->per_read_ms, &status, &err) < 0) {
        k->faults++;
        rv_print_line(k->out, "fault    %s: /%s does not answer within %d ms (%s): every reader of it "
                "in that container hangs", id, view, k->per_read_ms, err.msg);
    } else if (status != 0 && j->errnum == ENOTCONN) {
        /* answers at once: a reader sees an error, nobody hangs */
        rv_print_line(k->out, "stale    %s: /%s: %s (LXCFS gone; `resview repair` once it is back)", id,
                view, strerror(j->errnum));
    } else {
        k->answered++;
    }
    rv_shared_free(j, sizeof(*j));
    return 0;
}

unsigned rv_views_check(const struct rv_config *cfg, int per_read_ms, int budget_ms, FILE *out)
{
    struct rv_lxcfs_servers srv;
    struct check_ctx k = { cfg, &srv, per_read_ms, rv_now_ms() + budget_ms, out, 0, 0, 0 };

    struct rv_lxcfs lx;
    struct rv_error err;

    /* who serves lxcfs.root (of its device when it answers; reads only procfs) */
    if (rv_lxcfs_discover(cfg->lxcfs_root, per_read_ms, &lx, &err) < 0)
        lx.live = false;
    rv_lxcfs_servers_find(cfg->lxcfs_root, lx.live ? lx.dev : 0, true, &srv);
    for (unsigned i = 0; i < srv.n; i++) {
        char targets[512];
        int n = rv_lxcfs_views_in_ns(srv.s[i].pid, targets, sizeof(targets));
        if (n > 0) {
            k.faults++;
            rv_print_line(out, "fault    LXCFS pid %d has %d LXCFS view%s in its own mount namespace (%s): "
                    "its reads of /proc wait for itself, and so does every reader of every view",
                    (int)srv.s[i].pid, n, n == 1 ? "" : "s", targets);
        }
    }
    rv_state_foreach(cfg, check_record, &k);
    rv_print_line(out, "views: %u container%s answered, %u fault%s%s", k.answered, k.answered == 1 ? "" : "s",
            k.faults, k.faults == 1 ? "" : "s", k.skipped ? " (some not read: out of time)" : "");
    return k.faults;
}
