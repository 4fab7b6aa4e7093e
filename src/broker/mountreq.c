/* mountreq.c - the FUSE broker's decisions on copies of mount(2)/umount2(2)
 * arguments (see mountreq.h). No system calls here. */
#define _GNU_SOURCE
#include "resview/mountreq.h"
#include "resview/proc.h"
#include "resview/sys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif
#ifndef MS_LAZYTIME
#define MS_LAZYTIME (1 << 25)
#endif
#ifndef UMOUNT_NOFOLLOW
#define UMOUNT_NOFOLLOW 8
#endif
#define RV_MS_MGC_VAL 0xC0ED0000ull
#define RV_MS_MGC_MSK 0xFFFF0000ull

int rv_mountreq_flags(uint64_t flags, struct rv_mount_flags *out)
{
    const uint64_t ok = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS |
                        MS_DIRSYNC | MS_NOSYMFOLLOW | MS_NOATIME | MS_NODIRATIME | MS_SILENT |
                        MS_RELATIME | MS_STRICTATIME | MS_LAZYTIME;

    memset(out, 0, sizeof(*out));
    /* The old magic number in the high word means nothing (as in the kernel). */
    if ((flags & RV_MS_MGC_MSK) == RV_MS_MGC_VAL)
        flags &= ~RV_MS_MGC_MSK;
    /* MS_BIND, MS_MOVE, MS_REMOUNT, MS_REC, propagation changes, MS_MANDLOCK,
     * MS_POSIXACL and anything unknown. */
    if (flags & ~ok)
        return -EPERM;
    if ((flags & MS_NOATIME) && (flags & MS_STRICTATIME))
        return -EINVAL;
    out->attrs = RV_MOUNT_ATTR_NOSUID | RV_MOUNT_ATTR_NODEV;
    if (flags & MS_RDONLY) {
        out->attrs |= RV_MOUNT_ATTR_RDONLY;
        out->ro = true;
    }
    if (flags & MS_NOEXEC)
        out->attrs |= RV_MOUNT_ATTR_NOEXEC;
    if (flags & MS_NOSYMFOLLOW)
        out->attrs |= RV_MOUNT_ATTR_NOSYMFOLLOW;
    if (flags & MS_NODIRATIME)
        out->attrs |= RV_MOUNT_ATTR_NODIRATIME;
    if (flags & MS_NOATIME)
        out->attrs |= RV_MOUNT_ATTR_NOATIME;
    else if (flags & MS_STRICTATIME)
        out->attrs |= RV_MOUNT_ATTR_STRICTATIME;
    /* else relatime, the default of mount(2) and of fsmount(2) */
    out->sync = flags & MS_SYNCHRONOUS;
    out->dirsync = flags & MS_DIRSYNC;
    out->lazytime = flags & MS_LAZYTIME;
    return 0;
}

static bool subtype_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= RV_FUSE_SUBTYPE_MAX)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '+' || *s == '-'))
            return false;
    return true;
}

int rv_mountreq_fstype(const char *type, char subtype[RV_FUSE_SUBTYPE_MAX])
{
    subtype[0] = '\0';
    if (strcmp(type, "fuse") == 0)
        return 0;
    if (strncmp(type, "fuse.", 5) != 0)
        return -EPERM;
    if (!subtype_ok(type + 5))
        return -EINVAL;
    strcpy(subtype, type + 5);
    return 0;
}

/* Decimal (base 10) or octal (base 8) digits only, fitting in 32 bits. */
static bool parse_u32(const char *s, unsigned base, unsigned *out)
{
    unsigned long long v = 0;

    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (*s < '0' || d >= base)
            return false;
        v = v * base + d;
        if (v > UINT_MAX)
            return false;
    }
    *out = (unsigned)v;
    return true;
}

enum { HAS_FD = 1, HAS_ROOTMODE = 2, HAS_UID = 4, HAS_GID = 8, HAS_SUBTYPE = 16, HAS_MAXREAD = 32,
       HAS_DP = 64, HAS_AO = 128 };

