/* json.c - JSON text <-> jansson values, exact numbers, and partial documents.
 *
 * resview's own reader and writer around jansson's values (json_t): one pass
 * over the bytes, no lexer stream, no intermediate copies.
 *
 * Numbers keep their exact text. jansson stores integers as int64 and would
 * print reals in another form than they came, but OCI specs carry uint64
 * fields (rlimits, "unlimited" = 18446744073709551615). Every real, every
 * integer beyond int64 and "-0" becomes a string value holding a mark (a
 * leading NUL, which no input string may hold: \u0000 is refused) and the
 * literal; the writer prints such a string back as the bare literal.
 *
 * Partial documents. A spec is ~20 KB of which resview reads or writes a few
 * members. rv_json_parse_some builds only the members a want-list names (an
 * object member with members of its own builds only those, when it is an
 * object); everything else is checked to be JSON and skipped. rv_json_splice
 * writes the original text back with the wanted members taken from the
 * values: what was never loaded is copied byte for byte, a loaded member that
 * still holds what it held keeps its original bytes, a changed one is written
 * compactly, a new one is appended to its object. */
#define _GNU_SOURCE
#include "resview/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define MARK "\0rvint:"
#define MARK_LEN (sizeof(MARK) - 1)
#define MAX_DEPTH 2048          /* as jansson's JSON_PARSER_MAX_DEPTH */

/* jansson seeds its object hash from /dev/urandom at the first object (open,
 * read, close on every start): one getrandom(2) instead. A random seed still:
 * spec keys come from tenants (colliding keys would make a parse quadratic). */
__attribute__((constructor)) static void seed_hash(void)
{
    uint32_t seed;

    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed) && seed)
        json_object_seed(seed);
}

/* ------------------------------------------------------------------ reader */

enum mode { SKIP, FULL, SOME };

struct parser {
    const unsigned char *start, *p, *end;
    const char *what;
    struct rv_error *err;
    int depth;
    char *buf;                  /* decoded strings with escapes */
    size_t cap;
    struct rv_json_skips *skips; /* members not loaded: noted (parse_some) */
    const struct rv_json_skips *noted; /* and looked up (splice) */
};

/* Bytes that continue a string without a look: printable ASCII but " and \. */
static inline bool plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Past the plain bytes from p: eight at a time (a byte below 0x20, a quote,
 * a backslash or a high bit stops), then one by one. */
static inline const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;

    while (end - p >= 8) {
        uint64_t x, q, b;
        memcpy(&x, p, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        if ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | x) & high)
            break;
        p += 8;
    }
    while (p < end && plain(*p))
        p++;
    return p;
}

RV_PRINTF(3, 4) static int perr(struct parser *ps, const unsigned char *at, const char *fmt, ...)
{
    char msg[256];
    int line = 1, col = 1;
    va_list ap;

    if (at > ps->end)
        at = ps->end;
    for (const unsigned char *q = ps->start; q < at; q++, col++)
        if (*q == '\n') {
            line++;
            col = 0;
        }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return rv_fail(ps->err, 0, "parse %s: %s at line %d column %d", ps->what, msg, line, col);
}

static inline void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid
 * (overlong forms, surrogates, beyond U+10FFFF: what jansson refuses). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

