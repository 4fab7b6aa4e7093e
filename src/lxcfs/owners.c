/* owners.c - root's memory of the users whose records it acts on (owners.h). */
#define _GNU_SOURCE
#include "owners.h"
#include "resview/json.h"
#include "resview/log.h"
#include "resview/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define OWNER_FILE_MAX (64u << 10)

static int owners_dir(const struct rv_owners *t, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/%s", t->cfg->state_dir, t->dir ? t->dir : "owners");
}

/* Start time of a live process that is still pid (0: gone or reused). */
static bool still_there(pid_t pid, unsigned long long start)
{
    char path[64], buf[1024];
    const char *paren;
    unsigned long long have;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (rv_read_small(path, buf, sizeof(buf)) < 0 || !(paren = strrchr(buf, ')')) ||
        paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
        return false;
    return rv_parse_stat_start(buf, &have) == 0 && have == start;
}

static void load(const struct rv_owners *t, struct rv_owner *o)
{
    char dir[PATH_MAX], name[32];
    cleanup_free char *text = NULL;
    cleanup_json json_t *doc = NULL;
    cleanup_close int dfd = -1;
    struct rv_error err;
    json_t *a, *e;
    size_t len, i;

    snprintf(name, sizeof(name), "%llu", o->key);
    if (owners_dir(t, dir, sizeof(dir)) < 0 ||
        (dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        rv_read_file_at(dfd, name, OWNER_FILE_MAX, &text, &len, NULL, &err) < 0 ||
        rv_json_parse(text, len, name, &doc, &err) < 0)
        return;
    json_array_foreach((a = json_object_get(doc, "stuck")), i, e) {
        json_int_t pid = json_integer_value(json_array_get(e, 0));
        json_int_t start = json_integer_value(json_array_get(e, 1));
        if (pid > 0 && pid <= INT32_MAX && start > 0 && o->n_stuck < RV_OWNER_STUCK_MAX) {
            o->stuck[o->n_stuck].pid = (pid_t)pid;
            o->stuck[o->n_stuck++].start = (unsigned long long)start;
        }
    }
    if (json_integer_value(json_object_get(doc, "level")) > 0)
        o->level = (unsigned)(json_integer_value(json_object_get(doc, "level")) & 0xff);
    o->until = json_integer_value(json_object_get(doc, "until"));
    o->last_timeout = json_integer_value(json_object_get(doc, "last_timeout"));
    a = json_object_get(doc, "of");
    if (json_integer_value(json_array_get(a, 0)) > 0 && json_integer_value(json_array_get(a, 0)) <= INT32_MAX) {
        o->of_pid = (pid_t)json_integer_value(json_array_get(a, 0));
        o->of_start = (unsigned long long)json_integer_value(json_array_get(a, 1));
    }
    json_array_foreach((a = json_object_get(doc, "seen")), i, e) {
        json_int_t ino = json_integer_value(json_array_get(e, 0));
        json_int_t first = json_integer_value(json_array_get(e, 1));
        if (ino > 0 && o->n_seen < RV_OWNER_SEEN_MAX)
            o->seen[o->n_seen++] = (struct rv_owner_seen){ (unsigned long long)ino, first, false };
    }
}

struct rv_owner *rv_owner_get(struct rv_owners *t, uid_t uid)
{
    char label[96];
    struct rv_owner *o;

    snprintf(label, sizeof(label), "user %u's records", (unsigned)uid);
    o = rv_owner_get_key(t, uid, label);
    if (o)
        o->uid = uid;
    return o;
}

struct rv_owner *rv_owner_get_key(struct rv_owners *t, unsigned long long key, const char *label)
{
    struct rv_owner **p, *o;

    for (size_t i = 0; i < t->n; i++)
        if (t->o[i]->key == key)
            return t->o[i];
    p = realloc(t->o, (t->n + 1) * sizeof(*p));
    if (!p)
        return NULL;
    t->o = p;
    o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->key = key;
    snprintf(o->label, sizeof(o->label), "%s", label);
    load(t, o);
    t->o[t->n++] = o;
    return o;
}

/* Children still stuck (those that ended are forgotten). */
static unsigned stuck_alive(struct rv_owner *o)
{
    unsigned alive = 0;

    for (unsigned i = 0; i < o->n_stuck;) {
        if (still_there(o->stuck[i].pid, o->stuck[i].start)) {
            alive++;
            i++;
        } else {
            o->stuck[i] = o->stuck[--o->n_stuck];   /* it ended: forgotten */
            o->dirty = true;
        }
    }
    return alive;
}

void rv_owner_of(struct rv_owner *o, pid_t pid, unsigned long long start)
{
    if (o->of_pid == pid && o->of_start == start)
        return;
    if (o->of_pid && !still_there(o->of_pid, o->of_start) && stuck_alive(o) == 0) {
        o->level = 0;       /* another namespace's, with the same inode */
        o->until = o->last_timeout = 0;
    }
    o->of_pid = pid;
    o->of_start = start;
    o->dirty = true;
}

int rv_owner_blocked(struct rv_owner *o, long long now, char *why, size_t size)
{
    unsigned alive = stuck_alive(o);

    if (alive) {
        snprintf(why, size, "%u child%s of root's repair still stuck in %s file "
                 "systems (pid %d): none follows", alive, alive == 1 ? "" : "ren",
                 o->of_pid ? "its" : "this user's", (int)o->stuck[0].pid);
        return 1;
    }
    if (now < o->until) {
        snprintf(why, size, "backing off for %lld s more (%s)", o->until - now,
                 o->of_pid ? "it stalled again within 10 minutes" : "its records timed out");
        return 1;
    }
    if (o->spent_ms >= RV_OWNER_RUN_MS) {
        snprintf(why, size, "its records had %ld ms of this run already (at most %d): the rest "
                 "wait for the next", o->spent_ms, RV_OWNER_RUN_MS);
        return 1;
    }
    return 0;
}

long long rv_owner_first_seen(struct rv_owner *o, unsigned long long ino, long long now)
{
    for (unsigned i = 0; i < o->n_seen; i++)
        if (o->seen[i].ino == ino) {
            o->seen[i].now = true;
            return o->seen[i].first;
        }
    if (o->n_seen < RV_OWNER_SEEN_MAX) {
        o->seen[o->n_seen++] = (struct rv_owner_seen){ ino, now, true };
        o->dirty = true;
    }
    return now;
}

void rv_owner_charge(struct rv_owner *o, long ms, bool timed_out, pid_t stuck, long long now)
{
    char path[64];
    int piddir;

    o->spent_ms += ms;
    if (!timed_out && !stuck)
        return;
    o->troubled = o->dirty = true;
    if (stuck) {
        unsigned long long start;
        snprintf(path, sizeof(path), "/proc/%d", (int)stuck);
        piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir >= 0 && rv_pid_start_time(piddir, &start) == 0) {
            if (o->n_stuck == RV_OWNER_STUCK_MAX)
                memmove(o->stuck, o->stuck + 1, sizeof(o->stuck[0]) * --o->n_stuck);
            o->stuck[o->n_stuck].pid = stuck;
            o->stuck[o->n_stuck++].start = start;
        }
        if (piddir >= 0)
            close(piddir);
    }
    /* a first timeout alone (no child left; a container's, even with one):
     * remembered, not yet a back-off */
    if ((!stuck || o->stuck_alone_ok) &&
        (!o->last_timeout || now - o->last_timeout >= RV_OWNER_BACKOFF_S)) {
        o->last_timeout = now;
        return;
    }
    if (!stuck || o->stuck_alone_ok)
        o->last_timeout = now;
    if (now >= o->until) {
        long long span = RV_OWNER_BACKOFF_S;
        for (unsigned i = 0; i < o->level && span < RV_OWNER_BACKOFF_MAX_S; i++)
            span *= 2;
        if (span > RV_OWNER_BACKOFF_MAX_S)
            span = RV_OWNER_BACKOFF_MAX_S;
        o->until = now + span;
        if (o->level < 16)
            o->level++;
        rv_log(RV_WARN, "repair: %s back off for %lld s: one %s", o->label, span,
               stuck ? "left a child stuck" : "timed out");
    }
}

static void save_one(int dfd, struct rv_owner *o, long long now)
{
    cleanup_json json_t *doc = NULL;
    cleanup_free char *text = NULL;
    json_t *stuck, *seen;
    struct rv_error err;
    char name[32];
    size_t len;
    unsigned kept = 0;
    struct stat own = { .st_mode = S_IFREG | 0600, .st_uid = 0, .st_gid = 0 };

    /* records not there any more are forgotten */
    for (unsigned i = 0; i < o->n_seen; i++)
        if (o->seen[i].now)
            o->seen[kept++] = o->seen[i];
        else
            o->dirty = true;
    o->n_seen = kept;
    /* a run without trouble once the back-off is over ends the series */
    if (!o->troubled && o->level && now >= o->until) {
        o->level = 0;
        o->dirty = true;
    }
    if (!o->dirty)
        return;
    snprintf(name, sizeof(name), "%llu", o->key);
    /* a container's with nothing left to remember: no file */
    if (o->of_pid && !o->n_stuck && !o->level && now >= o->until &&
        (!o->last_timeout || now - o->last_timeout >= RV_OWNER_BACKOFF_S)) {
        if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
            rv_log(RV_WARN, "repair: forget %s: %s", o->label, strerror(errno));
        return;
    }
    doc = json_object();
    stuck = json_array();
    seen = json_array();
    if (!doc || !stuck || !seen) {
        json_decref(stuck);
        json_decref(seen);
        return;
    }
    for (unsigned i = 0; i < o->n_stuck; i++)
        json_array_append_new(stuck, json_pack("[I,I]", (json_int_t)o->stuck[i].pid,
                                               (json_int_t)o->stuck[i].start));
    for (unsigned i = 0; i < o->n_seen; i++)
        json_array_append_new(seen, json_pack("[I,I]", (json_int_t)o->seen[i].ino,
                                              (json_int_t)o->seen[i].first));
    json_object_set_new(doc, "stuck", stuck);
    json_object_set_new(doc, "level", json_integer(o->level));
    json_object_set_new(doc, "until", json_integer(o->until));
    json_object_set_new(doc, "last_timeout", json_integer(o->last_timeout));
    if (o->of_pid) {
        json_decref(seen);
        json_object_set_new(doc, "of", json_pack("[I,I]", (json_int_t)o->of_pid,
                                                 (json_int_t)o->of_start));
    } else {
        json_object_set_new(doc, "seen", seen);
    }
    if (rv_json_dump(doc, &text, &len, &err) < 0 ||
        rv_write_atomic_at(dfd, name, text, len, &own, RV_WRITE_SWEEP, &err) < 0)
        rv_log(RV_WARN, "repair: remember %s: %s", o->label, err.msg);
}

void rv_owners_save(struct rv_owners *t)
{
    char dir[PATH_MAX];
    cleanup_close int dfd = -1;
    long long now = time(NULL);

    struct stat st;

    if (t->n && owners_dir(t, dir, sizeof(dir)) >= 0 &&
        (mkdir(dir, 0700) == 0 || errno == EEXIST))
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* root's alone */
    if (dfd >= 0 && (fstat(dfd, &st) < 0 || st.st_uid != 0 ||
                     ((st.st_mode & 07777) != 0700 && fchmod(dfd, 0700) < 0))) {
        rv_log(RV_WARN, "repair: `%s` is not root's: users' costs not remembered", dir);
        close(dfd);
        dfd = -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (dfd >= 0)
            save_one(dfd, t->o[i], now);
        free(t->o[i]);
    }
    free(t->o);
    t->o = NULL;
    t->n = 0;
}

unsigned rv_owners_sweep(const struct rv_owners *t)
{
    char dir[PATH_MAX];
    struct dirent *de;
    DIR *d;
    unsigned n = 0;

    if (owners_dir(t, dir, sizeof(dir)) < 0 || !(d = opendir(dir)))
        return 0;
    while ((de = readdir(d))) {
        struct rv_owner *o;
        uint64_t key;
        if (rv_parse_u64(de->d_name, &key) < 0 || !(o = calloc(1, sizeof(*o))))
            continue;
        o->key = key;
        load(t, o);
        /* a user's (no process named) is kept; a container's whose process
         * is gone and whose children all ended is forgotten */
        if (o->of_pid && !still_there(o->of_pid, o->of_start) && stuck_alive(o) == 0 &&
            unlinkat(dirfd(d), de->d_name, 0) == 0)
            n++;
        free(o);
    }
    closedir(d);
    return n;
}
