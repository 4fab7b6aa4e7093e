/* engine.c - engine registry, the file transaction of `resview configure`
 * (read, edit, validate, back up, atomic replace), and the TOML edit plan. */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#define CONFIG_MAX (8u << 20)

const struct rv_engine *const rv_engines[] = {
    &rv_engine_containerd, &rv_engine_docker, &rv_engine_podman,
    &rv_engine_crio, &rv_engine_enroot, &rv_engine_slurm, NULL,
};

const struct rv_engine *rv_engine_find(const char *name)
{
    if (strcmp(name, "cri-o") == 0)
        name = "crio";
    for (size_t i = 0; rv_engines[i]; i++)
        if (strcmp(rv_engines[i]->name, name) == 0)
            return rv_engines[i];
    return NULL;
}

int rv_engine_read(const char *path, char **text, size_t *len, bool *exists, struct rv_error *err)
{
    struct stat st;

    *text = NULL;
    *len = 0;
    *exists = false;
    if (rv_read_file_at(AT_FDCWD, path, CONFIG_MAX, text, len, &st, err) < 0) {
        if (err->errnum != ENOENT)
            return -1;
        if (!(*text = strdup("")))
            return rv_fail(err, ENOMEM, "read `%s`", path);
        return 0;
    }
    *exists = true;
    return 0;
}

/* Where the file really is (a symlinked config is edited at its target). */
static int real_target(const char *path, char *out, size_t size, struct rv_error *err)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return rv_snprintf(out, size, "%s", buf) < 0 ? rv_fail(err, ENAMETOOLONG, "`%s`", path) : 0;
    if (errno != ENOENT)
        return rv_fail(err, errno, "resolve `%s`", path);
    return rv_snprintf(out, size, "%s", path) < 0 ? rv_fail(err, ENAMETOOLONG, "`%s`", path) : 0;
}

static int write_file(const char *path, const char *data, size_t len, const struct stat *st,
                      struct rv_error *err)
{
    char dir[PATH_MAX], base[PATH_MAX];
    cleanup_close int dfd = -1;

    if (rv_snprintf(dir, sizeof(dir), "%s", path) < 0 || rv_snprintf(base, sizeof(base), "%s", path) < 0)
        return rv_fail(err, ENAMETOOLONG, "`%s`", path);
    const char *d = dirname(dir), *b = basename(base);
    if (rv_mkdir_p(d, 0755, err) < 0)
        return -1;
    dfd = open(d, O_DIRECTORY | O_CLOEXEC | O_PATH);
    if (dfd < 0)
        return rv_fail(err, errno, "open `%s`", d);
    if (rv_write_atomic_at(dfd, b, data, len, st, RV_WRITE_DURABLE | RV_WRITE_SWEEP, err) < 0)
        return rv_wrap(err, "`%s`", path);
    return 0;
}

