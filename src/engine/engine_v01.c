/* engine_v01.c - what resview 0.1 wrote into an engine's file, recognised so
 * that configure upgrades it in place and --uninstall takes it out (engine.h).
 *
 * 0.1 marked its block and lines with bare comments, without a check, and an
 * operator's own line can look the same. So they count as resview's only on
 * proof. 0.1 kept the file as it was before in FILE.resview-backup (or created
 * the file), and what it wrote was configure's edit of that copy with its own
 * markers: the edit is made again from the backup, its markers are put in 0.1's
 * form, and each marked line, and the marked block as a whole run of lines,
 * must be in the file exactly once. Those, and only those, are taken out: the
 * operator's later changes and look-alike lines stay. A 0.1 block that is not
 * what 0.1 wrote is refused with its lines named. (Docker's 0.1 entry:
 * engine_docker.c.) */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define V01_BEGIN "# resview-begin: added by `resview configure`, removed by `resview configure --uninstall`"
#define V01_END "# resview-end"
#define V01_ADDED "  # resview-added"
#define V01_WAS "  # resview-was: "
#define CHECK_HEX 16

/* The flags of a begin line ("" or " [created]" or " [noeol]"), in both forms. */
static const char *const flags[] = { "", " [created]", " [noeol]" };
enum { CREATED = 1, NOEOL = 2 };

struct line {
    const char *s;
    size_t n;        /* without the '\n' */
};

/* The line at *p, and *p moved past it; false at the end. */
static bool next_line(const char *t, size_t len, size_t *p, struct line *l)
{
    if (*p >= len)
        return false;
    const char *nl = memchr(t + *p, '\n', len - *p);
    l->s = t + *p;
    l->n = nl ? (size_t)(nl - l->s) : len - *p;
    *p += l->n + (nl ? 1 : 0);
    return true;
}

static bool begins(const struct line *l, const char *s)
{
    return l->n >= strlen(s) && memcmp(l->s, s, strlen(s)) == 0;
}

static bool ends(const struct line *l, const char *s)
{
    return l->n >= strlen(s) && memcmp(l->s + l->n - strlen(s), s, strlen(s)) == 0;
}

static bool hex_at(const char *p)
{
    for (int i = 0; i < CHECK_HEX; i++)
        if (!strchr("0123456789abcdef", p[i]) || !p[i])
            return false;
    return true;
}

/* The flags of a 0.1 begin line, -1 if l is not one. */
static int v01_begin(const struct line *l)
{
    for (int f = 0; f < 3; f++)
        if (l->n == strlen(V01_BEGIN) + strlen(flags[f]) && begins(l, V01_BEGIN) &&
            memcmp(l->s + strlen(V01_BEGIN), flags[f], strlen(flags[f])) == 0)
            return f;
    return -1;
}

/* Where s[0..n) is a whole line (or run of lines, ending in '\n') of t: the
 * number of places (0, 1, or 2 for more) and the first. */
static int places(const char *t, size_t len, const char *s, size_t n, size_t *at)
{
    int found = 0;
    for (const char *m = t; n && (m = memmem(m, len - (size_t)(m - t), s, n)); m++) {
        size_t o = (size_t)(m - t);
        if ((o == 0 || t[o - 1] == '\n') && (s[n - 1] == '\n' || o + n == len || t[o + n] == '\n')) {
            if (found++ == 0)
                *at = o;
            if (found == 2)
                break;
        }
    }
    return found;
}

static bool has_line(const char *t, size_t len, const struct line *l)
{
    size_t at;
    return t && places(t, len, l->s, l->n, &at) > 0;
}

/* Whether 0.1's own strip found markers in t (its begin, added and was
 * lines): then it rewrote them, and its edit of t cannot be made again. */
static bool v01_marked(const char *t, size_t len)
{
    struct line l;
    for (size_t p = 0; next_line(t, len, &p, &l);)
        if (begins(&l, V01_BEGIN) || ends(&l, V01_ADDED) || memmem(l.s, l.n, V01_WAS, strlen(V01_WAS)))
            return true;
    return false;
}

/* One thing 0.1 wrote, in its form: a line it added, a line it replaced
 * (with the old text after V01_WAS), or its block (whole lines). */
struct piece {
    char *text;
    size_t n;
    int block;       /* -1: a line; else the block's flags */
    size_t at, end;  /* where it is in the file */
};

struct pieces {
    struct piece *p;
    size_t n;
};

static void pieces_free(struct pieces *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i].text);
    free(ps->p);
}

enum mark { NONE, BEGIN, END, ADDED, WAS };

static bool today_end(const struct line *l)
{
    return l->n == strlen(RV_MARK_END) + CHECK_HEX && begins(l, RV_MARK_END) &&
           hex_at(l->s + strlen(RV_MARK_END));
}

/* A marker line as configure writes it now (with a check) in 0.1's form,
 * allocated; *mark NONE (and NULL) if l is no marker line. */
