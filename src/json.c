/* json.c - jansson with exact big integers.
 *
 * jansson stores integers as int64 and refuses larger literals, but OCI specs
 * carry uint64 fields (rlimits, "unlimited" = 18446744073709551615); and it
 * would print reals in another form than they came. Before parsing, such
 * literals (big integers, every real) are wrapped into a string marked with a
 * leading NUL character, which rv_json_parse refuses in input strings; after
 * dumping, the marked strings are unwrapped back into the literal text. */
#define _GNU_SOURCE
#include "resview/json.h"

#include <errno.h>
#include <string.h>

#define BIG_MARK "\\u0000rvint:"

static bool is_big_integer(const char *p, size_t n)
{
    static const char max_pos[] = "9223372036854775807";
    static const char max_neg[] = "9223372036854775808";
    const char *lim = max_pos;

    if (n && *p == '-') {
        p++;
        n--;
        lim = max_neg;
    }
    if (n < 19)
        return false;
    if (n > 19)
        return true;
    return memcmp(p, lim, 19) > 0;
}

/* Whether p[0..n) is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *p, size_t n, bool *integer)
{
    size_t i = 0, d;

    if (i < n && p[i] == '-')
        i++;
    if (i < n && p[i] == '0')
        i++;
    else if (i < n && p[i] >= '1' && p[i] <= '9')
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++;
    else
        return false;
    *integer = i == n;
    if (i < n && p[i] == '.') {
        for (d = ++i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            ;
        if (i == d)
            return false;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        for (d = i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            ;
        if (i == d)
            return false;
    }
    return i == n;
}

/* Bytes that may start something to look at outside strings. */
static const bool scan_stop[256] = {
    ['"'] = true, ['-'] = true, ['0'] = true, ['1'] = true, ['2'] = true, ['3'] = true,
    ['4'] = true, ['5'] = true, ['6'] = true, ['7'] = true, ['8'] = true, ['9'] = true,
};

/* One pass over text. With out == NULL it only measures: returns the output
 * length and sets *found when a literal needs wrapping; with out it writes.
 * Strings are skipped with memchr; *has_nul notes a \u0000 escape. */
static size_t scan(const char *text, size_t len, char *out, bool *found, bool *has_nul)
{
    const char *p = text, *end = text + len, *run = text;
    size_t o = 0;

#define FLUSH(upto)                                                        \
    do {                                                                   \
        if (out)                                                           \
            memcpy(out + o, run, (size_t)((upto) - run));                  \
        o += (size_t)((upto) - run);                                       \
        run = (upto);                                                      \
    } while (0)

    while (p < end) {
        if (!scan_stop[(unsigned char)*p]) {
            p++;
            continue;
        }
        if (*p == '"') {
            /* skip the string: to the next quote not escaped */
            for (p++;;) {
                const char *q = memchr(p, '"', (size_t)(end - p));
                const char *b = memchr(p, '\\', (size_t)((q ? q : end) - p));
                if (b) {
                    if (end - b >= 6 && memcmp(b + 1, "u0000", 5) == 0)
                        *has_nul = true;
                    p = b + 2 <= end ? b + 2 : end;
                    continue;
                }
                p = q ? q + 1 : end;
                break;
            }
            continue;
        }
        const char *n = p + 1;
        bool integer;
        while (n < end && ((*n >= '0' && *n <= '9') || *n == '-' || *n == '+' || *n == '.' ||
                           *n == 'e' || *n == 'E'))
            n++;
        /* Reals are kept as their exact text too: a double round trip would
         * rewrite 0.1 as 0.10000000000000001. Anything that is not a valid
         * number is left for jansson to reject. */
        if (n - p < 64 && is_json_number(p, (size_t)(n - p), &integer) &&
            (!integer || is_big_integer(p, (size_t)(n - p)))) {
            FLUSH(p);
            *found = true;
            if (out) {
                memcpy(out + o, "\"" BIG_MARK, sizeof(BIG_MARK));
                memcpy(out + o + sizeof(BIG_MARK), p, (size_t)(n - p));
                out[o + sizeof(BIG_MARK) + (size_t)(n - p)] = '"';
            }
            o += sizeof(BIG_MARK) + (size_t)(n - p) + 1;
            run = n;
        }
        p = n;
    }
    FLUSH(end);
#undef FLUSH
    return o;
}

