/* metrics.h - the node's counters and their Prometheus exporter.
 *
 * What the short-lived shim, hook and FUSE broker did is added to one small
 * file of fixed layout, <state_dir>/metrics: a versioned header and an array
 * of u64 slots, one per (metric, label set) of the table in metrics.c, mapped
 * shared and added to atomically. It survives the exporter's restart (not a
 * reboot: a counter reset, which Prometheus handles). Only the exporter
 * creates it; with no exporter (metrics.address unset) there is no file, and
 * counting costs one failed open. Counting never fails a caller: a missing,
 * foreign, damaged or unwritable file (a rootless hook) just does not count.
 * No slot is chosen by a tenant: the label sets are constants, so nothing a
 * tenant sends can add a series or grow the file.
 *
 * The exporter (metrics_http.c) serves GET /metrics on metrics.address from a
 * thread of its own, from this file and the gauges its process notes: a
 * scrape never touches LXCFS or a tenant's file system. */
#ifndef RESVIEW_METRICS_H
#define RESVIEW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "resview/config.h"

#define RV_METRICS_FILE "metrics"
#define RV_METRICS_FILE_SIZE 4096u
#define RV_METRICS_VERSION 1u

/* The slots. Appending is free; a change to the table changes its hash
 * (rv_metrics_layout_hash), and a file of another layout is replaced by the
 * next exporter (a counter reset) and not counted into meanwhile. */
enum rv_metric {
    /* resview_container_views_total{views,reason} */
    RV_M_VIEWS_OK = 0,
    RV_M_VIEWS_PARTIAL,
    RV_M_NOVIEWS_OPTED_OUT,
    RV_M_NOVIEWS_HOOK_MISSING,
    RV_M_NOVIEWS_LXCFS_DOWN,
    RV_M_NOVIEWS_LXCFS_HUNG,
    RV_M_NOVIEWS_REQUIRED,        /* lxcfs.required: the start was refused */
    RV_M_NOVIEWS_FAILED,
    RV_M_NOVIEWS_LXCFS_NS,        /* the container holds the LXCFS that serves them */
    RV_M_NOVIEWS_HOST_NS,         /* its process is in the host's mount namespace */
    RV_M_NOVIEWS_GONE,            /* its process ended before the hook */
    RV_M_NOVIEWS_NRI_AWAY,        /* created while the NRI plugin was away */
    RV_M_NOVIEWS_NOT_SERVED,      /* NRI: a runtime handler the plugin does not serve */
    /* resview_container_variables_total{variables,reason} */
    RV_M_VARS_OK,
    RV_M_NOVARS_OPTED_OUT,
    RV_M_NOVARS_DISABLED,         /* env.enabled false */
    RV_M_NOVARS_NRI_AWAY,
    RV_M_NOVARS_NOT_SERVED,
    /* resview_repair_containers_total{result} */
    RV_M_REPAIR_REPAIRED,
    RV_M_REPAIR_FAILED,
    /* resview_lxcfs_restarts_total */
    RV_M_LXCFS_RESTARTS,
    /* resview_fuse_calls_total{result,reason} */
    RV_M_FUSE_ALLOWED_MOUNT,
    RV_M_FUSE_ALLOWED_UMOUNT,
    RV_M_FUSE_REFUSED_NOT_ALLOWED,   /* EPERM, EACCES: the place, the type, the caller */
    RV_M_FUSE_REFUSED_LIMIT,         /* ENOSPC: fuse.max_mounts, fuse.max_mounts_node */
    RV_M_FUSE_REFUSED_BUSY,          /* EAGAIN: every worker inside a request */
    RV_M_FUSE_REFUSED_INVALID,       /* EINVAL, EFAULT, ENAMETOOLONG, ENOENT, ENOTDIR... */
    RV_M_FUSE_REFUSED_UNSUPPORTED,   /* ENOSYS: a call the broker does not answer */
    RV_M_FUSE_REFUSED_ERROR,         /* anything else */
    /* the NRI plugin */
    RV_M_NRI_PID,                 /* a gauge: the registered plugin's pid, 0 none */
    RV_M_NRI_OVER_BUDGET,         /* calls longer than NRI's budget (2 s) */
    RV_M_NRI_SECONDS_NS,          /* the histogram's sum, in nanoseconds */
    RV_M_NRI_BUCKET0,             /* per bucket (not cumulative; +Inf last) */
    RV_M_NRI_BUCKET_LAST = RV_M_NRI_BUCKET0 + 12,
    RV_M_COUNT
};
#define RV_METRICS_NRI_BUCKETS (RV_M_NRI_BUCKET_LAST - RV_M_NRI_BUCKET0 + 1)
#define RV_METRICS_NRI_BUDGET_NS 2000000000ull   /* containerd's plugin_request_timeout */

