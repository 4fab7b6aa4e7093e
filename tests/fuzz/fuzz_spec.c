/* fuzz_spec - the spec editor: rv_spec_parse -> rv_spec_edit (limits from a
 * private host tree) -> rv_json_dump. Invariants, when the edit succeeds:
 *   - the output is valid JSON and parses again (no leaked big-number mark),
 *   - fields the editor does not own are kept unchanged (every top-level key
 *     but process/linux/hooks/annotations, every process key but env, every
 *     linux key but devices/resources), the original env entries stay first
 *     and in order, and so do the entries of every hook stage,
 *   - a second edit of the output gives the same bytes (idempotent). */
#include "fuzz.h"
#include "host_tree.h"
#include "resview/edit.h"
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

static int edit_dump(const char *text, size_t len, char **out, size_t *outlen, json_t **orig,
                     struct rv_error *err)
{
    struct rv_edit_ctx ctx = { .cfg = &cfg, .host = &host };
    struct rv_edit_result res;
    struct rv_spec spec;
    int r = -1;

    if (rv_spec_parse(&spec, text, len, err) < 0) {
        /* a failed parse holds nothing: nothing to free (LeakSanitizer checks) */
        FUZZ_CHECK(spec.root == NULL && spec.text == NULL && spec.dirfd < 0, "a failed parse holds state");
        return -1;
    }
    if (orig)
        *orig = json_deep_copy(spec.root);
    if (rv_spec_edit(spec.root, &ctx, &res, err) < 0)
        goto out;
    FUZZ_CHECK(!res.env_on || res.limits.cpus >= 1, "cpus = 0");
    FUZZ_CHECK(!res.env_on || (res.plan.n >= 0 && res.plan.n <= RV_MAX_VARS), "plan size");
    r = rv_json_dump(spec.root, out, outlen, err);
out:
    rv_spec_free(&spec);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const top_mine[] = { "process", "linux", "hooks", "annotations", NULL };
    static const char *const process_mine[] = { "env", "capabilities", "apparmorProfile", NULL };
    static const char *const linux_mine[] = { "devices", "resources", "seccomp", NULL };
    static const char *const none[] = { NULL };
    struct rv_error err = { 0 };
    json_t *orig = NULL, *edited = NULL, *h;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2;
    const char *stage;

    if (edit_dump((const char *)data, size, &d1, &l1, &orig, &err) < 0) {
        FUZZ_CHECK(err.msg[0] && FUZZ_TERMINATED(err.msg), "failure without a message");
        goto out;
    }
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON: %.300s", d1);

    FUZZ_CHECK(rv_json_parse(d1, l1, "output", &edited, &err) == 0, "output: %s", err.msg);
    kept(orig, edited, "spec", top_mine);
    kept(json_object_get(orig, "process"), json_object_get(edited, "process"), "process", process_mine);
    kept(json_object_get(orig, "linux"), json_object_get(edited, "linux"), "linux", linux_mine);
    kept(json_object_get(orig, "annotations"), json_object_get(edited, "annotations"), "annotations", none);
    prefix(rv_json_path(orig, "process.env"), rv_json_path(edited, "process.env"), "process.env");
    json_object_foreach(json_object_get(orig, "hooks"), stage, h)
        prefix(h, json_object_get(json_object_get(edited, "hooks"), stage), stage);

    FUZZ_CHECK(edit_dump(d1, l1, &d2, &l2, NULL, &err) == 0, "second edit fails: %s", err.msg);
    FUZZ_CHECK(l1 == l2 && memcmp(d1, d2, l1) == 0, "second edit changes the output:\n%s\n%s", d1, d2);
out:
    json_decref(orig);
    json_decref(edited);
    free(d1);
    free(d2);
    return 0;
}
