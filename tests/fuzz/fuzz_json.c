/* fuzz_json - the JSON layer (rv_json_parse / rv_json_dump, rv_json_parse_some
 * / rv_json_splice). Invariants, for any input that parses:
 *   - the input is valid JSON (a strict RFC 8259 grammar check, fuzz.h),
 *   - the dump is valid JSON, parses again (so no NUL escape, the internal
 *     mark of a kept number, leaked) and dumps to the same bytes,
 *   - jansson agrees: what it accepts (no NUL byte, no \u0000) parses here to the same
 *     values, numbers compared by value,
 *   - a partial parse (the spec's members) accepts at least as much, and where
 *     the full parse refuses what it accepts, the reason is a duplicate key;
 *     splicing the partial document back without an edit gives the input.
 * And, from the first bytes, an integer literal of up to 60 digits embedded in
 * a document comes back digit for digit. */
#include "fuzz.h"
#include "resview/json.h"
#include "resview/spec.h"

#include <math.h>

/* Same value, a kept number (a marked string) equal to jansson's number. */
static bool same(json_t *mine, json_t *theirs)
{
    const char *k;
    json_t *v;
    size_t i;

    if (json_is_string(mine) && json_string_length(mine) > 7 &&
        memcmp(json_string_value(mine), "\0rvint:", 7) == 0) {
        const char *lit = json_string_value(mine) + 7;
        if (json_is_real(theirs))
            return strtod(lit, NULL) == json_real_value(theirs) ||
                   (isnan(strtod(lit, NULL)) && isnan(json_real_value(theirs)));
        return json_is_integer(theirs) && strcmp(lit, "-0") == 0 && json_integer_value(theirs) == 0;
    }
    if (json_typeof(mine) != json_typeof(theirs))
        return false;
    if (json_is_object(mine)) {
        if (json_object_size(mine) != json_object_size(theirs))
            return false;
        json_object_foreach(mine, k, v)
            if (!same(v, json_object_get(theirs, k)))
                return false;
        return true;
    }
    if (json_is_array(mine)) {
        if (json_array_size(mine) != json_array_size(theirs))
            return false;
        json_array_foreach(mine, i, v)
            if (!same(v, json_array_get(theirs, i)))
                return false;
        return true;
    }
    return json_equal(mine, theirs);
}

static void check_jansson(const char *text, size_t len, json_t *mine)
{
    json_error_t jerr;
    json_t *theirs = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);

    if (!theirs)
        return;
    /* jansson takes a NUL byte for the end of the input; \u0000 is refused here */
    if (!memchr(text, '\0', len) && !memmem(text, len, "\\u0000", 6)) {
        FUZZ_CHECK(mine, "jansson accepts what rv_json_parse refuses");
        FUZZ_CHECK(same(mine, theirs), "rv_json_parse and jansson read other values");
    }
    json_decref(theirs);
}

static void check_partial(const char *text, size_t len, bool full_ok, const char *full_err)
{
    struct rv_error err = { 0 };
    struct rv_json_skips skips = { 0 };
    json_t *root = NULL;
    char *out = NULL;
    size_t olen;

    if (rv_json_parse_some(text, len, "input", rv_spec_members, &root, &skips, &err) < 0) {
        FUZZ_CHECK(!full_ok, "the full parse accepts what the partial one refuses: %s", err.msg);
        rv_json_skips_free(&skips);
        return;
    }
    FUZZ_CHECK(full_ok || strstr(full_err, "duplicate"), "only the partial parse accepts: %s", full_err);
    if (json_is_object(root)) {
        FUZZ_CHECK(rv_json_splice(text, len, "input", rv_spec_members, root, &skips, &out, &olen,
                                  &err) == 0, "splice: %s", err.msg);
        FUZZ_CHECK(olen == len && memcmp(out, text, len) == 0, "splice without an edit changes bytes");
    }
    free(out);
    json_decref(root);
    rv_json_skips_free(&skips);
}

static void check_fixed_point(const char *text, size_t len)
{
    struct rv_error err = { 0 };
    json_t *root = NULL, *again = NULL;
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2;

    if (rv_json_parse(text, len, "input", &root, &err) < 0) {
        FUZZ_CHECK(err.msg[0], "parse failure without a message");
        check_jansson(text, len, NULL);
        check_partial(text, len, false, err.msg);
        return;
    }
    FUZZ_CHECK(fuzz_valid_json(text, len), "accepted, but not JSON");
    check_jansson(text, len, root);
    check_partial(text, len, true, "");
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
