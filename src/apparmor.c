/* apparmor.c - AppArmor state for the FUSE grant, read from securityfs.
 *
 * /sys/module/apparmor/parameters/enabled holds "Y" when AppArmor is active;
 * /sys/kernel/security/apparmor/profiles lists one loaded profile a line as
 * "name (mode)". */
#define _GNU_SOURCE
#include "resview/apparmor.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* Read a pseudo-file (stat size 0) to EOF, at most max bytes. */
static int read_pseudo(const char *path, size_t max, char **out, struct rv_error *err)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    cleanup_free char *buf = NULL;
    size_t have = 0, cap = 0;

    if (fd < 0)
        return rv_fail(err, errno, "open `%s`", path);
    for (;;) {
        ssize_t r;
        if (cap - have < 4096) {
            char *nb;
            if (cap >= max)
                return rv_fail(err, EFBIG, "read `%s` (limit %zu bytes)", path, max);
            cap = cap ? cap * 2 : 16384;
            nb = realloc(buf, cap + 1);
            if (!nb)
                return rv_fail(err, ENOMEM, "read `%s`", path);
            buf = nb;
        }
        r = read(fd, buf + have, cap - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rv_fail(err, errno, "read `%s`", path);
        if (r == 0)
            break;
        have += (size_t)r;
    }
    if (!buf && !(buf = malloc(1)))
        return rv_fail(err, ENOMEM, "read `%s`", path);
    buf[have] = '\0';
    *out = move_ptr(buf);
    return 0;
}

int rv_apparmor_state(const char *enabled_path, const char *profiles_path, const char *name,
                      enum rv_aa_state *state, struct rv_error *err)
{
    cleanup_free char *list = NULL;
    char buf[16];
    size_t nlen = strlen(name);
    const char *p;

    if (!enabled_path)
        enabled_path = RV_AA_ENABLED_PATH;
    if (!profiles_path)
        profiles_path = RV_AA_PROFILES_PATH;
    *state = RV_AA_DISABLED;
    if (rv_read_small(enabled_path, buf, sizeof(buf)) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return rv_fail(err, errno, "read `%s`", enabled_path);
    }
    if (buf[0] != 'Y')
        return 0;
    if (read_pseudo(profiles_path, 4u << 20, &list, err) < 0)
        return rv_wrap(err, "AppArmor is enabled, but its loaded profiles are unknown");
    *state = RV_AA_NOT_LOADED;
    for (p = list; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (nlen && strncmp(p, name, nlen) == 0 && p[nlen] == ' ' && p[nlen + 1] == '(') {
            *state = RV_AA_LOADED;
            break;
        }
    return 0;
}
