/* engine_toml.c - TOML scanner and the marked edits of `resview configure`. */
#define _GNU_SOURCE
#include "resview/engine_toml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SEP '\x1f'
#define MAX_KEY 4096

struct scan {
    const char *s;
    size_t len, p;
    unsigned line;
    struct rv_toml *doc;
    char table[MAX_KEY];      /* joined path of the current table ("" = root) */
    struct rv_error *err;
};

static int fail(struct scan *sc, const char *what)
{
    return rv_fail(sc->err, 0, "line %u: %s", sc->line, what);
}

static bool at_end(const struct scan *sc) { return sc->p >= sc->len; }
static char cur(const struct scan *sc) { return sc->p < sc->len ? sc->s[sc->p] : '\0'; }
static char peek(const struct scan *sc, size_t k) { return sc->p + k < sc->len ? sc->s[sc->p + k] : '\0'; }

static void skip_ws(struct scan *sc)
{
    while (!at_end(sc) && (cur(sc) == ' ' || cur(sc) == '\t'))
        sc->p++;
}

static bool bad_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* '#' ... up to (not including) the newline. */
static int skip_comment(struct scan *sc)
{
    if (cur(sc) != '#')
        return 0;
    for (; !at_end(sc) && cur(sc) != '\n'; sc->p++) {
        if (cur(sc) == '\r' && peek(sc, 1) == '\n')
            continue;
        if (bad_control((unsigned char)cur(sc)))
            return fail(sc, "control character in a comment");
    }
    return 0;
}

static int newline(struct scan *sc)
{
    if (cur(sc) == '\r' && peek(sc, 1) == '\n')
        sc->p++;
    if (cur(sc) == '\n') {
        sc->p++;
        sc->line++;
        return 0;
    }
    if (at_end(sc))
        return 0;
    return fail(sc, "expected the end of the line");
}

/* Whitespace, then an optional comment, then the end of the line. */
static int end_of_line(struct scan *sc)
{
    skip_ws(sc);
    if (skip_comment(sc) < 0)
        return -1;
    return newline(sc);
}

/* Whitespace, comments and newlines (inside arrays). */
static int skip_blank(struct scan *sc)
{
    for (;;) {
        skip_ws(sc);
        if (cur(sc) == '#' && skip_comment(sc) < 0)
            return -1;
        if (cur(sc) == '\n' || (cur(sc) == '\r' && peek(sc, 1) == '\n')) {
            if (newline(sc) < 0)
                return -1;
            continue;
        }
        return 0;
    }
}

