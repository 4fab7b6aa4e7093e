/* nri_adjust.c - a CreateContainer of NRI as the spec the shim would edit,
 * and the shim's edits (runtime/edit.c, limits/) read back as NRI's
 * adjustment: the same code decides, from the same members. */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/fuse.h"
#include "resview/gpus.h"
#include "resview/hook.h"
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

/* The annotations the edits read: the requests (resview.io/), the CDI
 * ones (gpus.c) and the Kubernetes namespace (fuse.c). A tenant's megabytes
 * of others are never copied. */
static bool read_annotation(const char *k)
{
    return strncmp(k, NRI_ANN_PREFIX, strlen(NRI_ANN_PREFIX)) == 0 || rv_gpus_cdi_annotation(k) ||
           strcmp(k, RV_ANN_K8S_NS_CONTAINERD) == 0 || strcmp(k, RV_ANN_K8S_NS_CRIO) == 0;
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
        if (c->annotations[i]->key && read_annotation(c->annotations[i]->key) &&
            set_str(ann, c->annotations[i]->key, c->annotations[i]->value) < 0)
            return -1;
    return 0;
}

/* The names of the variables the edits read, each looked up by name
 * (rv_env_get: the first of a name counts): the requests (RESVIEW_LXCFS,
 * _ENV, _GOMAXPROCS, _FUSE: edit.c, fuse.c), env.vars' names (a variable
 * the container sets is kept), SLURM_JOB_ID (envvars.c) and gpus.c's.
 * Bucketed by length: a variable costs its length, whatever its name. */
#define READ_FIXED 5
struct read_vars {
    const char *name[RV_MAX_VARS + READ_FIXED + 4];
    bool seen[RV_MAX_VARS + READ_FIXED + 4];
    uint8_t from[66];   /* names of length L: name[from[L] .. from[L + 1]) */
    size_t n;
};

static void read_vars_init(struct read_vars *rv, const struct rv_config *cfg)
{
    static const char *const fixed[READ_FIXED] = { "RESVIEW_LXCFS", "RESVIEW_ENV", RV_ENV_GOMAXPROCS,
                                                   "RESVIEW_FUSE", "SLURM_JOB_ID" };
    const char *all[RV_MAX_VARS + READ_FIXED + 4];
    uint8_t len[RV_MAX_VARS + READ_FIXED + 4], at[66] = { 0 };
    size_t n = 0;

    for (int i = 0; i < READ_FIXED; i++)
        all[n++] = fixed[i];
    for (int i = 0; rv_gpus_vars[i] && n < sizeof(all) / sizeof(all[0]); i++)
        all[n++] = rv_gpus_vars[i];
    for (int i = 0; i < cfg->n_vars && n < sizeof(all) / sizeof(all[0]); i++)
        all[n++] = cfg->vars[i].name;
    /* a counting sort by length (names are shorter than 64) */
    for (size_t i = 0; i < n; i++)
        at[(len[i] = (uint8_t)strnlen(all[i], 64)) + 1]++;
    for (size_t l = 1; l < 66; l++)
        at[l] = (uint8_t)(at[l] + at[l - 1]);
    memcpy(rv->from, at, sizeof(at));
    for (size_t i = 0; i < n; i++)
        rv->name[at[len[i]]++] = all[i];
    rv->n = n;
    memset(rv->seen, 0, sizeof(rv->seen));
}

/* Whether kv (n bytes, up to its first NUL: the C string protobuf-c gives)
 * is the first variable of a name the edits read. */
static bool read_var_n(struct read_vars *rv, const char *kv, size_t n)
{
    const char *nul = memchr(kv, '\0', n);
    const char *eq = memchr(kv, '=', nul ? (size_t)(nul - kv) : n);
    size_t len = eq ? (size_t)(eq - kv) : 0;

    if (!eq || len > 64)
        return false;
    for (size_t i = rv->from[len]; i < rv->from[len + 1]; i++)
        if (!rv->seen[i] && memcmp(rv->name[i], kv, len) == 0)
            return rv->seen[i] = true;
    return false;
}

