/* metrics.c - the counters file: its table, the adders' hot path, the
 * exporter's map (metrics.h). */
#define _GNU_SOURCE
#include "metrics_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "RVMETRC\0"
#define HEADER_WORDS 8u
#define CAPACITY ((RV_METRICS_FILE_SIZE / 8u) - HEADER_WORDS)

_Static_assert(RV_M_COUNT <= CAPACITY, "the metrics table outgrew its file");

/* The header, 64 bytes: magic, version and slot count, the layout's hash. */
struct header {
    char magic[8];
    uint32_t version;
    uint32_t nslots;
    uint64_t layout;
    uint64_t created;         /* CLOCK_REALTIME seconds, for a reader's curiosity */
    uint64_t reserved[4];
};
_Static_assert(sizeof(struct header) == HEADER_WORDS * 8, "header size");

/* Every slot's family and label set: constants, never a tenant's text. */
const struct rv_metric_def rv_metric_defs[RV_M_COUNT] = {
    [RV_M_VIEWS_OK] = { "container_views", "views=\"yes\",reason=\"ok\"" },
    [RV_M_VIEWS_PARTIAL] = { "container_views", "views=\"yes\",reason=\"partial\"" },
    [RV_M_NOVIEWS_OPTED_OUT] = { "container_views", "views=\"no\",reason=\"opted_out\"" },
    [RV_M_NOVIEWS_HOOK_MISSING] = { "container_views", "views=\"no\",reason=\"hook_missing\"" },
    [RV_M_NOVIEWS_LXCFS_DOWN] = { "container_views", "views=\"no\",reason=\"lxcfs_down\"" },
    [RV_M_NOVIEWS_LXCFS_HUNG] = { "container_views", "views=\"no\",reason=\"lxcfs_hung\"" },
    [RV_M_NOVIEWS_REQUIRED] = { "container_views", "views=\"no\",reason=\"refused_required\"" },
    [RV_M_NOVIEWS_FAILED] = { "container_views", "views=\"no\",reason=\"failed\"" },
    [RV_M_NOVIEWS_LXCFS_NS] = { "container_views", "views=\"no\",reason=\"lxcfs_namespace\"" },
    [RV_M_NOVIEWS_HOST_NS] = { "container_views", "views=\"no\",reason=\"host_namespace\"" },
    [RV_M_NOVIEWS_GONE] = { "container_views", "views=\"no\",reason=\"process_gone\"" },
    [RV_M_NOVIEWS_NRI_AWAY] = { "container_views", "views=\"no\",reason=\"nri_away\"" },
    [RV_M_NOVIEWS_NOT_SERVED] = { "container_views", "views=\"no\",reason=\"handler_not_served\"" },
    [RV_M_VARS_OK] = { "container_variables", "variables=\"yes\",reason=\"ok\"" },
    [RV_M_NOVARS_OPTED_OUT] = { "container_variables", "variables=\"no\",reason=\"opted_out\"" },
    [RV_M_NOVARS_DISABLED] = { "container_variables", "variables=\"no\",reason=\"disabled\"" },
    [RV_M_NOVARS_NRI_AWAY] = { "container_variables", "variables=\"no\",reason=\"nri_away\"" },
    [RV_M_NOVARS_NOT_SERVED] = { "container_variables",
                                 "variables=\"no\",reason=\"handler_not_served\"" },
    [RV_M_REPAIR_REPAIRED] = { "repair_containers", "result=\"repaired\"" },
    [RV_M_REPAIR_FAILED] = { "repair_containers", "result=\"failed\"" },
    [RV_M_LXCFS_RESTARTS] = { "lxcfs_restarts", "" },
    [RV_M_FUSE_ALLOWED_MOUNT] = { "fuse_calls", "result=\"allowed\",reason=\"mount\"" },
    [RV_M_FUSE_ALLOWED_UMOUNT] = { "fuse_calls", "result=\"allowed\",reason=\"umount\"" },
    [RV_M_FUSE_REFUSED_NOT_ALLOWED] = { "fuse_calls", "result=\"refused\",reason=\"not_allowed\"" },
    [RV_M_FUSE_REFUSED_LIMIT] = { "fuse_calls", "result=\"refused\",reason=\"limit\"" },
    [RV_M_FUSE_REFUSED_BUSY] = { "fuse_calls", "result=\"refused\",reason=\"busy\"" },
    [RV_M_FUSE_REFUSED_INVALID] = { "fuse_calls", "result=\"refused\",reason=\"invalid\"" },
    [RV_M_FUSE_REFUSED_UNSUPPORTED] = { "fuse_calls", "result=\"refused\",reason=\"unsupported\"" },
    [RV_M_FUSE_REFUSED_ERROR] = { "fuse_calls", "result=\"refused\",reason=\"error\"" },
    [RV_M_NRI_PID] = { "nri_pid", "" },
    [RV_M_NRI_OVER_BUDGET] = { "nri_calls_over_budget", "" },
    [RV_M_NRI_SECONDS_NS] = { "nri_call_duration_seconds_sum", "" },
#define B(i, le) [RV_M_NRI_BUCKET0 + i] = { "nri_call_duration_seconds_bucket", "le=\"" le "\"" }
    B(0, "0.0001"), B(1, "0.00025"), B(2, "0.0005"), B(3, "0.001"), B(4, "0.0025"),
    B(5, "0.005"), B(6, "0.01"), B(7, "0.05"), B(8, "0.1"), B(9, "0.5"), B(10, "1"),
    B(11, "2"), B(12, "+Inf"),
#undef B
};
const uint64_t rv_metrics_nri_bounds[RV_METRICS_NRI_BUCKETS] = {
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 50000000, 100000000,
    500000000, 1000000000, 2000000000, UINT64_MAX,
};

