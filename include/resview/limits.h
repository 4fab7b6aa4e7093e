/* limits.h - what the container may use: cpus, memory, gpus, computed from
 * the spec and from every ancestor cgroup that exists on the host. */
#ifndef RESVIEW_LIMITS_H
#define RESVIEW_LIMITS_H

#include <limits.h>
#include <stdint.h>
#include "resview/config.h"
#include "resview/json.h"

/* Where the runtime that places the container puts a relative or empty
 * linux.cgroupsPath (not of the form slice:prefix:name). */
enum rv_cg_rule {
    RV_CG_RUNC,   /* below our own cgroup on v1, below its parent on v2 */
    RV_CG_CRUN,   /* below the root */
    RV_CG_OWN,    /* self_cgroup is the container's own process: "" is its cgroup */
};

/* Where to look on the host; tests point these at temporary trees. */
struct rv_host {
    char cgroup_root[PATH_MAX];   /* /sys/fs/cgroup */
    char self_cgroup[PATH_MAX];   /* /proc/self/cgroup (empty or relative cgroupsPath) */
    enum rv_cg_rule cg_rule;      /* RV_CG_RUNC */
    char cpu_online[PATH_MAX];    /* /sys/devices/system/cpu/online */
    char dev_dir[PATH_MAX];       /* /dev (nvidia device nodes) */
};

struct rv_limits {
    unsigned cpus;
    char cpus_why[512];
    /* what LXCFS's CPU views (cpuinfo, stat, cpu/online) show: it counts the
     * cpuset and the quota of the container's own cgroup, not an ancestor's */
    unsigned view_cpus;
    bool has_mem;
    uint64_t mem_mib;
    char mem_why[512];
    unsigned gpus;
    char gpus_why[256];
};

void rv_host_defaults(struct rv_host *h);
/* systemd_hint: the runtime was given --systemd-cgroup. */
int rv_limits_compute(json_t *spec, const struct rv_host *h, enum rv_rounding rounding,
                      bool systemd_hint, struct rv_limits *out, struct rv_error *err);

/* Number of CPUs in a cpuset list ("0-3,8"); -1 if malformed. */
int rv_cpulist_count(const char *s);
/* Expand linux.cgroupsPath into the path, from the hierarchy root, of the
 * cgroup whose ancestors limit the container
 * ("/kubepods.slice/kubepods-burstable.slice/.../cri-containerd-ID.scope").
 * A relative or empty path is placed by rule (the cgroup the runtime then
 * creates for an empty one, named after the container, is left out: it does
 * not exist before the start and carries only the spec's own limits), from
 * our own cgroup (self_cgroup_file, as /proc/PID/cgroup) in the hierarchy of
 * controller ctrl ("cpu", "cpuset", "memory"; NULL: the unified hierarchy).
 * systemd: the runtime was given --systemd-cgroup. */
int rv_cgroup_path(const char *cgroups_path, const char *ctrl, const char *self_cgroup_file,
                   enum rv_cg_rule rule, bool systemd, char *out, size_t size,
                   struct rv_error *err);

#endif