static int process(json_t *spec, const nri_container *c, const struct rv_config *cfg)
{
    json_t *env = json_array();
    struct read_vars rv;

    if (!env || json_object_set_new(spec, "process", json_pack("{s:o}", "env", env)) < 0)
        return -1;
    read_vars_init(&rv, cfg);
    for (size_t i = 0; i < c->n_env; i++)
        if (c->env[i] && read_var_n(&rv, c->env[i], strlen(c->env[i])) && add_str(env, c->env[i]) < 0)
            return -1;
    return 0;
}

/* ---- the request cut down to what the edits read, before it is unpacked:
 * protobuf-c's unpack costs an allocation per variable ---- */

enum { DROP, COPY, NEST_POD, NEST_CONTAINER };
enum trim_kind { TRIM_REQUEST, TRIM_POD, TRIM_CONTAINER };

int rv_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static size_t put_varint(uint8_t *o, uint64_t v)
{
    size_t n = 0;

    do {
        o[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

int rv_pb_next_field(const uint8_t **p, const uint8_t *end, uint64_t *key, const uint8_t **data,
                     uint64_t *len)
{
    *data = NULL;
    *len = 0;
    if (rv_pb_varint(p, end, key) < 0)
        return -1;
    switch (*key & 7) {
    case 0:
        return rv_pb_varint(p, end, len);
    case 1:
    case 5:
        if ((size_t)(end - *p) < ((*key & 7) == 1 ? 8u : 4u))
            return -1;
        *p += (*key & 7) == 1 ? 8 : 4;
        return 0;
    case 2:
        if (rv_pb_varint(p, end, len) < 0 || *len > (uint64_t)(end - *p))
            return -1;
        *data = *p;
        *p += *len;
        return 0;
    default:
        return -1;
    }
}

/* A map entry's key (field 1, the last one: protobuf's rule), as the C
 * string protobuf-c makes of it, its first 255 bytes (longer ones match no
 * name, only prefixes). -1 when the entry is malformed. */
static int entry_key(const uint8_t *p, const uint8_t *end, char *key, size_t size)
{
    const uint8_t *data;
    uint64_t k, len;

    key[0] = '\0';
    while (p < end) {
        if (rv_pb_next_field(&p, end, &k, &data, &len) < 0)
            return -1;
        if (k == (1 << 3 | 2)) {
            const uint8_t *nul = memchr(data, 0, len);
            size_t n = nul ? (size_t)(nul - data) : len;
            n = n < size - 1 ? n : size - 1;
            memcpy(key, data, n);
            key[n] = '\0';
        }
    }
    return 0;
}

/* What becomes of field f (wire type wt, content data..+len) of a message of
 * kind: only the members the edits, the log and the handler check read. */
static int trim_action(struct read_vars *rv, enum trim_kind kind, uint64_t f, unsigned wt,
                       const uint8_t *data, size_t len)
{
    char key[256];

    if (kind == TRIM_REQUEST && (f == 1 || f == 2))
        return wt != 2 ? -1 : f == 1 ? NEST_POD : NEST_CONTAINER;
    if (kind == TRIM_POD && (f == 1 || f == 6 || f == 7 || f == 8)) {
        /* id, annotations (resview.io/ ones), runtime_handler, linux */
        if (wt != 2)
            return -1;
        if (f != 6)
            return COPY;
        if (entry_key(data, data + len, key, sizeof(key)) < 0)
            return -1;
        return strncmp(key, NRI_ANN_PREFIX, strlen(NRI_ANN_PREFIX)) == 0 ? COPY : DROP;
    }
    if (kind == TRIM_CONTAINER && (f == 1 || f == 6 || f == 8 || f == 9 || f == 11)) {
        /* id, annotations, env, mounts, linux */
        if (wt != 2)
            return -1;
        if (f == 8)
            return read_var_n(rv, (const char *)data, len) ? COPY : DROP;
        if (f != 6)
            return COPY;
        if (entry_key(data, data + len, key, sizeof(key)) < 0)
            return -1;
        return read_annotation(key) ? COPY : DROP;
    }
    return DROP;
}

/* The fields of [p, end) kept, written from o on (o <= p: in place, each
 * byte written at or before where it was read). The bytes written, or -1
 * when the message is malformed (protobuf-c would refuse it too). */
static long trim(struct read_vars *rv, enum trim_kind kind, const uint8_t *p, const uint8_t *end,
                 uint8_t *o)
{
    uint8_t *o0 = o;

    while (p < end) {
        const uint8_t *start = p, *data, *after_key = p;
        uint64_t key, len;
        if (rv_pb_next_field(&p, end, &key, &data, &len) < 0)
            return -1;
        rv_pb_varint(&after_key, end, &key);   /* read once already: where its length starts */
        int act = trim_action(rv, kind, key >> 3, (unsigned)(key & 7), data, (size_t)len);
        if (act < 0)
            return -1;
        if (act == COPY) {
            if (o != start)
                memmove(o, start, (size_t)(p - start));
            o += p - start;
        } else if (act == NEST_POD || act == NEST_CONTAINER) {
            size_t kn = (size_t)(after_key - start), room = (size_t)(data - after_key);
            memmove(o, start, kn);
            o += kn;
            long n = trim(rv, act == NEST_POD ? TRIM_POD : TRIM_CONTAINER, data, data + len, o + room);
            if (n < 0)
                return -1;
            size_t ln = put_varint(o, (uint64_t)n);   /* n <= len: no longer than room */
            if (ln != room)
                memmove(o + ln, o + room, (size_t)n);
            o += ln + (size_t)n;
        }
    }
    return o - o0;
}

long rv_nri_create_trim(const struct rv_config *cfg, uint8_t *buf, size_t len)
{
    struct read_vars rv;

    if (!len)
        return 0;   /* protobuf-c's empty bytes: no buffer at all */
    read_vars_init(&rv, cfg);
    return trim(&rv, TRIM_REQUEST, buf, buf + len, buf);
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

const char *rv_nri_handler(const nri_pod *pod)
{
    return pod && pod->runtime_handler ? pod->runtime_handler : "";
}

bool rv_nri_serves(const struct rv_config *cfg, const char *handler)
{
    if (strcmp(handler, "resview") == 0)
        return false;
    for (int i = 0; i < cfg->n_nri_handlers; i++)
        if (strcmp(cfg->nri_handlers[i], handler) == 0)
            return true;
    return false;
}

json_t *rv_nri_spec(const nri_pod *pod, const nri_container *c, const struct rv_config *cfg,
                    struct rv_error *err)
{
    json_t *spec = json_object(), *lin = json_object();

    if (!spec || !lin || json_object_set_new(spec, "linux", lin) < 0) {
        json_decref(lin);
        goto nomem;
    }
    if (annotations(spec, pod, c) < 0 || process(spec, c, cfg) < 0 || mounts(spec, c) < 0 ||
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
    if (!rv_nri_serves(cfg, rv_nri_handler(pod)))
        return 1;
    a->views_wanted = true;
    nri__pkg__api__v1alpha1__container_adjustment__init(&a->adj);
    if (!(a->spec = rv_nri_spec(pod, c, cfg, err)))
        return -1;
    a->views_wanted = rv_spec_request(a->spec, RV_ANN_LXCFS, "RESVIEW_LXCFS", err) != 0;
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
    if (take_env(a, first, err) < 0)
        return -1;
    /* the views by the plugin itself at StartContainer, no hook, where watch
     * holds the LXCFS files (it vouches for LXCFS then, or none are given);
     * not where lxcfs.required wants the hook's own probe, nor under a
     * request timeout that leaves no room for the bound */
    a->views_at_start = a->res.lxcfs_on && p->start_views_ok && !cfg->lxcfs_required &&
                        (p->request_timeout_ms <= 0 || p->request_timeout_ms >= 2 * RV_VIEWS_STARTED_TIMEOUT_MS) &&
                        c->id && rv_safe_name(c->id) && strlen(c->id) < RV_NRI_START_ID &&
                        rv_nri_starts_room() && p->start_views_ok(p);
    if (a->res.lxcfs_on && !a->views_at_start && take_hook(a, cfg, err) < 0)
        return -1;
    return 0;
}

void rv_nri_adjustment_free(struct rv_nri_adjustment *a)
{
    json_decref(a->spec);
    a->spec = NULL;
}
