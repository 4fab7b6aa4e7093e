/* fuzz_mountreq - the FUSE broker's decisions (mountreq.c) on fuzzed copies
 * of mount(2)/umount2(2) arguments: the options string (with the first byte
 * choosing fuse.allow_other and the caller), the file-system type, the flags
 * (first 8 bytes), /proc status and mountinfo text. Invariants:
 *   - accepted options hold fd, rootmode, user_id and group_id; the ids are
 *     the caller's; allow_other only when allowed; the root is a directory or
 *     a regular file; a subtype has only [A-Za-z0-9_.+-];
 *   - an accepted type is "fuse" or "fuse.SUBTYPE";
 *   - accepted flags carry no bind/move/remount/rec/propagation bit, and the
 *     mount attributes always have nosuid and nodev;
 *   - every answer is 0, -EPERM or -EINVAL. */
#include "fuzz.h"
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include "resview/mountreq.h"
#include "resview/sys.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    return 0;
}

static bool subtype_chars(const char *s)
{
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-", *s))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct rv_mount_caller callers[2] = {
        { .uid = 0, .fsuid = 0, .gid = 0, .fsgid = 0 },
        { .uid = 1000, .fsuid = 1001, .gid = 100, .fsgid = 101 } };
    char *text, sub[RV_FUSE_SUBTYPE_MAX], fstype[64];
    const struct rv_mount_caller *c;
    struct rv_mount_caller parsed;
    struct rv_mount_flags fl;
    struct rv_fuse_opts o;
    uint64_t flags = 0;
    unsigned maj, min;
    bool ao, shared;
    int r;

    if (size < 1)
        return 0;
    ao = data[0] & 1;
    c = &callers[(data[0] >> 1) & 1];
    text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';

    r = rv_mountreq_options(text, c, ao, &o);
    FUZZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL, "options: answer %d", r);
    if (r == 0) {
        FUZZ_CHECK(o.fd >= 0, "options: fd %d", o.fd);
        FUZZ_CHECK((o.user_id == c->uid || o.user_id == c->fsuid) &&
                   (o.group_id == c->gid || o.group_id == c->fsgid), "options: ids not the caller's");
        FUZZ_CHECK(ao || !o.allow_other, "options: allow_other without fuse.allow_other");
        FUZZ_CHECK(S_ISDIR(o.rootmode) || S_ISREG(o.rootmode), "options: rootmode %o", o.rootmode);
        FUZZ_CHECK(FUZZ_TERMINATED(o.subtype) && subtype_chars(o.subtype), "options: subtype");
    }
    r = rv_mountreq_fstype(text, sub);
    FUZZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL, "fstype: answer %d", r);
    if (r == 0)
        FUZZ_CHECK(strcmp(text, "fuse") == 0 ||
                   (strncmp(text, "fuse.", 5) == 0 && strcmp(text + 5, sub) == 0 && *sub &&
                    subtype_chars(sub)), "fstype: accepted `%s`", text);
    memcpy(&flags, data, size < sizeof(flags) ? size : sizeof(flags));
    r = rv_mountreq_flags(flags, &fl);
    FUZZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL, "flags: answer %d", r);
    if (r == 0) {
        /* the kernel drops the old magic 0xC0ED in the upper half first */
        if ((flags & 0xFFFF0000ull) == 0xC0ED0000ull)
            flags &= ~0xFFFF0000ull;
        FUZZ_CHECK(!(flags & (MS_BIND | MS_MOVE | MS_REMOUNT | MS_REC | MS_SHARED | MS_PRIVATE | MS_SLAVE |
                              MS_UNBINDABLE)), "flags: %#llx accepted", (unsigned long long)flags);
        FUZZ_CHECK((fl.attrs & (RV_MOUNT_ATTR_NOSUID | RV_MOUNT_ATTR_NODEV)) ==
                   (RV_MOUNT_ATTR_NOSUID | RV_MOUNT_ATTR_NODEV), "flags: nosuid,nodev not forced");
    }
    r = rv_mountreq_umount_flags(flags);
    FUZZ_CHECK(r == 0 || r == -EINVAL, "umount flags: answer %d", r);
    if (rv_mountreq_caller(text, &parsed) == 0)
        FUZZ_CHECK(parsed.n_groups <= RV_MOUNT_GROUPS_MAX && (parsed.creds_ok || !parsed.cap_eff),
                   "status: %u groups", parsed.n_groups);
    r = rv_mountinfo_find(text, (int)(data[0] % 64), fstype, sizeof(fstype), &maj, &min, &shared);
    FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL, "mountinfo: answer %d", r);
    if (r == 0)
        FUZZ_CHECK(FUZZ_TERMINATED(fstype) && *fstype && !strchr(fstype, ' '), "mountinfo: type");
    {
        /* the cgroups a broker worker joins: always under the root, never
         * with a ".." or "//" taken from the text */
        static char cg[2][4096];
        r = rv_mountreq_cgroups(text, "/sys/fs/cgroup", data[0] & 2, cg);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "cgroups: answer %d", r);
        for (int i = 0; r == 0 && i < 2; i++)
            FUZZ_CHECK(!cg[i][0] || (strncmp(cg[i], "/sys/fs/cgroup/", 15) == 0 &&
                                     !strstr(cg[i], "/../") && !strstr(cg[i], "//") &&
                                     !strchr(cg[i], '\n') &&
                                     strcmp(cg[i] + strlen(cg[i]) - 13, "/cgroup.procs") == 0),
                       "cgroups: %s", cg[i]);
    }
    free(text);
    return 0;
}
