/* fuzz_fuse - who may ask (rv_fuse_wanted) and the FUSE grant
 * (rv_fuse_apply_host) on fuzzed specs. The first byte picks the policy and
 * what the next runtime supports; the shipped seccomp profile serves specs
 * without one. Invariants:
 *   - the policy: never a grant with fuse.allowed false, never for
 *     RESVIEW_FUSE=1 alone, never outside fuse.namespaces;
 *   - a runtime without listener support: refused, or no broker needed;
 *   - a privileged spec is left exactly as it was;
 *   - process (capabilities included) never changes: no capability is added;
 *   - linux.devices gains only /dev/fuse (c 10:229), the device cgroup only
 *     an allow rule for c 10:229; no other key of linux but seccomp changes;
 *   - every syscall name the spec's seccomp denied (an unconditional rule whose
 *     action is an errno, kill or trap) is still denied, but mount, umount and
 *     umount2, which go to the broker (SCMP_ACT_NOTIFY); no name gains an
 *     allowing rule;
 *   - a second grant gives identical bytes; the output is valid JSON. */
#include "fuzz.h"
#include <limits.h>
#include "resview/edit.h"
#include "resview/fuse.h"
#include "resview/spec.h"

static struct rv_config cfg;
static char seccomp[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    if (!realpath("profiles/seccomp.json", seccomp))
        fuzz_die("run from the top of the tree (profiles/seccomp.json)");
    rv_config_defaults(&cfg);
    cfg.fuse_allowed = true;
    strcpy(cfg.state_dir, "/run/resview-fuzz");
    return 0;
}

static bool has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

static bool denies(const char *action)
{
    return action && (strncmp(action, "SCMP_ACT_ERRNO", 14) == 0 || strncmp(action, "SCMP_ACT_KILL", 13) == 0 ||
                      strcmp(action, "SCMP_ACT_TRAP") == 0);
}

/* Each name denied by an unconditional rule of before is still denied by an
 * unconditional rule of after (or by a denying default action). */
static void denials_kept(json_t *before, json_t *after)
{
    json_t *rules = json_object_get(before, "syscalls"), *r, *n;
    size_t i, j;

    if (!json_is_object(before) || !json_is_array(rules))
        return;
    json_array_foreach(rules, i, r) {
        if (!denies(json_string_value(json_object_get(r, "action"))) ||
            json_array_size(json_object_get(r, "args")) > 0)
            continue;
        json_array_foreach(json_object_get(r, "names"), j, n) {
            const char *name = json_string_value(n);
            json_t *r2;
            size_t k;
            bool still = false;
            /* what goes to the broker */
            if (!name || strcmp(name, "mount") == 0 || strcmp(name, "umount2") == 0 ||
                strcmp(name, "umount") == 0)
                continue;
            json_array_foreach(json_object_get(after, "syscalls"), k, r2)
                if (denies(json_string_value(json_object_get(r2, "action"))) &&
                    json_array_size(json_object_get(r2, "args")) == 0 &&
                    has_string(json_object_get(r2, "names"), name))
                    still = true;
            FUZZ_CHECK(still, "seccomp: `%s` was denied and no longer is", name);
        }
    }
}

static bool allowed_by_rule(json_t *sc, const char *name)
{
    json_t *r;
    size_t i;

    json_array_foreach(json_object_get(sc, "syscalls"), i, r)
        if (!denies(json_string_value(json_object_get(r, "action"))) &&
            has_string(json_object_get(r, "names"), name))
            return true;
    return false;
}

/* A name the default action denied gains an allowing rule only if FUSE needs it. */
static void no_new_allows(json_t *before, json_t *after)
{
    json_t *r, *n;
    size_t i, j;

    if (!json_is_object(before) || !denies(json_string_value(json_object_get(before, "defaultAction"))))
        return;
    json_array_foreach(json_object_get(after, "syscalls"), i, r) {
        if (denies(json_string_value(json_object_get(r, "action"))))
            continue;
        json_array_foreach(json_object_get(r, "names"), j, n) {
            const char *name = json_string_value(n);
            if (!name || allowed_by_rule(before, name))
                continue;
            FUZZ_CHECK((strcmp(name, "mount") == 0 || strcmp(name, "umount2") == 0 ||
                        strcmp(name, "umount") == 0) &&
                       strcmp(json_string_value(json_object_get(r, "action")), "SCMP_ACT_NOTIFY") == 0,
                       "seccomp: `%s` newly allowed", name);
        }
    }
}

static int grant(const char *text, size_t len, const struct rv_fuse_runtime *rt, json_t **root,
                 char **out, size_t *outlen, bool *broker)
{
    struct rv_fuse_host host = { seccomp };
    struct rv_error err = { 0 };
    struct rv_spec spec;
    json_t *loaded;
    bool changed;

    *root = NULL;
    if (rv_spec_parse(&spec, text, len, NULL, &err) < 0)
        return -1;
    /* the whole document, to compare with (the spec loads only what it edits;
     * a duplicate key where it loads nothing is not a case for this harness) */
    if (rv_json_parse(text, len, "input", root, &err) < 0) {
        rv_spec_free(&spec);
        return -1;
    }
    loaded = json_deep_copy(spec.root);
    if (rv_fuse_apply_host(spec.root, &cfg, &host, rt, broker, &err) < 0) {
        FUZZ_CHECK(err.msg[0], "failure without a message");
        FUZZ_CHECK(json_equal(spec.root, loaded), "a refused grant changed the spec");
        json_decref(loaded);
        rv_spec_free(&spec);
        return -1;
    }
    json_decref(loaded);
    FUZZ_CHECK(rv_spec_render(&spec, out, outlen, &changed, &err) == 0, "render: %s", err.msg);
    rv_spec_free(&spec);
    return 0;
}

