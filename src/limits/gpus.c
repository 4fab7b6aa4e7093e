/* gpus.c - the GPUs a container gets, and whether it asks for one (gpus.h).
 * NVIDIA's runtime takes one request source, in this order: CDI annotations,
 * else the volume-mounts list, else NVIDIA_VISIBLE_DEVICES; what it adds comes
 * on top of the device nodes already in linux.devices. */
#define _GNU_SOURCE
#include "resview/gpus.h"
#include "resview/spec.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <stdio.h>
#include <string.h>

#define MAX_NAMES 256
#define SLOT_BITS 10   /* the names' hash table: at most a quarter full */
#define SLOTS (1u << SLOT_BITS)

/* Distinct device names of one request; `all` is noted apart. A name is
 * looked up in a hash table, not compared with each kept one: a tenant's
 * list of megabytes costs its length. */
struct request {
    const char *names[MAX_NAMES];
    size_t lens[MAX_NAMES];
    uint16_t slot[SLOTS];   /* 1 + the name's index; 0: free */
    unsigned n;
    bool all, none;
};

/* FNV-1a from a basis the kernel drew for this process (AT_RANDOM, no
 * system call): a tenant cannot choose names that all fall in one slot. */
static size_t hash(const char *s, size_t n)
{
    static uint64_t basis;
    uint64_t h;

    if (!basis) {
        const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
        basis = 14695981039346656037ull;
        for (int i = 0; r && i < 8; i++)
            basis = (basis ^ r[15 - i]) * 1099511628211ull;
    }
    h = basis;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return (size_t)((h ^ h >> 32) * 0x9e3779b97f4a7c15ull >> (64 - SLOT_BITS));
}

static void add_name(struct request *r, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!n)
        return;
    if ((n == 4 && memcmp(s, "void", 4) == 0) || (n == 4 && memcmp(s, "none", 4) == 0)) {
        r->none = true;
        return;
    }
    if (n == 3 && memcmp(s, "all", 3) == 0) {
        r->all = true;
        return;
    }
    /* once full, no name changes the count */
    if (r->n == MAX_NAMES)
        return;
    size_t h = hash(s, n);
    for (; r->slot[h]; h = (h + 1) & (SLOTS - 1)) {
        unsigned i = r->slot[h] - 1u;
        if (r->lens[i] == n && memcmp(r->names[i], s, n) == 0)
            return;
    }
    r->slot[h] = (uint16_t)(r->n + 1);
    r->names[r->n] = s;
    r->lens[r->n++] = n;
}

static unsigned host_gpus(const char *dev_dir)
{
    DIR *dir = opendir(dev_dir);
    struct dirent *de;
    unsigned n = 0;

    while (dir && (de = readdir(dir)))
        if (strncmp(de->d_name, "nvidia", 6) == 0 && de->d_name[6] &&
            strspn(de->d_name + 6, "0123456789") == strlen(de->d_name + 6))
            n++;
    if (dir)
        closedir(dir);
    return n;
}

/* What a request amounts to: void/none wins (NVIDIA's runtime then adds
 * nothing), then all, then the distinct names. */
static unsigned request_count(const struct request *r, const char *dev_dir)
{
    if (r->none)
        return 0;
    return r->all ? host_gpus(dev_dir) : r->n;
}

const char *const rv_gpus_vars[] = { "NVIDIA_VISIBLE_DEVICES", "CUDA_VERSION", "NVIDIA_REQUIRE_CUDA", NULL };

bool rv_gpus_cdi_annotation(const char *key)
{
    return strncmp(key, "cdi.k8s.io/", 11) == 0 || strncmp(key, "nvidia.cdi.k8s.io/", 18) == 0;
}

/* VENDOR/CLASS=NAME with VENDOR ending in nvidia.com, CLASS gpu or mig. */
static void add_cdi_names(struct request *r, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n), *slash = memchr(p, '/', n);
        if (eq && slash && slash < eq) {
            size_t vl = (size_t)(slash - p), cl = (size_t)(eq - slash - 1);
            bool nvidia = vl >= 10 && memcmp(slash - 10, "nvidia.com", 10) == 0 &&
                          (vl == 10 || slash[-11] == '.');
            bool gpu = (cl == 3 && memcmp(slash + 1, "gpu", 3) == 0) ||
                       (cl == 3 && memcmp(slash + 1, "mig", 3) == 0);
            if (nvidia && gpu && (size_t)(p + n - eq - 1) == 3 && memcmp(eq + 1, "all", 3) == 0)
                r->all = true;
            else if (nvidia && gpu)
                add_name(r, p, n);   /* the qualified name: distinct across vendors */
        }
        p += n + (p[n] == ',');
    }
}

static void from_annotations(json_t *spec, struct request *r)
{
    json_t *ann = json_object_get(spec, "annotations"), *v;
    const char *key;

    json_object_foreach(ann, key, v)
        if (rv_gpus_cdi_annotation(key) && json_is_string(v))
            add_cdi_names(r, json_string_value(v));
}

/* The device plugin's volume-mounts strategy: /dev/null mounted at
 * RV_GPU_MOUNTS_DIR/NAME for each device (imex channels are no GPUs). */
