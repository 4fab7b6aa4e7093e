/* fuzz_fuse - the FUSE grant (rv_fuse_apply_host) on fuzzed specs, with
 * AppArmor disabled or loaded (first byte) and the shipped seccomp profile
 * for specs without one. Least-privilege invariants, when it succeeds:
 *   - a privileged spec is left exactly as it was;
 *   - every capability set holds what it held plus at most CAP_SYS_ADMIN;
 *     ambient grows only where it was non-empty;
 *   - linux.devices gains only /dev/fuse (c 10:229), the device cgroup only
 *     an allow rule for c 10:229;
 *   - every syscall name the spec's seccomp denied (an unconditional rule whose
 *     action is an errno, kill or trap) is still denied, but mount/umount2,
 *     and under a denying default action only mount/umount2 gain an allow rule;
 *   - nothing else in the spec changes (other top-level keys, process keys
 *     other than capabilities/apparmorProfile);
 *   - a second grant gives identical bytes; the output is valid JSON. */
#include "fuzz.h"
#include <limits.h>
#include "host_tree.h"
#include "resview/edit.h"
#include "resview/fuse.h"
#include "resview/spec.h"

static struct rv_config cfg;
static char aa_on[PATH_MAX], aa_off[PATH_MAX], aa_profiles[PATH_MAX], seccomp[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct rv_host h;

    (void)argc; (void)argv;
    host_tree_create(&h);
    host_tree_put("aa/on", "Y\n");
    host_tree_put("aa/off", "N\n");
    host_tree_put("aa/profiles", "resview-fuse (enforce)\ndocker-default (enforce)\n");
    snprintf(aa_on, sizeof(aa_on), "%s/aa/on", host_tree_dir);
    snprintf(aa_off, sizeof(aa_off), "%s/aa/off", host_tree_dir);
    snprintf(aa_profiles, sizeof(aa_profiles), "%s/aa/profiles", host_tree_dir);
    if (!realpath("profiles/seccomp.json", seccomp))
        fuzz_die("run from the top of the tree (profiles/seccomp.json)");
    rv_config_defaults(&cfg);
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

/* after == before + at most extra (as sets of strings, order of before kept) */
static void grows_only_by(json_t *before, json_t *after, const char *extra, const char *where)
{
    size_t i;
    json_t *v;

    if (!before) {
        FUZZ_CHECK(!after || (json_array_size(after) <= 1 &&
                              (json_array_size(after) == 0 || has_string(after, extra))),
                   "%s: created with more than %s", where, extra);
        return;
    }
    json_array_foreach(before, i, v)
        FUZZ_CHECK(json_equal(v, json_array_get(after, i)), "%s[%zu]: changed", where, i);
    for (i = json_array_size(before); i < json_array_size(after); i++) {
        const char *s = json_string_value(json_array_get(after, i));
        FUZZ_CHECK(s && strcmp(s, extra) == 0, "%s: added `%s`", where, s ? s : "?");
    }
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
            /* what FUSE needs is granted (mount with restricted flags, umount2) */
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
            FUZZ_CHECK(strcmp(name, "mount") == 0 || strcmp(name, "umount2") == 0 ||
                       strcmp(name, "umount") == 0, "seccomp: `%s` newly allowed", name);
        }
    }
}

static int grant(const char *text, size_t len, bool aa, json_t **root, char **out, size_t *outlen)
{
    struct rv_fuse_host host = { aa ? aa_on : aa_off, aa_profiles, seccomp };
    struct rv_error err = { 0 };
    struct rv_spec spec;
    bool changed;

    *root = NULL;
    if (rv_spec_parse(&spec, text, len, &err) < 0)
        return -1;
    /* the whole document, to compare with (the spec loads only what it edits;
     * a duplicate key where it loads nothing is not a case for this harness) */
    if (rv_json_parse(text, len, "input", root, &err) < 0) {
        rv_spec_free(&spec);
        return -1;
    }
    if (rv_fuse_apply_host(spec.root, &cfg, &host, &err) < 0) {
        FUZZ_CHECK(err.msg[0], "failure without a message");
        rv_spec_free(&spec);
        return -1;
    }
    FUZZ_CHECK(rv_spec_render(&spec, out, outlen, &changed, &err) == 0, "render: %s", err.msg);
    rv_spec_free(&spec);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sets[] = { "bounding", "effective", "permitted", "inheritable", "ambient" };
    json_t *before = NULL, *after = NULL, *again_root = NULL, *k, *v;
    struct rv_error err = { 0 };
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2, i;
    const char *key;
    bool aa;

    if (size < 1)
        return 0;
    aa = data[0] & 1;
    if (grant((const char *)data + 1, size - 1, aa, &before, &d1, &l1) < 0)
        goto out;
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON");
    FUZZ_CHECK(rv_json_parse(d1, l1, "output", &after, &err) == 0, "output: %s", err.msg);
    if (rv_fuse_spec_is_privileged(before)) {
        FUZZ_CHECK(json_equal(before, after), "a privileged spec was changed");
        goto out;
    }
    json_object_foreach(before, key, v)
        if (strcmp(key, "process") && strcmp(key, "linux"))
            FUZZ_CHECK(json_equal(v, json_object_get(after, key)), "%s: changed", key);
    json_object_foreach(json_object_get(before, "process"), key, v)
        if (strcmp(key, "capabilities") && strcmp(key, "apparmorProfile"))
            FUZZ_CHECK(json_equal(v, rv_json_path(after, "process") ? json_object_get(json_object_get(after, "process"), key) : NULL),
                       "process.%s: changed", key);
    if (!aa)
        FUZZ_CHECK(json_equal(rv_json_path(before, "process.apparmorProfile"),
                              rv_json_path(after, "process.apparmorProfile")) ||
                   (!rv_json_path(before, "process.apparmorProfile") && !rv_json_path(after, "process.apparmorProfile")),
                   "apparmorProfile changed with AppArmor disabled");
    for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        json_t *b = json_object_get(rv_json_path(before, "process.capabilities"), sets[i]);
        json_t *a = json_object_get(rv_json_path(after, "process.capabilities"), sets[i]);
        if (i == 4 && json_array_size(b) == 0)
            FUZZ_CHECK(json_array_size(a) == 0, "ambient capabilities created");
        grows_only_by(b, a, "CAP_SYS_ADMIN", sets[i]);
    }
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
    FUZZ_CHECK(grant(d1, l1, aa, &again_root, &d2, &l2) == 0, "a second grant fails");
    FUZZ_CHECK(l1 == l2 && memcmp(d1, d2, l1) == 0, "a second grant changes the spec");
out:
    json_decref(before);
    json_decref(after);
    json_decref(again_root);
    free(d1);
    free(d2);
    return 0;
}
