/* sys.h - raw syscall(2) wrappers and constants for the system calls the
 * FUSE broker needs and that musl 1.2.3 (the static hot-path build) lacks:
 * pidfd_open, pidfd_getfd, the new mount API, openat2, close_range, statx
 * and the seccomp user-notification ioctls. Names carry an rv_/RV_ prefix so that they
 * never clash with a libc's or the kernel headers' own. Syscall numbers of
 * these calls are the same on every architecture (they were added after the
 * numbering was unified in Linux 5.1), except alpha, which resview does not
 * support; statx's (4.11) comes from <sys/syscall.h>. */
#ifndef RESVIEW_SYS_H
#define RESVIEW_SYS_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define RV_NR_pidfd_send_signal 424
#define RV_NR_open_tree 428
#define RV_NR_move_mount 429
#define RV_NR_fsopen 430
#define RV_NR_fsconfig 431
#define RV_NR_fsmount 432
#define RV_NR_pidfd_open 434
#define RV_NR_close_range 436
#define RV_NR_openat2 437
#define RV_NR_pidfd_getfd 438
#define RV_NR_faccessat2 439

/* pidfd_open(2): a pidfd for a thread rather than a process (Linux 6.9). */
#define RV_PIDFD_THREAD O_EXCL

/* fsopen/fsconfig/fsmount/move_mount (Linux 5.2). */
#define RV_FSOPEN_CLOEXEC 0x1u
#define RV_FSCONFIG_SET_FLAG 0u
#define RV_FSCONFIG_SET_STRING 1u
#define RV_FSCONFIG_CMD_CREATE 6u
#define RV_FSMOUNT_CLOEXEC 0x1u
#define RV_MOUNT_ATTR_RDONLY 0x1u
#define RV_MOUNT_ATTR_NOSUID 0x2u
#define RV_MOUNT_ATTR_NODEV 0x4u
#define RV_MOUNT_ATTR_NOEXEC 0x8u
#define RV_MOUNT_ATTR_NOATIME 0x10u
#define RV_MOUNT_ATTR_STRICTATIME 0x20u
#define RV_MOUNT_ATTR_NODIRATIME 0x80u
#define RV_MOUNT_ATTR_NOSYMFOLLOW 0x200000u
#define RV_MOVE_MOUNT_F_EMPTY_PATH 0x4u
#define RV_MOVE_MOUNT_T_EMPTY_PATH 0x40u

/* openat2(2) (Linux 5.6). */
struct rv_open_how {
    uint64_t flags, mode, resolve;
};
#define RV_RESOLVE_NO_XDEV 0x01u
#define RV_RESOLVE_NO_MAGICLINKS 0x02u
#define RV_RESOLVE_NO_SYMLINKS 0x04u
#define RV_RESOLVE_BENEATH 0x08u
#define RV_RESOLVE_IN_ROOT 0x10u

/* statx(2) (Linux 4.11; musl 1.2.3 has no wrapper): the kernel's layout. */
struct rv_statx_timestamp {
    int64_t tv_sec;
    uint32_t tv_nsec;
    int32_t reserved;
};
struct rv_statx {
    uint32_t stx_mask, stx_blksize;
    uint64_t stx_attributes;
    uint32_t stx_nlink, stx_uid, stx_gid;
    uint16_t stx_mode, spare0;
    uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
    struct rv_statx_timestamp stx_atime, stx_btime, stx_ctime, stx_mtime;
    uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
    uint64_t stx_mnt_id;
    uint64_t spare[13];
};
#define RV_STATX_TYPE 0x1u
#define RV_STATX_INO 0x100u
#define RV_STATX_MNT_ID 0x1000u             /* Linux 5.8 */
#define RV_STATX_ATTR_MOUNT_ROOT 0x2000u    /* the file is the root of a mount (5.8) */
#define RV_AT_STATX_DONT_SYNC 0x4000

/* seccomp user notification (Linux 5.0; the layout is the kernel ABI). */
struct rv_seccomp_data {
    int32_t nr;
    uint32_t arch;
    uint64_t instruction_pointer;
    uint64_t args[6];
};
struct rv_seccomp_notif {
    uint64_t id;
    uint32_t pid;
    uint32_t flags;
    struct rv_seccomp_data data;
};
struct rv_seccomp_notif_resp {
    uint64_t id;
    int64_t val;
    int32_t error;
    uint32_t flags;
};
#define RV_SECCOMP_IOCTL_NOTIF_RECV _IOWR('!', 0, struct rv_seccomp_notif)
#define RV_SECCOMP_IOCTL_NOTIF_SEND _IOWR('!', 1, struct rv_seccomp_notif_resp)
#define RV_SECCOMP_IOCTL_NOTIF_ID_VALID _IOW('!', 2, uint64_t)
#define RV_SECCOMP_GET_NOTIF_SIZES 3u

static inline int rv_pidfd_open(pid_t pid, unsigned flags)
{
    return (int)syscall(RV_NR_pidfd_open, pid, flags);
}
static inline int rv_pidfd_send_signal(int pidfd, int sig)
{
    return (int)syscall(RV_NR_pidfd_send_signal, pidfd, sig, NULL, 0);
}
static inline int rv_pidfd_getfd(int pidfd, int fd, unsigned flags)
{
    return (int)syscall(RV_NR_pidfd_getfd, pidfd, fd, flags);
}
static inline int rv_fsopen(const char *fsname, unsigned flags)
{
    return (int)syscall(RV_NR_fsopen, fsname, flags);
}
static inline int rv_fsconfig(int fd, unsigned cmd, const char *key, const char *value, int aux)
{
    return (int)syscall(RV_NR_fsconfig, fd, cmd, key, value, aux);
}
static inline int rv_fsmount(int fd, unsigned flags, unsigned attrs)
{
    return (int)syscall(RV_NR_fsmount, fd, flags, attrs);
}
static inline int rv_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
                                unsigned flags)
{
    return (int)syscall(RV_NR_move_mount, from_dfd, from, to_dfd, to, flags);
}
static inline int rv_openat2(int dirfd, const char *path, struct rv_open_how *how)
{
    return (int)syscall(RV_NR_openat2, dirfd, path, how, sizeof(*how));
}
static inline int rv_statx(int dirfd, const char *path, int flags, unsigned mask,
                           struct rv_statx *st)
{
    return (int)syscall(SYS_statx, dirfd, path, flags, mask, st);
}
static inline int rv_close_range(unsigned first, unsigned last, unsigned flags)
{
    return (int)syscall(RV_NR_close_range, first, last, flags);
}

#endif
