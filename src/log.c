/* log.c - event log, stderr, and runc-format log file for engines. */
#define _GNU_SOURCE
#include "resview/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct {
    const char *binary;
    char file[PATH_MAX];
    enum rv_level level;
    char id[80];
    const char *runtime_log;
    bool runtime_json;
    bool stderr_fallback;
} L = { "resview", "", RV_ERROR, "-", NULL, false, false };

void rv_log_init(const char *binary, const struct rv_config *cfg)
{
    L.binary = binary;
    if (cfg) {
        snprintf(L.file, sizeof(L.file), "%s", cfg->log_file);
        L.level = cfg->log_level;
    }
}

void rv_log_set_id(const char *id)
{
    /* ids are tenant-visible strings: keep them printable and short */
    size_t i;
    for (i = 0; id[i] && i < sizeof(L.id) - 1; i++)
        L.id[i] = ((unsigned char)id[i] < 0x21 || id[i] == 0x7f) ? '?' : id[i];
    L.id[i] = '\0';
}

void rv_log_runtime_file(const char *path, bool json)
{
    L.runtime_log = path;
    L.runtime_json = json;
}

void rv_log_stderr_fallback(void)
{
    L.stderr_fallback = true;
}

static bool append_line(const char *path, const char *line, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    bool ok;

    if (fd < 0)
        return false;
    /* one write per line: O_APPEND keeps concurrent writers' lines whole */
    ok = write(fd, line, len) == (ssize_t)len;
    close(fd);
    return ok;
}

/* --- runc's log format (logrus, as built into runc) -------------------------- */

/* One rune of UTF-8 as Go decodes it (utf8.DecodeRune): its length, or 0 for
 * a byte that starts no valid sequence (Go: RuneError, width 1). */
static size_t utf8_rune(const unsigned char *s, uint32_t *r)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;

    if (c < 0x80) {
        *r = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, *r = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, *r = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, *r = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
            return 0;
        *r = (*r << 6) | (s[i] & 0x3f);
    }
    return n;
}

/* Whether Go's strconv.IsPrint holds: letters, marks, numbers, punctuation,
 * symbols and the ASCII space. Below are the assigned code points outside
 * those (Unicode's Cc, Cf, Co, Zs, Zl, Zp; surrogates never decode);
 * unassigned ones, which Go escapes too and which change with its Unicode
 * version, are kept as they are. */
static bool go_printable(uint32_t r)
{
    static const uint32_t not_print[][2] = {
        { 0x7f, 0xa0 }, { 0xad, 0xad }, { 0x600, 0x605 }, { 0x61c, 0x61c }, { 0x6dd, 0x6dd },
        { 0x70f, 0x70f }, { 0x890, 0x891 }, { 0x8e2, 0x8e2 }, { 0x1680, 0x1680 }, { 0x180e, 0x180e },
        { 0x2000, 0x200f }, { 0x2028, 0x202f }, { 0x205f, 0x2064 }, { 0x2066, 0x206f },
        { 0x3000, 0x3000 }, { 0xe000, 0xf8ff }, { 0xfeff, 0xfeff }, { 0xfff9, 0xfffb },
        { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd }, { 0x13430, 0x13438 }, { 0x1bca0, 0x1bca3 },
        { 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f }, { 0xf0000, 0xffffd },
        { 0x100000, 0x10fffd },
    };
    if (r < 0x20)
        return false;
    for (size_t i = 0; i < sizeof(not_print) / sizeof(not_print[0]); i++)
        if (r >= not_print[i][0] && r <= not_print[i][1])
            return false;
    return true;
}

struct out {
    char *p;
    size_t n, size;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->n + n < o->size) {
        memcpy(o->p + o->n, s, n);
        o->n += n;
    } else {
        o->n = o->size; /* full: the caller drops the line */
    }
}

/* prefix, then v in that many lowercase hex digits ("\\x", 2: "\\x1b") */
static void put_hex(struct out *o, const char *prefix, uint32_t v, int digits)
{
    char b[16];
    size_t n = strlen(prefix);

    memcpy(b, prefix, n);
    for (int d = digits - 1; d >= 0; d--)
        b[n++] = "0123456789abcdef"[(v >> (4 * d)) & 0xf];
    put(o, b, n);
}