static int reserve(struct parser *ps, size_t need)
{
    char *nb;
    size_t cap = ps->cap ? ps->cap : 256;

    if (need <= ps->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    nb = realloc(ps->buf, cap);
    if (!nb)
        return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
    ps->buf = nb;
    ps->cap = cap;
    return 0;
}

static int hex4(const unsigned char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        unsigned d = (c >= '0' && c <= '9') ? (unsigned)(c - '0')
                   : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                   : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10) : 16u;
        if (d == 16)
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* A string at ps->p (on its quote). With decode, (*s, *n) is its value: a
 * pointer into the text when it has no escape, else into ps->buf (valid until
 * the next string). Without decode it is only checked. */
static int string(struct parser *ps, bool decode, const char **s, size_t *n)
{
    const unsigned char *run = ++ps->p, *end = ps->end;
    size_t o = 0;
    bool esc = false;

    for (;;) {
        const unsigned char *p = plain_run(ps->p, end);
        ps->p = p;
        if (p >= end)
            return perr(ps, p, "premature end of input in a string");
        if (*p == '"')
            break;
        if (*p >= 0x80) {
            size_t l = utf8_len(p, end);
            if (!l)
                return perr(ps, p, "invalid UTF-8 in a string");
            ps->p += l;
            continue;
        }
        if (*p < 0x20)
            return perr(ps, p, "control character 0x%x in a string", *p);
        /* an escape */
        if (end - p < 2)
            return perr(ps, p, "premature end of input in a string");
        if (decode) {
            if (reserve(ps, o + (size_t)(p - run) + 4) < 0)
                return -1;
            memcpy(ps->buf + o, run, (size_t)(p - run));
            o += (size_t)(p - run);
            esc = true;
        }
        char c = (char)p[1], out = 0;
        switch (c) {
        case '"': case '\\': case '/': out = c; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (end - p < 6 || hex4(p + 2, &cp) < 0)
                return perr(ps, p, "invalid \\u escape");
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return perr(ps, p - 6, "invalid Unicode '\\u%04X'", cp);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return perr(ps, p - 6, "invalid Unicode '\\u%04X'", cp);
            } else if (cp == 0) {
                /* NUL is the mark of a kept number, and no OCI string holds one */
                return perr(ps, p - 6, "a string contains a NUL character (\\u0000)");
            }
            if (decode) {
                char *w = ps->buf + o;
                if (cp < 0x80) {
                    w[0] = (char)cp;
                    o += 1;
                } else if (cp < 0x800) {
                    w[0] = (char)(0xC0 | cp >> 6);
                    w[1] = (char)(0x80 | (cp & 0x3F));
                    o += 2;
                } else if (cp < 0x10000) {
                    w[0] = (char)(0xE0 | cp >> 12);
                    w[1] = (char)(0x80 | (cp >> 6 & 0x3F));
                    w[2] = (char)(0x80 | (cp & 0x3F));
                    o += 3;
                } else {
                    w[0] = (char)(0xF0 | cp >> 18);
                    w[1] = (char)(0x80 | (cp >> 12 & 0x3F));
                    w[2] = (char)(0x80 | (cp >> 6 & 0x3F));
                    w[3] = (char)(0x80 | (cp & 0x3F));
                    o += 4;
                }
            }
            ps->p = run = p;
            continue;
        }
        default:
            return perr(ps, p, "invalid escape '\\%c'", c >= 0x20 && c < 0x7f ? c : '?');
        }
        if (decode)
            ps->buf[o++] = out;
        ps->p = run = p + 2;
    }
    if (decode) {
        if (esc) {
            if (reserve(ps, o + (size_t)(ps->p - run) + 1) < 0)
                return -1;
            memcpy(ps->buf + o, run, (size_t)(ps->p - run));
            o += (size_t)(ps->p - run);
            *s = ps->buf;
            *n = o;
        } else {
            *s = (const char *)run;
            *n = (size_t)(ps->p - run);
        }
    }
    ps->p++;
    return 0;
}

static bool is_big_integer(const unsigned char *p, size_t n)
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

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct parser *ps, bool build, json_t **out)
{
    const unsigned char *q = ps->p, *p = q, *end = ps->end;
    bool integer = true;

    if (p < end && *p == '-')
        p++;
    if (p < end && *p == '0')
        p++;
    else if (p < end && *p >= '1' && *p <= '9')
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    else
        return perr(ps, q, "invalid number");
    if (p < end && *p == '.') {
        const unsigned char *d = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == d)
            return perr(ps, q, "invalid number");
        integer = false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const unsigned char *d;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        for (d = p; p < end && *p >= '0' && *p <= '9'; p++)
            ;
        if (p == d)
            return perr(ps, q, "invalid number");
        integer = false;
    }
    ps->p = p;
    if (!build)
        return 0;
    size_t n = (size_t)(p - q);
    if (integer && !is_big_integer(q, n) && !(n == 2 && q[0] == '-' && q[1] == '0')) {
        /* fits int64 and prints back the same ("-0" would not) */
        uint64_t v = 0;
        for (const unsigned char *d = q + (*q == '-'); d < p; d++)
            v = v * 10 + (uint64_t)(*d - '0');
        *out = json_integer(*q == '-' ? (json_int_t)(0 - v) : (json_int_t)v);
    } else {
        char lit[MARK_LEN + 64], *heap = NULL, *s = lit;
        if (n > 64 && !(s = heap = malloc(MARK_LEN + n)))
            return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        memcpy(s, MARK, MARK_LEN);
        memcpy(s + MARK_LEN, q, n);
        *out = json_stringn_nocheck(s, MARK_LEN + n);
        free(heap);
    }
    if (!*out)
        return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
    return 0;
}

