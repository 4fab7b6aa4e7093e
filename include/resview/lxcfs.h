/* lxcfs.h - the LXCFS files resview puts over a container's /proc and /sys,
 * and whether an LXCFS mount is live (mounted, FUSE, answering). */
#ifndef RESVIEW_LXCFS_H
#define RESVIEW_LXCFS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "resview/util.h"

#define RV_LXCFS_FILES_MAX 16
#define RV_FUSE_SUPER_MAGIC 0x65735546

/* Candidates, relative to lxcfs.root and to the container's root alike. */
extern const char *const rv_lxcfs_candidates[];
extern const size_t rv_lxcfs_ncandidates;
/* The files whose read proves the daemon answers, the first it offers */
extern const char *const rv_lxcfs_liveness[];
extern const size_t rv_lxcfs_nliveness;
/* Whether rel ("proc/meminfo", no leading slash) is a candidate. */
bool rv_lxcfs_is_candidate(const char *rel);

struct rv_lxcfs {
    char root[PATH_MAX];
    bool live;                 /* a FUSE mount that answered a read */
    bool mounted;              /* a FUSE mount is there, not (yet) answering but not
                                  dead (ENOTCONN): worth another look soon */
    dev_t dev;                 /* its device, when live */
    char why[256];             /* why not live */
    unsigned n;                /* candidates present under root */
    const char *files[RV_LXCFS_FILES_MAX];
};

/* Look at root: statfs (a dead mount answers ENOTCONN; a plain directory is
 * not LXCFS), the device, one read of one small file (every file is served
 * by the same daemon; a read costs ~100 us, so one proves the daemon answers
 * without paying that for every file), and which candidates exist. May block
 * forever on a hung daemon: call it inside rv_run_bounded(), or use
 * rv_lxcfs_discover(). Never fails: out->live and out->why tell. */
void rv_lxcfs_probe(const char *root, struct rv_lxcfs *out);
/* The same; list = false, for the hook, skips finding which candidates exist
 * (n = 0: its open_tree() calls find out anyway) and asks statfs only after
 * the read failed (a round trip to the daemon, to say why). */
void rv_lxcfs_probe_ex(const char *root, bool list, struct rv_lxcfs *out);

/* rv_lxcfs_probe() with a deadline; -1 only if the child could not run. A
 * deadline that passes means "not live" (a hung daemon). */
int rv_lxcfs_discover(const char *root, int timeout_ms, struct rv_lxcfs *out,
                      struct rv_error *err);

/* Never mount LXCFS views into the mount namespace where the LXCFS process
 * that serves them runs: its own reads of /proc/meminfo, /proc/stat, ...
 * would then be FUSE requests to itself, and every one of its threads (and
 * every reader of every view on the node) would wait forever in D state.
 *
 * The serving processes of the LXCFS mount on root (device dev): the pid in
 * ROOT.pid (how the node agent and the tests run it) and /run/lxcfs.pid
 * (Debian's and LXCFS's default), each if it is named `lxcfs` (a pid file
 * of a dead LXCFS may name a reused pid); with scan, also every process named
 * `lxcfs` whose mount table has a fuse.lxcfs mount of dev (0: any), whatever
 * pid file it was given. Without scan (the hook, on the start path) it costs
 * two small reads and a stat. Reads only procfs and the pid files: nothing
 * through FUSE. */
#define RV_LXCFS_SERVERS_MAX 16
struct rv_lxcfs_server {
    pid_t pid;
    dev_t ns_dev;              /* its mount namespace (st_dev, st_ino of /proc/PID/ns/mnt) */
    ino_t ns_ino;
};
struct rv_lxcfs_servers {
    unsigned n;
    struct rv_lxcfs_server s[RV_LXCFS_SERVERS_MAX];
};
void rv_lxcfs_servers_find(const char *root, dev_t dev, bool scan, struct rv_lxcfs_servers *out);
/* Whether views may be mounted into the mount namespace of pid: 0 yes; 1 no,
 * a serving LXCFS runs there; -1 no, in doubt (pid's namespace cannot be
 * read: not allowed, ...). why says which, for the log. A process that is
 * gone is 0: nothing can be mounted there anyway, and the caller's own check
 * says it is gone (repair then drops its record). */
int rv_lxcfs_ns_check(const struct rv_lxcfs_servers *srv, pid_t pid, char *why, size_t size);
/* LXCFS view mounts (fuse.lxcfs, of a file below its root) in the mount
 * namespace of pid (0: our own), from its mountinfo: targets joined by ", "
 * into out (truncated). Returns how many, -1 if the table cannot be read. */
int rv_lxcfs_views_in_ns(pid_t pid, char *out, size_t size);
/* Detach (MNT_DETACH) every LXCFS view mounted in our own mount namespace,
 * in a bounded child: a process about to run LXCFS must not read its own
 * /proc through one. Returns how many were detached, -1 (err) on failure. */
int rv_lxcfs_detach_own_views(struct rv_error *err);

#endif
