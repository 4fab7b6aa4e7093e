/* rv_escape, which rv_log applies to every message (only printable ASCII
 * reaches a log, a terminal or an engine), and runc's log format (--log,
 * --log-format text|json) for hostile messages: quoted as logrus does (text:
 * Go's strconv.Quote when needed; json: Go's encoding/json), so a message can
 * never add a field or a line. */
#define _GNU_SOURCE
#include "resview/log.h"
#include "unit.h"

#include "resview/config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[] = "/tmp/resview-unit-log.XXXXXX";

static off_t size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

/* log.max_mib: the log past it becomes FILE.old, the one before goes; four
 * writers at once never leave a line half written nor the log past the cap
 * by more than their lines. */
static void size_cap(void)
{
    char dir[] = "/tmp/resview-unit-logcap.XXXXXX", old[300], line[1100];
    struct rv_config cfg;
    off_t prev = 0;
    bool grew = true;
    FILE *f;

    if (!mkdtemp(dir))
        abort();
    rv_config_defaults(&cfg);
    ok(cfg.log_max_mib == 64, "cap: 64 MiB by default");
    snprintf(cfg.log_file, sizeof(cfg.log_file), "%s/resview.log", dir);
    snprintf(old, sizeof(old), "%s.old", cfg.log_file);
    cfg.log_max_mib = 1;
    cfg.log_level = RV_INFO;
    rv_log_init("unit", &cfg);
    memset(line, 'x', 1000);
    line[1000] = '\0';
    for (int i = 0; i < 1100; i++) {   /* 1.1 MB: past the cap once */
        rv_log(RV_INFO, "%s", line);
        if (size_of(cfg.log_file) < prev)
            grew = false;
        prev = size_of(cfg.log_file);
    }
    ok(!grew, "cap: the log started again once past 1 MiB");
    ok(size_of(old) > (1 << 20) && size_of(old) < (1 << 20) + 1100, "cap: FILE.old holds the log up to the cap (%lld)",
       (long long)size_of(old));
    ok(size_of(cfg.log_file) > 0 && size_of(cfg.log_file) < (1 << 20), "cap: the log goes on in a new file");

    for (int w = 0; w < 4; w++)
        if (fork() == 0) {
            for (int i = 0; i < 3000; i++)
                rv_log(RV_INFO, "%s", line);
            _exit(0);
        }
    while (wait(NULL) > 0)
        ;
    ok(size_of(cfg.log_file) <= (1 << 20) + 4 * 1100 && size_of(old) <= (1 << 20) + 4 * 1100,
       "cap: four writers at once, neither file past the cap by more than their lines (%lld, %lld)",
       (long long)size_of(cfg.log_file), (long long)size_of(old));
    f = fopen(old, "r");
    bool whole = f != NULL;
    char buf[2048];
    while (f && fgets(buf, sizeof(buf), f))
        if (strlen(buf) < 1000 || buf[strlen(buf) - 1] != '\n' || !strstr(buf, line))
            whole = false;
    if (f)
        fclose(f);
    ok(whole, "cap: every line of FILE.old whole");
    unlink(cfg.log_file);
    unlink(old);
    rmdir(dir);
    rv_log_init("unit", NULL);
}

/* The line written for msg, without the time field. */
static const char *logged(const char *msg, bool json)
{
    static char buf[16384];
    char *p;
    FILE *f;
    size_t n;

    if (truncate(path, 0) < 0)
        abort();
    rv_log_runtime_file(path, json);
    rv_log(RV_ERROR, "%s", msg);
    f = fopen(path, "r");
    n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    if (json && (p = strstr(buf, ",\"time\":\"")) && strlen(p) == 32)
        *p = '\0'; /* ,"time":"2024-01-01T00:00:00Z"}\n */
    else if (!json && strncmp(buf, "time=\"", 6) == 0 && strlen(buf) > 28)
        return buf + 28; /* time="2024-01-01T00:00:00Z" and a space */
    return buf;
}

#define TEXT(msg, want, name) ok_str(logged(msg, false), want, "text: " name)
#define JSON(msg, want, name) ok_str(logged(msg, true), "{\"level\":\"error\",\"msg\":" want, "json: " name)

int main(void)
{
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    if (!freopen("/dev/null", "w", stderr))
        abort();

    /* rv_escape: every byte outside printable ASCII, and the backslash */
    char e[64];
    ok(rv_escape(e, sizeof(e), "plain /x_y-z.txt") == 16, "escape: printable ASCII as is");
    ok_str(e, "plain /x_y-z.txt", "escape: printable ASCII as is (text)");
    rv_escape(e, sizeof(e), "a\\b\nc\x7f\x01");
    ok_str(e, "a\\\\b\\x0ac\\x7f\\x01", "escape: backslash, newline, DEL, controls");
    rv_escape(e, sizeof(e), "\xc2\x9b" "2J\xe2\x80\xae" "x\xe2\x80\xa8\xff");
    ok_str(e, "\\xc2\\x9b2J\\xe2\\x80\\xaex\\xe2\\x80\\xa8\\xff",
           "escape: C1 CSI, RIGHT-TO-LEFT OVERRIDE, LINE SEPARATOR, invalid UTF-8, byte by byte");
    ok(rv_escape(e, 6, "ab\x1b" "cd") == 2, "escape: cut before half an escape");
    ok_str(e, "ab", "escape: cut before half an escape (text)");
    ok(rv_escape(e, 1, "abc") == 0, "escape: room for the NUL only");

    /* runc's format, of what rv_log escaped first */
    TEXT("plain", "level=error msg=plain\n", "a value of safe bytes is not quoted");
    TEXT("/a-b_c.d@e^f+g", "level=error msg=/a-b_c.d@e^f+g\n", "all of logrus's safe bytes");
    TEXT("two words", "level=error msg=\"two words\"\n", "a space quotes");
    TEXT("x\" level=info injected=\"1", "level=error msg=\"x\\\" level=info injected=\\\"1\"\n",
         "a quote cannot end the value and add fields");
    TEXT("a\\\"b", "level=error msg=\"a\\\\\\\\\\\"b\"\n", "backslash before a quote");
    TEXT("l1\nl2\r\t", "level=error msg=\"l1\\\\x0al2\\\\x0d\\\\x09\"\n",
         "a newline cannot start a line of its own");
    TEXT("\x01\x1b[31m\x7f", "level=error msg=\"\\\\x01\\\\x1b[31m\\\\x7f\"\n", "control bytes, terminal escapes");
    TEXT("caf\xc3\xa9\xe2\x80\xae", "level=error msg=\"caf\\\\xc3\\\\xa9\\\\xe2\\\\x80\\\\xae\"\n",
         "UTF-8, a bidi override among it, escaped byte by byte");
    TEXT("", "level=error\n", "an empty message has no msg field");

    JSON("x\",\"level\":\"info", "\"x\\\",\\\"level\\\":\\\"info\"", "a quote cannot add a key");
    JSON("<a&b>", "\"\\u003ca\\u0026b\\u003e\"", "HTML-safe as Go's encoding/json");
    JSON("l1\nl2\x7f", "\"l1\\\\x0al2\\\\x7f\"", "controls");
    JSON("\xe2\x80\xa8 caf\xc3\xa9", "\"\\\\xe2\\\\x80\\\\xa8 caf\\\\xc3\\\\xa9\"", "line separators and UTF-8 escaped");

    size_cap();
    unlink(path);
    return unit_done();
}