static const struct rv_json_want *find_want(const struct rv_json_want *want, const char *key,
                                            size_t n)
{
    for (; want && want->key; want++)
        if (strlen(want->key) == n && memcmp(want->key, key, n) == 0)
            return want;
    return NULL;
}

static int value(struct parser *ps, enum mode mode, const struct rv_json_want *want, json_t **out);

/* A member value not loaded spans [at, ps->p): noted, so that the splice
 * copies it without a second look. Notes are in text order. */
static int note_skip(struct parser *ps, const unsigned char *at)
{
    struct rv_json_skips *k = ps->skips;

    if (!k)
        return 0;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 32;
        size_t *na = realloc(k->span, cap * 2 * sizeof(*na));
        if (!na)
            return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        k->span = na;
        k->cap = cap;
    }
    k->span[2 * k->n] = (size_t)(at - ps->start);
    k->span[2 * k->n + 1] = (size_t)(ps->p - ps->start);
    k->n++;
    return 0;
}

/* Past the member value at ps->p: its end as noted by the parse, else a scan. */
static int skip_noted(struct parser *ps)
{
    const struct rv_json_skips *k = ps->noted;
    size_t at, lo = 0, hi = k ? k->n : 0;

    ws(ps);
    at = (size_t)(ps->p - ps->start);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->span[2 * mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (k && lo < k->n && k->span[2 * lo] == at) {
        ps->p = ps->start + k->span[2 * lo + 1];
        return 0;
    }
    return value(ps, SKIP, NULL, NULL);
}

static int object(struct parser *ps, enum mode mode, const struct rv_json_want *want, json_t **out)
{
    cleanup_json json_t *obj = NULL, *seen = NULL;
    const char *key;
    size_t klen;

    ps->p++;
    if (mode != SKIP && !(obj = json_object()))
        return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
    /* every key of a partly loaded object, for the duplicate check */
    if (mode == SOME && !(seen = json_object()))
        return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
    ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        goto done;
    }
    for (;;) {
        const unsigned char *kat;
        cleanup_free char *kcopy = NULL;
        const struct rv_json_want *w = NULL;
        json_t *v = NULL;

        ws(ps);
        kat = ps->p;
        if (ps->p >= ps->end || *ps->p != '"')
            return perr(ps, ps->p, "string or '}' expected");
        if (string(ps, mode != SKIP, &key, &klen) < 0)
            return -1;
        if (mode != SKIP && key == ps->buf) {
            /* decoded: keep it across the value, which reuses the buffer */
            if (!(kcopy = malloc(klen + 1)))
                return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
            memcpy(kcopy, key, klen);
            key = kcopy;
        }
        if (mode != SKIP && json_object_getn(mode == SOME ? seen : obj, key, klen)) {
            char shown[65];
            size_t i;
            for (i = 0; i < klen && i < sizeof(shown) - 1; i++)
                shown[i] = (unsigned char)key[i] < 0x20 || key[i] == 0x7f ? '?' : key[i];
            shown[i] = '\0';
            return perr(ps, kat, "duplicate object key `%s`", shown);
        }
        if (mode == SOME && json_object_setn_new_nocheck(seen, key, klen, json_null()) < 0)
            return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return perr(ps, ps->p, "':' expected");
        ps->p++;
        if (mode == SOME)
            w = find_want(want, key, klen);
        if (mode == FULL || w) {
            if (value(ps, w && w->members ? SOME : FULL, w ? w->members : NULL, &v) < 0)
                return -1;
            if (json_object_setn_new_nocheck(obj, key, klen, v) < 0)
                return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        } else {
            const unsigned char *at;
            ws(ps);
            at = ps->p;
            if (value(ps, SKIP, NULL, NULL) < 0 || (mode == SOME && note_skip(ps, at) < 0))
                return -1;
        }
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        return perr(ps, ps->p, "',' or '}' expected");
    }
done:
    if (out)
        *out = move_ptr(obj);
    return 0;
}

