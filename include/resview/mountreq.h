/* mountreq.h - what the FUSE broker accepts in a container's mount(2) and
 * umount2(2), decided on copies of the arguments, without system calls (so
 * that unit tests and fuzzers can drive it). Every function returns 0 or a
 * negative errno, the answer the container gets:
 *   -EPERM   the request is valid but not allowed (another file system type,
 *            a bind/move/remount/propagation flag, allow_other without
 *            fuse.allow_other, a user_id that is not the caller's, ...);
 *   -EINVAL  the arguments are invalid, as the kernel would say (an unknown
 *            or malformed option, a missing fd=, ...). */
#ifndef RESVIEW_MOUNTREQ_H
#define RESVIEW_MOUNTREQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RV_MOUNT_STR_MAX 4096     /* fstype, source, target: PATH_MAX with the NUL */
#define RV_MOUNT_DATA_MAX 4096    /* the options page */
#define RV_FUSE_SUBTYPE_MAX 64

/* mount(2) flags the broker accepts, and what it makes of them. */
struct rv_mount_flags {
    unsigned attrs;          /* RV_MOUNT_ATTR_* for fsmount; NOSUID|NODEV always */
    bool ro, sync, dirsync, lazytime;   /* superblock flags, for fsconfig */
};
int rv_mountreq_flags(uint64_t flags, struct rv_mount_flags *out);

/* "fuse" or "fuse.SUBTYPE" (SUBTYPE: 1 to 63 of [A-Za-z0-9_.+-]); subtype
 * gets "" or SUBTYPE. Anything else, fuseblk included: -EPERM. */
int rv_mountreq_fstype(const char *type, char subtype[RV_FUSE_SUBTYPE_MAX]);

/* Who calls: from /proc/TID/status. The supplementary groups and effective
 * capabilities are what a check "as the caller" takes on (fusermount's rule:
 * a user who is not root must be able to write the mount point). */
#define RV_MOUNT_GROUPS_MAX 64
struct rv_mount_caller {
    uid_t uid, fsuid;
    gid_t gid, fsgid;
    gid_t groups[RV_MOUNT_GROUPS_MAX];
    unsigned n_groups;
    bool creds_ok;               /* false: groups or CapEff not read whole (more groups
                                    than we carry, one not mapped, a cut-off status) */
    const char *creds_why;       /* why not creds_ok, one phrase (NULL when it is) */
    uint64_t cap_eff;
};

/* The options string of a FUSE mount, parsed and checked against the caller. */
struct rv_fuse_opts {
    int fd;                      /* fd=N: a descriptor number of the caller */
    unsigned rootmode;           /* octal; S_IFDIR or S_IFREG file type */
    uid_t user_id;
    gid_t group_id;
    bool default_permissions, allow_other;
    bool has_max_read;
    unsigned max_read;
    char subtype[RV_FUSE_SUBTYPE_MAX];   /* subtype=, if given */
};
/* Known options: fd, rootmode, user_id, group_id (all four required, as the
 * kernel requires them), default_permissions, allow_other (only with
 * allow_other_ok), max_read, subtype. user_id/group_id must be the caller's
 * real or file-system ids. */
int rv_mountreq_options(const char *data, const struct rv_mount_caller *caller,
                        bool allow_other_ok, struct rv_fuse_opts *out);

/* umount2(2) flags: MNT_FORCE, MNT_DETACH, MNT_EXPIRE, UMOUNT_NOFOLLOW;
 * anything else -EINVAL (as the kernel). */
int rv_mountreq_umount_flags(uint64_t flags);

/* /proc/PID/status text: the Uid: and Gid: lines (-EINVAL if one is absent
 * or malformed), Groups: and CapEff: (creds_ok false if one is absent or
 * malformed, or more than RV_MOUNT_GROUPS_MAX groups). */
int rv_mountreq_caller(const char *status, struct rv_mount_caller *out);

/* The caller's ids (as the host sees them) as its user namespace sees them,
 * through /proc/PID/uid_map and gid_map read from the host's: a FUSE mount
 * made as that namespace takes user_id and group_id in its terms. -EPERM if
 * a uid or gid is not mapped; an unmapped supplementary group makes
 * creds_ok false. */
int rv_mountreq_ids_in_ns(const char *uid_map, const char *gid_map, struct rv_mount_caller *ids);

/* One line of /proc/PID/mountinfo for mount id `id`: its file system type
 * (into fstype), "major:minor" (into dev) and whether it has shared
 * propagation ("shared:N" among the optional fields). 0 if found, -ENOENT if
 * no line has that id, -EINVAL if the text is malformed where it matters. */
int rv_mountinfo_find(const char *text, int id, char *fstype, size_t fstype_size, unsigned *dev_major,
                      unsigned *dev_minor, bool *shared);

/* The cgroup.procs files a broker worker joins to charge a container: from
 * the text of /proc/PID/cgroup, under cgroup_root ("/sys/fs/cgroup"). On a
 * unified hierarchy (unified: the host has no v1 controllers) out[0] is the
 * one cgroup, out[1] ""; on v1 out[0] is the memory cgroup's and out[1] the
 * pids cgroup's ("" where that controller is not mounted). 0, or -EINVAL
 * when the text names none of them, or a path that is not canonical. */
int rv_mountreq_cgroups(const char *text, const char *cgroup_root, bool unified,
                        char out[2][4096]);

#endif