uint64_t rv_metrics_layout_hash(void)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a over the names, in order */

    for (unsigned i = 0; i < RV_M_COUNT; i++) {
        const char *parts[2] = { rv_metric_defs[i].family, rv_metric_defs[i].labels };
        for (unsigned k = 0; k < 2; k++) {
            for (const char *p = parts[k]; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ull;
            h = (h ^ 0xff) * 1099511628211ull;
        }
    }
    return h;
}

uint64_t rv_metrics_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool header_ok(const struct header *h)
{
    return memcmp(h->magic, MAGIC, sizeof(h->magic)) == 0 && h->version == RV_METRICS_VERSION &&
           h->nslots == RV_M_COUNT && h->layout == rv_metrics_layout_hash();
}

/* The file's page, mapped writable, when it is ours and of our layout. */
static void *map_file(int fd, struct stat *st)
{
    void *p;

    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size != RV_METRICS_FILE_SIZE ||
        (st->st_uid != 0 && st->st_uid != geteuid())) {
        errno = EINVAL;
        return NULL;
    }
    p = mmap(NULL, RV_METRICS_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (!header_ok(p)) {
        munmap(p, RV_METRICS_FILE_SIZE);
        errno = EINVAL;
        return NULL;
    }
    return p;
}

static int open_file(const char *dir, int flags)
{
    char path[PATH_MAX];

    if (!dir || rv_snprintf(path, sizeof(path), "%s/%s", dir, RV_METRICS_FILE) < 0)
        return -1;
    return open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
}

/* dir's counters file, mapped for an adder (unmap_slots after): NULL when
 * there is none of ours */
static uint64_t *map_slots(const char *dir)
{
    struct stat st;
    void *p;
    int fd = open_file(dir, O_RDWR);

    if (fd < 0)
        return NULL;
    p = map_file(fd, &st);
    close(fd);
    return p ? (uint64_t *)p + HEADER_WORDS : NULL;
}

static void unmap_slots(uint64_t *slots)
{
    munmap(slots - HEADER_WORDS, RV_METRICS_FILE_SIZE);
}

int rv_metrics_addv(const char *dir, const struct rv_metric_inc *v, unsigned n)
{
    uint64_t *slots = map_slots(dir);

    if (!slots)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (v[i].slot < RV_M_COUNT && v[i].n)
            __atomic_fetch_add(&slots[v[i].slot], v[i].n, __ATOMIC_RELAXED);
    unmap_slots(slots);
    return 0;
}

int rv_metrics_add(const char *dir, enum rv_metric slot)
{
    const struct rv_metric_inc one = { slot, 1 };
    return rv_metrics_addv(dir, &one, 1);
}

