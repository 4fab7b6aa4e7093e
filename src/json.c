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

/* Copy text, wrapping out-of-range integer literals. Returns NULL on ENOMEM,
 * or text itself (no copy) when there is nothing to wrap. */
static char *wrap_big_integers(const char *text, size_t len, size_t *outlen, bool *has_nul)
{
    char *out = NULL;
    size_t o = 0, cap = 0, i = 0;
    bool found = false;

    *has_nul = false;
    for (int pass = 0; pass < 2; pass++) {
        bool in_str = false;
        for (i = 0, o = 0; i < len;) {
            char c = text[i];
            if (in_str) {
                if (c == '\\' && i + 1 < len) {
                    if (i + 6 <= len && memcmp(text + i + 1, "u0000", 5) == 0)
                        *has_nul = true;
                    if (out) { out[o] = c; out[o + 1] = text[i + 1]; }
                    o += 2; i += 2;
                    continue;
                }
                if (c == '"')
                    in_str = false;
            } else if (c == '"') {
                in_str = true;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                size_t j = i + 1;
                bool integer;
                while (j < len && ((text[j] >= '0' && text[j] <= '9') || text[j] == '-' ||
                                   text[j] == '+' || text[j] == '.' || text[j] == 'e' ||
                                   text[j] == 'E'))
                    j++;
                /* Reals are kept as their exact text too: a double round trip
                 * would rewrite 0.1 as 0.10000000000000001. Anything that is
                 * not a valid number is left for jansson to reject. */
                if (j - i < 64 && is_json_number(text + i, j - i, &integer) &&
                    (!integer || is_big_integer(text + i, j - i))) {
                    found = true;
                    if (out) {
                        memcpy(out + o, "\"" BIG_MARK, sizeof(BIG_MARK));
                        memcpy(out + o + sizeof(BIG_MARK), text + i, j - i);
                        out[o + sizeof(BIG_MARK) + (j - i)] = '"';
                    }
                    o += sizeof(BIG_MARK) + (j - i) + 1;
                } else {
                    if (out)
                        memcpy(out + o, text + i, j - i);
                    o += j - i;
                }
                i = j;
                continue;
            }
            if (out)
                out[o] = c;
            o++;
            i++;
        }
        if (pass == 0) {
            if (!found) {
                *outlen = len;
                return (char *)text;
            }
            cap = o + 1;
            out = malloc(cap);
            if (!out)
                return NULL;
        }
    }
    out[o] = '\0';
    *outlen = o;
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
    /* Unwrap in place: the output only shrinks. Marked strings come only from
     * wrap_big_integers: rv_json_parse rejects input strings holding a NUL. */
    for (r = w = s; *r;) {
        if (strncmp(r, mark, sizeof(mark) - 1) == 0) {
            const char *d = r + sizeof(mark) - 1, *e = d;
            while ((*e >= '0' && *e <= '9') || *e == '-' || *e == '+' || *e == '.' || *e == 'e' ||
                   *e == 'E')
                e++;
            if (*e == '"' && e > d) {
                memmove(w, d, (size_t)(e - d));
                w += e - d;
                r = (char *)e + 1;
                continue;
            }
        }
        if (*r == '"') {
            /* copy a whole string verbatim so that marks inside strings stay */
            *w++ = *r++;
            while (*r && *r != '"') {
                if (*r == '\\' && r[1])
                    *w++ = *r++;
                *w++ = *r++;
            }
            if (*r)
                *w++ = *r++;
            continue;
        }
        *w++ = *r++;
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
