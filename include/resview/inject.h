/* inject.h - put LXCFS files over targets inside a running container's mount
 * namespace, and take stale ones off. Shared by the hook and `resview repair`.
 *
 * For each view: open_tree(OPEN_TREE_CLONE) of the LXCFS file in our own
 * namespace, mount_setattr read-only/nosuid/nodev/noexec, setns() into the
 * container's mount namespace, resolve the target inside the container's root
 * with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS) (a
 * symlink anywhere on the way, a directory or a missing target is skipped),
 * detach stale LXCFS mounts found there (MNT_DETACH), and move_mount the clone
 * onto it. Kernels without open_tree: a plain bind from the host path inside
 * the container's namespace (works before pivot_root, where host paths are
 * still visible). Nothing runs inside the container; all of it happens in a
 * child of ours with a deadline (bounded.h), so the caller's namespace is
 * never changed and a target on a FUSE mount that never answers cannot hang
 * the caller. */
#ifndef RESVIEW_INJECT_H
#define RESVIEW_INJECT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "resview/lxcfs.h"
#include "resview/viewhold.h"

#define RV_VIEWS_MAX 32
#define RV_VIEW_PATH 256
#define RV_KEEP_DEVS_MAX 8

enum rv_view_state {
    RV_VIEW_TODO = 0,
    RV_VIEW_MOUNTED,     /* mounted now */
    RV_VIEW_PRESENT,     /* a live view was already there */
    RV_VIEW_SKIPPED,     /* target missing, a symlink, not a regular file, ... */
    RV_VIEW_FAILED,
};

struct rv_view {
    char src[RV_VIEW_PATH];      /* relative to lxcfs.root: "proc/meminfo" */
    char dst[RV_VIEW_PATH];      /* relative to the container's root */
    enum rv_view_state state;    /* out */
    unsigned detached;           /* out: stale mounts taken off this target */
    char why[160];               /* out: for SKIPPED and FAILED */
};

struct rv_inject {
    /* in */
    pid_t pid;
    unsigned long long start_time;   /* expected; 0 = do not check (filled in) */
    char rootfs[PATH_MAX];           /* host path of the rootfs; "" = the process's root
                                        (which must then be root_dev/root_ino if set) */
    dev_t root_dev;                  /* its device and inode as first seen (0: unknown), */
    ino_t root_ino;                  /* to recognise it when the host path is gone */
    char lxcfs_root[PATH_MAX];
    dev_t live_dev;
    char holder[PATH_MAX];           /* views.sock of `resview watch`, to clone the LXCFS
                                        files from descriptors it holds (viewhold.h);
                                        "" or no answer: look them up */
    bool have_held;                  /* held: the set, got already (the hook asks for it
                                        before it decides to probe); taken over */
    struct rv_viewhold held;
    bool replace_foreign;            /* detach FUSE mounts of other devices at a target */
    dev_t keep_devs[RV_KEEP_DEVS_MAX];   /* never detach these (other live LXCFS) */
    unsigned n_keep;
    bool legacy_bind;                /* use the bind fallback even if open_tree works */
    unsigned long long key;          /* rv_inject(): its bounded key (the namespace's
                                        inode), 0 = none (see bounded.h) */
    /* A record from a user's hook names a container; nothing in it is
     * trusted: the process must be in this mount namespace (0: any), the
     * namespace owned by a user namespace of this uid (not ours), and the
     * process's root the recorded one (root_dev/root_ino, with rootfs ""). */
    ino_t want_mntns;
    bool in_its_ns;                  /* we run in the container's own mount namespace (enroot's
                                        hooks do): ours is not the host's */
    bool check_owner;
    uid_t owner;
    /* Look nothing up through a file system a user may control (a user's
     * record): the process's root and every directory on the way to a
     * target must be on a mount of a type rv_inject_walkable() allows, each
     * mount known by its id (fdinfo) in the process's mountinfo read as
     * data (as seen from the namespace's root), before the first name is
     * looked up in it; a target must be a file of procfs (proc/...) or sysfs
     * (sys/...); a mount on it is a live view (kept) or taken off, never
     * asked. Anything else refuses the request (refused, error). */
    bool check_mounts;
    /* check_mounts for a container an engine made (the NRI plugin's, whose
     * wait holds NRI for the whole node): its root, the engine's rootfs (an
     * overlay of its snapshots), is walked whatever its type; below it, as
     * check_mounts, nothing is looked up through a tenant's FUSE */
    bool trusted_root;
    unsigned n;
    struct rv_view views[RV_VIEWS_MAX];
    /* out */
    bool gone;                       /* the process is gone (or the pid was reused) */
    bool refused;                    /* not the container the record names (error says why) */
    bool host_ns;                    /* the process shares our mount namespace or the host's
                                        (pid 1's): no container's, nothing done (error says so) */
    const char *root_how;            /* "process root" (after pivot_root) or
                                        "rootfs path" (before it) */
    char error[RV_ERRMSG_MAX];       /* a failure of the whole request */
    unsigned n_mounted, n_present, n_skipped, n_failed, n_detached;
    unsigned n_held;                 /* of the clones, made from held descriptors */
};

/* A container known by its process after pivot_root (a record's: rootfs ""):
 * pid, its start time, its mount namespace and its root as they are now
 * (statx without sync: the root may be on a tenant's FUSE, nothing is asked
 * of it). -1 (err) when the process is gone or cannot be looked at. */
int rv_inject_of_pid(struct rv_inject *req, pid_t pid, struct rv_error *err);
/* Add a view; -1 if full or a path is too long. */
int rv_inject_add(struct rv_inject *req, const char *src, const char *dst);
/* -1 (host_ns, error) when req->pid is in our mount namespace or pid 1's:
 * no container's, no views (rv_inject_run checks it too). */
int rv_inject_check_host_ns(struct rv_inject *req);
/* Do it, in the calling process: it changes the caller's mount namespace and
 * may block on FUSE. Only for a child of rv_run_bounded(). Returns 0 when
 * every view ended MOUNTED, PRESENT or SKIPPED. */
int rv_inject_run(struct rv_inject *req);
/* rv_inject_run() in a bounded child. -1 (err) when the request as a whole
 * failed, timed out (errnum ETIMEDOUT), or was not tried because an earlier
 * child for the same key is still stuck (EBUSY); per-view outcomes are in req
 * either way. */
int rv_inject(struct rv_inject *req, int timeout_ms, struct rv_error *err);
const char *rv_view_state_name(enum rv_view_state s);
/* Whether root may look names up in a file system of this type (mountinfo's
 * fstype) for a user: local disk file systems and the kernel's own (ext4,
 * xfs, btrfs, tmpfs, proc, sysfs, ...). Never FUSE (its daemon answers, or
 * not) nor overlayfs (it looks up its layers with its mounter's credentials:
 * a user's overlay over the user's FUSE makes root's lookup the user's
 * request). */
bool rv_inject_walkable(const char *type);

#endif
