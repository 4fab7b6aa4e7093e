/* repair.h - `resview repair` and `resview watch`: put live LXCFS views back
 * into running containers after LXCFS died, restarted or started late.
 * Reads mount tables with libmount: CLI only, never linked into the hook. */
#ifndef RESVIEW_REPAIR_H
#define RESVIEW_REPAIR_H

#include <stdbool.h>
#include <stdio.h>
#include "resview/config.h"

#define RV_REPAIR_TIMEOUT_MS 2000   /* per container */
#define RV_REPAIR_PASS_MS 10000      /* a pass that names no container (watch, the LXCFS
                                        start-up repair, `resview repair`) and Synchronize's
                                        give root's containers at most this much; the rest
                                        wait for the next pass */
#define RV_REPAIR_SLOW_MS 1000       /* a container whose repair took longer is charged as
                                        one that timed out (owners.h) */
#define RV_RECORD_GRACE_S 60         /* a record without views younger than this may
                                        belong to a create in progress */
#define RV_USER_NOT_YET_S 600        /* a user's record whose process has not reached the
                                        recorded root this long after root first saw it
                                        is dropped */
#define RV_USERS_PASS_MS 10000       /* users' records get at most this much of a run (and
                                        each user RV_OWNER_RUN_MS of it); the rest wait */

struct rv_repair_opts {
    bool all;                 /* also scan every mount namespace for stale views
                                 (but users' own: their records are for those) */
    char *const *ids;         /* only these recorded containers (n_ids > 0) */
    int n_ids;
    int wait_ms;              /* wait up to this long for LXCFS to answer */
    bool no_users;            /* leave users' records alone (lxcfs.service start-up) */
    bool named;               /* a person named ids: tried even when remembered as
                                 stalling, waiting for another repair of the same
                                 container, with no time for the pass. Else a
                                 background pass (Synchronize's ids, watch): what
                                 stalled is skipped, RV_REPAIR_PASS_MS in all */
};

struct rv_repair_stats {
    unsigned scanned;         /* recorded containers and namespaces looked at */
    unsigned repaired;        /* views put (back) in */
    unsigned healthy;         /* nothing to do */
    unsigned failed;
    unsigned dropped;         /* records of containers that are gone */
    unsigned refused;         /* users' records that name no container of theirs */
    unsigned self_served;     /* containers where the LXCFS serving the views runs:
                                 never attached there (lxcfs.h) */
    unsigned namespaces;      /* mount namespaces read in the --all scan */
    unsigned later;           /* users' records left for a later run (their owner's
                                 time, back-off, or the users' pass is over) */
    unsigned stalled;         /* root's containers skipped: remembered as stalling
                                 (a child still stuck in their file systems, or
                                 backing off: state_dir/stalled/, owners.h) */
    unsigned deferred;        /* root's containers left for the next pass: its time
                                 was over, or another repair was on them */
};

/* Repair; per-container lines and failures go to out. -1 (err) only when
 * nothing could be tried (LXCFS not answering, ...). */
int rv_repair(const struct rv_config *cfg, const struct rv_repair_opts *o,
              struct rv_repair_stats *st, FILE *out, struct rv_error *err);

/* A view that does not answer is a node-wide fault: every reader of it hangs.
 * Looks for (1) LXCFS views mounted in the mount namespace of an LXCFS that
 * serves lxcfs.root (its reads of /proc would wait for itself: a deadlock of
 * the whole node), and (2) in every recorded container with views, one read
 * of one view through /proc/PID/root, in a bounded child (per_read_ms; at most
 * one child per namespace left behind), for at most budget_ms in all. One
 * line per fault to out ("fault ..."; "stale ..." for a view that answers
 * ENOTCONN, not a fault: its readers get an error at once), and a last line saying how many
 * containers answered. Returns the number of faults. */
#define RV_VIEWS_READ_MS 1000
unsigned rv_views_check(const struct rv_config *cfg, int per_read_ms, int budget_ms, FILE *out);

#endif
