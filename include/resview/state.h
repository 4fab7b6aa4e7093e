/* state.h - records of what resview did, under state_dir:
 *
 *   containers/<id>/   root only (0700); one file per writer, each written
 *                      atomically under an flock of the directory:
 *       env    - {"env": ["K=V", ...], "runtime_root": DIR}: the variables the
 *                shim injected (for exec sessions), and where the next
 *                runtime keeps its state (to tell a container that is gone)
 *       views  - what the hook did (see hook.h)
 *   users/             root-owned, 1733: a hook running as a user (enroot
 *                      without root) adds its views record here as a file
 *                      enroot-<random>; no user can list, read back, replace
 *                      or remove another's. Its content is the tenant's
 *                      word: `resview repair` checks it against the kernel
 *                      (repair.c) before acting on it, and bounds what each
 *                      user keeps there (RV_USER_*).
 *   owners/<uid>       root only: what repair remembers of a user whose
 *                      records it acts on (lxcfs/owners.h).
 *
 * state_dir itself is 0711 so that users reach users/. */
#ifndef RESVIEW_STATE_H
#define RESVIEW_STATE_H

#include <sys/stat.h>
#include "resview/config.h"
#include "resview/json.h"

/* What a user may keep in users/ (repair removes what is beyond: the
 * directory is in /run, and every user may write it): records of at most
 * RV_USER_RECORD_MAX bytes (the hook writes ~1 KiB), at most
 * RV_USER_RECORDS_MAX files and RV_USER_BYTES_MAX bytes per user. */
#define RV_USER_RECORD_MAX (4u << 10)
#define RV_USER_RECORDS_MAX 64
#define RV_USER_BYTES_MAX (128u << 10)

int rv_state_write(const struct rv_config *cfg, const char *id, const char *file,
                   const json_t *doc, struct rv_error *err);
/* Returns 0 and *doc, or -1 (errno ENOENT when there is no record). */
int rv_state_read(const struct rv_config *cfg, const char *id, const char *file, json_t **doc,
                  struct rv_error *err);
/* Remove the whole record of id (no record: 0). */
int rv_state_remove(const struct rv_config *cfg, const char *id, struct rv_error *err);
/* Remove one file of a record (none: 0). */
int rv_state_unlink(const struct rv_config *cfg, const char *id, const char *file);
/* Whether id has a record directory. */
bool rv_state_exists(const struct rv_config *cfg, const char *id);
/* stat() of one file of a record (-1, errno ENOENT: none). */
int rv_state_stat(const struct rv_config *cfg, const char *id, const char *file, struct stat *st);
/* Call fn for each recorded container id (every valid file name, those
 * beginning with '.' too); stops at the first non-zero. */
int rv_state_foreach(const struct rv_config *cfg, int (*fn)(const char *id, void *arg), void *arg);

/* A file of a record as it was read, to be replaced only if it is still that
 * file: not removed (the container was deleted) and not replaced (a new
 * container with the same id). */
struct rv_state_ref {
    int dirfd;                 /* the record directory, -1 = none */
    ino_t ino;                 /* the file read */
};
int rv_state_read_ref(const struct rv_config *cfg, const char *id, const char *file,
                      json_t **doc, struct rv_state_ref *ref, struct rv_error *err);
/* 1 replaced; 0 left alone (the file is gone or another one now); -1 error. */
int rv_state_replace(const struct rv_state_ref *ref, const char *file, const json_t *doc,
                     struct rv_error *err);
/* Remove the whole record of id if file is still the one read (ref NULL:
 * if it holds no file at all): 1 removed, 0 left alone, -1 error. */
int rv_state_remove_if(const struct rv_config *cfg, const char *id,
                       const struct rv_state_ref *ref, const char *file, struct rv_error *err);
void rv_state_ref_close(struct rv_state_ref *ref);

/* lxcfs-stuck: a hook's probe of LXCFS left stuck in a request LXCFS never
 * answers (pid, start time, lxcfs.root). While that process lives, LXCFS still does
 * not answer: later hooks start their containers without waiting for it (and
 * without leaving one more stuck child each). rv_state_lxcfs_stuck returns
 * its pid, 0 if there is none or it has ended (*stale: a marker to remove
 * once LXCFS answers). */
pid_t rv_state_lxcfs_stuck(const struct rv_config *cfg, bool *stale);
void rv_state_lxcfs_mark(const struct rv_config *cfg, pid_t pid);
void rv_state_lxcfs_unmark(const struct rv_config *cfg);

/* users/: create it (and make state_dir 0711) if missing. Root only. */
int rv_state_users_prepare(const struct rv_config *cfg, struct rv_error *err);
/* Add a record to users/ as the calling user; its name in name (may be NULL). */
int rv_state_user_write(const struct rv_config *cfg, const json_t *doc, char *name,
                        size_t size, struct rv_error *err);
/* Each file of users/ that is a regular file of a user other than root and at
 * most RV_USER_RECORD_MAX bytes, within its owner's RV_USER_RECORDS_MAX files
 * and RV_USER_BYTES_MAX bytes (in the order read): fn(name, owner uid, its
 * stat, parsed JSON or NULL if it is not JSON). Anything else is removed
 * unread, and so are a writer's temporary files (".NAME", counted too) a
 * minute old. Read without following symlinks or blocking on FIFOs. fn
 * returns 1 to have the file removed. */
int rv_state_users_foreach(const struct rv_config *cfg,
                           int (*fn)(const char *name, uid_t uid, const struct stat *st,
                                     json_t *doc, void *arg),
                           void *arg, struct rv_error *err);

#endif
