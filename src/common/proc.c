/* proc.c - /proc/PID/cgroup, /proc/PID/stat and our uid map (proc.h). */
#define _GNU_SOURCE
#include "resview/proc.h"
#include "resview/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool rv_cgroup_next(const char **at, struct rv_cgroup_line *l)
{
    const char *s = *at, *end, *c1, *c2;

    while (s && *s == '\n')
        s++;
    if (!s || !*s) {
        *at = s;
        return false;
    }
    end = strchr(s, '\n');
    memset(l, 0, sizeof(*l));
    l->line = s;
    l->line_len = end ? (size_t)(end - s) : strlen(s);
    *at = end ? end + 1 : s + l->line_len;
    c1 = memchr(s, ':', l->line_len);
    c2 = c1 ? memchr(c1 + 1, ':', (size_t)(s + l->line_len - c1 - 1)) : NULL;
    if (!c2)
        return true;
    l->valid = true;
    l->id = s;
    l->id_len = (size_t)(c1 - s);
    l->ctrls = c1 + 1;
    l->ctrls_len = (size_t)(c2 - c1 - 1);
    l->path = c2 + 1;
    l->path_len = (size_t)(s + l->line_len - c2 - 1);
    return true;
}

bool rv_cgroup_line_is(const struct rv_cgroup_line *l, const char *ctrl)
{
    size_t n;

    if (!l->valid)
        return false;
    if (!ctrl)
        return l->ctrls_len == 0;
    n = strlen(ctrl);
    for (const char *p = l->ctrls, *end = l->ctrls + l->ctrls_len; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (len == n && memcmp(p, ctrl, n) == 0)
            return true;
        p += len + (comma != NULL);
    }
    return false;
}

bool rv_cgroup_find(const char *text, const char *ctrl, struct rv_cgroup_line *l)
{
    while (rv_cgroup_next(&text, l))
        if (rv_cgroup_line_is(l, ctrl))
            return true;
    return false;
}

int rv_parse_stat_start(const char *text, unsigned long long *start)
{
    const char *p = strrchr(text, ')');
    int field = 2;

    if (!p)
        return -1;
    p++;
    /* fields after the command: 3 (state) ... 22 (starttime) */
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        field++;
        if (field == 22) {
            char *end;
            errno = 0;
            *start = strtoull(p, &end, 10);
            if (errno || end == p || (*end != ' ' && *end != '\0' && *end != '\n'))
                return -1;
            return 0;
        }
        while (*p && *p != ' ')
            p++;
    }
    return -1;
}

int rv_pid_start_time(int piddir, unsigned long long *start)
{
    char buf[1024];
    ssize_t r;
    int fd = openat(piddir, "stat", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    return rv_parse_stat_start(buf, start);
}

int rv_id_map(const char *text, unsigned id, bool inward, unsigned *out)
{
    unsigned long long in, outside, count, from, to;
    int n;

    /* lines "INSIDE OUTSIDE COUNT" */
    while (sscanf(text, "%llu %llu %llu%n", &in, &outside, &count, &n) == 3) {
        from = inward ? outside : in;
        to = inward ? in : outside;
        if (id >= from && id - from < count && to + (id - from) < UINT_MAX) {
            *out = (unsigned)(to + (id - from));
            return 0;
        }
        text += n;
    }
    return -1;
}

uid_t rv_host_uid(void)
{
    static bool known;
    static uid_t host = (uid_t)-1;
    char buf[1024];
    unsigned id;
    ssize_t len;
    int fd;

    if (!known) {
        fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
        len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[len > 0 ? len : 0] = '\0';
        if (rv_id_map(buf, geteuid(), false, &id) == 0)
            host = id;
        known = true;
    }
    return host;
}

bool rv_host_root(void)
{
    return rv_host_uid() == 0;
}

int rv_mountinfo_line(const char *line, size_t len, struct rv_mount_info *out)
{
    char num[32];
    const char *end = line + len, *p = line, *sep = NULL, *t;
    unsigned long long id;
    unsigned maj, min;
    size_t n;
    int used;

    /* "ID PARENT MAJ:MIN ROOT TARGET OPTS [OPTIONAL...] - TYPE SOURCE SUPER" */
    for (size_t i = 0; i + 3 <= len; i++)
        if (line[i] == ' ' && line[i + 1] == '-' && line[i + 2] == ' ') {
            sep = line + i;
            break;
        }
    if (!sep)
        return -1;
    n = 0;
    while (p < sep && n < sizeof(num) - 1 && *p != '\n')
        num[n++] = *p++;
    num[n] = '\0';
    if (sscanf(num, "%llu %*u %u:%u%n", &id, &maj, &min, &used) != 3 || num[used] != ' ')
        return -1;
    t = sep + 3;
    for (n = 0; t + n < end && t[n] != ' ' && t[n] != '\n'; n++)
        ;
    if (n == 0)
        return -1;
    out->id = id;
    out->maj = maj;
    out->min = min;
    if (n >= sizeof(out->type))
        n = 0;            /* no allow-list has so long a name */
    memcpy(out->type, t, n);
    out->type[n] = '\0';
    return 0;
}

int rv_mountinfo_lookup(int fd, unsigned long long id, struct rv_mount_info *out, char *buf,
                      size_t size)
{
    size_t have = 0;
    bool skipping = false;   /* inside a line longer than buf */

    for (;;) {
        ssize_t r = read(fd, buf + have, size - have);
        char *line = buf, *nl;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            errno = EIO;
            return -1;
        }
        have += (size_t)r;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            if (!skipping && rv_mountinfo_line(line, (size_t)(nl - line), out) == 0 &&
                out->id == id)
                return 0;
            skipping = false;
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (r == 0) {
            if (have && !skipping && rv_mountinfo_line(buf, have, out) == 0 && out->id == id)
                return 0;
            errno = ENOENT;
            return -1;
        }
        if (have == size) {       /* a line longer than buf: not the one (ids come first) */
            unsigned long long first;
            if (!skipping && sscanf(buf, "%llu ", &first) == 1 && first == id) {
                errno = EIO;
                return -1;
            }
            skipping = true;
            have = 0;
        }
    }
}

int rv_fd_mnt_id(int fdinfo_dir, int fd, unsigned long long *id)
{
    char name[16], buf[512];
    struct rv_statx sx;
    const char *at;
    ssize_t r;
    int f;

    /* the kernel's attributes (5.8: one call, no request to a FUSE daemon),
     * else fdinfo */
    if (rv_statx(fd, "", AT_EMPTY_PATH | RV_AT_STATX_DONT_SYNC, RV_STATX_MNT_ID, &sx) == 0 &&
        (sx.stx_mask & RV_STATX_MNT_ID)) {
        *id = sx.stx_mnt_id;
        return 0;
    }
    snprintf(name, sizeof(name), "%d", fd);
    f = openat(fdinfo_dir, name, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return -1;
    r = read(f, buf, sizeof(buf) - 1);
    close(f);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    at = strstr(buf, "\nmnt_id:");
    if (!at || sscanf(at + 8, "%llu", id) != 1) {
        errno = EIO;
        return -1;
    }
    return 0;
}
