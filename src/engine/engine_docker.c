/* engine_docker.c - `runtimes.resview` (and `default-runtime`) in dockerd's
 * daemon.json. JSON keeps no comments: our entry carries a key of its own
 * (dockerd ignores unknown keys of a runtime), and an entry without it is the
 * operator's, never taken over nor removed. Every other key is kept as it
 * was, and --uninstall puts back the original bytes when nothing else changed
 * since. */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Indent compact JSON (4 spaces), leaving strings and numbers as they are. */
static int pretty(const char *in, char **out, size_t *outlen, struct rv_error *err)
{
    size_t n = strlen(in), o = 0, cap = n * 2 + 64;
    int depth = 0;
    char *b = malloc(cap);

#define PUT(c) do { if (o + 1 >= cap) { char *nb = realloc(b, cap *= 2); if (!nb) goto nomem; b = nb; } b[o++] = (c); } while (0)
#define NL() do { PUT('\n'); for (int d_ = 0; d_ < depth * 4; d_++) PUT(' '); } while (0)
    if (!b)
        return rv_fail(err, ENOMEM, "format JSON");
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '"') {
            PUT(c);
            for (i++; i < n && in[i] != '"'; i++) {
                if (in[i] == '\\' && i + 1 < n)
                    PUT(in[i++]);
                PUT(in[i]);
            }
            PUT('"');
        } else if (c == '{' || c == '[') {
            PUT(c);
            if (i + 1 < n && (in[i + 1] == '}' || in[i + 1] == ']')) {
                PUT(in[++i]);
                continue;
            }
            depth++;
            NL();
        } else if (c == '}' || c == ']') {
            depth--;
            NL();
            PUT(c);
        } else if (c == ',') {
            PUT(c);
            NL();
        } else if (c == ':') {
            PUT(c);
            PUT(' ');
        } else
            PUT(c);
    }
    PUT('\n');
    b[o] = '\0';
    *out = b;
    *outlen = o;
    return 0;
nomem:
    free(b);
    return rv_fail(err, ENOMEM, "format JSON");
#undef PUT
#undef NL
}

#define OWNED_KEY "resview-configure"
#define OWNED_VALUE "written by resview configure; resview configure --uninstall removes it"

/* Whether runtimes.resview is ours. */
static bool ours(json_t *entry)
{
    const char *v = json_string_value(json_object_get(entry, OWNED_KEY));
    return json_is_object(entry) && v && strcmp(v, OWNED_VALUE) == 0;
}

/* resview 0.1 wrote runtimes.resview as {"path": ...} alone, without that key.
 * Such an entry is taken for 0.1's only when the file as it was before resview
 * (the backup 0.1 kept) had no runtimes.resview, or, with no backup (0.1
 * created the file), when the file holds nothing but it and a default-runtime
 * "resview". */
static bool v01_entry(json_t *root, json_t *entry, bool has_backup, json_t *pristine)
{
    json_t *def = json_object_get(root, "default-runtime");

    if (!json_is_object(entry) || json_object_size(entry) != 1 ||
        !json_is_string(json_object_get(entry, "path")))
        return false;
    if (has_backup)
        return pristine && !rv_json_path(pristine, "runtimes.resview");
    return json_object_size(json_object_get(root, "runtimes")) == 1 &&
           json_object_size(root) == (def ? 2u : 1u) && (!def || strcmp(json_string_value(def), "resview") == 0);
}

static bool blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return true;
}

static int load(const char *text, size_t len, const char *what, json_t **out, struct rv_error *err)
{
    if (blank(text, len)) {
        *out = json_object();
        return *out ? 0 : rv_fail(err, ENOMEM, "%s", what);
    }
    if (rv_json_parse(text, len, what, out, err) < 0)
        return -1;
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return rv_fail(err, 0, "%s: not a JSON object", what);
    }
    return 0;
}

