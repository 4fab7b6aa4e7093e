/* spec.c - load and atomically rewrite the bundle's config.json. */
#define _GNU_SOURCE
#include "resview/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

/* Every member of config.json that the editor (edit.c, envvars.c, limits.c,
 * fuse.c, seccomp.c) and the hook read or write. Only these are loaded; the
 * rest of the spec is checked to be JSON and written back byte for byte
 * (rv_json_splice). A module that needs another member lists it here (writing
 * to one that is not listed fails the save rather than losing it). */
static const struct rv_json_want process_members[] = {
    { "env", NULL }, { "capabilities", NULL }, { NULL, NULL },
};
static const struct rv_json_want resources_members[] = {
    { "cpu", NULL }, { "memory", NULL }, { "devices", NULL }, { NULL, NULL },
};
static const struct rv_json_want linux_members[] = {
    { "resources", resources_members }, { "cgroupsPath", NULL }, { "devices", NULL },
    { "seccomp", NULL }, { "namespaces", NULL }, { NULL, NULL },
};
static const struct rv_json_want root_members[] = { { "path", NULL }, { NULL, NULL } };
const struct rv_json_want rv_spec_members[] = {
    { "process", process_members }, { "linux", linux_members }, { "annotations", NULL },
    { "hooks", NULL }, { "root", root_members }, { NULL, NULL },
};
/* The same but linux.seccomp (most of a spec with a default profile) and
 * linux.namespaces, which only the FUSE grant reads: what rv_spec_load loads
 * (rv_spec_load_all adds them). */
static const struct rv_json_want linux_members_base[] = {
    { "resources", resources_members }, { "cgroupsPath", NULL }, { "devices", NULL },
    { NULL, NULL },
};
static const struct rv_json_want spec_members_base[] = {
    { "process", process_members }, { "linux", linux_members_base }, { "annotations", NULL },
    { "hooks", NULL }, { "root", root_members }, { NULL, NULL },
};
/* Either of the two, then the caller's extra members when they are loaded. */
#define WANT_MAX 16

static int want_table(const struct rv_spec *spec, struct rv_json_want *w, struct rv_error *err)
{
    const struct rv_json_want *base = spec->all ? rv_spec_members : spec_members_base;
    size_t n = 0;

    for (; base[n].key; n++)
        w[n] = base[n];
    for (const struct rv_json_want *x = spec->extra_loaded ? spec->extra->members : NULL; x && x->key; x++) {
        if (n + 1 >= WANT_MAX)
            return rv_fail(err, E2BIG, "config.json: more than %d members to load", WANT_MAX - 1);
        w[n++] = *x;
    }
    w[n] = (struct rv_json_want){ NULL, NULL };
    return 0;
}

static int check_root(struct rv_spec *spec, struct rv_error *err)
{
    json_t *p;

    if (!json_is_object(spec->root))
        return rv_fail(err, 0, "config.json: expected a JSON object");
    p = json_object_get(spec->root, "process");
    if (p && !json_is_object(p))
        return rv_fail(err, 0, "config.json: process: expected an object");
    p = json_object_get(spec->root, "linux");
    if (p && !json_is_object(p))
        return rv_fail(err, 0, "config.json: linux: expected an object");
    p = json_object_get(spec->root, "annotations");
    if (p && !json_is_object(p))
        return rv_fail(err, 0, "config.json: annotations: expected an object");
    return 0;
}

/* Parse the text for the members that spec->all and spec->extra_loaded say. */
static int parse_text(struct rv_spec *spec, struct rv_error *err)
{
    struct rv_json_want want[WANT_MAX];

    json_decref(spec->root);
    spec->root = NULL;
    if (want_table(spec, want, err) < 0 ||
        rv_json_parse_some(spec->text, spec->len, "config.json", want, &spec->root, &spec->skips,
                           err) < 0)
        return -1;
    if (check_root(spec, err) < 0) {
        json_decref(spec->root);
        spec->root = NULL;
        return -1;
    }
    return 0;
}

/* The members loaded, with the caller's extra ones when its test of what is
 * loaded asks for them: parse again with those; 0 when nothing more is needed. */
static int with_extra(struct rv_spec *spec, struct rv_error *err)
{
    if (!spec->extra || spec->extra_loaded || (spec->extra->wanted && !spec->extra->wanted(spec->root)))
        return 0;
    spec->extra_loaded = true;
    return parse_text(spec, err);
}

int rv_spec_parse(struct rv_spec *spec, const char *text, size_t len,
                  const struct rv_spec_extra *extra, struct rv_error *err)
{
    memset(spec, 0, sizeof(*spec));
    spec->dirfd = -1;
    spec->all = true;
    spec->extra = extra;
    if (!(spec->text = malloc(len + 1)))
        return rv_fail(err, ENOMEM, "config.json");
    memcpy(spec->text, text, len);
    spec->text[len] = '\0';
    spec->len = len;
    if (parse_text(spec, err) < 0 || with_extra(spec, err) < 0) {
        /* a failed parse holds nothing (callers may just return) */
        rv_spec_free(spec);
        return -1;
    }
    return 0;
}

int rv_spec_load(struct rv_spec *spec, const char *bundle, const struct rv_spec_extra *extra,
                 struct rv_error *err)
{
    return rv_spec_load_file(spec, bundle, NULL, extra, err);
}

