/* limits.c - cpus, mem_mib and gpus from the spec and the ancestor cgroups. */
#define _GNU_SOURCE
#include "resview/limits.h"
#include "resview/gpus.h"
#include "resview/proc.h"
#include "resview/spec.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CPU_MAX 65536
/* ancestors considered (the deepest beyond are not) */
#define NLENS 128
/* cgroup v1 reports "no limit" as a huge page-rounded value. */
#define MEM_UNLIMITED (UINT64_C(1) << 62)

void rv_host_defaults(struct rv_host *h)
{
    strcpy(h->cgroup_root, "/sys/fs/cgroup");
    strcpy(h->self_cgroup, "/proc/self/cgroup");
    h->cg_rule = RV_CG_RUNC;
    strcpy(h->cpu_online, "/sys/devices/system/cpu/online");
    strcpy(h->dev_dir, "/dev");
}

int rv_cpulist_count(const char *s)
{
    unsigned long next = 0;   /* ranges ascend without overlap, as the kernel writes them */
    int count = 0;

    while (*s == ' ' || *s == '\n')
        s++;
    if (!*s)
        return -1;
    while (*s) {
        char *end;
        unsigned long a, b;
        if (*s < '0' || *s > '9')
            return -1;
        a = strtoul(s, &end, 10);
        b = a;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                return -1;
            b = strtoul(end + 1, &end, 10);
        }
        if (a > CPU_MAX || b > CPU_MAX || b < a || a < next)
            return -1;
        next = b + 1;
        count += (int)(b - a + 1);
        s = end;
        if (*s == ',' && s[1] >= '0' && s[1] <= '9')
            s++;
        else if (*s == '\n' || *s == ' ')
            break;
        else if (*s)
            return -1;
    }
    return count;
}

/* "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "" or "-.slice" -> "". */
static int expand_slice(const char *slice, char *out, size_t size)
{
    size_t len = strlen(slice), o = 0;

    out[0] = '\0';
    if (len == 0 || strcmp(slice, "-.slice") == 0)
        return 0;
    if (len < 6 || strcmp(slice + len - 6, ".slice") != 0 || strchr(slice, '/') ||
        slice[0] == '-')
        return -1;
    for (size_t i = 0; i < len - 6; i++) {
        if (slice[i] != '-')
            continue;
        if (slice[i + 1] == '-' || slice[i + 1] == '.')
            return -1;
        int n = snprintf(out + o, size - o, "/%.*s.slice", (int)i, slice);
        if (n < 0 || (size_t)n >= size - o)
            return -1;
        o += (size_t)n;
    }
    int n = snprintf(out + o, size - o, "/%s", slice);
    return (n < 0 || (size_t)n >= size - o) ? -1 : 0;
}

/* Our own cgroup for one controller, from /proc/PID/cgroup: the line of the
 * v1 hierarchy that carries ctrl, or with ctrl NULL the unified line ("0::").
 * Controllers of one process can sit at different paths (Slurm's task/cgroup
 * puts a task at cpu:/, cpuset:/slurm/.../step_0, memory:/slurm/.../task_0).
 * "" (the root) when there is no such line. */
static void self_cgroup(const char *file, const char *ctrl, char *out, size_t size)
{
    char buf[8192];
    struct rv_cgroup_line l;

    out[0] = '\0';
    if (rv_read_small(file, buf, sizeof(buf)) < 0 || !rv_cgroup_find(buf, ctrl, &l))
        return;
    /* a path that does not fit is as good as none: the root */
    if (l.path_len < 2 || l.path[0] != '/' ||
        rv_snprintf(out, size, "%.*s", (int)l.path_len, l.path) < 0)
        out[0] = '\0';
}

