/* Regressions found by the hardening work (issue 6): fuzzers, sanitizers,
 * valgrind. Each test names what went wrong. */
#define _GNU_SOURCE
#include "resview/json.h"
#include "resview/spec.h"
#include "unit.h"

#include <stdlib.h>

int main(void)
{
    struct rv_error err;
    struct rv_spec spec;
    json_t *j;
    char *out;
    size_t len;

    /* A spec that parses as JSON but is not an object (or has a wrong-typed
     * section) failed rv_spec_parse with the parsed document still held in
     * spec.root: a caller that returns on the error (as a parse failure
     * invites) leaked it (ASan/valgrind on test_edit). A failed parse must hold
     * nothing. */
    const char *bad[] = { "[]", "[1,{\"a\":[2]}]", "{\"process\":[]}", "{\"linux\":1}",
                          "{\"annotations\":\"x\"}", "7" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ok(rv_spec_parse(&spec, bad[i], strlen(bad[i]), NULL, &err) < 0 && spec.root == NULL,
           "rv_spec_parse(%s) fails holding no document", bad[i]);
        rv_spec_free(&spec);
    }

    /* Numbers at the edges of the lossless JSON layer come back as written
     * (fuzz_json seeds). */
    const char *nums[] = { "[18446744073709551615]", "[-9223372036854775809]",
                           "[9223372036854775807]", "[-9223372036854775808]", "[1e400]",
                           "[0.1]", "[123456789012345678901234567890123456789012345678901234567890]" };
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        j = NULL;
        out = NULL;
        ok(rv_json_parse(nums[i], strlen(nums[i]), "n", &j, &err) == 0 &&
           rv_json_dump(j, &out, &len, &err) == 0 && strcmp(out, nums[i]) == 0,
           "%s round trips exactly (got %s)", nums[i], out ? out : err.msg);
        json_decref(j);
        free(out);
    }
    /* Not JSON numbers: refused, never passed through as text. */
    const char *notnum[] = { "[--99999999999999999999]", "[00000000000000000000001]",
                             "[1-99999999999999999999]", "[99999999999999999999-]", "[1.]",
                             "[.5]", "[1e]", "[+1]" };
    for (size_t i = 0; i < sizeof(notnum) / sizeof(notnum[0]); i++) {
        j = NULL;
        ok(rv_json_parse(notnum[i], strlen(notnum[i]), "n", &j, &err) < 0 && j == NULL,
           "%s is refused", notnum[i]);
        json_decref(j);
    }
    return unit_done();
}
