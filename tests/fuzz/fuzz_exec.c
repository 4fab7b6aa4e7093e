/* fuzz_exec - what the shim does on `exec --process FILE`: the recorded "K=V"
 * pairs (state record) added to the process JSON's env without overriding
 * (rv_env_add_missing). Input: the record, a NUL byte, the process JSON.
 * Invariants: the process's own entries stay first and unchanged; nothing
 * that the process sets is added again; a second pass adds nothing; the
 * output is valid JSON that parses again. */
#include "fuzz.h"
#include "resview/envvars.h"
#include "resview/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    struct rv_error err = { 0 };
    json_t *pairs = NULL, *proc = NULL, *orig = NULL, *env, *again = NULL, *e;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2, i, n0;

    if (!nul)
        return 0;
    if (rv_json_parse((const char *)data, (size_t)(nul - data), "record", &pairs, &err) < 0 ||
        !json_is_array(pairs) ||
        rv_json_parse((const char *)nul + 1, size - (size_t)(nul - data) - 1, "process", &proc, &err) < 0 ||
        !json_is_object(proc))
        goto out;
    env = rv_json_array_at(proc, "env", "process env", &err);
    if (!env)
        goto out;
    orig = json_deep_copy(env);
    n0 = json_array_size(env);
    if (rv_env_add_missing(env, pairs, &err) < 0)
        goto out;
    json_array_foreach(orig, i, e)
        FUZZ_CHECK(json_equal(e, json_array_get(env, i)), "env[%zu] changed", i);
    for (i = n0; i < json_array_size(env); i++) {
        const char *kv = json_string_value(json_array_get(env, i)), *eq;
        char name[64];
        FUZZ_CHECK(kv && (eq = strchr(kv, '=')) && eq > kv && (size_t)(eq - kv) < sizeof(name),
                   "added a malformed entry");
        memcpy(name, kv, (size_t)(eq - kv));
        name[eq - kv] = '\0';
        FUZZ_CHECK(!rv_env_get(orig, name), "overrode %s set by the process", name);
    }
    FUZZ_CHECK(rv_json_dump(proc, &d1, &l1, &err) == 0, "dump: %s", err.msg);
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON");
    FUZZ_CHECK(rv_env_add_missing(env, pairs, &err) == 0 && rv_json_dump(proc, &d2, &l2, &err) == 0 &&
               l1 == l2 && memcmp(d1, d2, l1) == 0, "a second pass changed the process");
    FUZZ_CHECK(rv_json_parse(d1, l1, "output", &again, &err) == 0, "output does not parse: %s", err.msg);
out:
    json_decref(pairs);
    json_decref(proc);
    json_decref(orig);
    json_decref(again);
    free(d1);
    free(d2);
    return 0;
}