int rv_cgroup_path(const char *cp, const char *ctrl, const char *self_file, enum rv_cg_rule rule,
                   bool systemd, char *out, size_t size, struct rv_error *err)
{
    const char *c1 = strchr(cp, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char self[PATH_MAX] = "";  /* the root */

    /* the form alone is unambiguous: slice:prefix:name */
    if (c2 && !strchr(c2 + 1, ':') && cp[0] != '/') {
        char slice[PATH_MAX], sp[PATH_MAX];
        const char *prefix = c1 + 1, *name = c2 + 1;
        size_t plen = (size_t)(c2 - prefix);

        if (rv_snprintf(slice, sizeof(slice), "%.*s", (int)(c1 - cp), cp) < 0 ||
            expand_slice(slice[0] ? slice : "system.slice", sp, sizeof(sp)) < 0)
            return rv_fail(err, 0, "linux.cgroupsPath: invalid systemd slice in `%.200s`", cp);
        if (strchr(name, '/') || strchr(prefix, '/') || !*name)
            return rv_fail(err, 0, "linux.cgroupsPath: invalid systemd unit in `%.200s`", cp);
        size_t nlen = strlen(name);
        if (nlen > 6 && strcmp(name + nlen - 6, ".slice") == 0) {
            char leaf[PATH_MAX];
            if (expand_slice(name, leaf, sizeof(leaf)) < 0 ||
                rv_snprintf(out, size, "%s", leaf) < 0)
                return rv_fail(err, 0, "linux.cgroupsPath: invalid slice `%.200s`", name);
            return 0;
        }
        if (rv_snprintf(out, size, "%s/%.*s%s%s.scope", sp, (int)plen, prefix, plen ? "-" : "", name) < 0)
            return rv_fail(err, ENAMETOOLONG, "linux.cgroupsPath");
        return 0;
    }
    if (cp[0] == '/')
        return rv_snprintf(out, size, "%s", cp) < 0 ? rv_fail(err, ENAMETOOLONG, "linux.cgroupsPath") : 0;
    if (!*cp && systemd && rule != RV_CG_OWN)
        /* runc-ID.scope, crun-ID.scope: both in system.slice */
        return rv_snprintf(out, size, "/system.slice") < 0 ? rv_fail(err, ENAMETOOLONG, "linux.cgroupsPath") : 0;
    if (rule != RV_CG_CRUN) {
        self_cgroup(self_file, ctrl, self, sizeof(self));
        /* runc on v2 takes the parent: our own cgroup has processes, so
         * its children could not have controllers */
        char *slash = rule == RV_CG_RUNC && !ctrl ? strrchr(self, '/') : NULL;
        if (slash)
            *slash = '\0';
    }
    if (rv_snprintf(out, size, "%s%s%s", self, *cp ? "/" : "", cp) < 0)
        return rv_fail(err, ENAMETOOLONG, "linux.cgroupsPath");
    return 0;
}

struct quota {
    uint64_t q, p;        /* q/p CPUs; q == 0: none */
    char where[400];
};

static void consider_quota(struct quota *best, uint64_t q, uint64_t p, const char *where)
{
    if (q == 0 || p == 0)
        return;
    if (best->q && (unsigned __int128)q * best->p >= (unsigned __int128)best->q * p)
        return;
    best->q = q;
    best->p = p;
    snprintf(best->where, sizeof(best->where), "%s", where);
}

static uint64_t rounded(uint64_t q, uint64_t p, enum rv_rounding r)
{
    switch (r) {
    case RV_ROUND_FLOOR: return q / p;
    case RV_ROUND_NEAREST: return (2 * q + p) / (2 * p);
    default: return q / p + (q % p != 0);
    }
}

static const char *rounding_word(enum rv_rounding r)
{
    return r == RV_ROUND_FLOOR ? "rounded down" : r == RV_ROUND_NEAREST ? "rounded to nearest" : "rounded up";
}

/* Controller directory for v1 (first existing of names), or the root for v2. */
static bool controller_dir(const struct rv_host *h, bool v2, const char *const *names, char *out,
                           size_t size)
{
    struct stat st;

    if (v2)
        return rv_snprintf(out, size, "%s", h->cgroup_root) >= 0;
    for (; *names; names++)
        if (rv_snprintf(out, size, "%s/%s", h->cgroup_root, *names) >= 0 && stat(out, &st) == 0 &&
            S_ISDIR(st.st_mode))
            return true;
    return false;
}

static int read_at(const char *dir, const char *cg, size_t cglen, const char *file, char *buf,
                   size_t size, char *path, size_t psize)
{
    if (rv_snprintf(path, psize, "%s%.*s/%s", dir, (int)cglen, cg, file) < 0)
        return -1;
    return rv_read_small(path, buf, size);
}

/* Ancestors of cg, from the root down, including cg itself: the prefix lengths. */
static int ancestors(const char *cg, size_t *lens, int max)
{
    int n = 0;
    size_t len = strlen(cg);

    lens[n++] = 0;
    for (size_t i = 1; i <= len && n < max; i++)
        if (i == len || cg[i] == '/')
            lens[n++] = i;
    return n;
}

/* Whether a path has a ".." component. */
static bool has_dotdot(const char *p)
{
    for (;;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return true;
        if (!p[len])
            return false;
        p += len + 1;
    }
}

/* The container's cgroup in one hierarchy (ctrl: a v1 controller; NULL: the
 * unified one) and the prefix lengths of its ancestors, root first. */
static int controller_cgroup(const char *cp, const char *ctrl, const struct rv_host *h, bool systemd,
                             char *cg, size_t size, size_t *lens, int max, int *nanc,
                             struct rv_error *err)
{
    if (rv_cgroup_path(cp, ctrl, h->self_cgroup, h->cg_rule, systemd, cg, size, err) < 0)
        return -1;
    *nanc = ancestors(cg, lens, max);
    return 0;
}

static int spec_u64(json_t *obj, const char *key, const char *where, uint64_t *out, bool *found,
                    struct rv_error *err)
{
    json_t *v = json_object_get(obj, key);

    *found = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return rv_fail(err, 0, "config.json: %s.%s: expected an integer", where, key);
    *found = json_integer_value(v) > 0;
    *out = *found ? (uint64_t)json_integer_value(v) : 0;
    return 0;
}

/* What each source says, before they are combined: the host, the spec and
 * the ancestor cgroups, each phase adding to it. */
struct sources {
    int online;                  /* host online CPUs */
    char online_str[256];
    struct quota best, own;      /* the lowest CPU quota; of the container's own cgroup */
    int cpuset;                  /* the smallest cpuset, -1: none */
    char cpuset_where[400];
    uint64_t mem_limit;          /* the lowest memory limit, 0: none */
    char mem_why[512];
};

/* host: its online CPUs. */
static void from_host(const struct rv_host *h, struct sources *s)
{
    s->online = -1;
    if (rv_read_small(h->cpu_online, s->online_str, sizeof(s->online_str)) == 0)
        s->online = rv_cpulist_count(s->online_str);
    if (s->online < 1) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        s->online = n > 0 ? (int)n : 1;
        snprintf(s->online_str, sizeof(s->online_str), "%d", s->online);
    }
}