/* A logrus text value: as is when every byte is one of [A-Za-z0-9-._/@^+],
 * else Go's strconv.Quote (what logrus's text formatter does). */
static void text_value(struct out *o, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/@^+") == strlen(s)) {
        put(o, s, strlen(s));
        return;
    }
    put(o, "\"", 1);
    for (size_t i = 0; u[i];) {
        uint32_t r;
        size_t w = utf8_rune(u + i, &r);
        const char *esc = NULL;
        if (w == 0) {
            put_hex(o, "\\x", u[i++], 2);
            continue;
        }
        switch (r) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        }
        if (esc)
            put(o, esc, strlen(esc));
        else if (go_printable(r))
            put(o, s + i, w);
        else if (r < 0x20 || r == 0x7f)
            put_hex(o, "\\x", r, 2);
        else
            put_hex(o, r < 0x10000 ? "\\u" : "\\U", r, r < 0x10000 ? 4 : 8);
        i += w;
    }
    put(o, "\"", 1);
}

/* A JSON string as Go's encoding/json writes it for logrus's JSON formatter
 * (HTML-safe: <, >, & escaped; U+2028, U+2029 escaped; invalid UTF-8 becomes
 * U+FFFD), quotes included. */
static void json_value(struct out *o, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    put(o, "\"", 1);
    for (size_t i = 0; u[i];) {
        uint32_t r;
        size_t w = utf8_rune(u + i, &r);
        if (w == 0) {
            put(o, "\\ufffd", 6);
            i++;
            continue;
        }
        if (r == '"' || r == '\\')
            put(o, r == '"' ? "\\\"" : "\\\\", 2);
        else if (r == '\n' || r == '\r' || r == '\t')
            put(o, r == '\n' ? "\\n" : r == '\r' ? "\\r" : "\\t", 2);
        else if (r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029)
            put_hex(o, "\\u", r, 4);
        else
            put(o, s + i, w);
        i += w;
    }
    put(o, "\"", 1);
}

static void write_runtime_log(enum rv_level level, const char *msg)
{
    char tbuf[40], line[RV_ERRMSG_MAX * 6 + 256];
    struct out o = { line, 0, sizeof(line) };
    const char *lvl = level == RV_WARN ? "warning" : rv_level_name(level);
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (L.runtime_json) {
        /* logrus's JSON formatter: keys sorted */
        put(&o, "{\"level\":", 9);
        json_value(&o, lvl);
        put(&o, ",\"msg\":", 7);
        json_value(&o, msg);
        put(&o, ",\"time\":", 8);
        json_value(&o, tbuf);
        put(&o, "}\n", 2);
    } else {
        /* logrus's text formatter: time, level, then msg unless empty */
        put(&o, "time=", 5);
        text_value(&o, tbuf);
        put(&o, " level=", 7);
        text_value(&o, lvl);
        if (*msg) {
            put(&o, " msg=", 5);
            text_value(&o, msg);
        }
        put(&o, "\n", 1);
    }
    if (o.n < o.size)
        append_line(L.runtime_log, line, o.n);
}

void rv_log(enum rv_level level, const char *fmt, ...)
{
    char msg[RV_ERRMSG_MAX], line[RV_ERRMSG_MAX + 256], tbuf[40];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* runc's log escapes the message; our own lines stay one line each */
    if (level == RV_ERROR && L.runtime_log)
        write_runtime_log(level, msg);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (level == RV_ERROR)
        fprintf(stderr, "resview-%s: %s\n", L.binary, msg);
    if (level > L.level || !L.file[0])
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "%s.%03ldZ %s resview-%s[%d] id=%s: %s\n", tbuf,
                 ts.tv_nsec / 1000000, rv_level_name(level), L.binary, (int)getpid(), L.id, msg);
    if (n > 0 && !append_line(L.file, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) &&
        L.stderr_fallback && level == RV_WARN)
        fprintf(stderr, "resview-%s: warning: %s\n", L.binary, msg);
}

void rv_log_config_warnings(const struct rv_config *cfg)
{
    for (int i = 0; i < cfg->n_warnings; i++)
        rv_log(RV_WARN, "configuration %s: %s", cfg->path[0] ? cfg->path : "(defaults)",
               cfg->warnings[i]);
}