/* The operator's bytes from before configure with "default-runtime": "runc"
 * added first in the object, when that reads back as root (0); else -1 (the
 * caller writes root formatted). */
static int with_default(const char *backup, size_t len, json_t *root, struct rv_edit_result *res)
{
    const char *brace = memchr(backup, '{', len);
    cleanup_json json_t *check = NULL;
    struct rv_error e2;
    char *text = NULL;

    if (!brace)
        return -1;
    size_t at = (size_t)(brace - backup) + 1, rest = at;
    while (rest < len && backup[rest] && strchr(" \t\r\n", backup[rest]))
        rest++;
    bool empty = rest < len && backup[rest] == '}';
    /* on a line of its own, indented as the first key, where the file has
     * one key a line; else inline */
    bool lines = memchr(backup + at, '\n', rest - at) != NULL;
    if (asprintf(&text, "%.*s%.*s\"default-runtime\": \"runc\"%s%.*s", (int)at, backup,
                 lines ? (int)(rest - at) : 0, backup + at, empty ? "" : lines ? "," : ", ",
                 (int)(len - at), backup + at) < 0)
        return -1;
    if (rv_json_parse(text, strlen(text), "daemon.json", &check, &e2) < 0 || !json_equal(check, root)) {
        free(text);
        return -1;
    }
    res->text = text;
    res->len = strlen(text);
    return 0;
}

static int edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                const char *backup, size_t backup_len, struct rv_edit_result *res,
                struct rv_error *err)
{
    cleanup_json json_t *root = NULL, *orig = NULL, *pristine = NULL;
    cleanup_free char *compact = NULL;
    size_t clen;
    json_t *runtimes, *entry;

    (void)exists;
    if (load(old, len, "daemon.json", &root, err) < 0)
        return -1;
    if (!(orig = json_deep_copy(root)))
        return rv_fail(err, ENOMEM, "daemon.json");
    if (backup && load(backup, backup_len, "daemon.json" RV_BACKUP_SUFFIX, &pristine, err) < 0)
        pristine = NULL; /* an unreadable backup only loses the byte-exact restore */
    runtimes = json_object_get(root, "runtimes");
    if (runtimes && !json_is_object(runtimes))
        return rv_fail(err, 0, "daemon.json: `runtimes` is not an object");
    json_t *def = json_object_get(root, "default-runtime");
    if (def && !json_is_string(def))
        return rv_fail(err, 0, "daemon.json: `default-runtime` is not a string");