/* spec: linux.resources.cpu (quota, period, cpus) and .memory (limit);
 * *cp: linux.cgroupsPath ("" if absent). */
static int from_spec(json_t *spec, struct sources *s, const char **cp, struct rv_error *err)
{
    json_t *linux_ = json_object_get(spec, "linux");
    json_t *res = linux_ ? json_object_get(linux_, "resources") : NULL;
    json_t *cpu = res ? json_object_get(res, "cpu") : NULL;
    json_t *mem = res ? json_object_get(res, "memory") : NULL;
    json_t *jcp = linux_ ? json_object_get(linux_, "cgroupsPath") : NULL;
    bool found;

    if (res && !json_is_object(res))
        return rv_fail(err, 0, "config.json: linux.resources: expected an object");
    if (cpu && !json_is_object(cpu))
        return rv_fail(err, 0, "config.json: linux.resources.cpu: expected an object");
    if (mem && !json_is_object(mem))
        return rv_fail(err, 0, "config.json: linux.resources.memory: expected an object");
    if (jcp && !json_is_string(jcp))
        return rv_fail(err, 0, "config.json: linux.cgroupsPath: expected a string");
    *cp = jcp ? json_string_value(jcp) : "";

    if (cpu) {
        uint64_t q = 0, p = 100000;
        bool has_p;
        if (spec_u64(cpu, "quota", "linux.resources.cpu", &q, &found, err) < 0 ||
            spec_u64(cpu, "period", "linux.resources.cpu", &p, &has_p, err) < 0)
            return -1;
        if (!has_p)
            p = 100000;
        if (found) {
            consider_quota(&s->best, q, p, "the spec (linux.resources.cpu)");
            consider_quota(&s->own, q, p, "the spec (linux.resources.cpu)");
        }
        json_t *cpus = json_object_get(cpu, "cpus");
        if (cpus && !json_is_string(cpus))
            return rv_fail(err, 0, "config.json: linux.resources.cpu.cpus: expected a string");
        if (cpus && json_string_length(cpus) > 0) {
            s->cpuset = rv_cpulist_count(json_string_value(cpus));
            if (s->cpuset < 1)
                return rv_fail(err, 0, "config.json: linux.resources.cpu.cpus: invalid CPU list");
            snprintf(s->cpuset_where, sizeof(s->cpuset_where), "cpuset %.64s of the spec",
                     json_string_value(cpus));
        }
    }
    if (mem) {
        if (spec_u64(mem, "limit", "linux.resources.memory", &s->mem_limit, &found, err) < 0)
            return -1;
        if (found)
            snprintf(s->mem_why, sizeof(s->mem_why), "memory limit %" PRIu64 " of the spec",
                     s->mem_limit);
    }
    return 0;
}