static int put_utf8(char *out, size_t *o, size_t size, unsigned long cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xc0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        if (cp >= 0xd800 && cp < 0xe000)
            return -1;
        b[0] = (char)(0xe0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
    } else if (cp < 0x110000) {
        b[0] = (char)(0xf0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
    } else
        return -1;
    if (out) {
        if (*o + n >= size)
            return -1;
        memcpy(out + *o, b, n);
    }
    *o += n;
    return 0;
}

/* A single-line basic ("...") or literal ('...') string at sc->p. Decoded
 * into out (if not NULL; size bytes, NUL-terminated). */
static int scan_string(struct scan *sc, char *out, size_t size)
{
    char q = cur(sc);
    size_t o = 0;

    sc->p++;
    for (;;) {
        if (at_end(sc) || cur(sc) == '\n')
            return fail(sc, "unterminated string");
        unsigned char c = (unsigned char)cur(sc);
        if (c == (unsigned char)q) {
            sc->p++;
            break;
        }
        if (bad_control(c))
            return fail(sc, "control character in a string");
        if (q == '"' && c == '\\') {
            char e = peek(sc, 1);
            unsigned long cp = 0;
            int digits = 0;
            sc->p += 2;
            switch (e) {
            case 'b': c = '\b'; break;
            case 't': c = '\t'; break;
            case 'n': c = '\n'; break;
            case 'f': c = '\f'; break;
            case 'r': c = '\r'; break;
            case 'e': c = 0x1b; break;
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case 'u': digits = 4; break;
            case 'U': digits = 8; break;
            default: return fail(sc, "unknown escape in a string");
            }
            if (digits) {
                for (int i = 0; i < digits; i++, sc->p++) {
                    char h = cur(sc);
                    int v = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                            : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                    if (v < 0)
                        return fail(sc, "bad \\u escape in a string");
                    cp = cp * 16 + (unsigned long)v;
                }
                if (put_utf8(out, &o, size, cp) < 0)
                    return fail(sc, "bad or too long \\u escape in a string");
                continue;
            }
        } else
            sc->p++;
        if (out) {
            if (o + 1 >= size)
                return fail(sc, "key too long");
            out[o] = (char)c;
        }
        o++;
    }
    if (out)
        out[o] = '\0';
    return 0;
}

/* """...""" or '''...''' at sc->p. */
static int scan_multiline(struct scan *sc)
{
    char q = cur(sc);

    sc->p += 3;
    for (;;) {
        if (at_end(sc))
            return fail(sc, "unterminated multi-line string");
        char c = cur(sc);
        if (c == q && peek(sc, 1) == q && peek(sc, 2) == q) {
            sc->p += 3;
            /* up to two more quotes belong to the content */
            for (int i = 0; i < 2 && cur(sc) == q; i++)
                sc->p++;
            return 0;
        }
        if (c == '\n') {
            sc->line++;
            sc->p++;
            continue;
        }
        if (c == '\r' && peek(sc, 1) == '\n') {
            sc->p++;
            continue;
        }
        if (bad_control((unsigned char)c))
            return fail(sc, "control character in a string");
        if (q == '"' && c == '\\') {
            sc->p++;
            if (at_end(sc))
                return fail(sc, "unterminated multi-line string");
            if (cur(sc) == '\n')
                continue; /* line-ending backslash: the newline is counted above */
        }
        sc->p++;
    }
}

static bool bare_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* A dotted key into out (joined by SEP), relative. */
static int scan_key(struct scan *sc, char *out, size_t size)
{
    size_t o = 0;

    for (;;) {
        char part[MAX_KEY];
        skip_ws(sc);
        if (cur(sc) == '"' || cur(sc) == '\'') {
            if (scan_string(sc, part, sizeof(part)) < 0)
                return -1;
        } else {
            size_t n = 0;
            while (!at_end(sc) && bare_char(cur(sc))) {
                if (n + 1 >= sizeof(part))
                    return fail(sc, "key too long");
                part[n++] = cur(sc);
                sc->p++;
            }
            if (n == 0)
                return fail(sc, "expected a key");
            part[n] = '\0';
        }
        if (strchr(part, SEP))
            return fail(sc, "key with a \\x1f character is not supported");
        size_t pl = strlen(part);
        if (o + pl + 2 >= size)
            return fail(sc, "key too long");
        if (o)
            out[o++] = SEP;
        memcpy(out + o, part, pl);
        o += pl;
        out[o] = '\0';
        skip_ws(sc);
        if (cur(sc) != '.')
            return 0;
        sc->p++;
    }
}

static struct rv_toml_item *find(struct rv_toml *doc, const char *path)
{
    for (size_t i = 0; i < doc->n; i++)
        if (strcmp(doc->items[i].path, path) == 0)
            return &doc->items[i];
    return NULL;
}

static struct rv_toml_item *add(struct scan *sc, const char *path, enum rv_toml_kind kind)
{
    struct rv_toml *doc = sc->doc;
    if (doc->n == doc->cap) {
        size_t cap = doc->cap ? doc->cap * 2 : 64;
        struct rv_toml_item *n = realloc(doc->items, cap * sizeof(*n));
        if (!n) {
            rv_fail(sc->err, ENOMEM, "scan TOML");
            return NULL;
        }
        doc->items = n;
        doc->cap = cap;
    }
    struct rv_toml_item *it = &doc->items[doc->n];
    memset(it, 0, sizeof(*it));
    it->path = strdup(path);
    if (!it->path) {
        rv_fail(sc->err, ENOMEM, "scan TOML");
        return NULL;
    }
    it->kind = kind;
    doc->n++;
    return it;
}

static int join(struct scan *sc, char *out, size_t size, const char *a, const char *b)
{
    if (rv_snprintf(out, size, "%s%s%s", a, *a && *b ? "\x1f" : "", b) < 0)
        return fail(sc, "key too long");
    return 0;
}

/* Rewrite a path so that array tables refer to their last element
 * ("a" [[a]] -> "a\x1f#N"). */
static int resolve_arrays(struct scan *sc, const char *path, char *out, size_t size)
{
    size_t o = 0, n = strlen(path);
    out[0] = '\0';
    for (size_t i = 0; i <= n; i++) {
        if (i < n && path[i] != SEP)
            continue;
        /* prefix path[0..i) */
        char prefix[MAX_KEY];
        size_t start = 0;
        /* component = path[start..i) where start is after the previous SEP */
        for (size_t j = i; j > 0; j--)
            if (path[j - 1] == SEP) {
                start = j;
                break;
            }
        if (o + (i - start) + 2 >= size)
            return fail(sc, "key too long");
        if (o)
            out[o++] = SEP;
        memcpy(out + o, path + start, i - start);
        o += i - start;
        out[o] = '\0';
        if (rv_snprintf(prefix, sizeof(prefix), "%s", out) < 0)
            return fail(sc, "key too long");
        struct rv_toml_item *it = find(sc->doc, prefix);
        if (it && it->kind == RV_TOML_ARRAY_TABLE && i < n) {
            int k = snprintf(out + o, size - o, "\x1f#%u", it->elements);
            if (k < 0 || (size_t)k >= size - o)
                return fail(sc, "key too long");
            o += (size_t)k;
        }
    }
    return 0;
}

/* Make sure every proper prefix of path (beyond base) can hold a child:
 * create it with kind if missing. */
static int ensure_prefixes(struct scan *sc, const char *path, size_t base_len, enum rv_toml_kind kind)
{
    char prefix[MAX_KEY];
    size_t n = strlen(path);

    for (size_t i = base_len ? base_len + 1 : 0; i < n; i++) {
        if (path[i] != SEP)
            continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        struct rv_toml_item *it = find(sc->doc, prefix);
        if (!it) {
            if (!(it = add(sc, prefix, kind)))
                return -1;
            it->line_start = sc->p;
            continue;
        }
        if (it->kind == RV_TOML_VALUE || it->kind == RV_TOML_INLINE)
            return fail(sc, "key extends a value that is not a table");
        if (kind == RV_TOML_DOTTED && (it->kind == RV_TOML_TABLE || it->kind == RV_TOML_IMPLICIT ||
                                       it->kind == RV_TOML_ARRAY_TABLE))
            return fail(sc, "dotted key extends a table defined by a header");
    }
    return 0;
}

static int scan_value(struct scan *sc, const char *path, size_t line_start);

/* Define a key (relative key rel) inside table base, value at sc->p. */
static int scan_keyval(struct scan *sc, const char *base, size_t line_start)
{
    char rel[MAX_KEY], full[MAX_KEY];

    if (scan_key(sc, rel, sizeof(rel)) < 0)
        return -1;
    if (cur(sc) != '=')
        return fail(sc, "expected `=` after a key");
    sc->p++;
    skip_ws(sc);
    if (join(sc, full, sizeof(full), base, rel) < 0)
        return -1;
    if (find(sc->doc, full))
        return fail(sc, "duplicate key");
    if (ensure_prefixes(sc, full, strlen(base), RV_TOML_DOTTED) < 0)
        return -1;
    return scan_value(sc, full, line_start);
}

static int scan_array(struct scan *sc)
{
    sc->p++; /* [ */
    for (;;) {
        if (skip_blank(sc) < 0)
            return -1;
        if (cur(sc) == ']') {
            sc->p++;
            return 0;
        }
        if (scan_value(sc, NULL, 0) < 0)
            return -1;
        if (skip_blank(sc) < 0)
            return -1;
        if (cur(sc) == ',') {
            sc->p++;
            continue;
        }
        if (cur(sc) == ']') {
            sc->p++;
            return 0;
        }
        return fail(sc, "expected `,` or `]` in an array");
    }
}

static int scan_inline(struct scan *sc, const char *path, size_t line_start)
{
    char base[MAX_KEY];

    sc->p++; /* { */
    skip_ws(sc);
    if (cur(sc) == '}') {
        sc->p++;
        return 0;
    }
    if (rv_snprintf(base, sizeof(base), "%s", path ? path : "\x1f#anon") < 0)
        return fail(sc, "key too long");
    for (;;) {
        if (scan_keyval(sc, base, line_start) < 0)
            return -1;
        skip_ws(sc);
        if (cur(sc) == ',') {
            sc->p++;
            continue;
        }
        if (cur(sc) == '}') {
            sc->p++;
            return 0;
        }
        return fail(sc, "expected `,` or `}` in an inline table");
    }
}

/* Digits of a base with single underscores between them: "1_000", "ff". */
static size_t digits(const char *t, size_t n, int base)
{
    size_t i = 0;

    for (; i < n; i++) {
        char c = t[i];
        bool d = base == 16 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                            : (c >= '0' && c < '0' + base);
        if (d)
            continue;
        if (c == '_' && i > 0 && i + 1 < n && t[i - 1] != '_')
            continue;
        break;
    }
    return (i > 0 && t[i - 1] == '_') ? i - 1 : i;
}

/* Exactly n characters of 0-9 at t. */
static bool fixed_digits(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i] < '0' || t[i] > '9')
            return false;
    return true;
}

