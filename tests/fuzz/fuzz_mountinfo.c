/* fuzz_mountinfo.c - the mountinfo reader a user's record is checked with
 * (rv_mountinfo_line, rv_mountinfo_lookup; inject.c's check_mounts): on any
 * text, a line parses or is refused, a type is terminated and shorter than its
 * buffer; the lookup, with any scratch size, finds a mount only as a whole
 * line of the text says it (the same id, device and type as that line parsed
 * alone), and, when the text fits its scratch, finds every one a line says. */
#include "fuzz.h"
#include "resview/proc.h"

#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    char scratch[4096];
    struct rv_mount_info mi, ref;
    unsigned long long want;
    size_t cap;
    const char *text, *line, *end;
    bool seen = false;

    if (size < 3)
        return 0;
    cap = 1 + (data[0] | (size_t)data[1] << 8) % sizeof(scratch);
    want = data[2];
    text = (const char *)data + 3;
    size -= 3;
    end = text + size;
    /* every line alone */
    for (line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        if (rv_mountinfo_line(line, len, &mi) == 0) {
            FUZZ_CHECK(strlen(mi.type) < sizeof(mi.type), "type not terminated");
            if (mi.id == want && len < cap)
                seen = true;
        }
        line += len + 1;
    }
    /* the lookup over the same text */
    if (fd < 0)
        fd = memfd_create("mountinfo", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, text, size, 0) != (ssize_t)size ||
        lseek(fd, 0, SEEK_SET) < 0)
        return 0;
    if (rv_mountinfo_lookup(fd, want, &mi, scratch, cap) == 0) {
        bool match = false;
        FUZZ_CHECK(mi.id == want, "found %llu for %llu", mi.id, want);
        for (line = text; line < end && !match;) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
            match = rv_mountinfo_line(line, len, &ref) == 0 && ref.id == want && ref.maj == mi.maj &&
                    ref.min == mi.min && strcmp(ref.type, mi.type) == 0;
            line += len + 1;
        }
        FUZZ_CHECK(match, "mount %llu found as no line of the text says", want);
    } else if (seen && cap == sizeof(scratch) && size < cap / 2) {
        /* the whole text fits the scratch: a line with that id is found */
        fuzz_die("mount %llu not found, but a line says it", want);
    }
    return 0;
}
