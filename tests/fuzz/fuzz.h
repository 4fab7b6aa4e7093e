/* fuzz.h - shared helpers of the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 * A broken invariant aborts with a message, which libFuzzer reports as a crash
 * and saves the input. */
#ifndef RESVIEW_FUZZ_H
#define RESVIEW_FUZZ_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

__attribute__((format(printf, 1, 2), noreturn)) static inline void fuzz_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define FUZZ_CHECK(cond, ...) do { if (!(cond)) fuzz_die(__VA_ARGS__); } while (0)

/* Whether a fixed-size char array holds a NUL (strings never run off). */
#define FUZZ_TERMINATED(arr) (memchr((arr), '\0', sizeof(arr)) != NULL)

/* A strict RFC 8259 validator (grammar only: no number range limits, unlike
 * jansson, since resview keeps numbers as their exact text). Returns whether
 * s[0..n) is one JSON value with optional surrounding whitespace, UTF-8 valid. */
struct fuzz_json_in { const unsigned char *p, *e; int depth; };

static inline void fj_ws(struct fuzz_json_in *in)
{
    while (in->p < in->e && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r'))
        in->p++;
}

static inline int fj_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline int fj_string(struct fuzz_json_in *in)
{
    if (in->p >= in->e || *in->p != '"')
        return 0;
    for (in->p++; in->p < in->e;) {
        unsigned char c = *in->p;
        if (c == '"') { in->p++; return 1; }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (in->e - in->p < 2) return 0;
            c = in->p[1];
            if (c == 'u') {
                if (in->e - in->p < 6 || !fj_hex(in->p[2]) || !fj_hex(in->p[3]) ||
                    !fj_hex(in->p[4]) || !fj_hex(in->p[5]))
                    return 0;
                in->p += 6;
            } else if (strchr("\"\\/bfnrt", c) && c) {
                in->p += 2;
            } else {
                return 0;
            }
            continue;
        }
        if (c < 0x80) { in->p++; continue; }
        /* UTF-8 sequence: lead byte, continuation bytes, no overlongs/surrogates */
        int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c <= 0xdf ? 1 : -1;
        if (n < 0 || (c >= 0xe0 && c > 0xf4) || in->e - in->p <= n) return 0;
        for (int k = 1; k <= n; k++)
            if ((in->p[k] & 0xc0) != 0x80) return 0;
        if ((c == 0xe0 && in->p[1] < 0xa0) || (c == 0xed && in->p[1] > 0x9f) ||
            (c == 0xf0 && in->p[1] < 0x90) || (c == 0xf4 && in->p[1] > 0x8f))
            return 0;
        in->p += n + 1;
    }
    return 0;
}

static inline int fj_digits(struct fuzz_json_in *in)
{
    const unsigned char *s = in->p;
    while (in->p < in->e && *in->p >= '0' && *in->p <= '9')
        in->p++;
    return in->p > s;
}

static inline int fj_value(struct fuzz_json_in *in)
{
    static const char *const words[] = { "true", "false", "null" };

    fj_ws(in);
    if (in->p >= in->e || ++in->depth > 2048)
        return 0;
    unsigned char c = *in->p;
    int ok = 1;
    if (c == '{' || c == '[') {
        unsigned char close = c == '{' ? '}' : ']';
        in->p++;
        fj_ws(in);
        if (in->p < in->e && *in->p == close) {
            in->p++;
        } else {
            for (;;) {
                if (c == '{') {
                    fj_ws(in);
                    if (!fj_string(in)) return 0;
                    fj_ws(in);
                    if (in->p >= in->e || *in->p++ != ':') return 0;
                }
                if (!fj_value(in)) return 0;
                fj_ws(in);
                if (in->p >= in->e) return 0;
                if (*in->p == ',') { in->p++; continue; }
                if (*in->p++ != close) return 0;
                break;
            }
        }
    } else if (c == '"') {
        ok = fj_string(in);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (*in->p == '-') in->p++;
        if (in->p < in->e && *in->p == '0') in->p++;
        else if (!fj_digits(in)) return 0;
        if (in->p < in->e && *in->p == '.') { in->p++; if (!fj_digits(in)) return 0; }
        if (in->p < in->e && (*in->p == 'e' || *in->p == 'E')) {
            in->p++;
            if (in->p < in->e && (*in->p == '+' || *in->p == '-')) in->p++;
            if (!fj_digits(in)) return 0;
        }
    } else {
        ok = 0;
        for (int w = 0; w < 3; w++) {
            size_t l = strlen(words[w]);
            if ((size_t)(in->e - in->p) >= l && memcmp(in->p, words[w], l) == 0) {
                in->p += l;
                ok = 1;
                break;
            }
        }
    }
    in->depth--;
    return ok;
}

static inline int fuzz_valid_json(const char *s, size_t n)
{
    struct fuzz_json_in in = { (const unsigned char *)s, (const unsigned char *)s + n, 0 };

    if (!fj_value(&in))
        return 0;
    fj_ws(&in);
    return in.p == in.e;
}

#endif