static int array(struct parser *ps, enum mode mode, json_t **out)
{
    cleanup_json json_t *arr = NULL;

    ps->p++;
    if (mode != SKIP && !(arr = json_array()))
        return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
    ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        goto done;
    }
    for (;;) {
        json_t *v = NULL;
        if (value(ps, mode, NULL, mode == SKIP ? NULL : &v) < 0)
            return -1;
        if (v && json_array_append_new(arr, v) < 0)
            return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            break;
        }
        return perr(ps, ps->p, "',' or ']' expected");
    }
done:
    if (out)
        *out = move_ptr(arr);
    return 0;
}

static int literal(struct parser *ps, const char *word, size_t n, json_t *v, json_t **out)
{
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return perr(ps, ps->p, "invalid token");
    ps->p += n;
    if (out)
        *out = v;
    return 0;
}

/* One value at ps->p. SOME applies to objects; any other value is loaded whole. */
static int value(struct parser *ps, enum mode mode, const struct rv_json_want *want, json_t **out)
{
    const char *s;
    size_t n;
    int r;

    ws(ps);
    if (ps->p >= ps->end)
        return perr(ps, ps->p, "premature end of input");
    if (mode == SOME && *ps->p != '{')
        mode = FULL;
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > MAX_DEPTH)
            return perr(ps, ps->p, "maximum parsing depth reached");
        r = *ps->p == '{' ? object(ps, mode, want, out) : array(ps, mode, out);
        ps->depth--;
        return r;
    case '"':
        if (string(ps, mode != SKIP, &s, &n) < 0)
            return -1;
        if (mode != SKIP && !(*out = json_stringn_nocheck(s, n)))
            return rv_fail(ps->err, ENOMEM, "parse %s", ps->what);
        return 0;
    case 't': return literal(ps, "true", 4, json_true(), mode == SKIP ? NULL : out);
    case 'f': return literal(ps, "false", 5, json_false(), mode == SKIP ? NULL : out);
    case 'n': return literal(ps, "null", 4, json_null(), mode == SKIP ? NULL : out);
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return number(ps, mode != SKIP, out);
        return perr(ps, ps->p, "invalid token");
    }
}

static void parser_init(struct parser *ps, const char *text, size_t len, const char *what,
                        struct rv_error *err)
{
    memset(ps, 0, sizeof(*ps));
    ps->start = ps->p = (const unsigned char *)text;
    ps->end = ps->start + len;
    ps->what = what;
    ps->err = err;
}

static int parse(const char *text, size_t len, const char *what, enum mode mode,
                 const struct rv_json_want *want, json_t **out, struct rv_json_skips *skips,
                 struct rv_error *err)
{
    struct parser ps;
    json_t *root = NULL;
    int r = -1;

    parser_init(&ps, text, len, what, err);
    ps.skips = skips;
    if (skips)
        skips->n = 0;
    ws(&ps);
    if (ps.p >= ps.end || (*ps.p != '{' && *ps.p != '['))
        perr(&ps, ps.p, "'[' or '{' expected");
    else if (value(&ps, mode, want, &root) == 0) {
        ws(&ps);
        if (ps.p < ps.end)
            perr(&ps, ps.p, "end of input expected");
        else
            r = 0;
    }
    free(ps.buf);
    if (r < 0) {
        json_decref(root);
        return -1;
    }
    *out = root;
    return 0;
}

int rv_json_parse(const char *text, size_t len, const char *what, json_t **out,
                  struct rv_error *err)
{
    return parse(text, len, what, FULL, NULL, out, NULL, err);
}

