/* chain.c - next runtime lookup and loop guard. */
#define _GNU_SOURCE
#include "resview/chain.h"
#include "resview/gpus.h"
#include "resview/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int identity_of(const struct stat *st, char *out, size_t size)
{
    return rv_snprintf(out, size, "%jx:%jx", (uintmax_t)st->st_dev, (uintmax_t)st->st_ino) < 0 ? -1 : 0;
}

static int identity(const char *path, char *out, size_t size)
{
    struct stat st;

    if (stat(path, &st) < 0)
        return -1;
    return identity_of(&st, out, size);
}

/* The runtime rv_chain_next found, for rv_chain_mark: no second stat. */
static struct {
    char path[PATH_MAX];
    char id[64];
} found;

static bool visited(const char *id)
{
    const char *list = getenv(RV_CHAIN_ENV);
    size_t n = strlen(id);

    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, id, n) == 0)
            return true;
        p = end ? end + 1 : p + len;
    }
    return false;
}

static bool executable(const char *path, struct stat *st)
{
    return stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0;
}

/* Resolve name through PATH (or take it as a path if it has a slash). */
static bool resolve(const char *name, char *out, size_t size, struct stat *st)
{
    const char *path = getenv("PATH");

    if (strchr(name, '/'))
        return executable(name, st) && rv_snprintf(out, size, "%s", name) >= 0;
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && rv_snprintf(out, size, "%.*s/%s", (int)len, p, name) >= 0 && executable(out, st))
            return true;
        p = end ? end + 1 : p + len;
    }
    return false;
}

int rv_chain_next(const struct rv_config *cfg, char *out, size_t size, struct rv_error *err)
{
    char self[64], id[64], tried[512] = "";
    size_t t = 0;

    if (identity("/proc/self/exe", self, sizeof(self)) < 0)
        self[0] = '\0';
    for (int i = 0; i < cfg->n_runtimes; i++) {
        const char *why = NULL;
        struct stat st;
        if (!resolve(cfg->runtimes[i], out, size, &st) || identity_of(&st, id, sizeof(id)) < 0)
            why = "not found";
        else if (strcmp(id, self) == 0)
            why = "is resview-runtime itself";
        else if (visited(id))
            why = "already called earlier in this chain";
        if (!why) {
            if (rv_snprintf(found.path, sizeof(found.path), "%s", out) < 0)
                found.path[0] = '\0';
            memcpy(found.id, id, sizeof(found.id));
            return 0;
        }
        int n = snprintf(tried + t, sizeof(tried) - t, "%s%s (%s)", t ? ", " : "",
                         cfg->runtimes[i], why);
        if (n > 0 && (size_t)n < sizeof(tried) - t)
            t += (size_t)n;
    }
    return rv_fail(err, 0, "no next runtime to run: %s; set \"runtimes\" in %s", tried,
                   cfg->path[0] ? cfg->path : RV_CONFIG_DEFAULT);
}

int rv_chain_mark(const char *path, struct rv_error *err)
{
    const char *old = getenv(RV_CHAIN_ENV);
    char id[64], buf[4096];

    if (found.path[0] && strcmp(path, found.path) == 0)
        memcpy(id, found.id, sizeof(id));
    else if (identity(path, id, sizeof(id)) < 0)
        return rv_fail(err, errno, "stat `%s`", path);
    if (rv_snprintf(buf, sizeof(buf), "%s%s%s", old && *old ? old : "", old && *old ? "," : "", id) < 0)
        return rv_fail(err, E2BIG, "%s is too long: a runtime chain that loops?", RV_CHAIN_ENV);
    if (setenv(RV_CHAIN_ENV, buf, 1) < 0)
        return rv_fail(err, errno, "setenv %s", RV_CHAIN_ENV);
    return 0;
}

/* A hook of NVIDIA's in the spec: its runtime already edited this container
 * (legacy mode: nvidia-container-runtime-hook, a.k.a. nvidia-container-toolkit;
 * CDI mode: the CDI spec's nvidia-cdi-hook / nvidia-ctk hooks; the stand-in
 * tests/lib/fake-nvidia-runtime: itself). That is the case when containerd ran
 * NVIDIA's runtime first and it runs resview next (its `runtimes`, which
 * NVIDIA's toolkit 1.18 takes from containerd's default runtime): NVIDIA's
 * runtime is done, and is not run a second time. */
static bool nvidia_hooked(json_t *spec)
{
    static const char *const stages[] = { "prestart", "createRuntime", "createContainer", "startContainer" };
    static const char *const names[] = { "nvidia-container-runtime", "nvidia-container-toolkit",
                                         "nvidia-cdi-hook", "nvidia-ctk" };
    json_t *hooks = json_object_get(spec, "hooks"), *h;
    size_t i;

    for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++)
        json_array_foreach(json_object_get(hooks, stages[s]), i, h) {
            const char *p = json_string_value(json_object_get(h, "path"));
            const char *base = p && strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
            for (size_t n = 0; base && n < sizeof(names) / sizeof(names[0]); n++)
                if (strncmp(base, names[n], strlen(names[n])) == 0)
                    return true;
        }
    return false;
}

int rv_chain_gpu(const struct rv_config *cfg, const char *bundle, const char *file, char *next, size_t size,
                 char *why, size_t why_size)
{
    char self[64], id[64], path[PATH_MAX];
    struct stat st;
    struct rv_spec spec;
    struct rv_error e;
    bool wanted, hooked;

    why[0] = '\0';
    if (!cfg->gpu_runtime[0])
        return 0;
    /* a spec that does not load is the shim's to report */
    if (rv_spec_load_file(&spec, bundle ? bundle : ".", file, NULL, &e) < 0)
        return 0;
    if (cfg->gpu_all) {
        snprintf(why, why_size, "gpu.containers is all");
        wanted = true;
    } else {
        wanted = rv_gpus_wanted(spec.root, why, why_size);
    }
    hooked = wanted && nvidia_hooked(spec.root);
    rv_spec_free(&spec);
    if (!wanted)
        return 0;
    if (!resolve(cfg->gpu_runtime, path, sizeof(path), &st) || identity_of(&st, id, sizeof(id)) < 0) {
        snprintf(why, why_size, "gpu.runtime `%.200s` not found", cfg->gpu_runtime);
        return -1;
    }
    if (identity("/proc/self/exe", self, sizeof(self)) == 0 && strcmp(id, self) == 0)
        return 0;
    if (visited(id))   /* NVIDIA's runtime called us: it is done with this container */
        return 0;
    if (hooked) {   /* containerd ran NVIDIA's runtime, which ran us */
        snprintf(why, why_size, "%s", "its hook is in the spec already: NVIDIA's runtime ran before resview");
        return 2;
    }
    if (rv_snprintf(next, size, "%s", path) < 0)
        return 0;
    memcpy(found.path, path, sizeof(found.path));
    memcpy(found.id, id, sizeof(found.id));
    return 1;
}