/* HH:MM:SS(.fraction)?; returns the length, 0 if none. */
static size_t local_time(const char *t, size_t n)
{
    size_t i = 8;

    if (n < 8 || !fixed_digits(t, 2) || t[2] != ':' || !fixed_digits(t + 3, 2) || t[5] != ':' ||
        !fixed_digits(t + 6, 2))
        return 0;
    if (i < n && t[i] == '.') {
        size_t f = i + 1;
        while (f < n && t[f] >= '0' && t[f] <= '9')
            f++;
        if (f == i + 1)
            return 0;
        i = f;
    }
    return i;
}

/* A TOML 1.0 boolean, integer, float, date, time or date-time, exactly. */
static bool valid_scalar(const char *t, size_t n)
{
    size_t k = 0, i;

    if ((n == 4 && memcmp(t, "true", 4) == 0) || (n == 5 && memcmp(t, "false", 5) == 0))
        return true;
    /* dates and times */
    if (n >= 10 && fixed_digits(t, 4) && t[4] == '-' && fixed_digits(t + 5, 2) && t[7] == '-' &&
        fixed_digits(t + 8, 2)) {
        if (n == 10)
            return true;
        if (t[10] != 'T' && t[10] != 't' && t[10] != ' ')
            return false;
        i = 11 + local_time(t + 11, n - 11);
        if (i == 11)
            return false;
        if (i == n)
            return true;
        if ((t[i] == 'Z' || t[i] == 'z') && i + 1 == n)
            return true;
        return (t[i] == '+' || t[i] == '-') && n - i == 6 && fixed_digits(t + i + 1, 2) &&
               t[i + 3] == ':' && fixed_digits(t + i + 4, 2);
    }
    if (local_time(t, n) == n)
        return true;
    /* prefixed integers (no sign) */
    if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
        int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
        return digits(t + 2, n - 2, base) == n - 2 && t[2] != '_';
    }
    if (t[0] == '+' || t[0] == '-')
        k = 1;
    if (n - k == 3 && (memcmp(t + k, "inf", 3) == 0 || memcmp(t + k, "nan", 3) == 0))
        return true;
    /* decimal integer part: 0, or no leading zero */
    i = k + digits(t + k, n - k, 10);
    if (i == k || (t[k] == '0' && i > k + 1))
        return false;
    if (i < n && t[i] == '.') {
        size_t f = i + 1 + digits(t + i + 1, n - i - 1, 10);
        if (f == i + 1)
            return false;
        i = f;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        size_t e = i + 1;
        if (e < n && (t[e] == '+' || t[e] == '-'))
            e++;
        size_t f = e + digits(t + e, n - e, 10);
        if (f == e)
            return false;
        i = f;
    }
    return i == n;
}

