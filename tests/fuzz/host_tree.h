/* host_tree.h - a private host tree for the harnesses that compute limits: a
 * cgroup v1 hierarchy with a quota, a cpuset and a memory limit on a
 * Kubernetes-like pod cgroup, online CPUs, /proc/self/cgroup, and two NVIDIA
 * device nodes (plain files). Removed at exit. */
#ifndef RESVIEW_FUZZ_HOST_TREE_H
#define RESVIEW_FUZZ_HOST_TREE_H

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fuzz.h"
#include "resview/limits.h"

static char host_tree_dir[64];

static void host_tree_put(const char *rel, const char *text)
{
    char path[512], *slash;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", host_tree_dir, rel);
    for (slash = strchr(path + strlen(host_tree_dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        fuzz_die("host tree: cannot write %s", path);
    close(fd);
}

static int host_tree_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static void host_tree_cleanup(void)
{
    if (host_tree_dir[0])
        nftw(host_tree_dir, host_tree_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static void host_tree_create(struct rv_host *h)
{
    snprintf(host_tree_dir, sizeof(host_tree_dir), "/tmp/resview-fuzz-host.XXXXXX");
    if (!mkdtemp(host_tree_dir))
        fuzz_die("mkdtemp");
    atexit(host_tree_cleanup);
    host_tree_put("cg/cpu/cpu.cfs_quota_us", "-1\n");
    host_tree_put("cg/cpu/cpu.cfs_period_us", "100000\n");
    host_tree_put("cg/cpu/kubepods/cpu.cfs_quota_us", "800000\n");
    host_tree_put("cg/cpu/kubepods/cpu.cfs_period_us", "100000\n");
    host_tree_put("cg/cpu/kubepods/burstable/pod1/cpu.cfs_quota_us", "250000\n");
    host_tree_put("cg/cpu/kubepods/burstable/pod1/cpu.cfs_period_us", "100000\n");
    host_tree_put("cg/cpu/kubepods.slice/kubepods-burstable.slice/cpu.cfs_quota_us", "150000\n");
    host_tree_put("cg/cpu/kubepods.slice/kubepods-burstable.slice/cpu.cfs_period_us", "100000\n");
    host_tree_put("cg/cpuset/cpuset.cpus", "0-15\n");
    host_tree_put("cg/cpuset/cpuset.effective_cpus", "0-15\n");
    host_tree_put("cg/cpuset/kubepods/cpuset.effective_cpus", "0-5,8\n");
    host_tree_put("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");
    host_tree_put("cg/memory/kubepods/memory.limit_in_bytes", "8589934592\n");
    host_tree_put("cg/memory/kubepods/burstable/pod1/memory.limit_in_bytes", "536870912\n");
    host_tree_put("online", "0-15\n");
    host_tree_put("self_cgroup", "12:cpu,cpuacct:/kubepods\n11:memory:/kubepods\n0::/\n");
    host_tree_put("dev/nvidia0", "");
    host_tree_put("dev/nvidia1", "");
    host_tree_put("dev/nvidiactl", "");
    memset(h, 0, sizeof(*h));
    snprintf(h->cgroup_root, sizeof(h->cgroup_root), "%s/cg", host_tree_dir);
    snprintf(h->self_cgroup, sizeof(h->self_cgroup), "%s/self_cgroup", host_tree_dir);
    snprintf(h->cpu_online, sizeof(h->cpu_online), "%s/online", host_tree_dir);
    snprintf(h->dev_dir, sizeof(h->dev_dir), "%s/dev", host_tree_dir);
}

#endif
