/* fuzz_spec - the spec editor: rv_spec_parse -> rv_spec_edit (limits from a
 * private host tree) -> rv_spec_render. Invariants, when the edit succeeds:
 *   - the output is valid JSON and parses again (no leaked big-number mark),
 *   - every member the editor does not write is byte for byte what it was:
 *     every top-level member but process, linux and hooks, every process
 *     member but env and capabilities, every linux member but
 *     devices, seccomp and resources, every linux.resources member but devices
 *     (whitespace before and after a member aside),
 *   - where the input parses whole (no duplicate key in members the editor
 *     never loads): the same members are equal as values, the original env
 *     entries stay first and in order, and so do the entries of every hook
 *     stage but resview's own,
 *   - an edit that changes nothing renders the input byte for byte,
 *   - a second edit of the output gives the same bytes (idempotent). */
#include "fuzz.h"
#include "host_tree.h"
#include "resview/edit.h"
#include "resview/gpus.h"
#include "resview/spec.h"

static struct rv_host host;
static struct rv_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    host_tree_create(&host);
    rv_config_defaults(&cfg);
    snprintf(cfg.hook_path, sizeof(cfg.hook_path), "/usr/local/bin/resview-hook");
    snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", host_tree_dir);
    return 0;
}

/* The members of the object at [s, e) (raw keys, value spans); -1 if it is
 * not an object. */
struct member { const char *k; size_t kn; const char *v, *ve; };
static int members(const char *s, const char *e, struct member *m, int max)
{
    struct fuzz_json_in in = { (const unsigned char *)s, (const unsigned char *)e, 0 };
    int n = 0;

    fj_ws(&in);
    if (in.p >= in.e || *in.p != '{')
        return -1;
    in.p++;
    fj_ws(&in);
    if (in.p < in.e && *in.p == '}')
        return 0;
    for (;;) {
        const unsigned char *k;
        fj_ws(&in);
        k = in.p;
        if (!fj_string(&in))
            return -1;
        if (n < max) {
            m[n].k = (const char *)k + 1;
            m[n].kn = (size_t)(in.p - k) - 2;
        }
        fj_ws(&in);
        in.p++;
        fj_ws(&in);
        if (n < max)
            m[n].v = (const char *)in.p;
        if (!fj_value(&in))
            return -1;
        if (n < max)
            m[n].ve = (const char *)in.p;
        n++;
        fj_ws(&in);
        if (in.p < in.e && *in.p == ',') {
            in.p++;
            continue;
        }
        return n < max ? n : max;
    }
}

static bool named(const struct member *m, const char *key)
{
    return m->kn == strlen(key) && memcmp(m->k, key, m->kn) == 0;
}

static bool owned_key(const struct member *m, const char *const *list)
{
    for (; list && *list; list++)
        if (named(m, *list))
            return true;
    return false;
}

static bool owned(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(key, *list) == 0)
            return true;
    return false;
}

/* Every key of a not in `owned` is equal in b. */
static void kept(json_t *a, json_t *b, const char *where, const char *const *mine)
{
    const char *k;
    json_t *v;

    if (!json_is_object(a))
        return;
    FUZZ_CHECK(json_is_object(b), "%s: no longer an object", where);
    json_object_foreach(a, k, v) {
        json_t *w = json_object_get(b, k);
        FUZZ_CHECK(w, "%s.%s: removed", where, k);
        if (!owned(k, mine))
            FUZZ_CHECK(json_equal(v, w), "%s.%s: changed", where, k);
    }
}

/* Array a is a prefix of array b. */
static void prefix(json_t *a, json_t *b, const char *where)
{
    size_t i;
    json_t *v;

    if (!json_is_array(a))
        return;
    FUZZ_CHECK(json_is_array(b) && json_array_size(b) >= json_array_size(a), "%s: entries lost", where);
    json_array_foreach(a, i, v)
        FUZZ_CHECK(json_equal(v, json_array_get(b, i)), "%s[%zu]: changed", where, i);
}

static bool is_resview_hook(json_t *h)
{
    const char *p = json_string_value(json_object_get(h, "path"));
    const char *base = p ? strrchr(p, '/') : NULL;
    return p && strcmp(base ? base + 1 : p, "resview-hook") == 0;
}

/* The entries of hook stage a that are not resview's own come first in b, in
 * order, unchanged (the shim replaces resview's own entries: see edit.c). */
static void prefix_but_ours(json_t *a, json_t *b, const char *where)
{
    size_t i, j = 0;
    json_t *v;

    if (!json_is_array(a))
        return;
    FUZZ_CHECK(json_is_array(b), "hooks.%s: no longer an array", where);
    json_array_foreach(a, i, v) {
        if (is_resview_hook(v))
            continue;
        while (j < json_array_size(b) && is_resview_hook(json_array_get(b, j)))
            j++;
        FUZZ_CHECK(j < json_array_size(b) && json_equal(v, json_array_get(b, j)),
                   "hooks.%s[%zu]: lost or changed", where, i);
        j++;
    }
}

static int edit_dump(const char *text, size_t len, char **out, size_t *outlen, bool *changed,
                     struct rv_error *err)
{
    struct rv_edit_ctx ctx = { .cfg = &cfg, .host = &host };
    struct rv_edit_result res;
    struct rv_spec spec;
    int r = -1;