int rv_json_parse_some(const char *text, size_t len, const char *what,
                       const struct rv_json_want *want, json_t **out,
                       struct rv_json_skips *skips, struct rv_error *err)
{
    return parse(text, len, what, SOME, want, out, skips, err);
}

void rv_json_skips_free(struct rv_json_skips *skips)
{
    free(skips->span);
    memset(skips, 0, sizeof(*skips));
}

/* ------------------------------------------------------------------ writer */

struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

static bool grow(struct sbuf *b, size_t more)
{
    size_t cap = b->cap ? b->cap : 1024;
    char *np;

    if (b->oom)
        return false;
    if (b->n + more + 1 <= b->cap)
        return true;
    while (cap < b->n + more + 1)
        cap *= 2;
    np = realloc(b->p, cap);
    if (!np) {
        b->oom = true;
        return false;
    }
    b->p = np;
    b->cap = cap;
    return true;
}

static void put(struct sbuf *b, const void *s, size_t n)
{
    if (n && grow(b, n)) {
        memcpy(b->p + b->n, s, n);
        b->n += n;
    }
}

static inline void putc_(struct sbuf *b, char c)
{
    if (grow(b, 1))
        b->p[b->n++] = c;
}

/* Bytes a string prints as they are (jansson's compact form: UTF-8 raw, only
 * quote, backslash and control characters escaped). */
static inline bool verbatim(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\';
}

static void put_string(struct sbuf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n, *run;

    if (n > MARK_LEN && memcmp(s, MARK, MARK_LEN) == 0) {
        put(b, s + MARK_LEN, n - MARK_LEN);     /* a kept number */
        return;
    }
    putc_(b, '"');
    for (run = p; p < end; p++) {
        char esc[8];
        const char *e;
        if (verbatim(*p))
            continue;
        put(b, run, (size_t)(p - run));
        switch (*p) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default:
            snprintf(esc, sizeof(esc), "\\u%04X", *p);
            e = esc;
        }
        put(b, e, strlen(e));
        run = p + 1;
    }
    put(b, run, (size_t)(p - run));
    putc_(b, '"');
}

static int put_value(struct sbuf *b, const json_t *v, int depth)
{
    char num[40];
    const char *key;
    size_t klen, i;
    json_t *m;
    int n;

    if (depth > MAX_DEPTH)
        return -1;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        bool first = true;
        putc_(b, '{');
        json_object_keylen_foreach((json_t *)v, key, klen, m) {
            if (!first)
                putc_(b, ',');
            first = false;
            put_string(b, key, klen);
            putc_(b, ':');
            if (put_value(b, m, depth + 1) < 0)
                return -1;
        }
        putc_(b, '}');
        return 0;
    }
    case JSON_ARRAY:
        putc_(b, '[');
        for (i = 0; i < json_array_size(v); i++) {
            if (i)
                putc_(b, ',');
            if (put_value(b, json_array_get(v, i), depth + 1) < 0)
                return -1;
        }
        putc_(b, ']');
        return 0;
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        return 0;
    case JSON_INTEGER:
        n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        put(b, num, (size_t)n);
        return 0;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (d != d || d - d != 0)   /* NaN, infinity: not JSON */
            return -1;
        n = snprintf(num, sizeof(num), "%.17g", d);
        put(b, num, (size_t)n);
        if (!strpbrk(num, ".e"))
            put(b, ".0", 2);
        return 0;
    }
    case JSON_TRUE: put(b, "true", 4); return 0;
    case JSON_FALSE: put(b, "false", 5); return 0;
    case JSON_NULL: put(b, "null", 4); return 0;
    }
    return -1;
}

static int finish(struct sbuf *b, char **out, size_t *len, struct rv_error *err)
{
    if (b->oom || !grow(b, 0)) {
        free(b->p);
        return rv_fail(err, ENOMEM, "serialize JSON");
    }
    b->p[b->n] = '\0';
    *out = b->p;
    if (len)
        *len = b->n;
    return 0;
}

int rv_json_dump(const json_t *root, char **out, size_t *len, struct rv_error *err)
{
    struct sbuf b = { 0 };

    if (put_value(&b, root, 0) < 0) {
        free(b.p);
        return rv_fail(err, EINVAL, "serialize JSON");
    }
    return finish(&b, out, len, err);
}

