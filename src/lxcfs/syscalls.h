/* syscalls.h - kernel calls the C library may not wrap. The hot-path binaries
 * are static musl 1.2.3 (Debian 12), which wraps none of open_tree,
 * move_mount, mount_setattr, statx, openat2, pidfd_*; glibc 2.36 wraps some. One code path
 * for both: syscall(2), with the kernel's constants where libc lacks them. */
#ifndef RESVIEW_SYSCALLS_H
#define RESVIEW_SYSCALLS_H

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef __GLIBC__
#include <linux/mount.h>  /* struct mount_attr, MOUNT_ATTR_*, OPEN_TREE_*, MOVE_MOUNT_* */
#include <linux/stat.h>   /* struct statx, STATX_* (glibc: sys/mount.h, sys/stat.h) */
#endif

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

static inline int rv_open_tree(int dfd, const char *path, unsigned flags)
{
    return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static inline int rv_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
                                unsigned flags)
{
    return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int rv_mount_setattr(int dfd, const char *path, unsigned flags,
                                   struct mount_attr *attr, size_t size)
{
    return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, size);
}

static inline int rv_statx(int dfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
    return (int)syscall(SYS_statx, dfd, path, flags, mask, sx);
}

#endif