/* Numbers, booleans, dates: a run of the characters they use. */
static int scan_scalar(struct scan *sc)
{
    size_t start = sc->p;
    while (!at_end(sc)) {
        char c = cur(sc);
        if (bare_char(c) || c == '+' || c == '.' || c == ':')
            sc->p++;
        else if (c == ' ' && sc->p - start == 10 && sc->s[start + 4] == '-' && peek(sc, 1) >= '0' &&
                 peek(sc, 1) <= '9')
            sc->p++; /* 1979-05-27 07:32:00 */
        else
            break;
    }
    size_t n = sc->p - start;
    const char *t = sc->s + start;
    if (n == 0)
        return fail(sc, "expected a value");
    if (valid_scalar(t, n))
        return 0;
    return fail(sc, "invalid value");
}

static int scan_value(struct scan *sc, const char *path, size_t line_start)
{
    struct rv_toml_item *it = NULL;
    unsigned first_line = sc->line;
    size_t vstart = sc->p;
    int r;

    if (path) {
        if (!(it = add(sc, path, cur(sc) == '{' ? RV_TOML_INLINE : RV_TOML_VALUE)))
            return -1;
        it->line_start = line_start;
    }
    size_t idx = it ? (size_t)(it - sc->doc->items) : 0;
    char c = cur(sc);
    if ((c == '"' || c == '\'') && peek(sc, 1) == c && peek(sc, 2) == c)
        r = scan_multiline(sc);
    else if (c == '"' || c == '\'')
        r = scan_string(sc, NULL, 0);
    else if (c == '[')
        r = scan_array(sc);
    else if (c == '{')
        r = scan_inline(sc, path, line_start);
    else
        r = scan_scalar(sc);
    if (r < 0)
        return -1;
    if (it) {
        it = &sc->doc->items[idx]; /* items may have moved */
        it->val_start = vstart;
        it->val_end = sc->p;
        it->multiline = sc->line != first_line;
    }
    return 0;
}