int rv_metrics_swap(const char *dir, enum rv_metric slot, uint64_t expect, uint64_t value)
{
    uint64_t *slots = slot < RV_M_COUNT ? map_slots(dir) : NULL;
    int r;

    if (!slots)
        return -1;
    if (expect == RV_METRICS_ANY) {
        __atomic_store_n(&slots[slot], value, __ATOMIC_RELAXED);
        r = 0;
    } else {
        r = __atomic_compare_exchange_n(&slots[slot], &expect, value, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED) ? 0 : -1;
    }
    unmap_slots(slots);
    return r;
}

void rv_metrics_nri_call(const char *dir, uint64_t ns)
{
    struct rv_metric_inc v[3] = { { RV_M_NRI_SECONDS_NS, ns }, { RV_M_NRI_BUCKET_LAST, 1 },
                                  { RV_M_NRI_OVER_BUDGET, ns > RV_METRICS_NRI_BUDGET_NS } };

    for (unsigned i = 0; i < RV_METRICS_NRI_BUCKETS; i++) {
        if (ns <= rv_metrics_nri_bounds[i]) {
            v[1].slot = (enum rv_metric)(RV_M_NRI_BUCKET0 + i);
            break;
        }
    }
    rv_metrics_addv(dir, v, 3);
}

/* A fresh file of our layout, every page allocated, named <dir>/metrics
 * in one rename (an adder sees the old file or the whole new one). */
static int create_file(const char *dir, struct rv_error *err)
{
    char tmp[PATH_MAX], path[PATH_MAX];
    struct header h = { .version = RV_METRICS_VERSION, .nslots = RV_M_COUNT };
    cleanup_close int fd = -1;
    int e;

    if (rv_snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, RV_METRICS_FILE, (int)getpid()) < 0 ||
        rv_snprintf(path, sizeof(path), "%s/%s", dir, RV_METRICS_FILE) < 0)
        return rv_fail(err, ENAMETOOLONG, "metrics file under `%s`", dir);
    memcpy(h.magic, MAGIC, sizeof(h.magic));
    h.layout = rv_metrics_layout_hash();
    h.created = (uint64_t)time(NULL);
    unlink(tmp);
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return rv_fail(err, errno, "create `%s`", tmp);
    /* allocated now: a page first written through a map on a full tmpfs is
     * a SIGBUS in the shim */
    if ((e = posix_fallocate(fd, 0, RV_METRICS_FILE_SIZE)) != 0) {
        unlink(tmp);
        return rv_fail(err, e, "allocate `%s`", tmp);
    }
    if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || fchmod(fd, 0644) < 0 ||
        rename(tmp, path) < 0) {
        rv_fail(err, errno ? errno : EIO, "write `%s`", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

int rv_metrics_map_open(const char *dir, bool create, struct rv_metrics_map *m, struct rv_error *err)
{
    struct stat st;
    void *p = NULL;
    int fd;

    memset(m, 0, sizeof(*m));
    fd = open_file(dir, O_RDWR);
    if (fd >= 0) {
        p = map_file(fd, &st);
        close(fd);
    }
    if (!p && create) {
        if (rv_mkdir_p(dir, 0755, err) < 0 || create_file(dir, err) < 0)
            return -1;
        fd = open_file(dir, O_RDWR);
        if (fd >= 0) {
            p = map_file(fd, &st);
            close(fd);
        }
    }
    if (!p)
        return rv_fail(err, errno, "metrics file `%s/%s`", dir, RV_METRICS_FILE);
    m->base = p;
    m->slots = (uint64_t *)p + HEADER_WORDS;
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    return 0;
}

void rv_metrics_map_close(struct rv_metrics_map *m)
{
    if (m->base)
        munmap(m->base, RV_METRICS_FILE_SIZE);
    memset(m, 0, sizeof(*m));
}

bool rv_metrics_map_current(const char *dir, const struct rv_metrics_map *m)
{
    char path[PATH_MAX];
    struct stat st;

    return m->base && rv_snprintf(path, sizeof(path), "%s/%s", dir, RV_METRICS_FILE) >= 0 &&
           lstat(path, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino;
}
