/* fuzz_escape.c - rv_escape, which every log line goes through: whatever the
 * input, the output is printable ASCII only, never longer than its buffer,
 * cut only between whole escapes, and decodes back to the input's prefix. */
#include "fuzz.h"
#include "resview/log.h"

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char src[4096], out[4 * sizeof(src) + 1], back[sizeof(src)];
    size_t cap, n, m = 0;

    if (size < 2)
        return 0;
    cap = 1 + (data[0] | (size_t)data[1] << 8) % sizeof(out);   /* every buffer size */
    size -= 2;
    if (size >= sizeof(src))
        size = sizeof(src) - 1;
    memcpy(src, data + 2, size);
    src[size] = '\0';
    n = rv_escape(out, cap, src);
    FUZZ_CHECK(n < cap && out[n] == '\0' && strlen(out) == n, "length %zu, buffer %zu", n, cap);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        FUZZ_CHECK(c >= 0x20 && c <= 0x7e, "byte 0x%02x at %zu", c, i);
        if (c != '\\') {
            back[m++] = (char)c;
            continue;
        }
        FUZZ_CHECK(i + 1 < n, "a backslash ends the output");
        if (out[i + 1] == '\\') {
            back[m++] = '\\';
            i++;
            continue;
        }
        FUZZ_CHECK(i + 3 < n && out[i + 1] == 'x' && hex(out[i + 2]) >= 0 && hex(out[i + 3]) >= 0,
                   "half an escape at %zu", i);
        back[m++] = (char)(hex(out[i + 2]) << 4 | hex(out[i + 3]));
        FUZZ_CHECK((unsigned char)back[m - 1] < 0x20 || (unsigned char)back[m - 1] > 0x7e,
                   "printable byte 0x%02x escaped", (unsigned char)back[m - 1]);
        i += 3;
    }
    FUZZ_CHECK(m <= strlen(src) && memcmp(back, src, m) == 0, "does not decode to the input");
    /* cut only when the next escape did not fit */
    if (m < strlen(src)) {
        unsigned char c = (unsigned char)src[m];
        size_t w = c == '\\' ? 2 : c >= 0x20 && c <= 0x7e ? 1 : 4;
        FUZZ_CHECK(n + w >= cap, "cut at %zu with room for the next byte", n);
    }
    return 0;
}