static int scan_header(struct scan *sc, size_t line_start)
{
    bool array = peek(sc, 1) == '[';
    char rel[MAX_KEY], path[MAX_KEY];
    struct rv_toml_item *it;

    sc->p += array ? 2 : 1;
    if (scan_key(sc, rel, sizeof(rel)) < 0)
        return -1;
    if (cur(sc) != ']' || (array && peek(sc, 1) != ']'))
        return fail(sc, array ? "expected `]]`" : "expected `]`");
    sc->p += array ? 2 : 1;
    if (resolve_arrays(sc, rel, path, sizeof(path)) < 0)
        return -1;
    if (ensure_prefixes(sc, path, 0, RV_TOML_IMPLICIT) < 0)
        return -1;
    it = find(sc->doc, path);
    if (array) {
        if (it && it->kind != RV_TOML_ARRAY_TABLE)
            return fail(sc, "array of tables redefines a key");
        if (!it && !(it = add(sc, path, RV_TOML_ARRAY_TABLE)))
            return -1;
        it->elements++;
        it->line_start = line_start;
        if (rv_snprintf(sc->table, sizeof(sc->table), "%s\x1f#%u", path, it->elements) < 0)
            return fail(sc, "key too long");
    } else {
        if (it && it->kind != RV_TOML_IMPLICIT)
            return fail(sc, "duplicate table");
        if (!it && !(it = add(sc, path, RV_TOML_TABLE)))
            return -1;
        it->kind = RV_TOML_TABLE;
        it->line_start = line_start;
        if (rv_snprintf(sc->table, sizeof(sc->table), "%s", path) < 0)
            return fail(sc, "key too long");
    }
    size_t idx = (size_t)(it - sc->doc->items);
    if (end_of_line(sc) < 0)
        return -1;
    sc->doc->items[idx].line_end = sc->p;
    return 0;
}