    entry = runtimes ? json_object_get(runtimes, "resview") : NULL;
    bool v01 = entry && !ours(entry) && v01_entry(root, entry, backup != NULL, pristine);
    res->no_backup = v01 && !backup;
    if (entry && !ours(entry) && !v01) {
        if (o->uninstall) {
            /* the operator's entry, and the default-runtime naming it, stay */
            res->text = strndup(old, len);
            res->len = len;
            return res->text ? 0 : rv_fail(err, ENOMEM, "daemon.json");
        }
        return rv_fail(err, 0, "daemon.json: `runtimes.resview` already exists and was not written "
                       "by resview (it has no \"" OWNED_KEY "\" key); remove it first");
    }
    if (o->uninstall) {
        if (runtimes)
            json_object_del(runtimes, "resview");
        if (runtimes && json_object_size(runtimes) == 0 &&
            !(pristine && json_object_get(pristine, "runtimes")))
            json_object_del(root, "runtimes");
        /* dockerd's reload takes default-runtime only from a file that sets
         * it: resview's place goes to the default from before configure, or
         * to dockerd's own (runc), written, so that a reload is enough */
        bool runc_added = false;
        if (def && strcmp(json_string_value(def), "resview") == 0) {
            json_t *was = pristine ? json_object_get(pristine, "default-runtime") : NULL;
            bool restored = was && json_is_string(was) && strcmp(json_string_value(was), "resview") != 0;
            const char *now = restored ? json_string_value(was) : "runc";
            if (rv_snprintf(res->note, sizeof(res->note), "it had resview as its default runtime: "
                            "`default-runtime` is now \"%s\" (%s); reload dockerd (systemctl reload "
                            "docker, or kill -HUP the dockerd pid) and plain docker run uses it", now,
                            restored ? "as before configure" : "dockerd's own") < 0)
                res->note[0] = '\0';
            runc_added = !restored;
            if (json_object_set_new(root, "default-runtime", json_string(now)) < 0)
                return rv_fail(err, ENOMEM, "daemon.json");
        }
        if (json_equal(root, orig)) {
            res->text = strndup(old, len);
            res->len = len;
            return res->text ? 0 : rv_fail(err, ENOMEM, "daemon.json");
        }
        if (pristine && json_equal(root, pristine)) {
            if (!(res->restore_backup = malloc(backup_len + 1)))
                return rv_fail(err, ENOMEM, "daemon.json");
            memcpy(res->restore_backup, backup, backup_len);
            res->restore_len = backup_len;
            return 0;
        }
        if (runc_added && pristine && !json_object_get(pristine, "default-runtime") &&
            with_default(backup, backup_len, root, res) == 0)
            return 0;
        if (!pristine && json_object_size(root) == 0) {
            res->remove = true;
            return 0;
        }
    } else {
        if (!(runtimes = rv_json_object_at(root, "runtimes", "daemon.json", err)) ||
            !(entry = rv_json_object_at(runtimes, "resview", "daemon.json: runtimes", err)))
            return -1;
        if (json_object_set_new(entry, "path", json_string(o->runtime_path)) < 0 ||
            json_object_set_new(entry, OWNED_KEY, json_string(OWNED_VALUE)) < 0 ||
            (o->set_default && json_object_set_new(root, "default-runtime", json_string("resview")) < 0))
            return rv_fail(err, ENOMEM, "daemon.json");
        if (json_equal(root, orig)) {
            res->text = strndup(old, len);
            res->len = len;
            return res->text ? 0 : rv_fail(err, ENOMEM, "daemon.json");
        }
    }
    if (rv_json_dump(root, &compact, &clen, err) < 0 || pretty(compact, &res->text, &res->len, err) < 0)
        return -1;
    /* validate what would be written */
    cleanup_json json_t *check = NULL;
    if (rv_json_parse(res->text, res->len, "edited daemon.json", &check, err) < 0) {
        free(res->text);
        res->text = NULL;
        return -1;
    }
    if (!json_equal(check, root)) {
        free(res->text);
        res->text = NULL;
        return rv_fail(err, 0, "edited daemon.json does not read back as intended");
    }
    return 0;
}

static int status(const char *text, size_t len, char *detail, size_t size, char *exe, size_t exe_size,
                  struct rv_error *err)
{
    cleanup_json json_t *root = NULL;

    exe[0] = '\0';
    if (load(text, len, "daemon.json", &root, err) < 0)
        return -1;
    json_t *p = rv_json_path(root, "runtimes.resview.path");
    if (!p || !json_is_string(p))
        return 0;
    rv_snprintf(exe, exe_size, "%s", json_string_value(p));
    json_t *def = json_object_get(root, "default-runtime");
    rv_snprintf(detail, size, "path = %s%s", json_string_value(p),
                def && json_is_string(def) && strcmp(json_string_value(def), "resview") == 0
                    ? " (default runtime)" : "");
    return 1;
}

const struct rv_engine rv_engine_docker = {
    .name = "docker",
    .default_config = "/etc/docker/daemon.json",
    .reload = "reload dockerd to load it (systemctl reload docker, or kill -HUP the dockerd pid); "
              "then: docker run --runtime resview ...",
    .unload = "nothing to do for containers that name no runtime; dockerd lists the removed runtime "
              "until it restarts (systemctl restart docker): a reload does not drop it",
    .edit = edit,
    .status = status,
};