/* One key[=value]; *seen collects what was given (each key once). */
static int option(const char *key, const char *val, const struct rv_mount_caller *c,
                  bool allow_other_ok, struct rv_fuse_opts *o, unsigned *seen)
{
    static const struct { const char *name; unsigned bit; bool value; } known[] = {
        { "fd", HAS_FD, true }, { "rootmode", HAS_ROOTMODE, true },
        { "user_id", HAS_UID, true }, { "group_id", HAS_GID, true },
        { "subtype", HAS_SUBTYPE, true }, { "max_read", HAS_MAXREAD, true },
        { "default_permissions", HAS_DP, false }, { "allow_other", HAS_AO, false },
    };
    unsigned bit = 0, u;

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(key, known[i].name) == 0) {
            if (known[i].value != (val != NULL))
                return -EINVAL;
            bit = known[i].bit;
        }
    if (!bit || (*seen & bit))      /* unknown (blksize, context=, ...) or given twice */
        return -EINVAL;
    *seen |= bit;
    switch (bit) {
    case HAS_FD:
        if (!parse_u32(val, 10, &u) || u > INT_MAX)
            return -EINVAL;
        o->fd = (int)u;
        return 0;
    case HAS_ROOTMODE:
        if (!parse_u32(val, 8, &u) || (u & ~(S_IFMT | 07777)) ||
            ((u & S_IFMT) != S_IFDIR && (u & S_IFMT) != S_IFREG))
            return -EINVAL;
        o->rootmode = u;
        return 0;
    case HAS_UID:
        if (!parse_u32(val, 10, &u))
            return -EINVAL;
        if ((uid_t)u != c->uid && (uid_t)u != c->fsuid)
            return -EPERM;
        o->user_id = (uid_t)u;
        return 0;
    case HAS_GID:
        if (!parse_u32(val, 10, &u))
            return -EINVAL;
        if ((gid_t)u != c->gid && (gid_t)u != c->fsgid)
            return -EPERM;
        o->group_id = (gid_t)u;
        return 0;
    case HAS_SUBTYPE:
        if (!subtype_ok(val))
            return -EINVAL;
        strcpy(o->subtype, val);
        return 0;
    case HAS_MAXREAD:
        if (!parse_u32(val, 10, &o->max_read))
            return -EINVAL;
        o->has_max_read = true;
        return 0;
    case HAS_DP:
        o->default_permissions = true;
        return 0;
    default:   /* HAS_AO: the mount would be reachable by every user of the host */
        if (!allow_other_ok)
            return -EPERM;
        o->allow_other = true;
        return 0;
    }
}

int rv_mountreq_options(const char *data, const struct rv_mount_caller *caller,
                        bool allow_other_ok, struct rv_fuse_opts *out)
{
    char buf[RV_MOUNT_DATA_MAX], *save = NULL, *item;
    unsigned seen = 0;
    int r;

    memset(out, 0, sizeof(*out));
    out->fd = -1;
    if (!data || strlen(data) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, data);
    for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq)
            *eq++ = '\0';
        r = option(item, eq, caller, allow_other_ok, out, &seen);
        if (r < 0)
            return r;
    }
    if ((seen & (HAS_FD | HAS_ROOTMODE | HAS_UID | HAS_GID)) !=
        (HAS_FD | HAS_ROOTMODE | HAS_UID | HAS_GID))
        return -EINVAL;
    return 0;
}

int rv_mountreq_umount_flags(uint64_t flags)
{
    return (flags & ~(uint64_t)(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW)) ||
           ((flags & MNT_EXPIRE) && (flags & (MNT_FORCE | MNT_DETACH))) ? -EINVAL : 0;
}

/* "Uid:\t0\t0\t0\t0" -> real and file-system ids (first and fourth). */
static int id_line(const char *status, const char *key, unsigned *real, unsigned *fs)
{
    const char *p = strstr(status, key);
    unsigned v[4];

    if (!p || (p != status && p[-1] != '\n'))
        return -EINVAL;
    if (sscanf(p + strlen(key), "%u %u %u %u", &v[0], &v[1], &v[2], &v[3]) != 4)
        return -EINVAL;
    *real = v[0];
    *fs = v[3];
    return 0;
}

#define GROUPS_UNREAD "its Groups: line in /proc/PID/status unreadable"

/* "Groups:\t4 24 27 \n": at most RV_MOUNT_GROUPS_MAX of them. NULL, or why
 * they are not all read. */
static const char *groups_line(const char *status, struct rv_mount_caller *out)
{
    const char *p = strstr(status, "\nGroups:");
    unsigned long v;
    char *end;

    out->n_groups = 0;
    if (!p)
        return GROUPS_UNREAD;
    for (p += 8;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0')
            return NULL;
        if (*p < '0' || *p > '9')
            return GROUPS_UNREAD;
        if (out->n_groups == RV_MOUNT_GROUPS_MAX)
            return "more than 64 supplementary groups (the broker takes on at most 64 to check as the caller)";
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno || v > UINT32_MAX - 1 || (*end != ' ' && *end != '\t' && *end != '\n' && *end))
            return GROUPS_UNREAD;
        out->groups[out->n_groups++] = (gid_t)v;
        p = end;
    }
}