    if (rv_spec_parse(&spec, text, len, &rv_gpus_spec_extra, err) < 0) {
        /* a failed parse holds nothing: nothing to free (LeakSanitizer checks) */
        FUZZ_CHECK(spec.root == NULL && spec.text == NULL && spec.dirfd < 0, "a failed parse holds state");
        return -1;
    }
    if (rv_spec_edit(spec.root, &ctx, &res, err) < 0)
        goto out;
    FUZZ_CHECK(!res.env_on || res.limits.cpus >= 1, "cpus = 0");
    FUZZ_CHECK(!res.env_on || (res.plan.n >= 0 && res.plan.n <= RV_MAX_VARS), "plan size");
    r = rv_spec_render(&spec, out, outlen, changed, err);
out:
    rv_spec_free(&spec);
    return r;
}

/* Every member of the object [a, ae) but those in `writes` is in [b, be)
 * with the same bytes; the members named in `deeper` are partial objects
 * (process, linux, ...): checked the same way, one level down. */
struct rule { const char *key; const char *const *writes; const struct rule *deeper; };
static void same_bytes(const char *a, const char *ae, const char *b, const char *be,
                       const char *const *writes, const struct rule *deeper, const char *where)
{
    struct member ma[64], mb[64];
    int na = members(a, ae, ma, 64), nb = members(b, be, mb, 64);

    if (na < 0)
        return;
    FUZZ_CHECK(nb >= 0, "%s: no longer an object", where);
    for (int i = 0; i < na; i++) {
        const struct rule *r = NULL;
        const struct member *o = NULL;
        if (memchr(ma[i].k, '\\', ma[i].kn) || owned_key(&ma[i], writes))
            continue;      /* an escaped key may name an owned member */
        for (const struct rule *d = deeper; d && d->key; d++)
            if (named(&ma[i], d->key))
                r = d;
        for (int j = 0; j < nb && !o; j++)
            if (mb[j].kn == ma[i].kn && memcmp(mb[j].k, ma[i].k, ma[i].kn) == 0)
                o = &mb[j];
        FUZZ_CHECK(o, "%s.%.*s: removed", where, (int)ma[i].kn, ma[i].k);
        if (r && ma[i].v[0] == '{') {
            char w[128];
            snprintf(w, sizeof(w), "%s.%s", where, r->key);
            same_bytes(ma[i].v, ma[i].ve, o->v, o->ve, r->writes, r->deeper, w);
            continue;
        }
        FUZZ_CHECK(o->ve - o->v == ma[i].ve - ma[i].v && memcmp(o->v, ma[i].v, (size_t)(o->ve - o->v)) == 0,
                   "%s.%.*s: bytes changed", where, (int)ma[i].kn, ma[i].k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const top_mine[] = { "process", "linux", "hooks", "annotations", NULL };
    static const char *const process_mine[] = { "env", "capabilities", NULL };
    static const char *const linux_mine[] = { "devices", "resources", "seccomp", NULL };
    static const char *const none[] = { NULL };
    /* what the editor may write, for the byte check */
    static const char *const top_writes[] = { "hooks", NULL };
    static const char *const process_writes[] = { "env", "capabilities", NULL };
    static const char *const linux_writes[] = { "devices", "seccomp", NULL };
    static const char *const resources_writes[] = { "devices", NULL };
    static const struct rule resources_rule[] = { { "resources", resources_writes, NULL }, { NULL, NULL, NULL } };
    static const struct rule top_rules[] = { { "process", process_writes, NULL },
                                             { "linux", linux_writes, resources_rule }, { NULL, NULL, NULL } };
    const char *text = (const char *)data;
    struct rv_error err = { 0 };
    json_t *orig = NULL, *edited = NULL, *h;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2;
    const char *stage;
    bool changed, changed2;

    if (edit_dump(text, size, &d1, &l1, &changed, &err) < 0) {
        FUZZ_CHECK(err.msg[0] && FUZZ_TERMINATED(err.msg), "failure without a message");
        goto out;
    }
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON: %.300s", d1);
    FUZZ_CHECK(changed || (l1 == size && memcmp(d1, data, size) == 0), "unchanged but other bytes");
    same_bytes(text, text + size, d1, d1 + l1, top_writes, top_rules, "spec");

    if (rv_json_parse(text, size, "input", &orig, &err) == 0) {
        FUZZ_CHECK(rv_json_parse(d1, l1, "output", &edited, &err) == 0, "output: %s", err.msg);
        kept(orig, edited, "spec", top_mine);
        kept(json_object_get(orig, "process"), json_object_get(edited, "process"), "process", process_mine);
        kept(json_object_get(orig, "linux"), json_object_get(edited, "linux"), "linux", linux_mine);
        kept(json_object_get(orig, "annotations"), json_object_get(edited, "annotations"), "annotations", none);
        prefix(rv_json_path(orig, "process.env"), rv_json_path(edited, "process.env"), "process.env");
        json_object_foreach(json_object_get(orig, "hooks"), stage, h)
            prefix_but_ours(h, json_object_get(json_object_get(edited, "hooks"), stage), stage);
    }

    FUZZ_CHECK(edit_dump(d1, l1, &d2, &l2, &changed2, &err) == 0, "second edit fails: %s", err.msg);
    FUZZ_CHECK(!changed2 && l1 == l2 && memcmp(d1, d2, l1) == 0,
               "second edit changes the output:\n%s\n%s", d1, d2);
out:
    json_decref(orig);
    json_decref(edited);
    free(d1);
    free(d2);
    return 0;
}
