/* viewhold.h - the LXCFS files, held open by `resview watch` and handed to
 * the hook.
 *
 * To mount a view, the hook clones the LXCFS file it is of (open_tree). Found
 * by its path, every file costs a FUSE lookup, a round trip to the daemon:
 * ~0.2 ms each on a VM, and LXCFS lets the kernel keep an entry for 0.5 s
 * only, so on a node that starts a container now and then every lookup is
 * one: a dozen per start. A clone of a descriptor held open needs none. So
 * `resview watch` keeps an O_PATH descriptor of each file of the live LXCFS
 * and hands the set to whoever connects to state_dir/views.sock; the hook
 * asks first and clones from what it got, and looks up what it did not get.
 * Nothing depends on it: no watch, a watch that does not answer within
 * RV_VIEWHOLD_WAIT_MS, a set of another LXCFS than the live one or a socket
 * that is not root's, and the hook looks the files up as before.
 *
 * The set also says how long ago LXCFS last answered watch: a thread of
 * watch reads one byte of a held file every RV_VIEWHOLD_PROBE_MS (one FUSE
 * read; a thread that LXCFS leaves waiting just stops vouching). A hook given
 * a set whose answer is at most RV_VIEWHOLD_FRESH_MS old asks LXCFS nothing
 * itself: its clones and mounts of held files are no FUSE request, so a
 * daemon that stops right then holds no start (the container's own reads
 * wait for it, as they would had it stopped a moment later). An older answer,
 * or none, and the hook probes LXCFS itself in its bounded child, as before. */
#ifndef RESVIEW_VIEWHOLD_H
#define RESVIEW_VIEWHOLD_H

#include "resview/config.h"
#include "resview/lxcfs.h"
#include "resview/util.h"

#include <stdint.h>
#include <sys/types.h>

#define RV_VIEWHOLD_SOCK "views.sock"
#define RV_VIEWHOLD_WAIT_MS 20
#define RV_VIEWHOLD_PROBE_MS 500
#define RV_VIEWHOLD_FRESH_MS 1500
#define RV_VIEWHOLD_NEVER UINT32_MAX   /* answered_ms: no answer since the set was opened */

/* One set, indexed as rv_lxcfs_candidates. */
struct rv_viewhold {
    dev_t dev;                        /* the LXCFS the files are of; 0: none held */
    uint32_t absent;                  /* bit i: candidate i is not offered (ENOENT) */
    uint32_t answered_ms;             /* LXCFS last answered watch this long ago (as sent) */
    int fd[RV_LXCFS_FILES_MAX];       /* O_PATH descriptors, -1: none */
};

void rv_viewhold_init(struct rv_viewhold *h);
void rv_viewhold_close(struct rv_viewhold *h);
/* The descriptor held for src ("proc/meminfo"): >= 0; -1 with errno ENOENT
 * when the LXCFS does not offer it, ENXIO when nothing is held for it. */
int rv_viewhold_fd(const struct rv_viewhold *h, const char *src);

/* A set over a connected unix socket, the descriptors with it (SCM_RIGHTS);
 * every descriptor received ends in out or closed. */
int rv_viewhold_send(int c, const struct rv_viewhold *h);
int rv_viewhold_recv(int c, struct rv_viewhold *out);

/* The hook's side: ask the holder at sock for its set. Fills out only with a
 * set of live_dev from a root process, each descriptor a regular file of
 * that device; else out holds nothing. Waits RV_VIEWHOLD_WAIT_MS at most. */
void rv_viewhold_get(const char *sock, dev_t live_dev, struct rv_viewhold *out);
/* The same in two steps, so that the holder answers while the caller works
 * on (the hook asks as it starts, takes in its bounded child): ask connects
 * (-1: nothing to take); take receives from it and closes it (c -1: out
 * holds nothing). */
int rv_viewhold_ask(const char *sock);
/* Where a client reaches the holder: host_state_dir/views.sock (-1 too long). */
int rv_viewhold_path(const struct rv_config *cfg, char *out, size_t size);
/* Whether a holder listens on its socket now, as root (not a socket left
 * behind; whether it vouches for LXCFS is asked later, as files are taken). */
bool rv_viewhold_served(const struct rv_config *cfg);
void rv_viewhold_take(int c, dev_t live_dev, struct rv_viewhold *out);

/* `resview watch`'s side: open the candidates of the LXCFS at root (device
 * dev) in a bounded child (lookups may block on a hung daemon). */
int rv_viewhold_open(const char *root, dev_t dev, int timeout_ms, struct rv_viewhold *out,
                     struct rv_error *err);
/* Serve sets on state_dir/views.sock from a thread of the caller (which
 * must not be one of the static binaries: they are single-threaded). */
struct rv_viewhold_server;
int rv_viewhold_serve(const struct rv_config *cfg, struct rv_viewhold_server **out,
                      struct rv_error *err);
/* Serve h from now on (taken over: h holds nothing after); the old set is
 * closed. An empty set stops handing out descriptors. */
void rv_viewhold_publish(struct rv_viewhold_server *s, struct rv_viewhold *h);
/* Remove the socket (if it is still ours); the thread ends with the process. */
void rv_viewhold_unlink(struct rv_viewhold_server *s);

#endif