static char *v01_form(const struct line *l, enum mark *mark, int *flag)
{
    size_t k = strlen(RV_MARK_BEGIN), tail = strlen(RV_MARK_BEGIN_TAIL), w = strlen(RV_MARK_WAS);
    const char *m = memmem(l->s, l->n, RV_MARK_WAS, w);
    char *out = NULL;

    *mark = NONE;
    if (begins(l, RV_MARK_BEGIN) && ends(l, RV_MARK_BEGIN_TAIL) && l->n >= k + CHECK_HEX + tail &&
        hex_at(l->s + k)) {
        for (*flag = 0; *flag < 3; ++*flag)
            if (l->n == k + CHECK_HEX + strlen(flags[*flag]) + tail &&
                memcmp(l->s + k + CHECK_HEX, flags[*flag], strlen(flags[*flag])) == 0)
                break;
        if (*flag == 3)
            return NULL;
        *mark = BEGIN;
        return asprintf(&out, V01_BEGIN "%s", flags[*flag]) < 0 ? NULL : out;
    }
    if (today_end(l)) {
        *mark = END;
        return strdup(V01_END);
    }
    k = strlen(RV_MARK_ADDED);
    if (l->n >= k + CHECK_HEX && memcmp(l->s + l->n - CHECK_HEX - k, RV_MARK_ADDED, k) == 0 &&
        hex_at(l->s + l->n - CHECK_HEX)) {
        *mark = ADDED;
        return strndup(l->s, l->n - CHECK_HEX - 1); /* without " CHECK" */
    }
    if (m && (size_t)(l->s + l->n - m) >= w + CHECK_HEX + 2 && hex_at(m + w) &&
        memcmp(m + w + CHECK_HEX, ": ", 2) == 0) {
        const char *orig = m + w + CHECK_HEX + 2;
        *mark = WAS;
        return asprintf(&out, "%.*s" V01_WAS "%.*s", (int)(m - l->s), l->s, (int)(l->s + l->n - orig),
                        orig) < 0 ? NULL : out;
    }
    return NULL;
}

/* The pieces of out (configure's edit of the backup, with today's markers),
 * in 0.1's form; lines the backup has are not resview's. */
static int v01_pieces(const char *out, size_t len, const char *backup, size_t blen, struct pieces *ps)
{
    struct line l;
    struct rv_error ignored;
    enum mark mark;
    int flag = 0;

    for (size_t p = 0; next_line(out, len, &p, &l);) {
        if (has_line(backup, blen, &l))
            continue;
        cleanup_free char *text = v01_form(&l, &mark, &flag);
        if (mark == NONE || mark == END)
            continue;
        if (!text)
            return -1;
        /* the block: its lines up to its end marker */
        for (bool end = false; mark == BEGIN && !end && next_line(out, len, &p, &l);) {
            end = today_end(&l);
            if (rv_strcatf(&text, &ignored, "\n%.*s", end ? (int)strlen(V01_END) : (int)l.n,
                           end ? V01_END : l.s) < 0)
                return -1;
        }
        if (mark == BEGIN && rv_strcatf(&text, &ignored, "\n") < 0)
            return -1;
        struct piece *np = realloc(ps->p, (ps->n + 1) * sizeof(*np));
        if (!np)
            return -1;
        ps->p = np;
        np[ps->n] = (struct piece){ .n = strlen(text), .block = mark == BEGIN ? flag : -1 };
        np[ps->n++].text = move_ptr(text);
    }
    return 0;
}