int rv_engine_apply(const struct rv_engine *e, const struct rv_engine_opts *o, struct rv_error *err)
{
    char path[PATH_MAX], bpath[PATH_MAX];
    cleanup_free char *old = NULL, *backup = NULL;
    size_t len, blen = 0;
    bool exists, bexists;
    struct stat st;
    struct rv_edit_result res = { 0 };
    int rc = -1;

    if (real_target(o->config ? o->config : e->default_config, path, sizeof(path), err) < 0)
        return -1;
    /* Two configure runs at once must not interleave read and write. */
    char dir[PATH_MAX];
    cleanup_close int lock = -1;
    if (rv_snprintf(dir, sizeof(dir), "%s", path) >= 0 && strrchr(dir, '/')) {
        *strrchr(dir, '/') = '\0';
        lock = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lock >= 0 && flock(lock, LOCK_EX) < 0)
            return rv_fail(err, errno, "lock `%s`", dir);
    }
    if (rv_snprintf(bpath, sizeof(bpath), "%s%s", path, RV_BACKUP_SUFFIX) < 0)
        return rv_fail(err, ENAMETOOLONG, "`%s`", path);
    if (rv_engine_read(path, &old, &len, &exists, err) < 0)
        return rv_wrap(err, "%s", e->name);
    if (exists && stat(path, &st) < 0)
        return rv_fail(err, errno, "stat `%s`", path);
    if (!exists && o->uninstall) {
        printf("%s: `%s` does not exist; nothing to change\n", e->name, path);
        return 0;
    }
    if (rv_engine_read(bpath, &backup, &blen, &bexists, err) < 0)
        return rv_wrap(err, "%s", e->name);
    if (rv_engine_edit(e, o, old, len, exists, bexists ? backup : NULL, blen, &res, err) < 0) {
        rv_wrap(err, "%s: `%s` left untouched", e->name, path);
        goto out;
    }
    const char *text = res.restore_backup ? res.restore_backup : res.text;
    size_t tlen = res.restore_backup ? res.restore_len : res.len;
    bool same = res.remove ? !exists : (exists && tlen == len && memcmp(text, old, len) == 0);
    if (same) {
        printf("%s: `%s` %s; nothing to change\n", e->name, path,
               o->uninstall ? "has no resview entry" : "is already configured");
        rc = 0;
        goto out;
    }
    if (o->dry_run) {
        if (res.remove)
            printf("%s: would remove `%s` (created by resview configure)\n", e->name, path);
        else
            printf("%s: would write `%s`:\n%.*s", e->name, path, (int)tlen, text);
        rc = 0;
        goto out;
    }
    /* The pristine original is kept once; later changes of our own entries
     * do not overwrite it. */
    if (exists && !o->uninstall && !res.no_backup) {
        bool had = false, created = false;
        cleanup_free char *stripped = NULL;
        size_t slen;
        if (rv_marked_strip(old, len, &stripped, &slen, &had, &created, err) < 0)
            goto out;
        bool pristine = !had && strstr(old, "resview") == NULL;
        if ((pristine || !bexists) && write_file(bpath, old, len, &st, err) < 0) {
            rv_wrap(err, "%s: back up `%s`", e->name, path);
            goto out;
        }
    }
    if (res.remove) {
        if (unlink(path) < 0 && errno != ENOENT) {
            rv_fail(err, errno, "%s: remove `%s`", e->name, path);
            goto out;
        }
        printf("%s: removed `%s` (resview had created it)\n", e->name, path);
    } else {
        struct stat nst = { .st_mode = res.mode ? res.mode : 0644, .st_uid = getuid(), .st_gid = getgid() };
        if (write_file(path, text, tlen, exists ? &st : &nst, err) < 0) {
            rv_wrap(err, "%s", e->name);
            goto out;
        }
        printf("%s: %s `%s`%s%s%s\n", e->name, o->uninstall ? "removed resview from" : "configured",
               path, exists && !o->uninstall ? " (original kept in `" : "",
               exists && !o->uninstall ? bpath : "", exists && !o->uninstall ? "`)" : "");
    }
    printf("%s: %s\n", e->name, !o->uninstall ? e->reload : res.note[0] ? res.note : e->unload);
    rc = 0;
out:
    free(res.text);
    free(res.restore_backup);
    return rc;
}

/* --- TOML plans --------------------------------------------------------- */

static int plan_patch(struct rv_toml_plan *plan, size_t start, size_t end, char *text,
                      struct rv_error *err)
{
    struct rv_toml_patch *p = realloc(plan->patches, (plan->n_patches + 1) * sizeof(*p));
    if (!p) {
        free(text);
        return rv_fail(err, ENOMEM, "plan");
    }
    plan->patches = p;
    p[plan->n_patches++] = (struct rv_toml_patch){ start, end, text };
    return 0;
}

int rv_plan_block(struct rv_toml_plan *plan, const char *text, struct rv_error *err)
{
    if (rv_strcatf(&plan->block, err, "%s", text) < 0)
        return -1;
    plan->block_len = strlen(plan->block);
    return 0;
}

