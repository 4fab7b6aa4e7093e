/* proc.h - what resview reads of a process in /proc: its cgroups (one parser
 * of /proc/PID/cgroup for every caller: limits, the FUSE broker, hostexec,
 * the node agent), its start time (to pin a /proc/PID directory), and who
 * it is on the host (its uid map). */
#ifndef RESVIEW_PROC_H
#define RESVIEW_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH": a v1 hierarchy's
 * comma-separated controllers (or name=NAME), none on the unified hierarchy
 * ("0::PATH"). The fields point into the text and are not terminated. */
struct rv_cgroup_line {
    const char *line;   /* the whole line, without its '\n' */
    size_t line_len;
    bool valid;         /* false: the line has no two colons (no fields) */
    const char *id, *ctrls, *path;
    size_t id_len, ctrls_len, path_len;
};

/* The next non-empty line of the text at *at (moved past it); false at its end. */
bool rv_cgroup_next(const char **at, struct rv_cgroup_line *l);
/* Whether a valid line is the hierarchy of controller ctrl: ctrl among its
 * controllers ("cpu" is in "cpu,cpuacct", not in "cpuset"); ctrl NULL: a
 * hierarchy without controllers (the unified one). */
bool rv_cgroup_line_is(const struct rv_cgroup_line *l, const char *ctrl);
/* The first line of the hierarchy of ctrl (as rv_cgroup_line_is) in the text
 * of /proc/PID/cgroup; false if there is none. */
bool rv_cgroup_find(const char *text, const char *ctrl, struct rv_cgroup_line *l);

/* Start time of a process (field 22 of /proc/PID/stat, clock ticks since
 * boot), read through an open /proc/PID directory; -1 if gone. */
int rv_pid_start_time(int piddir, unsigned long long *start);
/* Parse the start time out of the text of /proc/PID/stat (tests). */
int rv_parse_stat_start(const char *text, unsigned long long *start);

/* Whether this process is root on the host: its uid is the host's uid 0
 * (in the initial user namespace, or in one that maps 0 to 0, as enroot run
 * by root makes). A rootless engine runs its runtime and hooks as uid 0 of
 * a user namespace of the user's: root there, the user on the host. */
bool rv_host_root(void);
/* This process's uid on the host (outside its user namespace); -1 unknown. */
uid_t rv_host_uid(void);
/* An id through the text of /proc/PID/uid_map or gid_map: inside the
 * namespace to outside (inward false: who a uid is on the host), or outside
 * to inside (inward true). 0, or -1 if unmapped. */
int rv_id_map(const char *text, unsigned id, bool inward, unsigned *out);

/* One mount as a line of /proc/PID/mountinfo shows it. Reading mountinfo
 * asks no file system anything (procfs formats what the kernel holds), and
 * neither does reading fdinfo: together they say what an open descriptor is
 * on without a request to that file system (a FUSE daemon, an overlay's
 * layers). */
struct rv_mount_info {
    unsigned long long id;     /* the mount id (global, not reused while a descriptor pins it) */
    unsigned maj, min;         /* its super block's device */
    char type[64];             /* "ext4", "fuse.lxcfs", "overlay" (longer types: truncated, "") */
};
/* Parse one line of mountinfo (len bytes, no '\n' needed); -1 if malformed. */
int rv_mountinfo_line(const char *line, size_t len, struct rv_mount_info *out);
/* The line of mount id in the mountinfo text read from fd (read to its end
 * or until found; buf: scratch of size bytes, no allocation, for bounded
 * children). 0 found; -1, errno ENOENT (not listed) or EIO (unreadable). */
int rv_mountinfo_lookup(int fd, unsigned long long id, struct rv_mount_info *out, char *buf,
                      size_t size);
/* The mount id of descriptor fd of ours, from statx (Linux 5.8) or fdinfo (fdinfo_dir: our
 * /proc/self/fdinfo opened; the file system of fd is not asked). 0 or -1. */
int rv_fd_mnt_id(int fdinfo_dir, int fd, unsigned long long *id);

#endif
