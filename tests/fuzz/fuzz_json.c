/* fuzz_json - the JSON layer (rv_json_parse / rv_json_dump).
 * Invariants, for any input that parses:
 *   - the dump is valid JSON (a strict RFC 8259 grammar check, fuzz.h),
 *   - it parses again (so no NUL escape, the internal mark of a big number,
 *     leaked) and dumps to the same bytes (a fixed point).
 * And, from the first bytes, an integer literal of up to 60 digits embedded in
 * a document comes back digit for digit. */
#include "fuzz.h"
#include "resview/json.h"

static void check_fixed_point(const char *text, size_t len)
{
    struct rv_error err = { 0 };
    json_t *root = NULL, *again = NULL;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2;

    if (rv_json_parse(text, len, "input", &root, &err) < 0) {
        FUZZ_CHECK(err.msg[0], "parse failure without a message");
        return;
    }
    FUZZ_CHECK(rv_json_dump(root, &d1, &l1, &err) == 0, "dump: %s", err.msg);
    FUZZ_CHECK(strlen(d1) == l1, "dump length %zu, string length %zu", l1, strlen(d1));
    FUZZ_CHECK(fuzz_valid_json(d1, l1), "output is not valid JSON: %.300s", d1);
    FUZZ_CHECK(rv_json_parse(d1, l1, "output", &again, &err) == 0, "output does not parse again: %s", err.msg);
    FUZZ_CHECK(rv_json_dump(again, &d2, &l2, &err) == 0, "second dump: %s", err.msg);
    FUZZ_CHECK(l1 == l2 && memcmp(d1, d2, l1) == 0, "not a fixed point:\n%s\n%s", d1, d2);
    json_decref(root);
    json_decref(again);
    free(d1);
    free(d2);
}

static void check_big_integer(const uint8_t *data, size_t size)
{
    char lit[64], doc[128];
    struct rv_error err = { 0 };
    json_t *root = NULL;
    char *out = NULL;
    size_t n = 0, len;

    if (size < 2)
        return;
    if (data[0] & 1)
        lit[n++] = '-';
    lit[n++] = (char)('1' + data[1] % 9);
    for (size_t i = 2; i < size && i < 61; i++)
        lit[n++] = (char)('0' + data[i] % 10);
    lit[n] = '\0';
    snprintf(doc, sizeof(doc), "{\"k\":[%s,\"x\"]}", lit);
    FUZZ_CHECK(rv_json_parse(doc, strlen(doc), "literal", &root, &err) == 0, "%s: %s", doc, err.msg);
    FUZZ_CHECK(rv_json_dump(root, &out, &len, &err) == 0, "dump: %s", err.msg);
    FUZZ_CHECK(strcmp(out, doc) == 0, "integer changed: %s -> %s", doc, out);
    json_decref(root);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_fixed_point((const char *)data, size);
    check_big_integer(data, size);
    return 0;
}