int rv_toml_scan(const char *text, size_t len, struct rv_toml *doc, struct rv_error *err)
{
    struct scan sc = { .s = text, .len = len, .line = 1, .doc = doc, .err = err };

    memset(doc, 0, sizeof(*doc));
    doc->text = text;
    doc->len = len;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        sc.p = 3;
    if (memchr(text, '\0', len)) {
        rv_toml_free(doc);
        return rv_fail(err, 0, "not a text file (NUL byte)");
    }
    while (!at_end(&sc)) {
        size_t line_start = sc.p;
        skip_ws(&sc);
        int r;
        if (cur(&sc) == '[')
            r = scan_header(&sc, line_start);
        else if (cur(&sc) == '#' || cur(&sc) == '\n' || cur(&sc) == '\r' || at_end(&sc))
            r = end_of_line(&sc);
        else {
            size_t first = sc.doc->n;
            r = scan_keyval(&sc, sc.table, line_start);
            if (r == 0)
                r = end_of_line(&sc);
            for (size_t i = first; r == 0 && i < sc.doc->n; i++)
                sc.doc->items[i].line_end = sc.p;
        }
        if (r < 0) {
            rv_toml_free(doc);
            return -1;
        }
    }
    return 0;
}

void rv_toml_free(struct rv_toml *doc)
{
    for (size_t i = 0; i < doc->n; i++)
        free(doc->items[i].path);
    free(doc->items);
    doc->items = NULL;
    doc->n = doc->cap = 0;
}

int rv_toml_path(const char *key, char *out, size_t size, struct rv_error *err)
{
    struct rv_toml dummy = { 0 };
    struct scan sc = { .s = key, .len = strlen(key), .line = 1, .doc = &dummy, .err = err };

    if (scan_key(&sc, out, size) < 0)
        return rv_wrap(err, "key `%s`", key);
    if (!at_end(&sc))
        return rv_fail(err, 0, "key `%s`: trailing characters", key);
    return 0;
}

const struct rv_toml_item *rv_toml_get(const struct rv_toml *doc, const char *key)
{
    char path[MAX_KEY];
    struct rv_error err;

    if (rv_toml_path(key, path, sizeof(path), &err) < 0)
        return NULL;
    return find((struct rv_toml *)doc, path);
}

char *rv_toml_raw(const struct rv_toml *doc, const struct rv_toml_item *it)
{
    return strndup(doc->text + it->val_start, it->val_end - it->val_start);
}

bool rv_toml_is_string(const struct rv_toml *doc, const struct rv_toml_item *it, const char *s)
{
    char buf[MAX_KEY];
    struct rv_error err;
    struct rv_toml dummy = { 0 };
    struct scan sc = { .s = doc->text, .len = it->val_end, .p = it->val_start, .line = 1,
                       .doc = &dummy, .err = &err };

    if (it->kind != RV_TOML_VALUE || (cur(&sc) != '"' && cur(&sc) != '\''))
        return false;
    if (peek(&sc, 1) == cur(&sc) && peek(&sc, 2) == cur(&sc))
        return false;
    return scan_string(&sc, buf, sizeof(buf)) == 0 && strcmp(buf, s) == 0;
}

int rv_toml_string(const struct rv_toml *doc, const struct rv_toml_item *it, char *out, size_t size)
{
    struct rv_error err;
    struct rv_toml dummy = { 0 };
    struct scan sc = { .s = doc->text, .len = it->val_end, .p = it->val_start, .line = 1,
                       .doc = &dummy, .err = &err };

    if (it->kind != RV_TOML_VALUE)
        return -1;
    if (cur(&sc) == '[') {
        sc.p++;
        if (skip_blank(&sc) < 0)
            return -1;
    }
    if ((cur(&sc) != '"' && cur(&sc) != '\'') || (peek(&sc, 1) == cur(&sc) && peek(&sc, 2) == cur(&sc)))
        return -1;
    return scan_string(&sc, out, size);
}