int rv_spec_load_file(struct rv_spec *spec, const char *bundle, const char *file,
                      const struct rv_spec_extra *extra, struct rv_error *err)
{
    const char *slash = file ? strrchr(file, '/') : NULL;

    memset(spec, 0, sizeof(*spec));
    spec->dirfd = -1;
    spec->extra = extra;
    if (rv_snprintf(spec->bundle, sizeof(spec->bundle), "%s", bundle) < 0)
        return rv_fail(err, ENAMETOOLONG, "bundle `%.64s…`", bundle);
    if (rv_snprintf(spec->file, sizeof(spec->file), "%s", !file ? "config.json" : slash ? slash + 1 : file) < 0 ||
        !spec->file[0])
        return rv_fail(err, EINVAL, "bundle `%s`: spec file `%s`", bundle, file);
    spec->dirfd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (spec->dirfd < 0)
        return rv_fail(err, errno, "bundle `%s`", bundle);
    if (slash) {
        /* a spec file elsewhere (crun --config FILE) */
        char dir[PATH_MAX];
        int fd;
        if (rv_snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file) < 0)
            return rv_fail(err, ENAMETOOLONG, "bundle `%s`: spec file", bundle);
        fd = openat(spec->dirfd, slash == file ? "/" : dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return rv_fail(err, errno, "bundle `%s`: `%s`", bundle, dir);
        close(spec->dirfd);
        spec->dirfd = fd;
    }
    if (rv_read_file_at(spec->dirfd, spec->file, RV_SPEC_MAX, &spec->text, &spec->len,
                        &spec->st, err) < 0 ||
        parse_text(spec, err) < 0)
        return rv_wrap(err, "bundle `%s`", bundle);
    if (with_extra(spec, err) < 0)
        return rv_wrap(err, "bundle `%s`", bundle);
    return 0;
}

int rv_spec_load_all(struct rv_spec *spec, struct rv_error *err)
{
    if (spec->all)
        return 0;
    spec->all = true;
    return parse_text(spec, err);
}

int rv_spec_render(const struct rv_spec *spec, char **out, size_t *len, bool *changed,
                   struct rv_error *err)
{
    struct rv_json_want want[WANT_MAX];

    if (want_table(spec, want, err) < 0 ||
        rv_json_splice(spec->text, spec->len, "config.json", want, spec->root, &spec->skips, out,
                       len, err) < 0)
        return -1;
    *changed = !(*len == spec->len && memcmp(*out, spec->text, *len) == 0);
    return 0;
}

int rv_spec_save(struct rv_spec *spec, bool *changed, struct rv_error *err)
{
    cleanup_free char *out = NULL;
    size_t len;

    if (rv_spec_render(spec, &out, &len, changed, err) < 0)
        return -1;
    if (!*changed)
        return 0;
    if (spec->dirfd < 0)
        return rv_fail(err, EBADF, "config.json: no bundle to write to");
    {
        /* O_PATH fds cannot create files in the directory: reopen it. */
        cleanup_close int dfd = openat(spec->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return rv_fail(err, errno, "bundle `%s`", spec->bundle);
        /* no fsync: the engine writes a new spec for every create, and a
         * bundle does not outlive a reboot's containers; swept, as podman
         * keeps its bundle directories */
        if (rv_write_atomic_at(dfd, spec->file, out, len, &spec->st, RV_WRITE_SWEEP, err) < 0)
            return rv_wrap(err, "bundle `%s`", spec->bundle);
    }
    return 0;
}

void rv_spec_free(struct rv_spec *spec)
{
    json_decref(spec->root);
    spec->root = NULL;
    rv_json_skips_free(&spec->skips);
    free(spec->text);
    spec->text = NULL;
    if (spec->dirfd >= 0)
        close(spec->dirfd);
    spec->dirfd = -1;
}

json_t *rv_spec_env(json_t *root, struct rv_error *err)
{
    json_t *proc = rv_json_object_at(root, "process", "config.json: process", err);
    json_t *env, *e;
    size_t i;

    if (!proc)
        return NULL;
    env = rv_json_array_at(proc, "env", "config.json: process.env", err);
    if (!env)
        return NULL;
    json_array_foreach(env, i, e)
        if (!json_is_string(e)) {
            rv_fail(err, 0, "config.json: process.env[%zu]: expected a string", i);
            return NULL;
        }
    return env;
}

const char *rv_env_get(json_t *env, const char *name)
{
    size_t n = strlen(name), i;
    json_t *e;

    json_array_foreach(env, i, e) {
        const char *s = json_string_value(e);
        /* two bytes first: this runs for every variable over every entry */
        if (s && s[0] == name[0] && (n < 2 || s[1] == name[1]) && strncmp(s, name, n) == 0 &&
            s[n] == '=')
            return s + n + 1;
    }
    return NULL;
}

int rv_spec_request(json_t *root, const char *annotation, const char *envvar,
                    struct rv_error *err)
{
    json_t *ann = rv_json_path(root, "annotations");
    json_t *a = json_is_object(ann) ? json_object_get(ann, annotation) : NULL;
    json_t *env = rv_json_path(root, "process.env");
    const char *v;

    if (a) {
        v = json_string_value(a);
        if (v && strcmp(v, "true") == 0)
            return 1;
        if (v && strcmp(v, "false") == 0)
            return 0;
        rv_fail(err, 0, "annotation %s: expected \"true\" or \"false\"", annotation);
        return -2;
    }
    v = json_is_array(env) ? rv_env_get(env, envvar) : NULL;
    if (!v)
        return -1;
    if (strcmp(v, "1") == 0)
        return 1;
    if (strcmp(v, "0") == 0)
        return 0;
    rv_fail(err, 0, "environment variable %s: expected 1 or 0", envvar);
    return -2;
}