/* Refuse tables whose parents are inline tables or dotted keys. */
static int check_parents(const struct rv_toml *doc, const char *table, struct rv_error *err)
{
    char path[4096];

    if (rv_toml_path(table, path, sizeof(path), err) < 0)
        return -1;
    for (size_t i = 0; path[i]; i++) {
        if (path[i] != '\x1f')
            continue;
        path[i] = '\0';
        for (size_t k = 0; k < doc->n; k++) {
            const struct rv_toml_item *it = &doc->items[k];
            if (strcmp(it->path, path) != 0)
                continue;
            if (it->kind == RV_TOML_INLINE || it->kind == RV_TOML_VALUE ||
                it->kind == RV_TOML_DOTTED || it->kind == RV_TOML_ARRAY_TABLE) {
                char shown[4096] = "";
                size_t o = 0;
                for (char *part = path, *next; part; part = next) {
                    next = strchr(part, '\x1f');
                    if (next)
                        *next++ = '\0';
                    cleanup_free char *quoted = rv_toml_key(part);
                    int n = snprintf(shown + o, sizeof(shown) - o, "%s%s", o ? "." : "", quoted ? quoted : "?");
                    if (n < 0 || (size_t)n >= sizeof(shown) - o)
                        break;
                    o += (size_t)n;
                }
                return rv_fail(err, 0, "`%s` is written as %s; resview only adds to tables "
                               "written as [headers]; rewrite it as a table", shown,
                               it->kind == RV_TOML_INLINE ? "an inline table" :
                               it->kind == RV_TOML_DOTTED ? "dotted keys" :
                               it->kind == RV_TOML_ARRAY_TABLE ? "an array of tables" : "a value");
            }
        }
        path[i] = '\x1f';
    }
    return 0;
}

int rv_plan_add_table(struct rv_toml_plan *plan, const struct rv_toml *doc, const char *table,
                      const char *body, struct rv_error *err)
{
    if (rv_toml_get(doc, table))
        return rv_fail(err, 0, "`[%s]` already exists and was not written by resview; "
                       "remove it first", table);
    if (check_parents(doc, table, err) < 0)
        return -1;
    if (rv_strcatf(&plan->block, err, "[%s]\n%s", table, body) < 0)
        return -1;
    plan->block_len = strlen(plan->block);
    return 0;
}

int rv_plan_set_key(struct rv_toml_plan *plan, const struct rv_toml *doc, const char *table,
                    const char *key, const char *value, struct rv_error *err)
{
    cleanup_free char *full = NULL, *k = rv_toml_key(key);
    const struct rv_toml_item *it, *t;

    if (!k || asprintf(&full, "%s.%s", table, k) < 0)
        return rv_fail(err, ENOMEM, "plan");
    if ((it = rv_toml_get(doc, full))) {
        if (it->kind != RV_TOML_VALUE || it->multiline)
            return rv_fail(err, 0, "`%s` spans several lines or is a table; set it by hand", full);
        size_t vl = it->val_end - it->val_start;
        if (vl == strlen(value) && memcmp(doc->text + it->val_start, value, vl) == 0)
            return 0;
        size_t le = it->line_end;
        while (le > it->line_start && (doc->text[le - 1] == '\n' || doc->text[le - 1] == '\r'))
            le--;
        if (it->val_start < it->line_start || it->val_end > le)
            return rv_fail(err, 0, "`%s`: unexpected layout; set it by hand", full);
        cleanup_free char *repl = NULL;
        if (asprintf(&repl, "%.*s%s%.*s", (int)(it->val_start - it->line_start),
                     doc->text + it->line_start, value, (int)(le - it->val_end),
                     doc->text + it->val_end) < 0)
            return rv_fail(err, ENOMEM, "plan");
        char *line = rv_mark_was(repl, strlen(repl), doc->text + it->line_start, le - it->line_start);
        if (!line)
            return rv_fail(err, ENOMEM, "plan");
        return plan_patch(plan, it->line_start, le, line, err);
    }
    t = rv_toml_get(doc, table);
    if (t && t->kind == RV_TOML_TABLE) {
        cleanup_free char *kv = NULL, *marked = NULL;
        char *line = NULL;
        if (t->line_end == 0 || doc->text[t->line_end - 1] != '\n')
            return rv_fail(err, 0, "`[%s]` is the last line and has no newline; add one", table);
        if (asprintf(&kv, "%s = %s", k, value) < 0 || !(marked = rv_mark_added(kv, strlen(kv))) ||
            asprintf(&line, "%s\n", marked) < 0)
            return rv_fail(err, ENOMEM, "plan");
        return plan_patch(plan, t->line_end, t->line_end, line, err);
    }
    if (t && t->kind != RV_TOML_IMPLICIT)
        return rv_fail(err, 0, "`%s` is not written as a [table]; set `%s` by hand", table, key);
    if (check_parents(doc, table, err) < 0)
        return -1;
    if (rv_strcatf(&plan->block, err, "[%s]\n%s = %s\n", table, k, value) < 0)
        return -1;
    plan->block_len = strlen(plan->block);
    return 0;
}

