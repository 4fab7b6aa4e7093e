/* nri_adjust.c - a CreateContainer of NRI as the spec the shim would edit,
 * and the shim's edits (runtime/edit.c, limits/) read back as NRI's
 * adjustment: the same code decides, from the same members. */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/spec.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define NRI_ANN_PREFIX "resview.io/"

/* Text from the runtime goes in as it came (no UTF-8 check: the shim's
 * loader does not refuse a spec for it either). */
static int set_str(json_t *obj, const char *key, const char *v)
{
    return json_object_set_new_nocheck(obj, key, json_string_nocheck(v ? v : "")) < 0 ? -1 : 0;
}

static int add_str(json_t *arr, const char *v)
{
    return json_array_append_new(arr, json_string_nocheck(v ? v : "")) < 0 ? -1 : 0;
}

static int annotations(json_t *spec, const nri_pod *pod, const nri_container *c)
{
    json_t *ann = json_object();

    if (!ann || json_object_set_new(spec, "annotations", ann) < 0)
        return -1;
    /* the pod's requests reach the container as containerd's
     * pod_annotations (resview.io/ ones) passes them to the shim; the
     * container's own win */
    for (size_t i = 0; pod && i < pod->n_annotations; i++) {
        const char *k = pod->annotations[i]->key;
        if (k && strncmp(k, NRI_ANN_PREFIX, strlen(NRI_ANN_PREFIX)) == 0 &&
            set_str(ann, k, pod->annotations[i]->value) < 0)
            return -1;
    }
    for (size_t i = 0; i < c->n_annotations; i++)
        if (c->annotations[i]->key && set_str(ann, c->annotations[i]->key, c->annotations[i]->value) < 0)
            return -1;
    return 0;
}

static int process(json_t *spec, const nri_container *c)
{
    json_t *env = json_array();

    if (!env || json_object_set_new(spec, "process", json_pack("{s:o}", "env", env)) < 0)
        return -1;
    for (size_t i = 0; i < c->n_env; i++)
        if (add_str(env, c->env[i]) < 0)
            return -1;
    return 0;
}

static int mounts(json_t *spec, const nri_container *c)
{
    json_t *arr = json_array();

    if (!arr || json_object_set_new(spec, "mounts", arr) < 0)
        return -1;
    for (size_t i = 0; i < c->n_mounts; i++) {
        const Nri__Pkg__Api__V1alpha1__Mount *m = c->mounts[i];
        json_t *o = json_object(), *opts = json_array();
        if (!o || !opts || json_array_append_new(arr, o) < 0 ||
            json_object_set_new(o, "options", opts) < 0) {
            json_decref(opts);
            return -1;
        }
        if (set_str(o, "destination", m->destination) < 0 || set_str(o, "type", m->type) < 0 ||
            set_str(o, "source", m->source) < 0)
            return -1;
        for (size_t j = 0; j < m->n_options; j++)
            if (add_str(opts, m->options[j]) < 0)
                return -1;
    }
    return 0;
}

/* linux.resources as the spec has them: only what limits.c reads. An
 * unsigned value beyond int64 is no limit anyone set (the spec's JSON
 * integers are int64 too). */
static int resources(json_t *lin, const Nri__Pkg__Api__V1alpha1__LinuxResources *r)
{
    json_t *res = json_object(), *cpu = json_object(), *mem = json_object();

    if (!res || !cpu || !mem || json_object_set_new(lin, "resources", res) < 0) {
        json_decref(res);
        json_decref(cpu);
        json_decref(mem);
        return -1;
    }
    if (json_object_set_new(res, "cpu", cpu) < 0 || json_object_set_new(res, "memory", mem) < 0)
        return -1;
    if (r && r->cpu) {
        if (r->cpu->quota && json_object_set_new(cpu, "quota", json_integer(r->cpu->quota->value)) < 0)
            return -1;
        if (r->cpu->period && r->cpu->period->value <= INT64_MAX &&
            json_object_set_new(cpu, "period", json_integer((json_int_t)r->cpu->period->value)) < 0)
            return -1;
        if (r->cpu->cpus && *r->cpu->cpus && set_str(cpu, "cpus", r->cpu->cpus) < 0)
            return -1;
    }
    if (r && r->memory && r->memory->limit &&
        json_object_set_new(mem, "limit", json_integer(r->memory->limit->value)) < 0)
        return -1;
    return 0;
}