static int piece_cmp(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* text without the pieces, each found exactly once (0.1's strip puts back
 * what it replaced and drops the blank line before its block); 1 if so, 0
 * if a piece is missing or ambiguous. */
static int take_out(const char *text, size_t len, struct pieces *ps, char **out, size_t *outlen,
                    bool *created)
{
    cleanup_free char *b = malloc(len + 1);
    size_t o = 0, pos = 0;

    if (!b)
        return -1;
    if (ps->n == 0)
        return 0;
    for (size_t i = 0; i < ps->n; i++) {
        struct piece *p = &ps->p[i];
        if (places(text, len, p->text, p->n, &p->at) != 1)
            return 0;
        p->end = p->at + p->n + (p->block < 0 && p->at + p->n < len ? 1 : 0);
    }
    qsort(ps->p, ps->n, sizeof(*ps->p), piece_cmp);
    *created = false;
    for (size_t i = 0; i < ps->n; i++) {
        struct piece *p = &ps->p[i];
        if (p->at < pos)
            return 0;
        memcpy(b + o, text + pos, p->at - pos);
        o += p->at - pos;
        pos = p->end;
        const char *orig = p->block < 0 ? strstr(p->text, V01_WAS) : NULL;
        if (orig) {
            orig += strlen(V01_WAS);
            memcpy(b + o, orig, (size_t)(p->text + p->n - orig));
            o += (size_t)(p->text + p->n - orig);
            if (text[p->end - 1] == '\n')
                b[o++] = '\n';
        } else if (p->block >= 0) {
            if (o >= 2 && b[o - 1] == '\n' && b[o - 2] == '\n')
                o--;
            if (p->block == NOEOL && o >= 1 && b[o - 1] == '\n')
                o--;
            *created = *created || p->block == CREATED;
        }
    }
    memcpy(b + o, text + pos, len - pos);
    o += len - pos;
    b[o] = '\0';
    *outlen = o;
    *out = move_ptr(b);
    return 1;
}

static bool v01_end(const struct line *l)
{
    return l->n == strlen(V01_END) && begins(l, V01_END);
}

/* Refuse a 0.1 block (exact begin and end lines) not proven ours when it
 * cannot be the operator's text from before resview either: the backup lacks
 * it, or there is no backup and it says 0.1 created the file. The message
 * names the lines of 0.1's form that the backup lacks. */
static int refuse_changed(const char *text, size_t len, const char *backup, size_t blen,
                          struct rv_error *err)
{
    char lines[200] = "", one[32];
    unsigned no = 0;
    bool refuse = false, several = false;
    struct line l, e;

    for (size_t p = 0; next_line(text, len, &p, &l);) {
        unsigned from = ++no;
        int f = v01_begin(&l);
        if (has_line(backup, blen, &l))
            continue; /* the operator's, from before resview */
        if (f >= 0) {
            size_t q = p;
            unsigned to = no;
            bool closed = false;
            while (!closed && next_line(text, len, &q, &e)) {
                to++;
                closed = v01_end(&e);
            }
            if (!closed)
                continue;
            refuse = refuse || backup || f == CREATED;
            p = q;
            no = to;
        } else if (!backup || !(ends(&l, V01_ADDED) || memmem(l.s, l.n, V01_WAS, strlen(V01_WAS)))) {
            continue;
        }
        several = several || lines[0] || no > from;
        if (rv_snprintf(one, sizeof(one), no > from ? "%s%u-%u" : "%s%u", lines[0] ? ", " : "", from, no) >= 0 &&
            strlen(lines) + strlen(one) < sizeof(lines))
            strcat(lines, one);
    }
    if (!refuse)
        return 0;
    return rv_fail(err, 0, "resview 0.1's entries on line%s %s were changed since it wrote them (%s): "
                   "take them out by hand (a `# resview-was:` line goes back to the text after that "
                   "marker), then run configure again", several ? "s" : "", lines,
                   backup ? "they are not what it makes of the file's " RV_BACKUP_SUFFIX " copy"
                          : "it created the file, and there is no " RV_BACKUP_SUFFIX " copy");
}

int rv_v01_take_out(const struct rv_v01_ops *ops, const struct rv_engine *e,
                    const struct rv_engine_opts *o, const char *text, size_t len,
                    const char *backup, size_t blen, char **out, size_t *outlen, bool *created,
                    struct rv_error *err)
{
    char exe[4096] = "", detail[256];
    struct rv_error ignored;
    cleanup_free char *now = NULL;
    size_t nlen;
    bool had, made;

    *out = NULL;
    if (!v01_marked(text, len))
        return 0;
    /* configured since 0.1 (upgraded): what looks like 0.1's is the operator's */
    if (rv_marked_strip(text, len, &now, &nlen, &had, &made, err) < 0)
        return -1;
    if (had)
        return 0;
    if (backup && v01_marked(backup, blen))
        return refuse_changed(text, len, backup, blen, err);
    /* the runtime 0.1 was given: the one the file names, or this run's */
    if (ops->status(e, text, len, detail, sizeof(detail), exe, sizeof(exe), &ignored) < 0)
        exe[0] = '\0';
    const char *paths[] = { exe, o->runtime_path };
    for (size_t i = 0; i < 2; i++) {
        if (!paths[i] || !*paths[i] || (i == 1 && strcmp(paths[i], exe) == 0))
            continue;
        for (int k = 0; k < 4; k++) { /* with --set-as-default first; containerd version 2, 3 */
            struct rv_engine_opts r = { .runtime_path = paths[i], .set_default = k < 2,
                                        .containerd_version = 2 + k % 2, .slurm_version = 2302,
                                        .v01 = true };
            struct rv_edit_result res = { 0 };
            struct pieces ps = { 0 };
            int got = 0;
            /* the backup holds nothing of 0.1 (refused above) */
            if (ops->edit(e, &r, backup ? backup : "", backup ? blen : 0, backup != NULL, NULL, 0,
                               &res, &ignored) == 0 && res.text) {
                got = v01_pieces(res.text, res.len, backup, blen, &ps);
                if (got == 0)
                    got = take_out(text, len, &ps, out, outlen, created);
            }
            pieces_free(&ps);
            free(res.text);
            free(res.restore_backup);
            if (got < 0)
                return rv_fail(err, ENOMEM, "resview 0.1's entries");
            if (got > 0)
                return 1;
        }
    }
    return refuse_changed(text, len, backup, blen, err);
}