/* ------------------------------------------------------------------ splice */

/* The value at ps->p, skipped; *eq is cleared unless it prints as v does
 * (whitespace and escapes aside). A walk, no copy: most loaded members come
 * back unchanged. */
static int skip_equal(struct parser *ps, const json_t *v, bool *eq)
{
    const unsigned char *q;
    const char *s;
    size_t n, count = 0;
    char num[32];
    int r = 0;

    ws(ps);
    if (!*eq || !v) {
        *eq = false;
        return value(ps, SKIP, NULL, NULL);
    }
    q = ps->p;
    switch (*q) {
    case '{':
    case '[': {
        bool obj = *q == '{';
        if (obj ? !json_is_object(v) : !json_is_array(v)) {
            *eq = false;
            return value(ps, SKIP, NULL, NULL);
        }
        if (++ps->depth > MAX_DEPTH)
            return perr(ps, q, "maximum parsing depth reached");
        ps->p++;
        ws(ps);
        while (r == 0 && *ps->p != (obj ? '}' : ']')) {
            const json_t *m = NULL;
            if (!obj) {
                m = json_array_get(v, count);
            } else {
                if (string(ps, true, &s, &n) < 0)
                    return -1;
                m = json_object_getn(v, s, n);
                ws(ps);
                ps->p++;    /* ':' */
            }
            r = skip_equal(ps, m, eq);
            count++;
            ws(ps);
            if (*ps->p == ',') {
                ps->p++;
                ws(ps);
            }
        }
        ps->p++;
        ps->depth--;
        if (count != (obj ? json_object_size(v) : json_array_size(v)))
            *eq = false;
        return r;
    }
    case '"':
        if (string(ps, true, &s, &n) < 0)
            return -1;
        *eq = json_is_string(v) && json_string_length(v) == n &&
              memcmp(json_string_value(v), s, n) == 0;
        return 0;
    case 't': case 'f': case 'n':
        r = value(ps, SKIP, NULL, NULL);
        *eq = (*q == 't' && json_is_true(v)) || (*q == 'f' && json_is_false(v)) ||
              (*q == 'n' && json_is_null(v));
        return r;
    default:
        if (number(ps, false, NULL) < 0)
            return -1;
        n = (size_t)(ps->p - q);
        if (json_is_integer(v)) {
            int l = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            *eq = (size_t)l == n && memcmp(num, q, n) == 0;
        } else {
            /* a kept number: its text */
            *eq = json_is_string(v) && json_string_length(v) == MARK_LEN + n &&
                  memcmp(json_string_value(v), MARK, MARK_LEN) == 0 &&
                  memcmp(json_string_value(v) + MARK_LEN, q, n) == 0;
        }
        return 0;
    }
}

static int splice_object(struct parser *ps, struct sbuf *b, const struct rv_json_want *want,
                         const json_t *obj);

/* The member value at ps->p, loaded as v: its text again, or v. */
static int splice_value(struct parser *ps, struct sbuf *b, const struct rv_json_want *w,
                        const json_t *v)
{
    const unsigned char *vs = ps->p;
    bool same = true;

    if (w->members && *vs == '{' && json_is_object(v)) {
        int r;
        if (++ps->depth > MAX_DEPTH)
            return perr(ps, vs, "maximum parsing depth reached");
        r = splice_object(ps, b, w->members, v);
        ps->depth--;
        return r;
    }
    if (skip_equal(ps, v, &same) < 0)
        return -1;
    if (same)
        put(b, vs, (size_t)(ps->p - vs));
    else if (put_value(b, v, 0) < 0)
        return rv_fail(ps->err, EINVAL, "serialize %s", ps->what);
    return 0;
}

/* The object at ps->p, its wanted members taken from obj. Each member is a
 * chunk of text from after the previous comma to its separator; chunks not
 * dropped are joined with commas as they were, new members go after the last
 * value, before the whitespace that closed the object. */