/* The container's cgroupsPath; when the runtime left it out, the one it
 * makes below the pod's cgroup parent (systemd's slice:prefix:name when the
 * parent is a slice, a path otherwise): only its ancestors count. */
static int cgroups_path(json_t *lin, const nri_pod *pod, const nri_container *c)
{
    const char *cp = c->linux ? c->linux->cgroups_path : NULL;
    const char *parent = pod && pod->linux ? pod->linux->cgroup_parent : NULL;
    char buf[PATH_MAX];

    if ((!cp || !*cp) && parent && *parent && c->id && *c->id) {
        size_t n = strlen(parent);
        bool slice = n > 6 && strcmp(parent + n - 6, ".slice") == 0;
        if (rv_snprintf(buf, sizeof(buf), "%s%s%s", parent, slice ? ":cri-containerd:" : "/", c->id) >= 0)
            cp = buf;
    }
    return cp && *cp ? set_str(lin, "cgroupsPath", cp) : 0;
}

static int devices(json_t *lin, const nri_container *c)
{
    json_t *arr = json_array();

    if (!arr || json_object_set_new(lin, "devices", arr) < 0)
        return -1;
    for (size_t i = 0; c->linux && i < c->linux->n_devices; i++) {
        const Nri__Pkg__Api__V1alpha1__LinuxDevice *d = c->linux->devices[i];
        json_t *o = json_pack("{s:I,s:I}", "major", (json_int_t)d->major, "minor", (json_int_t)d->minor);
        if (!o || json_array_append_new(arr, o) < 0 || set_str(o, "path", d->path) < 0 ||
            set_str(o, "type", d->type) < 0)
            return -1;
    }
    return 0;
}

json_t *rv_nri_spec(const nri_pod *pod, const nri_container *c, struct rv_error *err)
{
    json_t *spec = json_object(), *lin = json_object();

    if (!spec || !lin || json_object_set_new(spec, "linux", lin) < 0) {
        json_decref(lin);
        goto nomem;
    }
    if (annotations(spec, pod, c) < 0 || process(spec, c) < 0 || mounts(spec, c) < 0 ||
        cgroups_path(lin, pod, c) < 0 || devices(lin, c) < 0 ||
        resources(lin, c->linux ? c->linux->resources : NULL) < 0)
        goto nomem;
    return spec;
nomem:
    json_decref(spec);
    rv_fail(err, ENOMEM, "NRI: the container's spec");
    return NULL;
}

/* Our hook entry, as the edit wrote it into the spec, into NRI's Hook. */
static int take_hook(struct rv_nri_adjustment *a, const struct rv_config *cfg, struct rv_error *err)
{
    json_t *arr = rv_json_path(a->spec, "hooks"), *h = NULL, *v;
    size_t i;

    arr = json_object_get(arr, cfg->hook_stage);
    json_array_foreach(arr, i, v)
        if (strcmp(json_string_value(json_object_get(v, "path")) ?: "", cfg->hook_path) == 0)
            h = v;
    if (!h)
        return rv_fail(err, 0, "NRI: the edit left no hook entry in hooks.%s", cfg->hook_stage);
    nri__pkg__api__v1alpha1__hook__init(&a->hook);
    nri__pkg__api__v1alpha1__hooks__init(&a->hooks);
    a->hook.path = (char *)json_string_value(json_object_get(h, "path"));
    json_array_foreach(json_object_get(h, "args"), i, v) {
        if (i >= RV_NRI_HOOK_ARGS || !json_is_string(v))
            return rv_fail(err, E2BIG, "NRI: the hook entry's args");
        a->hook_args[a->hook.n_args++] = (char *)json_string_value(v);
    }
    a->hook.args = a->hook_args;
    json_array_foreach(json_object_get(h, "env"), i, v) {
        if (i >= RV_NRI_HOOK_ENV || !json_is_string(v))
            return rv_fail(err, E2BIG, "NRI: the hook entry's env");
        a->hook_env[a->hook.n_env++] = (char *)json_string_value(v);
    }
    a->hook.env = a->hook_env;
    if (json_is_integer(json_object_get(h, "timeout"))) {
        nri__pkg__api__v1alpha1__optional_int__init(&a->timeout);
        a->timeout.value = json_integer_value(json_object_get(h, "timeout"));
        a->hook.timeout = &a->timeout;
    }
    a->hookp[0] = &a->hook;
    if (strcmp(cfg->hook_stage, "createRuntime") == 0) {
        a->hooks.create_runtime = a->hookp;
        a->hooks.n_create_runtime = 1;
    } else {
        a->hooks.prestart = a->hookp;
        a->hooks.n_prestart = 1;
    }
    a->adj.hooks = &a->hooks;
    return 0;
}

