/* Limits from the spec and from ancestor cgroups laid out in a temp dir. */
#define _GNU_SOURCE
#include "resview/limits.h"
#include "resview/spec.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

static char base[256];

static void put(const char *rel, const char *content)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    if (system(cmd) != 0)
        abort();
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(content, f);
    fclose(f);
}

static void host(struct rv_host *h, const char *root)
{
    rv_host_defaults(h);
    snprintf(h->cgroup_root, sizeof(h->cgroup_root), "%s/%s", base, root);
    snprintf(h->cpu_online, sizeof(h->cpu_online), "%s/online", base);
    snprintf(h->self_cgroup, sizeof(h->self_cgroup), "%s/self_cgroup", base);
    snprintf(h->dev_dir, sizeof(h->dev_dir), "%s/dev", base);
}

static int compute(const char *json, const struct rv_host *h, enum rv_rounding r, struct rv_limits *l,
                   struct rv_error *err)
{
    json_error_t je;
    json_t *spec = json_loads(json, 0, &je);
    if (!spec) {
        printf("# bad test json: %s\n", je.text);
        abort();
    }
    int rc = rv_limits_compute(spec, h, r, false, l, err);
    json_decref(spec);
    return rc;
}

int main(void)
{
    struct rv_host h;
    struct rv_limits l;
    struct rv_error err;
    char cg[4096];

    snprintf(base, sizeof(base), "/tmp/resview-unit-limits.XXXXXX");
    if (!mkdtemp(base))
        abort();
    put("online", "0-127\n");
    put("self_cgroup", "12:cpu,cpuacct:/user.slice/session-1.scope\n0::/user.slice\n");

    /* cpu list counting */
    ok(rv_cpulist_count("0-3,8,10-11\n") == 7, "cpulist 0-3,8,10-11");
    ok(rv_cpulist_count("5") == 1, "cpulist single");
    ok(rv_cpulist_count("") == -1 && rv_cpulist_count("3-1") == -1 && rv_cpulist_count("a") == -1 &&
       rv_cpulist_count("1,,2") == -1 && rv_cpulist_count("0-99999999") == -1, "cpulist rejects junk");
    /* the kernel writes ascending ranges without overlap: anything else counted twice */
    ok(rv_cpulist_count("0,0-3") == -1 && rv_cpulist_count("2,1") == -1 && rv_cpulist_count("0-3,") == -1,
       "cpulist rejects overlapping, descending and unfinished lists");

    /* cgroupsPath forms */
    ok(rv_cgroup_path("kubepods-burstable-pod12.slice:cri-containerd:abc", "cpu", "/nonexistent", RV_CG_RUNC, false, cg, sizeof(cg), &err) == 0, "systemd path parses");
    ok_str(cg, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice/cri-containerd-abc.scope", "systemd slice expansion");
    ok(rv_cgroup_path("system.slice:docker:abc", "cpu", "/x", RV_CG_RUNC, false, cg, sizeof(cg), &err) == 0, "docker systemd path");
    ok_str(cg, "/system.slice/docker-abc.scope", "docker systemd path expanded");
    ok(rv_cgroup_path(":podman:abc", "cpu", "/x", RV_CG_RUNC, false, cg, sizeof(cg), &err) == 0, "empty slice");
    ok_str(cg, "/system.slice/podman-abc.scope", "empty slice defaults to system.slice");
    rv_cgroup_path("/kubepods/burstable/podX/ID", "memory", "/x", RV_CG_RUNC, false, cg, sizeof(cg), &err);
    ok_str(cg, "/kubepods/burstable/podX/ID", "plain absolute path");
    {
        char self[600];
        snprintf(self, sizeof(self), "%s/self_cgroup", base);
        rv_cgroup_path("job1/step", "cpu", self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "/user.slice/session-1.scope/job1/step", "relative path joins our own cpu cgroup");
        rv_cgroup_path("job1/step", "cpuacct", self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "/user.slice/session-1.scope/job1/step", "... in the cpu,cpuacct hierarchy for cpuacct too");
        rv_cgroup_path("job1/step", NULL, self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "/job1/step", "... and the parent of our unified cgroup on v2 (runc's rule there)");
        rv_cgroup_path("job1/step", "memory", self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "/job1/step", "... and the root for a controller we are not in");
        rv_cgroup_path("", "cpu", self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "/user.slice/session-1.scope", "runc, empty path: our own cgroup on v1");
        rv_cgroup_path("", NULL, self, RV_CG_RUNC, false, cg, sizeof(cg), &err);
        ok_str(cg, "", "runc, empty path: the parent of our own on v2");
        rv_cgroup_path("", NULL, self, RV_CG_RUNC, true, cg, sizeof(cg), &err);
        ok_str(cg, "/system.slice", "runc --systemd-cgroup, empty path: system.slice");
        rv_cgroup_path("job1/step", "cpu", self, RV_CG_CRUN, false, cg, sizeof(cg), &err);
        ok_str(cg, "/job1/step", "crun: a relative path is below the root (v1)");
        rv_cgroup_path("job1/step", NULL, self, RV_CG_CRUN, false, cg, sizeof(cg), &err);
        ok_str(cg, "/job1/step", "... and on v2");
        rv_cgroup_path("", NULL, self, RV_CG_CRUN, true, cg, sizeof(cg), &err);
        ok_str(cg, "/system.slice", "crun --systemd-cgroup, empty path: system.slice too");
        rv_cgroup_path("", NULL, self, RV_CG_CRUN, false, cg, sizeof(cg), &err);
        ok_str(cg, "", "crun, empty path: the root itself");
        rv_cgroup_path("", NULL, self, RV_CG_OWN, true, cg, sizeof(cg), &err);
        ok_str(cg, "/user.slice", "the container's own process: its cgroup");
        rv_cgroup_path("", "cpu", self, RV_CG_OWN, false, cg, sizeof(cg), &err);
        ok_str(cg, "/user.slice/session-1.scope", "... per v1 controller");
    }
    ok(rv_cgroup_path("bad-.slice:p:n", "cpu", "/x", RV_CG_RUNC, false, cg, sizeof(cg), &err) < 0, "invalid slice rejected");

    /* v1: quota in the spec only */
    put("v1/cpu/.keep", "");
    put("v1/memory/.keep", "");
    put("v1/cpuset/.keep", "");
    host(&h, "v1");
    ok(compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000,\"period\":100000},\"memory\":{\"limit\":536870912}}}}",
               &h, RV_ROUND_CEIL, &l, &err) == 0, "spec quota 1.5");
    ok(l.cpus == 2, "1.5 CPUs rounded up is 2 (got %u)", l.cpus);
    ok(l.has_mem && l.mem_mib == 512, "512 MiB");
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000,\"period\":100000}}}}", &h, RV_ROUND_FLOOR, &l, &err);
    ok(l.cpus == 1, "floor 1.5 is 1");
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000,\"period\":100000}}}}", &h, RV_ROUND_NEAREST, &l, &err);
    ok(l.cpus == 2, "nearest 1.5 is 2");
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":140000,\"period\":100000}}}}", &h, RV_ROUND_NEAREST, &l, &err);
    ok(l.cpus == 1, "nearest 1.4 is 1");
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":10000}}}}", &h, RV_ROUND_FLOOR, &l, &err);
    ok(l.cpus == 1, "at least 1 CPU (0.1 floored)");
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":-1,\"period\":100000}}}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 128, "quota -1: no limit, host online CPUs");
    ok(!l.has_mem, "no memory limit");
    compute("{}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 128 && !l.has_mem && l.gpus == 0, "empty spec: host values");

    /* cpuset in the spec */
    compute("{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-3\",\"quota\":800000,\"period\":100000}}}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 4, "cpuset 0-3 beats quota 8");

    /* v1 ancestors: a Slurm job cgroup limited to 3 CPUs and 1 GiB */
    put("v1/cpu/slurm/job7/cpu.cfs_quota_us", "300000\n");
    put("v1/cpu/slurm/job7/cpu.cfs_period_us", "100000\n");
    put("v1/cpu/slurm/cpu.cfs_quota_us", "-1\n");
    put("v1/cpu/slurm/cpu.cfs_period_us", "100000\n");
    put("v1/memory/slurm/job7/memory.limit_in_bytes", "1073741824\n");
    put("v1/memory/slurm/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1/cpuset/slurm/job7/cpuset.effective_cpus", "0-5\n");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"/slurm/job7/step0/task\",\"resources\":{\"cpu\":{\"quota\":500000}}}}", &h, RV_ROUND_CEIL, &l, &err) == 0, "v1 ancestors");
    ok(l.cpus == 3, "ancestor quota 3 beats spec 5 (got %u: %s)", l.cpus, l.cpus_why);
    ok(strstr(l.cpus_why, "slurm/job7/cpu.cfs_quota_us") != NULL, "reason names the ancestor file");
    ok(l.has_mem && l.mem_mib == 1024, "ancestor memory 1 GiB (v1 unlimited ignored)");
    compute("{\"linux\":{\"cgroupsPath\":\"/slurm/job7/x\",\"resources\":{\"memory\":{\"limit\":268435456}}}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.mem_mib == 256, "spec memory below the ancestor wins");
    put("v1/cpuset/slurm/job7/cpuset.effective_cpus", "0-1\n");
    compute("{\"linux\":{\"cgroupsPath\":\"/slurm/job7/x\"}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 2, "ancestor cpuset 0-1");

    /* v1 with the cpu,cpuacct directory name */
    put("v1b/cpu,cpuacct/kubepods/pod1/cpu.cfs_quota_us", "50000\n");
    put("v1b/cpu,cpuacct/kubepods/pod1/cpu.cfs_period_us", "100000\n");
    host(&h, "v1b");
    compute("{\"linux\":{\"cgroupsPath\":\"/kubepods/pod1/c1\"}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 1, "cpu,cpuacct hierarchy, pod 0.5 CPU -> 1");

    /* v2 with a systemd cgroupsPath */
    put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
    put("v2/kubepods.slice/cpu.max", "max 100000\n");
    put("v2/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9.slice/cpu.max", "250000 100000\n");
    put("v2/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9.slice/memory.max", "2147483648\n");
    put("v2/kubepods.slice/memory.max", "max\n");
    put("v2/kubepods.slice/cpuset.cpus.effective", "0-63\n");
    host(&h, "v2");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"kubepods-burstable-pod9.slice:cri-containerd:abc\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0, "v2 systemd");
    ok(l.cpus == 3, "v2 pod cpu.max 2.5 -> 3 (got %u)", l.cpus);
    ok(l.has_mem && l.mem_mib == 2048, "v2 pod memory.max 2 GiB");


    /* Slurm task/cgroup on v1 (Debian's 22.05): each controller of a task at
     * its own path. cpu is not constrained (the task stays at cpu:/), the
     * cpuset at the step, memory at the task; limits sit at the job and step. */
    put("v1s/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("v1s/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    put("v1s/cpuset/cpuset.effective_cpus", "0-127\n");
    put("v1s/cpuset/slurm/cpuset.effective_cpus", "0-127\n");
    put("v1s/cpuset/slurm/uid_1000/job_42/cpuset.effective_cpus", "4-5\n");
    put("v1s/cpuset/slurm/uid_1000/job_42/step_0/cpuset.effective_cpus", "5\n");
    put("v1s/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1s/memory/slurm/uid_1000/job_42/memory.limit_in_bytes", "1073741824\n");
    put("v1s/memory/slurm/uid_1000/job_42/step_0/memory.limit_in_bytes", "536870912\n");
    put("v1s/memory/slurm/uid_1000/job_42/step_0/task_0/memory.limit_in_bytes", "9223372036854771712\n");
    put("slurm_cgroup", "13:freezer:/slurm/uid_1000/job_42/step_0\n"
                        "12:memory:/slurm/uid_1000/job_42/step_0/task_0\n"
                        "11:cpuset:/slurm/uid_1000/job_42/step_0\n"
                        "4:cpu,cpuacct:/\n1:name=systemd:/system.slice/slurmd.service\n0::/system.slice/slurmd.service\n");
    host(&h, "v1s");
    snprintf(h.self_cgroup, sizeof(h.self_cgroup), "%s/slurm_cgroup", base);
    ok(compute("{}", &h, RV_ROUND_CEIL, &l, &err) == 0, "Slurm task (v1): no cgroupsPath");
    ok(l.cpus == 1, "Slurm task: the step's cpuset of 1 CPU (got %u: %s)", l.cpus, l.cpus_why);
    ok(strstr(l.cpus_why, "job_42/step_0/cpuset.effective_cpus") != NULL, "... named in the reason");
    ok(l.has_mem && l.mem_mib == 512, "Slurm task: the step's 512 MiB above the task (got %llu: %s)",
       (unsigned long long)l.mem_mib, l.mem_why);
    ok(compute("{\"linux\":{\"cgroupsPath\":\"runc-ctr\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.cpus == 1 && l.mem_mib == 512, "Slurm task: a relative cgroupsPath sits below each controller's own path");
    put("v1s/cpu,cpuacct/cpu.cfs_quota_us", "50000\n");
    compute("{}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.cpus == 1 && strstr(l.cpus_why, "CPU quota") != NULL, "the cpu hierarchy is still read at its own path (the root)");
    put("v1s/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");

    /* the same on v2: one unified path, its ancestors */
    put("v2s/cgroup.controllers", "cpuset cpu io memory pids\n");
    put("v2s/system.slice/slurmstepd.scope/job_42/cpuset.cpus.effective", "2-3\n");
    put("v2s/system.slice/slurmstepd.scope/job_42/memory.max", "805306368\n");
    put("v2s/system.slice/slurmstepd.scope/job_42/step_0/memory.max", "max\n");
    put("v2s/system.slice/slurmstepd.scope/job_42/step_0/user/task_0/cpu.max", "max 100000\n");
    put("slurm_cgroup2", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n");
    host(&h, "v2s");
    snprintf(h.self_cgroup, sizeof(h.self_cgroup), "%s/slurm_cgroup2", base);
    ok(compute("{}", &h, RV_ROUND_CEIL, &l, &err) == 0 && l.cpus == 2 && l.has_mem && l.mem_mib == 768,
       "Slurm task (v2): the job's cpuset and memory.max (got %u, %llu)", l.cpus, (unsigned long long)l.mem_mib);

    /* a relative cgroupsPath on v2, placed as each runtime places it: a pod
     * at /system.slice/relpod limited to 0.5 CPU and 200 MiB, the runtime
     * started from containerd.service */
    put("v2r/cgroup.controllers", "cpuset cpu io memory pids\n");
    put("v2r/system.slice/relpod/cpu.max", "50000 100000\n");
    put("v2r/system.slice/relpod/memory.max", "209715200\n");
    put("self_v2r", "0::/system.slice/containerd.service\n");
    host(&h, "v2r");
    snprintf(h.self_cgroup, sizeof(h.self_cgroup), "%s/self_v2r", base);
    ok(compute("{\"linux\":{\"cgroupsPath\":\"relpod/c-runc\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.cpus == 1 && l.has_mem && l.mem_mib == 200,
       "runc on v2: a relative path is below the parent of our cgroup (got %u: %s)", l.cpus, l.cpus_why);
    ok(l.view_cpus == 128, "... LXCFS's views show the host's 128: the quota is the pod's, not the container's (got %u)",
       l.view_cpus);
    put("v2r/system.slice/relpod/c-own/cpu.max", "150000 100000\n");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"relpod/c-own\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.cpus == 1 && l.view_cpus == 2, "a quota of 1.5 on the container's own cgroup: LXCFS's views show 2 (got %u)",
       l.view_cpus);
    ok(compute("{\"linux\":{\"cgroupsPath\":\"relpod/c-x\",\"resources\":{\"cpu\":{\"quota\":300000}}}}",
               &h, RV_ROUND_CEIL, &l, &err) == 0 && l.cpus == 1 && l.view_cpus == 3,
       "the spec's quota is the container's own: 3 in the views (got %u)", l.view_cpus);
    put("v2r/system.slice/relpod/c-runc/memory.high", "104857600\n");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"relpod/c-runc\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.mem_mib == 200, "memory.high is not a limit: memory.max counts");
    h.cg_rule = RV_CG_CRUN;
    ok(compute("{\"linux\":{\"cgroupsPath\":\"system.slice/relpod/c-crun\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.cpus == 1 && l.has_mem && l.mem_mib == 200, "crun: a relative path is below the root");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"relpod/c-crun\"}}", &h, RV_ROUND_CEIL, &l, &err) == 0 &&
       l.cpus == 128 && !l.has_mem, "... so relpod/c-crun is not in the limited pod");

    /* gpus */
    put("dev/nvidia0", "");
    put("dev/nvidia1", "");
    put("dev/nvidiactl", "");
    compute("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.gpus == 2, "all = the host's nvidia[0-9]* nodes");
    compute("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,2,GPU-abc\"]}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.gpus == 3, "list of 3");
    compute("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"]}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.gpus == 0, "void = 0");
    compute("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=\"]}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.gpus == 0, "empty = 0");
    compute("{\"linux\":{\"devices\":[{\"path\":\"/dev/nvidia0\"},{\"path\":\"/dev/nvidiactl\"},{\"path\":\"/dev/nvidia3\"}]}}", &h, RV_ROUND_CEIL, &l, &err);
    ok(l.gpus == 2, "device nodes in linux.devices");

    /* wrong types are errors */
    ok(compute("{\"linux\":{\"resources\":{\"cpu\":{\"quota\":\"lots\"}}}}", &h, RV_ROUND_CEIL, &l, &err) < 0 &&
       strstr(err.msg, "quota") != NULL, "quota as a string: %s", err.msg);
    ok(compute("{\"linux\":{\"resources\":{\"cpu\":[]}}}", &h, RV_ROUND_CEIL, &l, &err) < 0, "cpu as an array");
    ok(compute("{\"linux\":{\"cgroupsPath\":7}}", &h, RV_ROUND_CEIL, &l, &err) < 0, "cgroupsPath as a number");
    ok(compute("{\"linux\":{\"cgroupsPath\":\"/a/../../etc\"}}", &h, RV_ROUND_CEIL, &l, &err) < 0, "cgroupsPath with ..");
    ok(compute("{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-x\"}}}}", &h, RV_ROUND_CEIL, &l, &err) < 0, "malformed cpuset");

    {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd) != 0)
            return 1;
    }
    return unit_done();
}
