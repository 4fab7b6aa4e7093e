/* log.c - event log, stderr, and runc-format log file for engines. */
#define _GNU_SOURCE
#include "resview/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static struct {
    const char *binary;
    char file[PATH_MAX];
    char own[PATH_MAX];         /* not root on the host: state_dir/resview.log (config.h) */
    enum rv_level level;
    off_t max_bytes;            /* log.max_mib */
    char id[80];
    const char *runtime_log;
    bool runtime_json;
    bool stderr_fallback;
} L = { "resview", "", "", RV_ERROR, (off_t)64 << 20, "-", NULL, false, false };

void rv_log_init(const char *binary, const struct rv_config *cfg)
{
    L.binary = binary;
    if (cfg) {
        snprintf(L.file, sizeof(L.file), "%s", cfg->log_file);
        L.level = cfg->log_level;
        L.max_bytes = (off_t)cfg->log_max_mib << 20;
        L.own[0] = '\0';
        if (strcmp(cfg->state_dir, cfg->host_state_dir) != 0 &&
            rv_snprintf(L.own, sizeof(L.own), "%s/resview.log", cfg->state_dir) < 0)
            L.own[0] = '\0';
    }
}

void rv_log_set_id(const char *id)
{
    /* ids are tenant-visible strings: printable, short, and without spaces */
    rv_escape(L.id, sizeof(L.id), id);
    for (char *p = L.id; *p; p++)
        if (*p == ' ')
            *p = '?';
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

/* A log past log.max_mib becomes PATH.old (the one before it goes), so the
 * log never holds more than twice that whatever rotates it or not: the
 * backstop under logrotate (hooks/logrotate/resview), and the whole of it for
 * users' own logs and nodes without logrotate. Every line opens the file, so
 * a rename by either needs no signal and nothing keeps an old file open. Of
 * writers that see the same full file, the first renames it; the others find
 * PATH names another file by then and leave it. */
static void cap_size(int fd, const char *path)
{
    struct stat fst, pst;
    char old[PATH_MAX];

    if (fstat(fd, &fst) < 0 || fst.st_size <= L.max_bytes || !S_ISREG(fst.st_mode) ||
        rv_snprintf(old, sizeof(old), "%s.old", path) < 0)
        return;
    if (stat(path, &pst) == 0 && pst.st_dev == fst.st_dev && pst.st_ino == fst.st_ino)
        (void)rename(path, old);
}

static bool append_line(const char *path, const char *line, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    bool ok;

    if (fd < 0)
        return false;
    /* one write per line: O_APPEND keeps concurrent writers' lines whole */
    ok = write(fd, line, len) == (ssize_t)len;
    if (ok)
        cap_size(fd, path);
    close(fd);
    return ok;
}

/* 0: log.file took the line; 1: it refused and our own log (not root on the
 * host: log.file is root's) in our state_dir took it, made if need be; -1:
 * neither */
static int append_log(const char *line, size_t len)
{
    char dir[PATH_MAX];

    if (append_line(L.file, line, len))
        return 0;
    if (!L.own[0])
        return -1;
    if (append_line(L.own, line, len))
        return 1;
    snprintf(dir, sizeof(dir), "%s", L.own);
    *strrchr(dir, '/') = '\0';
    return mkdir(dir, 0700) == 0 && append_line(L.own, line, len) ? 1 : -1;
}

/* --- runc's log format (logrus, as built into runc) -------------------------- */

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

/* A logrus text value of an escaped message (printable ASCII only): as is
 * when every byte is one of [A-Za-z0-9-._/@^+], else quoted as Go's
 * strconv.Quote quotes printable ASCII (what logrus's text formatter does). */
static void text_value(struct out *o, const char *s)
{
    if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/@^+") == strlen(s)) {
        put(o, s, strlen(s));
        return;
    }
    put(o, "\"", 1);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            put(o, *s == '"' ? "\\\"" : "\\\\", 2);
        else
            put(o, s, 1);
    put(o, "\"", 1);
}

/* A JSON string of an escaped message as Go's encoding/json writes it for
 * logrus's JSON formatter (HTML-safe: <, >, & escaped), quotes included. */
static void json_value(struct out *o, const char *s)
{
    put(o, "\"", 1);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            put(o, *s == '"' ? "\\\"" : "\\\\", 2);
        else if (*s == '<' || *s == '>' || *s == '&')
            put(o, *s == '<' ? "\\u003c" : *s == '>' ? "\\u003e" : "\\u0026", 6);
        else
            put(o, s, 1);
    put(o, "\"", 1);
}

static void write_runtime_log(enum rv_level level, const char *msg)
{
    char tbuf[40], line[RV_LOG_LINE_MAX * 2 + 256];
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

size_t rv_escape(char *dst, size_t size, const char *src)
{
    size_t n = 0;

    if (size == 0)
        return 0;
    for (; *src; src++) {
        unsigned char c = (unsigned char)*src;
        size_t w = c == '\\' ? 2 : c >= 0x20 && c <= 0x7e ? 1 : 4;
        if (n + w >= size)
            break;   /* never half an escape */
        if (w == 1) {
            dst[n] = (char)c;
        } else if (w == 2) {
            dst[n] = dst[n + 1] = '\\';
        } else {
            dst[n] = '\\';
            dst[n + 1] = 'x';
            dst[n + 2] = "0123456789abcdef"[c >> 4];
            dst[n + 3] = "0123456789abcdef"[c & 0xf];
        }
        n += w;
    }
    dst[n] = '\0';
    return n;
}

void rv_print_line(FILE *f, const char *fmt, ...)
{
    char raw[RV_ERRMSG_MAX * 2], line[RV_ERRMSG_MAX * 8];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    rv_escape(line, sizeof(line), raw);
    fprintf(f, "%s\n", line);
}

void rv_log(enum rv_level level, const char *fmt, ...)
{
    char raw[RV_ERRMSG_MAX], msg[RV_LOG_LINE_MAX], line[RV_LOG_LINE_MAX + 256], tbuf[40];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n, r;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* whatever a tenant put in it, a line shows only printable ASCII */
    rv_escape(msg, sizeof(msg), raw);
    if (level == RV_ERROR && L.runtime_log)
        write_runtime_log(level, msg);
    if (level == RV_ERROR)
        fprintf(stderr, "resview-%s: %s\n", L.binary, msg);
    if (level > L.level || !L.file[0])
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "%s.%03ldZ %s resview-%s[%d] id=%s: %s\n", tbuf,
                 ts.tv_nsec / 1000000, rv_level_name(level), L.binary, (int)getpid(), L.id, msg);
    if (n <= 0)
        return;
    r = append_log(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
    /* a warning no log took, of a process that is not root on the host, or
     * one log.file refused (rv_log_stderr_fallback) */
    if (level == RV_WARN && ((r < 0 && L.own[0]) || (r != 0 && L.stderr_fallback)))
        fprintf(stderr, "resview-%s: warning: %s\n", L.binary, msg);
}

void rv_log_config_warnings(const struct rv_config *cfg)
{
    for (int i = 0; i < cfg->n_warnings; i++)
        rv_log(RV_WARN, "configuration %s: %s", cfg->path[0] ? cfg->path : "(defaults)",
               cfg->warnings[i]);
}