static int splice_object(struct parser *ps, struct sbuf *b, const struct rv_json_want *want,
                         const json_t *obj)
{
    cleanup_json json_t *had = json_object();
    const unsigned char *chunk, *trail = NULL, *trail_end = NULL;
    const char *key;
    size_t klen;
    bool any = false;
    json_t *v;

    if (!had)
        return rv_fail(ps->err, ENOMEM, "serialize %s", ps->what);
    putc_(b, '{');
    chunk = ++ps->p;
    ws(ps);
    if (*ps->p == '}') {
        trail = chunk;
        trail_end = ps->p;
    }
    while (*ps->p != '}') {
        const struct rv_json_want *w;
        cleanup_free char *kcopy = NULL;

        if (string(ps, true, &key, &klen) < 0)
            return -1;
        if (!(kcopy = strndup(key, klen)))
            return rv_fail(ps->err, ENOMEM, "serialize %s", ps->what);
        ws(ps);
        ps->p++;            /* ':' (checked by the parse) */
        ws(ps);
        w = find_want(want, kcopy, klen);
        v = w ? json_object_getn(obj, kcopy, klen) : NULL;
        if (!w && json_object_getn(obj, kcopy, klen))
            return rv_fail(ps->err, 0, "serialize %s: `%s` was changed but never loaded "
                           "(a member the editor owns must be listed for loading)", ps->what, kcopy);
        if (w && json_object_setn_new_nocheck(had, kcopy, klen, json_null()) < 0)
            return rv_fail(ps->err, ENOMEM, "serialize %s", ps->what);
        if (w && !v) {
            /* dropped */
            if (value(ps, SKIP, NULL, NULL) < 0)
                return -1;
        } else {
            if (trail) {
                put(b, trail, (size_t)(trail_end - trail));
                trail = NULL;
            }
            if (any)
                putc_(b, ',');
            any = true;
            if (w) {
                put(b, chunk, (size_t)(ps->p - chunk));
                if (splice_value(ps, b, w, v) < 0)
                    return -1;
            } else {
                if (skip_noted(ps) < 0)
                    return -1;
                put(b, chunk, (size_t)(ps->p - chunk));
            }
        }
        trail = ps->p;
        ws(ps);
        trail_end = ps->p;
        if (*ps->p == ',') {
            chunk = ++ps->p;
            ws(ps);
        }
    }
    /* members that are new */
    json_object_keylen_foreach((json_t *)obj, key, klen, v) {
        if (json_object_getn(had, key, klen))
            continue;
        if (any)
            putc_(b, ',');
        any = true;
        put_string(b, key, klen);
        putc_(b, ':');
        if (put_value(b, v, 0) < 0)
            return rv_fail(ps->err, EINVAL, "serialize %s", ps->what);
    }
    if (trail)
        put(b, trail, (size_t)(trail_end - trail));
    ps->p++;
    putc_(b, '}');
    return 0;
}

int rv_json_splice(const char *text, size_t len, const char *what,
                   const struct rv_json_want *want, const json_t *root,
                   const struct rv_json_skips *skips, char **out, size_t *outlen,
                   struct rv_error *err)
{
    struct parser ps;
    struct sbuf b = { 0 };
    const unsigned char *lead;
    int r;

    parser_init(&ps, text, len, what, err);
    ps.noted = skips;
    ws(&ps);
    if (ps.p >= ps.end || *ps.p != '{' || !json_is_object(root))
        return rv_fail(err, 0, "serialize %s: expected an object", what);
    lead = ps.start;
    put(&b, lead, (size_t)(ps.p - lead));
    r = splice_object(&ps, &b, want, root);
    free(ps.buf);
    if (r < 0) {
        free(b.p);
        return -1;
    }
    put(&b, ps.p, (size_t)(ps.end - ps.p));
    return finish(&b, out, outlen, err);
}

/* ------------------------------------------------------------------ access */

json_t *rv_json_path(json_t *root, const char *dotted)
{
    const char *p = dotted;

    while (root && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!json_is_object(root))
            return NULL;
        root = json_object_getn(root, p, n);
        p += n + (dot ? 1 : 0);
    }
    return root;
}

bool rv_json_array_has_string(json_t *arr, const char *s)
{
    json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
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