static void from_mounts(json_t *spec, struct request *r)
{
    json_t *mounts = json_object_get(spec, "mounts"), *m;
    const size_t dl = sizeof(RV_GPU_MOUNTS_DIR) - 1;
    size_t i;

    json_array_foreach(mounts, i, m) {
        const char *src = json_string_value(json_object_get(m, "source"));
        const char *dst = json_string_value(json_object_get(m, "destination"));
        if (!src || !dst || strcmp(src, "/dev/null") != 0 || strncmp(dst, RV_GPU_MOUNTS_DIR, dl) != 0 ||
            dst[dl] != '/')
            continue;
        const char *name = dst + dl;
        while (*name == '/')
            name++;
        if (*name && strncmp(name, "imex", 4) != 0)
            add_name(r, name, strlen(name));
    }
}

static void from_env(const char *nvd, struct request *r)
{
    for (const char *p = nvd; *p;) {
        size_t n = (size_t)(strchrnul(p, ',') - p);
        add_name(r, p, n);
        p += n + (p[n] == ',');
    }
}

/* mounts, which only from_mounts reads, and only for the volume-mounts
 * strategy (NVIDIA_VISIBLE_DEVICES names its directory): the spec loader
 * adds it then. */
static const struct rv_json_want mounts_member[] = { { "mounts", NULL }, { NULL, NULL } };

static bool mounts_wanted(json_t *spec)
{
    json_t *env = rv_json_path(spec, "process.env");
    const char *nvd = json_is_array(env) ? rv_env_get(env, "NVIDIA_VISIBLE_DEVICES") : NULL;

    return nvd && strncmp(nvd, RV_GPU_MOUNTS_DIR, sizeof(RV_GPU_MOUNTS_DIR) - 1) == 0;
}

const struct rv_spec_extra rv_gpus_spec_extra = { .members = mounts_member, .wanted = mounts_wanted };

static unsigned device_nodes(json_t *spec)
{
    json_t *devs = rv_json_path(spec, "linux.devices"), *d;
    unsigned n = 0;
    size_t i;

    json_array_foreach(devs, i, d) {
        const char *path = json_string_value(json_object_get(d, "path"));
        if (path && strncmp(path, "/dev/nvidia", 11) == 0 && path[11] &&
            strspn(path + 11, "0123456789") == strlen(path + 11))
            n++;
    }
    return n;
}

unsigned rv_gpus_count(json_t *spec, const char *dev_dir, char *why, size_t size)
{
    json_t *env = rv_json_path(spec, "process.env");
    const char *nvd = json_is_array(env) ? rv_env_get(env, "NVIDIA_VISIBLE_DEVICES") : NULL;
    struct request r = { 0 };
    unsigned req = 0, nodes = device_nodes(spec);
    char src[160] = "";

    from_annotations(spec, &r);
    if (r.n || r.all || r.none) {
        req = request_count(&r, dev_dir);
        snprintf(src, sizeof(src), "CDI annotations: %u%s", req, r.all ? " (all: the host's)" : "");
    } else {
        from_mounts(spec, &r);
        if (r.n || r.all || r.none) {
            req = request_count(&r, dev_dir);
            snprintf(src, sizeof(src), "device plugin volume mounts under %s: %u%s", RV_GPU_MOUNTS_DIR,
                     req, r.all ? " (all: the host's)" : "");
        } else if (nvd) {
            from_env(nvd, &r);
            req = request_count(&r, dev_dir);
            if (r.all && !r.none)
                snprintf(src, sizeof(src), "NVIDIA_VISIBLE_DEVICES=all: %u nvidia device nodes in %s", req,
                         dev_dir);
            else if (!req)
                snprintf(src, sizeof(src), "NVIDIA_VISIBLE_DEVICES=%.64s", nvd);
            else
                snprintf(src, sizeof(src), "%u entries in NVIDIA_VISIBLE_DEVICES", req);
        }
    }
    if (nodes > req || !src[0]) {
        snprintf(why, size, "%u NVIDIA device nodes in linux.devices", nodes);
        return nodes;
    }
    snprintf(why, size, "%s", src);
    return req;
}

bool rv_gpus_wanted(json_t *spec, char *why, size_t size)
{
    json_t *env = rv_json_path(spec, "process.env");
    const char *nvd = NULL;
    json_t *ann = json_object_get(spec, "annotations"), *v, *devs = rv_json_path(spec, "linux.devices"), *d;
    const char *key;
    size_t i;

    if (json_is_array(env)) {
        nvd = rv_env_get(env, "NVIDIA_VISIBLE_DEVICES");
        if (nvd) {
            struct request r = { 0 };
            from_env(nvd, &r);
            if (!r.none && (r.n || r.all)) {
                snprintf(why, size, "NVIDIA_VISIBLE_DEVICES=%.64s", nvd);
                return true;
            }
        } else if (rv_env_get(env, "CUDA_VERSION") && *rv_env_get(env, "CUDA_VERSION") &&
                   !rv_env_get(env, "NVIDIA_REQUIRE_CUDA")) {
            snprintf(why, size, "a legacy CUDA image (CUDA_VERSION without NVIDIA_REQUIRE_CUDA)");
            return true;
        }
    }
    json_object_foreach(ann, key, v)
        if (rv_gpus_cdi_annotation(key)) {
            snprintf(why, size, "CDI annotation %.64s", key);
            return true;
        }
    json_array_foreach(devs, i, d) {
        const char *path = json_string_value(json_object_get(d, "path"));
        if (path && strncmp(path, "/dev/nvidia", 11) == 0) {
            snprintf(why, size, "%.64s in linux.devices", path);
            return true;
        }
    }
    snprintf(why, size, "no GPU asked for");
    return false;
}