static int patch_cmp(const void *a, const void *b)
{
    const struct rv_toml_patch *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int rv_plan_finish(struct rv_toml_plan *plan, const char *base, size_t len, bool created,
                   char **out, size_t *outlen, struct rv_error *err)
{
    cleanup_free char *mid = NULL;
    size_t pos = 0;

    if (plan->n_patches) /* qsort(NULL, 0, ...) is undefined (UBSan) */
        qsort(plan->patches, plan->n_patches, sizeof(*plan->patches), patch_cmp);
    if (rv_strcatf(&mid, err, "%s", "") < 0)
        return -1;
    for (size_t i = 0; i < plan->n_patches; i++) {
        struct rv_toml_patch *p = &plan->patches[i];
        if (p->start < pos)
            return rv_fail(err, 0, "overlapping edits");
        if (rv_strcatf(&mid, err, "%.*s%s", (int)(p->start - pos), base + pos, p->text) < 0)
            return -1;
        pos = p->end;
    }
    if (rv_strcatf(&mid, err, "%.*s", (int)(len - pos), base + pos) < 0)
        return -1;
    if (!plan->block || !*plan->block) {
        *outlen = strlen(mid);
        *out = move_ptr(mid);
        return 0;
    }
    return rv_marked_append(mid, strlen(mid), plan->block, created, out, outlen, err);
}

void rv_plan_free(struct rv_toml_plan *plan)
{
    for (size_t i = 0; i < plan->n_patches; i++)
        free(plan->patches[i].text);
    free(plan->patches);
    free(plan->block);
    memset(plan, 0, sizeof(*plan));
}

int rv_plan_copy_keys(const struct rv_toml *doc, const char *from, const char *const *except,
                      char **body, struct rv_error *err)
{
    char path[4096];
    size_t pl;

    if (rv_toml_path(from, path, sizeof(path), err) < 0)
        return -1;
    pl = strlen(path);
    for (size_t i = 0; i < doc->n; i++) {
        const struct rv_toml_item *it = &doc->items[i];
        if ((it->kind != RV_TOML_VALUE && it->kind != RV_TOML_INLINE) ||
            strncmp(it->path, path, pl) != 0 || it->path[pl] != '\x1f' ||
            strchr(it->path + pl + 1, '\x1f'))
            continue;
        const char *name = it->path + pl + 1;
        bool skip = false;
        for (size_t k = 0; except && except[k]; k++)
            if (strcmp(except[k], name) == 0)
                skip = true;
        if (skip)
            continue;
        cleanup_free char *k = rv_toml_key(name);
        if (!k || rv_strcatf(body, err, "%s = %.*s\n", k, (int)(it->val_end - it->val_start),
                             doc->text + it->val_start) < 0)
            return k ? -1 : rv_fail(err, ENOMEM, "copy");
    }
    return 0;
}

/* The engine's edit of text that holds nothing of resview 0.1. */
static int own_edit(const struct rv_engine *e, const struct rv_engine_opts *o, const char *old,
                    size_t len, bool exists, const char *backup, size_t backup_len,
                    struct rv_edit_result *res, struct rv_error *err)
{
    if (e->edit)
        return e->edit(o, old, len, exists, backup, backup_len, res, err);
    return rv_toml_engine_edit(o, old, len, exists, e->toml_build, e->toml_verify, res, err);
}

static const struct rv_v01_ops v01_ops = { .edit = own_edit, .status = rv_engine_status };

int rv_engine_edit(const struct rv_engine *e, const struct rv_engine_opts *o, const char *old,
                   size_t len, bool exists, const char *backup, size_t backup_len,
                   struct rv_edit_result *res, struct rv_error *err)
{
    cleanup_free char *base = NULL;
    size_t blen;
    bool created;
    int r = e->marks_lines ? rv_v01_take_out(&v01_ops, e, o, old, len, backup, backup_len, &base,
                                             &blen, &created, err) : 0;

    if (r < 0)
        return -1;
    if (r > 0) { /* what resview 0.1 wrote is taken out: edit the rest as ours */
        old = base;
        len = blen;
        exists = exists && !created;
        res->no_backup = created;
    }
    return own_edit(e, o, old, len, exists, backup, backup_len, res, err);
}

int rv_owned_file_edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                       bool ours, const char *refusal, struct rv_edit_result *res,
                       struct rv_error *err)
{
    if (exists && !ours) {
        if (!o->uninstall)
            return rv_fail(err, 0, "%s", refusal);
        res->text = strndup(old, len);
        res->len = len;
        return res->text ? 0 : rv_fail(err, ENOMEM, "keep the file");
    }
    if (o->uninstall) {
        res->remove = true;
        return 0;
    }
    return 1;
}