/* One ancestor cgroup (the first len bytes of cg, in the hierarchy at dir)
 * of each controller; own: it is the container's own cgroup. */
static void cpu_quota_at(const char *dir, const char *cg, size_t len, bool v2, bool own,
                         struct sources *s)
{
    char buf[4096], path[PATH_MAX + 64];
    uint64_t q, p;

    if (v2) {
        char *sp;
        if (read_at(dir, cg, len, "cpu.max", buf, sizeof(buf), path, sizeof(path)) < 0 ||
            !(sp = strchr(buf, ' ')))
            return;
        *sp = '\0';
        if (rv_parse_u64(buf, &q) < 0 || rv_parse_u64(sp + 1, &p) < 0)
            return;
    } else {
        char pb[64], ppath[PATH_MAX + 64];
        int64_t sq;
        if (read_at(dir, cg, len, "cpu.cfs_quota_us", buf, sizeof(buf), path, sizeof(path)) < 0 ||
            rv_parse_i64(buf, &sq) < 0 || sq <= 0)
            return;
        q = (uint64_t)sq;
        if (read_at(dir, cg, len, "cpu.cfs_period_us", pb, sizeof(pb), ppath, sizeof(ppath)) < 0 ||
            rv_parse_u64(pb, &p) < 0)
            return;
    }
    consider_quota(&s->best, q, p, path);
    if (own)
        consider_quota(&s->own, q, p, path);
}

static void cpuset_at(const char *dir, const char *cg, size_t len, bool v2, bool own,
                      struct sources *s)
{
    const char *files[] = { v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus",
                            v2 ? NULL : "cpuset.cpus", NULL };
    char buf[4096], path[PATH_MAX + 64];

    (void)own;
    for (int f = 0; files[f]; f++) {
        if (read_at(dir, cg, len, files[f], buf, sizeof(buf), path, sizeof(path)) < 0)
            continue;
        int n = rv_cpulist_count(buf);
        if (n >= 1 && (s->cpuset < 0 || n < s->cpuset)) {
            s->cpuset = n;
            snprintf(s->cpuset_where, sizeof(s->cpuset_where), "cpuset %.64s of %s", buf, path);
        }
        break;
    }
}

static void memory_at(const char *dir, const char *cg, size_t len, bool v2, bool own,
                      struct sources *s)
{
    char buf[4096], path[PATH_MAX + 64];
    uint64_t m;

    (void)own;
    if (read_at(dir, cg, len, v2 ? "memory.max" : "memory.limit_in_bytes", buf, sizeof(buf), path,
                sizeof(path)) < 0 ||
        rv_parse_u64(buf, &m) < 0 || m == 0 || m >= MEM_UNLIMITED)
        return;
    if (s->mem_limit == 0 || m < s->mem_limit) {
        s->mem_limit = m;
        snprintf(s->mem_why, sizeof(s->mem_why), "memory limit %" PRIu64 " of %s", m, path);
    }
}

/* The controllers whose ancestors count: their v1 directories, the v1
 * controller of /proc/self/cgroup, and what one ancestor says. */
static const struct controller {
    const char *const *names;
    const char *v1;
    void (*at)(const char *dir, const char *cg, size_t len, bool v2, bool own, struct sources *s);
} controllers[] = {
    { (const char *const[]){ "cpu", "cpu,cpuacct", "cpuacct,cpu", NULL }, "cpu", cpu_quota_at },
    { (const char *const[]){ "cpuset", NULL }, "cpuset", cpuset_at },
    { (const char *const[]){ "memory", NULL }, "memory", memory_at },
};