struct rv_metric_inc {
    enum rv_metric slot;
    uint64_t n;
};

/* The hot path: add each n to its slot of <dir>/metrics (dir: the host's
 * state_dir). An open, an fstat, a one-page map; never a wait. 0 counted,
 * -1 not (no file, not ours, not writable): callers ignore it. */
int rv_metrics_addv(const char *dir, const struct rv_metric_inc *v, unsigned n);
int rv_metrics_add(const char *dir, enum rv_metric slot);
/* Set a gauge slot (RV_M_NRI_PID) to value when it holds expect (any value:
 * RV_METRICS_ANY). */
#define RV_METRICS_ANY UINT64_MAX
int rv_metrics_swap(const char *dir, enum rv_metric slot, uint64_t expect, uint64_t value);
/* One NRI call of ns nanoseconds: the bucket, the sum, over budget. */
void rv_metrics_nri_call(const char *dir, uint64_t ns);

/* The file, as the exporter holds it. */
struct rv_metrics_map {
    uint64_t *slots;          /* NULL: none (could not be created or read) */
    void *base;
    dev_t dev;
    ino_t ino;
};
/* Map <dir>/metrics, creating (or replacing one of another layout) when
 * create: a fresh file gets its pages allocated before it is named, so that
 * an adder never faults on a full /run. */
int rv_metrics_map_open(const char *dir, bool create, struct rv_metrics_map *m, struct rv_error *err);
void rv_metrics_map_close(struct rv_metrics_map *m);
/* Still the file named <dir>/metrics? (replaced by another exporter) */
bool rv_metrics_map_current(const char *dir, const struct rv_metrics_map *m);
uint64_t rv_metrics_layout_hash(void);

/* What the exporter's process knows, besides the file: set by watch. */
struct rv_metrics_gauges {
    int lxcfs_known;          /* 0 until watch looked once */
    int lxcfs_up;
    uint64_t probe_ns;        /* the last probe's time */
    uint64_t probes;
};

/* The text exposition of one scrape into buf: snapshot of the slots (NULL:
 * none), the gauges, whether the configuration is valid now, whether the NRI
 * plugin's pid is alive. Returns the length, or -1 when size is too small. */
struct rv_metrics_view {
    const uint64_t *slots;
    struct rv_metrics_gauges g;
    int config_valid;         /* 1, 0; -1 unknown */
    unsigned config_warnings;
    int nri_registered;
    const char *version;
};
int rv_metrics_render(const struct rv_metrics_view *v, char *buf, size_t size);

/* The exporter: serve metrics.address, or $RESVIEW_METRICS_ADDRESS when set
 * (the node agent's; "" off); off when unset: *out NULL, 0. */
struct rv_metrics_server;
int rv_metrics_serve(const struct rv_config *cfg, struct rv_metrics_server **out, struct rv_error *err);
/* watch's view of LXCFS after a probe that began at t0 (rv_metrics_clock):
 * up, its device (a new one counts a restart seen), the probe's time. A NULL
 * server: nothing. */
void rv_metrics_note_lxcfs(struct rv_metrics_server *s, bool up, dev_t dev, uint64_t t0);
/* End the exporter's thread, close and free (NULL: nothing). */
void rv_metrics_stop(struct rv_metrics_server *s);
/* The port actually bound (metrics.address with port 0: tests). */
int rv_metrics_port(const struct rv_metrics_server *s);
uint64_t rv_metrics_clock(void);   /* CLOCK_MONOTONIC, ns */
#endif