/* Copy text, wrapping out-of-range integer literals and reals. Returns NULL on
 * ENOMEM, or text itself (no copy) when there is nothing to wrap. */
static char *wrap_big_integers(const char *text, size_t len, size_t *outlen, bool *has_nul)
{
    bool found = false;
    size_t n;
    char *out;

    *has_nul = false;
    n = scan(text, len, NULL, &found, has_nul);
    if (!found) {
        *outlen = len;
        return (char *)text;
    }
    out = malloc(n + 1);
    if (!out)
        return NULL;
    scan(text, len, out, &found, has_nul);
    out[n] = '\0';
    *outlen = n;
    return out;
}

int rv_json_parse(const char *text, size_t len, const char *what, json_t **out,
                  struct rv_error *err)
{
    json_error_t jerr;
    size_t wlen;
    bool has_nul;
    char *wrapped = wrap_big_integers(text, len, &wlen, &has_nul);
    json_t *root;

    if (!wrapped)
        return rv_fail(err, ENOMEM, "parse %s", what);
    if (has_nul) {
        /* NUL is the mark of a wrapped integer, and no OCI string may hold one. */
        if (wrapped != text)
            free(wrapped);
        return rv_fail(err, 0, "parse %s: a string contains a NUL character (\\u0000)", what);
    }
    root = json_loadb(wrapped, wlen, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (wrapped != text)
        free(wrapped);
    if (!root)
        return rv_fail(err, 0, "parse %s: %s at line %d column %d", what, jerr.text,
                       jerr.line, jerr.column);
    *out = root;
    return 0;
}

int rv_json_dump(const json_t *root, char **out, size_t *len, struct rv_error *err)
{
    static const char mark[] = "\"" BIG_MARK;
    char *s = json_dumps(root, JSON_COMPACT);
    char *r, *w;

    if (!s)
        return rv_fail(err, ENOMEM, "serialize JSON");
    /* Unwrap in place: the output only shrinks. The mark can only start a
     * wrapped literal: rv_json_parse refuses input strings holding a NUL, and
     * nothing else puts one into a document. */
    size_t n = strlen(s);
    char *end = s + n;
    for (r = w = s; r < end;) {
        char *m = memmem(r, (size_t)(end - r), mark, sizeof(mark) - 1);
        char *d, *e;
        if (!m) {
            memmove(w, r, (size_t)(end - r));
            w += end - r;
            break;
        }
        memmove(w, r, (size_t)(m - r));
        w += m - r;
        d = e = m + sizeof(mark) - 1;
        while ((*e >= '0' && *e <= '9') || *e == '-' || *e == '+' || *e == '.' || *e == 'e' ||
               *e == 'E')
            e++;
        if (*e != '"' || e == d) {
            /* cannot happen; keep the text rather than guess */
            *w++ = *m;
            r = m + 1;
            continue;
        }
        memmove(w, d, (size_t)(e - d));
        w += e - d;
        r = e + 1;
    }
    *w = '\0';
    *out = s;
    if (len)
        *len = (size_t)(w - s);
    return 0;
}

json_t *rv_json_path(json_t *root, const char *dotted)
{
    char key[256];
    const char *p = dotted;

    while (root && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key) || !json_is_object(root))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        root = json_object_get(root, key);
        p += n + (dot ? 1 : 0);
    }
    return root;
}

static json_t *container_at(json_t *obj, const char *key, const char *where, bool array,
                            struct rv_error *err)
{
    json_t *v = json_object_get(obj, key);

    if (!v) {
        v = array ? json_array() : json_object();
        if (!v || json_object_set_new(obj, key, v) < 0) {
            rv_fail(err, ENOMEM, "%s", where);
            return NULL;
        }
        return v;
    }
    if (array ? !json_is_array(v) : !json_is_object(v)) {
        rv_fail(err, 0, "%s: expected %s", where, array ? "an array" : "an object");
        return NULL;
    }
    return v;
}

json_t *rv_json_object_at(json_t *obj, const char *key, const char *where,
                          struct rv_error *err)
{
    return container_at(obj, key, where, false, err);
}

json_t *rv_json_array_at(json_t *obj, const char *key, const char *where,
                         struct rv_error *err)
{
    return container_at(obj, key, where, true, err);
}