char *rv_toml_quote(const char *s)
{
    size_t n = strlen(s), o = 0;
    char *out = malloc(n * 6 + 3);

    if (!out)
        return NULL;
    out[o++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*c;
        } else if (*c < 0x20 || *c == 0x7f) {
            o += (size_t)sprintf(out + o, "\\u%04x", *c);
        } else
            out[o++] = (char)*c;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

char *rv_toml_key(const char *s)
{
    bool bare = *s != '\0';
    for (const char *c = s; *c; c++)
        if (!bare_char(*c))
            bare = false;
    return bare ? strdup(s) : rv_toml_quote(s);
}

/* --- marked edits ------------------------------------------------------- */

/* Every marker carries a check of what it marks (64-bit FNV-1a of the text,
 * 16 hex digits): a line or block counts as resview's only when the check
 * matches, so an operator's line that happens to end like a marker, or a
 * comment that quotes one, is never taken for ours. Text we wrote and an
 * operator changed afterwards is the operator's from then on. */
#define MARK_HEX 16

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* The check of a, then "\n", then b (b may be NULL). */
static void mark_check(const char *a, size_t an, const char *b, size_t bn, char out[MARK_HEX + 1])
{
    uint64_t h = fnv(UINT64_C(0xcbf29ce484222325), "resview", 8);
    h = fnv(h, a, an);
    if (b)
        h = fnv(fnv(h, "\n", 1), b, bn);
    snprintf(out, MARK_HEX + 1, "%016" PRIx64, h);
}

static bool check_at(const char *p, size_t n, const char *want)
{
    return n >= MARK_HEX && memcmp(p, want, MARK_HEX) == 0;
}

struct buf {
    char *d;
    size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *d = realloc(b->d, cap);
        if (!d)
            return -1;
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = '\0';
    return 0;
}

static bool starts(const char *line, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(line, prefix, k) == 0;
}

static const char *find_in(const char *line, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(line + i, needle, k) == 0)
            return line + i;
    return NULL;
}

char *rv_mark_added(const char *line, size_t n)
{
    char check[MARK_HEX + 1], *out = NULL;

    mark_check(line, n, NULL, 0, check);
    return asprintf(&out, "%.*s" RV_MARK_ADDED "%s", (int)n, line, check) < 0 ? NULL : out;
}

char *rv_mark_was(const char *line, size_t n, const char *orig, size_t on)
{
    char check[MARK_HEX + 1], *out = NULL;

    mark_check(line, n, orig, on, check);
    return asprintf(&out, "%.*s" RV_MARK_WAS "%s: %.*s", (int)n, line, check, (int)on, orig) < 0
               ? NULL : out;
}

/* A begin line of ours: its flags ("", " [created]" or " [noeol]") and check. */
static bool begin_line(const char *line, size_t n, const char **flags, size_t *flen,
                       const char **check)
{
    size_t k = strlen(RV_MARK_BEGIN), tail = strlen(RV_MARK_BEGIN_TAIL);
    const char *f;

    if (!starts(line, n, RV_MARK_BEGIN) || n < k + MARK_HEX + tail ||
        memcmp(line + n - tail, RV_MARK_BEGIN_TAIL, tail) != 0)
        return false;
    *check = line + k;
    f = line + k + MARK_HEX;
    *flen = (size_t)(line + n - tail - f);
    *flags = f;
    return (*flen == 0 || (*flen == 10 && memcmp(f, " [created]", 10) == 0) ||
            (*flen == 8 && memcmp(f, " [noeol]", 8) == 0)) &&
           strspn(*check, "0123456789abcdef") >= MARK_HEX;
}