/* ancestor cgroups: each controller at its own path, from the root down to
 * the container's cgroup. */
static int from_ancestors(const char *cp, const struct rv_host *h, bool systemd_hint,
                          struct sources *s, struct rv_error *err)
{
    char cg[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
    size_t lens[NLENS];
    struct stat st;
    int nanc;
    bool v2;

    if (has_dotdot(cp))
        return rv_fail(err, 0, "config.json: linux.cgroupsPath: `..` is not allowed");
    if (rv_snprintf(path, sizeof(path), "%s/cgroup.controllers", h->cgroup_root) < 0)
        return rv_fail(err, ENAMETOOLONG, "cgroup root");
    v2 = stat(path, &st) == 0;

    for (size_t c = 0; c < sizeof(controllers) / sizeof(controllers[0]); c++) {
        const struct controller *ctl = &controllers[c];
        if (!controller_dir(h, v2, ctl->names, dir, sizeof(dir)))
            continue;
        if (controller_cgroup(cp, v2 ? NULL : ctl->v1, h, systemd_hint, cg, sizeof(cg), lens, NLENS,
                              &nanc, err) < 0)
            return -1;
        for (int i = 0; i < nanc; i++)
            /* the last is the container's own cgroup, unless the runtime
             * makes that one below it (an empty cgroupsPath) */
            ctl->at(dir, cg, lens[i], v2, i == nanc - 1 && (*cp || h->cg_rule == RV_CG_OWN), s);
    }
    return 0;
}

/* combine: the fewest CPUs of the host, the cpuset and the quota; the lowest
 * memory limit. */
static void combine(const struct sources *s, enum rv_rounding rounding, struct rv_limits *out)
{
    uint64_t cpus = (uint64_t)s->online;

    snprintf(out->cpus_why, sizeof(out->cpus_why), "host online CPUs %s", s->online_str);
    if (s->cpuset > 0 && (uint64_t)s->cpuset < cpus) {
        cpus = (uint64_t)s->cpuset;
        snprintf(out->cpus_why, sizeof(out->cpus_why), "%s", s->cpuset_where);
    }
    if (s->best.q) {
        uint64_t r = rounded(s->best.q, s->best.p, rounding);
        if (r < 1)
            r = 1;
        if (r <= cpus) {
            cpus = r;
            snprintf(out->cpus_why, sizeof(out->cpus_why), "CPU quota %" PRIu64 "/%" PRIu64
                     " = %.2f of %s, %s", s->best.q, s->best.p, (double)s->best.q / (double)s->best.p,
                     s->best.where, rounding_word(rounding));
        }
    }
    out->cpus = cpus < 1 ? 1 : (unsigned)cpus;
    out->view_cpus = s->cpuset > 0 && s->cpuset < s->online ? (unsigned)s->cpuset : (unsigned)s->online;
    if (s->own.q && rounded(s->own.q, s->own.p, RV_ROUND_CEIL) < out->view_cpus)
        out->view_cpus = (unsigned)rounded(s->own.q, s->own.p, RV_ROUND_CEIL);
    if (s->mem_limit > 0) {
        out->has_mem = true;
        out->mem_mib = s->mem_limit >> 20;
        if (out->mem_mib == 0)
            out->mem_mib = 1;
        snprintf(out->mem_why, sizeof(out->mem_why), "%s", s->mem_why);
    } else {
        snprintf(out->mem_why, sizeof(out->mem_why), "no memory limit in the spec or its ancestors");
    }
}

int rv_limits_compute(json_t *spec, const struct rv_host *h, enum rv_rounding rounding,
                      bool systemd_hint, struct rv_limits *out, struct rv_error *err)
{
    struct sources s = { .cpuset = -1 };
    const char *cp = "";

    memset(out, 0, sizeof(*out));
    from_host(h, &s);
    if (from_spec(spec, &s, &cp, err) < 0 || from_ancestors(cp, h, systemd_hint, &s, err) < 0)
        return -1;
    combine(&s, rounding, out);
    /* GPUs: what gpus.c counts in the spec */
    out->gpus = rv_gpus_count(spec, h->dev_dir, out->gpus_why, sizeof(out->gpus_why));
    return 0;
}
