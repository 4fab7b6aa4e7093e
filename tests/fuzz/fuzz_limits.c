/* fuzz_limits - rv_limits_compute on fuzzed cgroup files. Each input is
 * written into a private cgroup tree (v1 or v2 by the first byte) before the
 * computation:
 *   byte 0: bit 0 v2 layout, bits 1-2 rounding, bit 3 spec quota, bit 4 spec memory,
 *   then NUL-separated fields: cgroupsPath, quota (v1 cfs_quota_us or v2 cpu.max) of
 *   /kubepods, its period (v1), quota of /kubepods/pod, cpuset of /kubepods, memory
 *   limit of /kubepods, host online CPUs, /proc/self/cgroup, spec cpuset,
 *   NVIDIA_VISIBLE_DEVICES.
 * Invariants: success or a message; 1 <= cpus <= host online CPUs; a memory
 * limit is at least 1 MiB; explanations are terminated strings. */
#include "fuzz.h"
#include "host_tree.h"

enum { F_PATH, F_QUOTA, F_PERIOD, F_LEAF_QUOTA, F_CPUSET, F_MEM, F_ONLINE, F_SELF, F_SPEC_CPUS,
       F_NVD, N_FIELDS };

static struct rv_host host;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    host_tree_create(&host);
    host_tree_put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
    host_tree_put("v1/cpu/kubepods/pod/cpu.cfs_period_us", "100000\n");
    host_tree_put("v1/cpuset/kubepods/cpuset.cpus", "0-3\n");
    host_tree_put("v1/memory/kubepods/pod/memory.limit_in_bytes", "9223372036854771712\n");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *f[N_FIELDS];
    char *buf, *p;
    struct rv_error err = { 0 };
    struct rv_limits lim;
    struct rv_host h = host;
    json_t *spec;
    bool v2;
    int n = 0, online;

    if (size < 1)
        return 0;
    buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    for (p = buf; n < N_FIELDS && p < buf + size; p += strlen(p) + 1)
        f[n++] = p;
    while (n < N_FIELDS)
        f[n++] = "";
    v2 = data[0] & 1;

    if (v2) {
        host_tree_put("v2/kubepods/cpu.max", f[F_QUOTA]);
        host_tree_put("v2/kubepods/pod/cpu.max", f[F_LEAF_QUOTA]);
        host_tree_put("v2/kubepods/cpuset.cpus.effective", f[F_CPUSET]);
        host_tree_put("v2/kubepods/memory.max", f[F_MEM]);
    } else {
        host_tree_put("v1/cpu/kubepods/cpu.cfs_quota_us", f[F_QUOTA]);
        host_tree_put("v1/cpu/kubepods/cpu.cfs_period_us", f[F_PERIOD]);
        host_tree_put("v1/cpu/kubepods/pod/cpu.cfs_quota_us", f[F_LEAF_QUOTA]);
        host_tree_put("v1/cpuset/kubepods/cpuset.effective_cpus", f[F_CPUSET]);
        host_tree_put("v1/memory/kubepods/memory.limit_in_bytes", f[F_MEM]);
    }
    host_tree_put("online", f[F_ONLINE]);
    host_tree_put("self_cgroup", f[F_SELF]);
    snprintf(h.cgroup_root, sizeof(h.cgroup_root), "%s/%s", host_tree_dir, v2 ? "v2" : "v1");

    spec = json_pack("{s:{s:[s,s]},s:{s:s,s:{s:{s:I,s:I,s:s},s:{s:I}}}}",
                     "process", "env", "PATH=/bin",
                     (data[0] & 0x20) ? "NVIDIA_VISIBLE_DEVICES=all" : "X=1",
                     "linux", "cgroupsPath", f[F_PATH], "resources", "cpu",
                     "quota", (json_int_t)((data[0] & 8) ? 150000 : 0),
                     "period", (json_int_t)100000, "cpus", f[F_SPEC_CPUS],
                     "memory", "limit", (json_int_t)((data[0] & 16) ? (3 << 20) + 5 : -1));
    if (!spec)
        goto out; /* a field that is not UTF-8 */
    if (*f[F_NVD]) {
        char kv[256];
        snprintf(kv, sizeof(kv), "NVIDIA_VISIBLE_DEVICES=%s", f[F_NVD]);
        json_array_append_new(rv_json_path(spec, "process.env"), json_string(kv));
    }

    if (rv_limits_compute(spec, &h, (enum rv_rounding)((data[0] >> 1) % 3), false, &lim, &err) < 0) {
        FUZZ_CHECK(err.msg[0] && FUZZ_TERMINATED(err.msg), "failure without a message");
    } else {
        online = rv_cpulist_count(f[F_ONLINE]);
        if (online < 1)
            online = (int)sysconf(_SC_NPROCESSORS_ONLN);
        FUZZ_CHECK(lim.cpus >= 1 && lim.cpus <= (unsigned)online, "cpus %u, online %d", lim.cpus, online);
        FUZZ_CHECK(!lim.has_mem || lim.mem_mib >= 1, "a memory limit of 0 MiB");
        FUZZ_CHECK(FUZZ_TERMINATED(lim.cpus_why) && FUZZ_TERMINATED(lim.mem_why) &&
                   FUZZ_TERMINATED(lim.gpus_why), "an unterminated explanation");
    }
    json_decref(spec);
out:
    free(buf);
    return 0;
}