/* The variables the edit appended to process.env (from index first on). */
static int take_env(struct rv_nri_adjustment *a, size_t first, struct rv_error *err)
{
    json_t *env = rv_json_path(a->spec, "process.env");

    for (size_t i = first; i < json_array_size(env); i++) {
        const char *kv = json_string_value(json_array_get(env, i)), *eq;
        size_t n = a->adj.n_env;
        if (!kv || !(eq = strchr(kv, '=')) || n >= RV_MAX_VARS ||
            rv_snprintf(a->names[n], sizeof(a->names[n]), "%.*s", (int)(eq - kv), kv) < 0)
            return rv_fail(err, 0, "NRI: the edit's variable `%.64s`", kv ? kv : "?");
        nri__pkg__api__v1alpha1__key_value__init(&a->kv[n]);
        a->kv[n].key = a->names[n];
        a->kv[n].value = (char *)(eq + 1);
        a->kvp[n] = &a->kv[n];
        a->adj.n_env++;
    }
    a->adj.env = a->kvp;
    return 0;
}

/* FUSE needs /dev/fuse and the broker's seccomp listener, which this API
 * (NRI 0.8) cannot give: the request is taken out, said once, and the rest
 * served. */
static void drop_fuse(struct rv_nri_plugin *p, json_t *spec)
{
    struct rv_error e;

    if (rv_spec_request(spec, RV_ANN_FUSE, "RESVIEW_FUSE", &e) != 1)
        return;
    if (!p->fuse_said)
        rv_log(RV_WARN, "FUSE (resview.io/fuse): not supported in NRI mode (use the runtime class); "
               "such containers get the views and variables only");
    p->fuse_said = true;
    json_object_del(json_object_get(spec, "annotations"), RV_ANN_FUSE);
    json_t *env = rv_json_path(spec, "process.env");
    for (size_t i = json_array_size(env); i-- > 0;)
        if (strncmp(json_string_value(json_array_get(env, i)), "RESVIEW_FUSE=", 13) == 0)
            json_array_remove(env, i);
}

int rv_nri_adjust(struct rv_nri_plugin *p, const nri_pod *pod, const nri_container *c,
                  struct rv_nri_adjustment *a, struct rv_error *err)
{
    const struct rv_config *cfg = p->cfg;
    struct rv_edit_ctx ctx = { .cfg = cfg, .host = p->host, .hook_missing = p->hook_missing };
    size_t first;

    memset(a, 0, sizeof(*a));
    nri__pkg__api__v1alpha1__container_adjustment__init(&a->adj);
    if (!(a->spec = rv_nri_spec(pod, c, err)))
        return -1;
    /* the requests first: an invalid one refuses the container, as the shim does */
    if (rv_spec_request(a->spec, RV_ANN_LXCFS, "RESVIEW_LXCFS", err) == -2 ||
        rv_spec_request(a->spec, RV_ANN_ENV, "RESVIEW_ENV", err) == -2 ||
        rv_spec_request(a->spec, RV_ANN_GOMAXPROCS, RV_ENV_GOMAXPROCS, err) == -2 ||
        rv_spec_request(a->spec, RV_ANN_FUSE, "RESVIEW_FUSE", err) == -2)
        return -2;
    drop_fuse(p, a->spec);
    first = json_array_size(rv_json_path(a->spec, "process.env"));
    /* systemd_hint: only for an empty cgroupsPath, which the CRI never sends */
    if (rv_spec_edit(a->spec, &ctx, &a->res, err) < 0)
        return -1;
    if (take_env(a, first, err) < 0 || (a->res.lxcfs_on && take_hook(a, cfg, err) < 0))
        return -1;
    return 0;
}

void rv_nri_adjustment_free(struct rv_nri_adjustment *a)
{
    json_decref(a->spec);
    a->spec = NULL;
}
