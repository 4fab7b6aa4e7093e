/* log.c - event log, stderr, and runc-format log file for engines. */
#define _GNU_SOURCE
#include "resview/log.h"
#include "resview/json.h"

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

static void write_runtime_log(enum rv_level level, const char *msg)
{
    char tbuf[40], line[RV_ERRMSG_MAX + 256];
    struct timespec ts;
    struct tm tm;
    int n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (L.runtime_json) {
        cleanup_json json_t *o = json_pack("{s:s,s:s,s:s}", "level", rv_level_name(level),
                                           "msg", msg, "time", tbuf);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!s)
            return;
        n = snprintf(line, sizeof(line), "%s\n", s);
        free(s);
    } else {
        n = snprintf(line, sizeof(line), "time=\"%s\" level=%s msg=\"%s\"\n", tbuf,
                     rv_level_name(level), msg);
    }
    if (n > 0)
        append_line(L.runtime_log, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
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
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (level == RV_ERROR) {
        fprintf(stderr, "resview-%s: %s\n", L.binary, msg);
        if (L.runtime_log)
            write_runtime_log(level, msg);
    }
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