int rv_engine_status(const struct rv_engine *e, const char *text, size_t len, char *detail,
                     size_t size, char *exe, size_t exe_size, struct rv_error *err)
{
    struct rv_toml doc;
    int found = 0;

    if (e->status)
        return e->status(text, len, detail, size, exe, exe_size, err);
    exe[0] = '\0';
    if (rv_toml_scan(text, len, &doc, err) < 0)
        return rv_wrap(err, "not valid TOML");
    for (const char *const *key = e->toml_status_keys; *key && !found; key++) {
        const struct rv_toml_item *it = rv_toml_get(&doc, *key);
        const char *last = strrchr(*key, '.');
        if (!it || it->kind != RV_TOML_VALUE)
            continue;
        rv_snprintf(detail, size, "%s = %.*s", last ? last + 1 : *key,
                    (int)(it->val_end - it->val_start), text + it->val_start);
        if (rv_toml_string(&doc, it, exe, exe_size) < 0)
            exe[0] = '\0';
        found = 1;
    }
    rv_toml_free(&doc);
    return found;
}

int rv_toml_engine_edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                        int (*build)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                                     struct rv_toml_plan *plan, struct rv_error *err),
                        int (*verify)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                                      struct rv_error *err),
                        struct rv_edit_result *res, struct rv_error *err)
{
    struct rv_toml doc;
    struct rv_toml_plan plan = { 0 };
    cleanup_free char *base = NULL;
    size_t blen;
    bool had, created;
    int rc = -1;

    if (rv_toml_scan(old, len, &doc, err) < 0)
        return rv_wrap(err, "not valid TOML");
    rv_toml_free(&doc);
    if (rv_marked_strip(old, len, &base, &blen, &had, &created, err) < 0)
        return -1;
    if (!exists)
        created = true;
    if (rv_toml_scan(base, blen, &doc, err) < 0)
        return rv_wrap(err, "without resview's entries, not valid TOML");
    if (o->uninstall) {
        rv_toml_free(&doc);
        if (created && blen == 0) {
            res->remove = true;
            return 0;
        }
        res->text = move_ptr(base);
        res->len = blen;
        return 0;
    }
    if (build(o, &doc, &plan, err) < 0)
        goto out;
    if (rv_plan_finish(&plan, base, blen, created, &res->text, &res->len, err) < 0)
        goto out;
    rv_toml_free(&doc);
    /* validate what would be written */
    if (rv_toml_scan(res->text, res->len, &doc, err) < 0) {
        rv_wrap(err, "the edited file would not be valid TOML (not written)");
        goto fail_text;
    }
    if (verify && verify(o, &doc, err) < 0) {
        rv_wrap(err, "the edited file does not read back as intended (not written)");
        goto fail_text;
    }
    rc = 0;
    goto out;
fail_text:
    free(res->text);
    res->text = NULL;
out:
    rv_toml_free(&doc);
    rv_plan_free(&plan);
    return rc;
}