int rv_marked_strip(const char *text, size_t len, char **out, size_t *outlen, bool *had,
                    bool *created, struct rv_error *err)
{
    struct buf b = { 0 };
    size_t p = 0;

    *had = *created = false;
    if (buf_add(&b, "", 0) < 0)
        return rv_fail(err, ENOMEM, "strip resview entries");
    while (p < len) {
        const char *line = text + p;
        const char *nl = memchr(line, '\n', len - p);
        size_t n = nl ? (size_t)(nl - line) : len - p;     /* without '\n' */
        size_t next = p + n + (nl ? 1 : 0);
        const char *flags, *check, *m;
        size_t flen;

        if (begin_line(line, n, &flags, &flen, &check)) {
            /* the end line with the same check, and the block between matching it */
            char end[sizeof(RV_MARK_END) + MARK_HEX + 1], want[MARK_HEX + 1];
            size_t q = next, body = next;
            bool found = false;
            snprintf(end, sizeof(end), "%s%.*s", RV_MARK_END, MARK_HEX, check);
            while (q < len && !found) {
                const char *l2 = text + q;
                const char *nl2 = memchr(l2, '\n', len - q);
                size_t n2 = nl2 ? (size_t)(nl2 - l2) : len - q;
                if (n2 == strlen(end) && memcmp(l2, end, n2) == 0) {
                    mark_check(flags, flen, text + body, q - body, want);
                    found = check_at(check, MARK_HEX, want);
                }
                q += n2 + (nl2 ? 1 : 0);
            }
            if (found) {
                *had = true;
                if (flen == 10)
                    *created = true;
                /* the blank line put before the block */
                if (b.n >= 2 && b.d[b.n - 1] == '\n' && b.d[b.n - 2] == '\n')
                    b.n--;
                if (flen == 8 && b.n >= 1 && b.d[b.n - 1] == '\n')
                    b.n--;
                b.d[b.n] = '\0';
                p = q;
                continue;
            }
        }
        if ((m = find_in(line, n, RV_MARK_ADDED)) && (size_t)(line + n - m) == strlen(RV_MARK_ADDED) + MARK_HEX) {
            char want[MARK_HEX + 1];
            mark_check(line, (size_t)(m - line), NULL, 0, want);
            if (check_at(m + strlen(RV_MARK_ADDED), MARK_HEX, want)) {
                *had = true;
                p = next;
                continue;
            }
        }
        for (m = line; (m = find_in(m, (size_t)(line + n - m), RV_MARK_WAS)); m++) {
            const char *c = m + strlen(RV_MARK_WAS), *orig = c + MARK_HEX + 2;
            char want[MARK_HEX + 1];
            if (orig > line + n || c[MARK_HEX] != ':' || c[MARK_HEX + 1] != ' ')
                continue;
            mark_check(line, (size_t)(m - line), orig, (size_t)(line + n - orig), want);
            if (!check_at(c, MARK_HEX, want))
                continue;
            *had = true;
            if (buf_add(&b, orig, (size_t)(line + n - orig)) < 0 || (nl && buf_add(&b, "\n", 1) < 0))
                goto nomem;
            break;
        }
        if (m) {
            p = next;
            continue;
        }
        if (buf_add(&b, line, next - p) < 0)
            goto nomem;
        p = next;
    }
    *out = b.d;
    *outlen = b.n;
    return 0;
nomem:
    free(b.d);
    return rv_fail(err, ENOMEM, "strip resview entries");
}

int rv_marked_append(const char *text, size_t len, const char *block, bool created, char **out,
                     size_t *outlen, struct rv_error *err)
{
    struct buf b = { 0 };
    bool noeol = len > 0 && text[len - 1] != '\n';
    const char *flags = created ? " [created]" : noeol ? " [noeol]" : "";
    char check[MARK_HEX + 1];

    mark_check(flags, strlen(flags), block, strlen(block), check);
    if (buf_add(&b, text, len) < 0 ||
        (len > 0 && buf_add(&b, noeol ? "\n\n" : "\n", noeol ? 2 : 1) < 0) ||
        buf_add(&b, RV_MARK_BEGIN, strlen(RV_MARK_BEGIN)) < 0 || buf_add(&b, check, MARK_HEX) < 0 ||
        buf_add(&b, flags, strlen(flags)) < 0 ||
        buf_add(&b, RV_MARK_BEGIN_TAIL "\n", strlen(RV_MARK_BEGIN_TAIL) + 1) < 0 ||
        buf_add(&b, block, strlen(block)) < 0 ||
        buf_add(&b, RV_MARK_END, strlen(RV_MARK_END)) < 0 || buf_add(&b, check, MARK_HEX) < 0 ||
        buf_add(&b, "\n", 1) < 0) {
        free(b.d);
        return rv_fail(err, ENOMEM, "add resview entries");
    }
    *out = b.d;
    *outlen = b.n;
    return 0;
}

int rv_strcatf(char **s, struct rv_error *err, const char *fmt, ...)
{
    va_list ap;
    char *add = NULL, *n;
    size_t old = *s ? strlen(*s) : 0;

    va_start(ap, fmt);
    int k = vasprintf(&add, fmt, ap);
    va_end(ap);
    if (k < 0)
        return rv_fail(err, ENOMEM, "format");
    n = realloc(*s, old + (size_t)k + 1);
    if (!n) {
        free(add);
        return rv_fail(err, ENOMEM, "format");
    }
    memcpy(n + old, add, (size_t)k + 1);
    free(add);
    *s = n;
    return 0;
}