/* The policy on the fuzzed spec, under a configuration picked by bits. */
static void policy(const char *text, size_t len, uint8_t bits)
{
    struct rv_config c = cfg;
    struct rv_error err = { 0 };
    struct rv_spec spec;
    bool want = false, runtime = bits & 8;
    json_t *ann;
    const char *a, *ns;

    if (rv_spec_parse(&spec, text, len, NULL, &err) < 0)
        return;
    c.fuse_allowed = bits & 16;
    if (bits & 32) {
        strcpy(c.fuse_namespaces[0], "team-a");
        c.n_fuse_namespaces = 1;
    }
    if (rv_fuse_wanted(spec.root, &c, runtime, &want, &err) == 0 && want) {
        ann = rv_json_path(spec.root, "annotations");
        a = json_string_value(json_object_get(ann, "resview.io/fuse"));
        ns = json_string_value(json_object_get(ann, RV_ANN_K8S_NS_CONTAINERD));
        if (!ns)
            ns = json_string_value(json_object_get(ann, RV_ANN_K8S_NS_CRIO));
        FUZZ_CHECK(c.fuse_allowed, "granted with fuse.allowed false");
        FUZZ_CHECK(runtime || (a && strcmp(a, "true") == 0), "granted without the annotation or runtime name");
        FUZZ_CHECK(!(bits & 32) || (ns && strcmp(ns, "team-a") == 0), "granted outside fuse.namespaces");
    }
    rv_spec_free(&spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *before = NULL, *after = NULL, *again_root = NULL, *k, *v;
    struct rv_error err = { 0 };
    struct rv_fuse_runtime rts[3] = { { true, false, "" }, { true, true, "" }, { false, false, "no" } };
    const struct rv_fuse_runtime *rt;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2, i;
    const char *key;
    bool broker, broker2;

    if (size < 1)
        return 0;
    policy((const char *)data + 1, size - 1, data[0]);
    rt = (data[0] & 3) == 3 ? NULL : &rts[data[0] & 3];
    if (grant((const char *)data + 1, size - 1, rt, &before, &d1, &l1, &broker) < 0)
        goto out;
    FUZZ_CHECK(!rt || rt->notify || !broker, "a broker for a runtime that cannot pass the fd");
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON");
    FUZZ_CHECK(rv_json_parse(d1, l1, "output", &after, &err) == 0, "output: %s", err.msg);
    if (rv_fuse_spec_is_privileged(before)) {
        FUZZ_CHECK(json_equal(before, after), "a privileged spec was changed");
        goto out;
    }
    json_object_foreach(before, key, v)
        if (strcmp(key, "linux"))
            FUZZ_CHECK(json_equal(v, json_object_get(after, key)), "%s: changed", key);
    json_object_foreach(json_object_get(before, "linux"), key, v)
        if (strcmp(key, "devices") && strcmp(key, "resources") && strcmp(key, "seccomp"))
            FUZZ_CHECK(json_equal(v, json_object_get(json_object_get(after, "linux"), key)),
                       "linux.%s: changed", key);
    {
        json_t *bd = rv_json_path(before, "linux.devices"), *ad = rv_json_path(after, "linux.devices");
        json_array_foreach(bd, i, v)
            FUZZ_CHECK(json_equal(v, json_array_get(ad, i)), "linux.devices[%zu] changed", i);
        for (i = json_array_size(bd); i < json_array_size(ad); i++) {
            k = json_array_get(ad, i);
            FUZZ_CHECK(json_integer_value(json_object_get(k, "major")) == 10 &&
                       json_integer_value(json_object_get(k, "minor")) == 229 &&
                       strcmp(json_string_value(json_object_get(k, "path")) ?: "", "/dev/fuse") == 0,
                       "a device other than /dev/fuse added");
        }
        bd = rv_json_path(before, "linux.resources.devices");
        ad = rv_json_path(after, "linux.resources.devices");
        json_array_foreach(bd, i, v)
            FUZZ_CHECK(json_equal(v, json_array_get(ad, i)), "linux.resources.devices[%zu] changed", i);
        for (i = json_array_size(bd); i < json_array_size(ad); i++) {
            k = json_array_get(ad, i);
            FUZZ_CHECK(json_integer_value(json_object_get(k, "major")) == 10 &&
                       json_integer_value(json_object_get(k, "minor")) == 229,
                       "a device cgroup rule other than c 10:229 added");
        }
    }
    denials_kept(rv_json_path(before, "linux.seccomp"), rv_json_path(after, "linux.seccomp"));
    no_new_allows(rv_json_path(before, "linux.seccomp"), rv_json_path(after, "linux.seccomp"));
    /* idempotent */
    FUZZ_CHECK(grant(d1, l1, rt, &again_root, &d2, &l2, &broker2) == 0, "a second grant fails");
    FUZZ_CHECK(l1 == l2 && memcmp(d1, d2, l1) == 0, "a second grant changes the spec");
out:
    json_decref(before);
    json_decref(after);
    json_decref(again_root);
    free(d1);
    free(d2);
    return 0;
}
