/* owners.c - root's memory of the users whose records it acts on (owners.h). */
#define _GNU_SOURCE
#include "owners.h"
#include "resview/json.h"
#include "resview/log.h"
#include "resview/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define OWNER_FILE_MAX (64u << 10)

static int owners_dir(const struct rv_config *cfg, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/owners", cfg->state_dir);
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

static void load(const struct rv_config *cfg, struct rv_owner *o)
{
    char dir[PATH_MAX], name[32];
    cleanup_free char *text = NULL;
    cleanup_json json_t *doc = NULL;
    cleanup_close int dfd = -1;
    struct rv_error err;
    json_t *a, *e;
    size_t len, i;

    snprintf(name, sizeof(name), "%u", (unsigned)o->uid);
    if (owners_dir(cfg, dir, sizeof(dir)) < 0 ||
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
    json_array_foreach((a = json_object_get(doc, "seen")), i, e) {
        json_int_t ino = json_integer_value(json_array_get(e, 0));
        json_int_t first = json_integer_value(json_array_get(e, 1));
        if (ino > 0 && o->n_seen < RV_OWNER_SEEN_MAX)
            o->seen[o->n_seen++] = (struct rv_owner_seen){ (unsigned long long)ino, first, false };
    }
}

struct rv_owner *rv_owner_get(struct rv_owners *t, uid_t uid)
{
    struct rv_owner **p, *o;

    for (size_t i = 0; i < t->n; i++)
        if (t->o[i]->uid == uid)
            return t->o[i];
    p = realloc(t->o, (t->n + 1) * sizeof(*p));
    if (!p)
        return NULL;
    t->o = p;
    o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->uid = uid;
    load(t->cfg, o);
    t->o[t->n++] = o;
    return o;
}

int rv_owner_blocked(struct rv_owner *o, long long now, char *why, size_t size)
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
    if (alive) {
        snprintf(why, size, "%u child%s of root's repair still stuck in this user's file "
                 "systems (pid %d): none follows", alive, alive == 1 ? "" : "ren",
                 (int)o->stuck[0].pid);
        return 1;
    }
    if (now < o->until) {
        snprintf(why, size, "backing off for %lld s more (its records timed out)", o->until - now);
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
    /* a first timeout alone (no child left): remembered, not yet a back-off */
    if (!stuck && (!o->last_timeout || now - o->last_timeout >= RV_OWNER_BACKOFF_S)) {
        o->last_timeout = now;
        return;
    }
    if (!stuck)
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
        rv_log(RV_WARN, "repair: user %u's records back off for %lld s: one %s", (unsigned)o->uid,
               span, stuck ? "left a child stuck" : "timed out");
    }
}

static void save_one(const struct rv_config *cfg, int dfd, struct rv_owner *o, long long now)
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
    json_object_set_new(doc, "seen", seen);
    snprintf(name, sizeof(name), "%u", (unsigned)o->uid);
    if (rv_json_dump(doc, &text, &len, &err) < 0 ||
        rv_write_atomic_at(dfd, name, text, len, &own, RV_WRITE_SWEEP, &err) < 0)
        rv_log(RV_WARN, "repair: remember user %u: %s", (unsigned)o->uid, err.msg);
    (void)cfg;
}

void rv_owners_save(struct rv_owners *t)
{
    char dir[PATH_MAX];
    cleanup_close int dfd = -1;
    long long now = time(NULL);

    struct stat st;

    if (t->n && owners_dir(t->cfg, dir, sizeof(dir)) >= 0 &&
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
            save_one(t->cfg, dfd, t->o[i], now);
        free(t->o[i]);
    }
    free(t->o);
    t->o = NULL;
    t->n = 0;
}