int rv_mountreq_caller(const char *status, struct rv_mount_caller *out)
{
    const char *cap = strstr(status, "\nCapEff:\t");
    unsigned a, b, c, d;
    unsigned long long eff;
    int n = 0;

    if (id_line(status, "Uid:", &a, &b) < 0 || id_line(status, "Gid:", &c, &d) < 0)
        return -EINVAL;
    out->uid = a;
    out->fsuid = b;
    out->gid = c;
    out->fsgid = d;
    out->creds_why = groups_line(status, out);
    if (!out->creds_why && !(cap && sscanf(cap + 9, "%16llx%n", &eff, &n) == 1 && n == 16))
        out->creds_why = "its CapEff: line in /proc/PID/status unreadable";
    out->creds_ok = !out->creds_why;
    out->cap_eff = out->creds_ok ? eff : 0;
    return 0;
}

int rv_mountreq_ids_in_ns(const char *uid_map, const char *gid_map, struct rv_mount_caller *ids)
{
    unsigned v[4];

    if (rv_id_map(uid_map, ids->uid, true, &v[0]) < 0 ||
        rv_id_map(uid_map, ids->fsuid, true, &v[1]) < 0 ||
        rv_id_map(gid_map, ids->gid, true, &v[2]) < 0 ||
        rv_id_map(gid_map, ids->fsgid, true, &v[3]) < 0)
        return -EPERM;
    ids->uid = v[0];
    ids->fsuid = v[1];
    ids->gid = v[2];
    ids->fsgid = v[3];
    for (unsigned i = 0; i < ids->n_groups; i++) {
        unsigned g;
        if (rv_id_map(gid_map, ids->groups[i], true, &g) < 0) {
            ids->creds_ok = false;
            ids->creds_why = "a supplementary group not mapped in its user namespace";
        } else
            ids->groups[i] = g;
    }
    return 0;
}

int rv_mountinfo_find(const char *text, int id, char *fstype, size_t fstype_size, unsigned *dev_major,
                      unsigned *dev_minor, bool *shared)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n'), *dash, *p;
        size_t len = end ? (size_t)(end - line) : strlen(line);
        int lid, n = 0;

        if (sscanf(line, "%d %*d %u:%u%n", &lid, dev_major, dev_minor, &n) == 3 && lid == id) {
            /* optional fields run from the 7th field to " - " */
            dash = memmem(line, len, " - ", 3);
            if (!dash)
                return -EINVAL;
            *shared = false;
            for (p = line; p < dash; p++)
                if (*p == ' ' && strncmp(p + 1, "shared:", 7) == 0)
                    *shared = true;
            p = dash + 3;
            n = 0;
            while (p + n < line + len && p[n] != ' ')
                n++;
            if (n == 0 || (size_t)n >= fstype_size)
                return -EINVAL;
            memcpy(fstype, p, (size_t)n);
            fstype[n] = '\0';
            return 0;
        }
        line = end ? end + 1 : NULL;
    }
    return -ENOENT;
}

/* "/a/b": absolute, no "." or ".." component, no "//", no trailing "/" but
 * for "/" itself. */
static bool canonical(const char *p, size_t n)
{
    if (n == 0 || p[0] != '/' || (n > 1 && p[n - 1] == '/'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/' && i + 1 < n &&
            (p[i + 1] == '/' || (p[i + 1] == '.' && (i + 2 == n || p[i + 2] == '/' ||
                                                     (p[i + 2] == '.' && (i + 3 == n || p[i + 3] == '/'))))))
            return false;
    return true;
}

int rv_mountreq_cgroups(const char *text, const char *cgroup_root, bool unified, char out[2][4096])
{
    struct rv_cgroup_line l;
    bool found = false;

    out[0][0] = out[1][0] = '\0';
    while (rv_cgroup_next(&text, &l)) {
        int slot = -1, n;
        const char *dir = "";

        if (unified) {
            /* hierarchy 0: the unified one */
            if (rv_cgroup_line_is(&l, NULL) && l.id_len == 1 && l.id[0] == '0')
                slot = 0;
        } else if (rv_cgroup_line_is(&l, "memory")) {
            slot = 0, dir = "/memory";
        } else if (rv_cgroup_line_is(&l, "pids")) {
            slot = 1, dir = "/pids";
        }
        if (slot < 0)
            continue;
        if (!canonical(l.path, l.path_len))
            return -EINVAL;
        n = snprintf(out[slot], 4096, "%s%s%.*s%scgroup.procs", cgroup_root, dir,
                     (int)l.path_len, l.path, l.path_len == 1 ? "" : "/");
        if (n < 0 || n >= 4096)
            return -EINVAL;
        found = true;
    }
    return found ? 0 : -EINVAL;
}
