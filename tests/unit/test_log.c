/* runc's log format (--log, --log-format text|json) for hostile messages:
 * escaped as logrus does (text: Go's strconv.Quote when needed; json: Go's
 * encoding/json), so a message can never add a field or a line. */
#define _GNU_SOURCE
#include "resview/log.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

static char path[] = "/tmp/resview-unit-log.XXXXXX";

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

    TEXT("plain", "level=error msg=plain\n", "a value of safe bytes is not quoted");
    TEXT("/a-b_c.d@e^f+g", "level=error msg=/a-b_c.d@e^f+g\n", "all of logrus's safe bytes");
    TEXT("two words", "level=error msg=\"two words\"\n", "a space quotes");
    TEXT("x\" level=info injected=\"1", "level=error msg=\"x\\\" level=info injected=\\\"1\"\n",
         "a quote cannot end the value and add fields");
    TEXT("a\\\"b", "level=error msg=\"a\\\\\\\"b\"\n", "backslash before a quote");
    TEXT("l1\nl2\r\tx\v\a\b\f", "level=error msg=\"l1\\nl2\\r\\tx\\v\\a\\b\\f\"\n",
         "a newline cannot start a line of its own");
    TEXT("\x01\x1b[31m\x7f", "level=error msg=\"\\x01\\x1b[31m\\x7f\"\n", "control bytes, terminal escapes");
    TEXT("caf\xc3\xa9 \xf0\x9f\x98\x80", "level=error msg=\"caf\xc3\xa9 \xf0\x9f\x98\x80\"\n",
         "printable UTF-8 kept");
    TEXT("\xc2\x85\xc2\xa0\xc2\xad\xe2\x80\xae\xe2\x80\xa8\xef\xbb\xbf\xf3\xa0\x80\x81",
         "level=error msg=\"\\u0085\\u00a0\\u00ad\\u202e\\u2028\\ufeff\\U000e0001\"\n",
         "C1 controls, spaces, bidi overrides, format characters");
    TEXT("\xff\xc0\xaf\xed\xa0\x80\xe2\x82", "level=error msg=\"\\xff\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x82\"\n",
         "invalid UTF-8 (overlong, surrogate, truncated) byte by byte");
    TEXT("", "level=error\n", "an empty message has no msg field");

    JSON("x\",\"level\":\"info", "\"x\\\",\\\"level\\\":\\\"info\"", "a quote cannot add a key");
    JSON("<a&b>", "\"\\u003ca\\u0026b\\u003e\"", "HTML-safe as Go's encoding/json");
    JSON("l1\nl2\r\t\b\f\x01\x7f", "\"l1\\nl2\\r\\t\\u0008\\u000c\\u0001\x7f\"", "controls");
    JSON("\xe2\x80\xa8\xe2\x80\xa9 caf\xc3\xa9", "\"\\u2028\\u2029 caf\xc3\xa9\"", "line separators escaped, UTF-8 kept");
    JSON("\xff\xc0\xaf", "\"\\ufffd\\ufffd\\ufffd\"", "invalid UTF-8 becomes U+FFFD (the line is not lost)");

    unlink(path);
    return unit_done();
}
