/* shim.c - bundle edits at create, variables for exec sessions (their CPU
 * and memory values as the container's cgroups give them at the exec). */
#define _GNU_SOURCE
#include "shim.h"
#include "resview/broker.h"
#include "resview/chain.h"
#include "resview/edit.h"
#include "resview/envvars.h"
#include "resview/fuse.h"
#include "resview/gpus.h"
#include "resview/hook.h"
#include "resview/log.h"
#include "resview/proc.h"
#include "resview/spec.h"
#include "resview/state.h"
#include "resview/viewhold.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The variables exec sessions must see: those we injected now, and those an
 * earlier resview in the same chain injected (same value, now "kept"). */
static json_t *injected_pairs(const struct rv_env_plan *plan, json_t *env)
{
    json_t *pairs = json_array();
    char kv[96];

    for (int i = 0; pairs && i < plan->n; i++) {
        const char *cur = rv_env_get(env, plan->items[i].name);
        if (plan->items[i].status == RV_VAR_INJECT ||
            (plan->items[i].status == RV_VAR_KEPT && cur && strcmp(cur, plan->items[i].value) == 0)) {
            snprintf(kv, sizeof(kv), "%s=%s", plan->items[i].name, plan->items[i].value);
            json_array_append_new(pairs, json_string(kv));
        }
    }
    return pairs;
}

/* A FUSE container's mount calls go to its own broker: start it before the
 * spec names its socket and the runtime connects. A second resview in a
 * runtime chain (RESVIEW_CHAIN set) keeps the broker the first one started. */
static int start_broker(const struct rv_config *cfg, const struct rv_args *a,
                        const struct rv_spec *spec, struct rv_error *err)
{
    json_t *root = spec->root;
    const char *chain = getenv(RV_CHAIN_ENV), *old = rv_fuse_listener(root);
    cleanup_json json_t *whole = NULL, *volumes = NULL;
    char path[PATH_MAX];

    if (!a->id)
        return rv_fail(err, 0, "FUSE: no container id on the command line");
    if (chain && *chain && old && rv_broker_serves(cfg, a->id, old))
        return rv_fuse_set_listener(root, old, a->id, err);
    /* The mounts and masked paths (where a FUSE mount may go) are read from
     * the text as the engine wrote it: members the edit never loads, so that
     * they are written back byte for byte. */
    if (rv_json_parse(spec->text, spec->len, "config.json", &whole, err) < 0)
        return -1;
    if (!(volumes = rv_fuse_volumes(whole)))
        return rv_fail(err, ENOMEM, "FUSE: volumes");
    if (rv_broker_spawn(cfg, a->id, NULL, volumes, path, sizeof(path), err) < 0)
        return -1;
    {
        /* for exec sessions, should this broker be killed (rv_broker_revive) */
        cleanup_json json_t *rec = json_pack("{s:s,s:O}", "socket", path, "volumes", volumes);
        struct rv_error e2;
        if (!rec || rv_state_write(cfg, a->id, RV_BROKER_RECORD, rec, &e2) < 0)
            rv_log(RV_WARN, "fuse: broker socket not recorded: %s", rec ? e2.msg : "no memory");
    }
    return rv_fuse_set_listener(root, path, a->id, err);
}

/* Where next keeps the state of its containers (runc and crun: <root>/<id>,
 * removed when the container is deleted or its create fails): its --root,
 * else runc's or crun's default for root; NULL when unknown. Lets repair tell
 * that a record without views belongs to no container. */
static const char *runtime_root(const struct rv_args *a, const char *next, char *buf, size_t size)
{
    const char *base = strrchr(next, '/') ? strrchr(next, '/') + 1 : next;

    if (a->root) {
        char cwd[PATH_MAX];
        if (a->root[0] == '/')
            return a->root;
        return getcwd(cwd, sizeof(cwd)) && rv_snprintf(buf, size, "%s/%s", cwd, a->root) >= 0
                   ? buf : NULL;
    }
    if (!rv_host_root())
        return NULL;
    if (strcmp(base, "runc") == 0 || strcmp(base, "nvidia-container-runtime") == 0)
        return "/run/runc";
    if (strcmp(base, "crun") == 0)
        return "/run/crun";
    return NULL;
}

/* The pid of the container's init from the state the next runtime keeps
 * (runc: <root>/<id>/state.json, init_process_pid; crun: <root>/<id>/status,
 * pid), and its start time as recorded there (0: none); 0 when unknown. */
static pid_t init_pid(const char *root, const char *id, unsigned long long *start)
{
    static const struct { const char *file, *key, *start; } where[] = {
        { "state.json", "init_process_pid", "init_process_start" },
        { "status", "pid", "process-start-time" },
    };
    char p[PATH_MAX];

    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        cleanup_free char *text = NULL;
        cleanup_json json_t *st = NULL;
        struct rv_error e;
        struct stat sb;
        size_t len;
        json_int_t pid;
        if (rv_snprintf(p, sizeof(p), "%s/%s/%s", root, id, where[i].file) < 0 ||
            rv_read_file_at(AT_FDCWD, p, RV_SPEC_MAX, &text, &len, &sb, &e) < 0 ||
            rv_json_parse(text, len, p, &st, &e) < 0)
            continue;
        pid = json_integer_value(json_object_get(st, where[i].key));
        if (pid > 0 && pid <= INT32_MAX) {
            json_int_t t = json_integer_value(json_object_get(st, where[i].start));
            *start = t > 0 ? (unsigned long long)t : 0;
            return (pid_t)pid;
        }
    }
    return 0;
}

/* Whether the views may come at `start` (rv_shim_start) instead of from a
 * hook: for `create` (`run` has no moment between), where the next runtime's
 * state tells the container's process, and not where lxcfs.required wants
 * the hook's own probe. */
static bool may_start_views(const struct rv_config *cfg, const struct rv_args *a, const char *root)
{
    return !cfg->lxcfs_required && root && a->sub && strcmp(a->sub, "create") == 0 && a->id &&
           rv_safe_name(a->id);
}

/* For a container whose edit wants the views and may have them at `start`:
 * where `resview watch` holds the LXCFS files (it vouches for LXCFS then, or
 * none are given, and no start waits on LXCFS), the record that has `start`
 * give them, written before the spec without the hook is. A second resview
 * in a runtime chain follows the first one's choice. false: the hook. */
static bool leave_for_start(const struct rv_config *cfg, const struct rv_args *a, const char *root)
{
    const char *chain = getenv(RV_CHAIN_ENV);
    cleanup_json json_t *rec = NULL;
    struct rv_error err;
    struct stat st;

    if (chain && *chain ? rv_state_stat(cfg, a->id, RV_START_RECORD, &st) < 0 : !rv_viewhold_served(cfg))
        return false;
    if (!(rec = json_pack("{s:s}", "runtime_root", root)) ||
        rv_state_write(cfg, a->id, RV_START_RECORD, rec, &err) < 0) {
        rv_log(RV_WARN, "LXCFS views not left for `start` (%s): through the hook",
               rec ? err.msg : "no memory");
        return false;
    }
    return true;
}

int rv_shim_create(const struct rv_config *cfg, const struct rv_host *host,
                   const struct rv_args *a, const char *next, bool fuse_runtime,
                   struct rv_error *err)
{
    char file[PATH_MAX];
    const char *other = NULL;
    struct rv_fuse_runtime rt;
    struct rv_edit_result res;
    struct rv_spec spec;
    bool changed = false, fuse;
    int r = -1;

    /* crun --config FILE: taken from the working directory (config.json alone
     * is the bundle's), as crun does */
    if (a->config && strcmp(a->config, "config.json") != 0) {
        if (!realpath(a->config, file))
            return rv_fail(err, errno, "--config `%s`", a->config);
        other = file;
    }
    char bundle[PATH_MAX], root_buf[PATH_MAX];
    const char *root = runtime_root(a, next, root_buf, sizeof(root_buf));
    bool hook_missing = access(cfg->hook_path, X_OK) != 0;
    struct rv_edit_ctx ctx = { .cfg = cfg, .host = host, .systemd_hint = a->systemd_cgroup,
                               .views_at_start = may_start_views(cfg, a, root),
                               .fuse_runtime = fuse_runtime };

    ctx.hook_missing = hook_missing && !ctx.views_at_start;
    if (realpath(a->bundle ? a->bundle : ".", bundle))
        ctx.bundle = bundle;
    if (rv_spec_load_file(&spec, a->bundle ? a->bundle : ".", other, &rv_gpus_spec_extra, err) < 0)
        goto out;
    /* The FUSE grant edits linux.seccomp, which is loaded only then, and needs
     * to know what the next runtime can do (a refusal fails in the edit). */
    if (rv_fuse_wanted(spec.root, cfg, fuse_runtime, &fuse, err) == 0 && fuse) {
        if (rv_spec_load_all(&spec, err) < 0 || rv_fuse_runtime_probe(cfg, next, &rt, err) < 0)
            goto out;
        ctx.fuse_rt = &rt;
    }
    if (rv_spec_edit(spec.root, &ctx, &res, err) < 0 ||
        (res.fuse_broker && start_broker(cfg, a, &spec, err) < 0)) {
        rv_wrap(err, "bundle `%s`", spec.bundle);
        goto out;
    }
    if (res.lxcfs_on && ctx.views_at_start && !leave_for_start(cfg, a, root)) {
        /* the hook after all, as the edit adds it (none where it cannot run) */
        if (hook_missing) {
            res.lxcfs_on = false;
            res.hook_missing = true;
        } else if (rv_spec_set_hook(spec.root, cfg, ctx.bundle, true, err) < 0)
            goto out;
    }
    if (rv_spec_save(&spec, &changed, err) < 0)
        goto out;
    if (!getenv(RV_CHAIN_ENV) || !*getenv(RV_CHAIN_ENV))   /* once per start: the first shim */
        rv_edit_count(cfg, &res);
    if (res.hook_missing)
        rv_log(RV_WARN, "no LXCFS views: the hook `%s` cannot be run; the container starts without them",
               cfg->hook_path);
    if (res.env_on) {
        char mem[32] = "none";
        if (res.limits.has_mem)
            snprintf(mem, sizeof(mem), "%llu", (unsigned long long)res.limits.mem_mib);
        rv_log(RV_INFO, "create: cpus=%u (%s), mem_mib=%s, gpus=%u%s", res.limits.cpus,
               res.limits.cpus_why, mem, res.limits.gpus, changed ? "" : " (spec unchanged)");
    }
    if (res.env_on && a->id && rv_safe_name(a->id)) {
        cleanup_json json_t *rec = json_pack("{s:o}", "env",
                                             injected_pairs(&res.plan, rv_json_path(spec.root, "process.env")));
        struct rv_error e2;
        if (rec && root)
            json_object_set_new(rec, "runtime_root", json_string(root));
        if (!rec || rv_state_write(cfg, a->id, "env", rec, &e2) < 0)
            rv_log(RV_WARN, "record variables for exec sessions: %s", rec ? e2.msg : "out of memory");
    }
    r = 0;
out:
    rv_spec_free(&spec);
    return r;
}

bool rv_shim_stopped(const struct rv_args *a, const char *next)
{
    char buf[PATH_MAX], proc[64];
    const char *root = runtime_root(a, next, buf, sizeof(buf));
    unsigned long long want = 0, now = 0;
    cleanup_close int dir = -1;
    pid_t pid;

    if (!root || !a->id || !rv_safe_name(a->id) || !(pid = init_pid(root, a->id, &want)) || !want)
        return false;
    snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
    if ((dir = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return errno == ENOENT;
    return rv_pid_start_time(dir, &now) == 0 && now != want;
}

void rv_shim_start(const struct rv_config *cfg, const struct rv_args *a)
{
    cleanup_json json_t *rec = NULL;
    unsigned long long start = 0;
    struct rv_error err;
    const char *root;
    pid_t pid = 0;

    if (!a->id || !rv_safe_name(a->id))
        return;
    if (rv_state_read(cfg, a->id, RV_START_RECORD, &rec, &err) < 0) {
        if (errno != ENOENT)
            rv_log(RV_WARN, "LXCFS views: %s; none given", err.msg);
        return;
    }
    root = json_string_value(json_object_get(rec, "runtime_root"));
    if (!root || !(pid = init_pid(root, a->id, &start)))
        rv_log(RV_WARN, "LXCFS views: the container's process is not in its runtime's state "
               "(`%s`); none given", root ? root : "");
    else
        rv_hook_views_started(cfg, a->id, pid, start);
    if (rv_state_unlink(cfg, a->id, RV_START_RECORD) < 0)
        rv_log(RV_WARN, "LXCFS views: `start` record not removed: %s", strerror(errno));
}

/* An update (an in-place pod resize, docker update, runc update, which need
 * not pass through us) may have changed the container's limits since create:
 * the recorded variables that come from its CPUs and memory get the values
 * its init's cgroups give now. Left as recorded when those cannot be read. */
static void refresh_pairs(const struct rv_config *cfg, json_t *rec, const char *id, json_t *pairs)
{
    const char *root = json_string_value(json_object_get(rec, "runtime_root"));
    cleanup_json json_t *spec = json_object(), *none = json_array();
    struct rv_env_plan plan;
    struct rv_limits lim;
    struct rv_host host;
    struct rv_error err;
    json_t *v;
    size_t i;
    pid_t pid;
    unsigned long long start;

    if (!root || !spec || !none || (pid = init_pid(root, id, &start)) == 0)
        return;
    rv_host_defaults(&host);
    snprintf(host.self_cgroup, sizeof(host.self_cgroup), "/proc/%d/cgroup", (int)pid);
    host.cg_rule = RV_CG_OWN;
    if (rv_limits_compute(spec, &host, cfg->rounding, false, &lim, &err) < 0) {
        rv_log(RV_DEBUG, "exec: the container's limits now: %s (the recorded values are used)", err.msg);
        return;
    }
    /* no GPU from an empty spec: those variables keep their recorded value.
     * GOMAXPROCS as asked for: it is in the record only if create set it, by
     * env.vars or by resview.io/gomaxprocs "true" */
    rv_env_plan(cfg, &lim, none, 1, &plan);
    json_array_foreach(pairs, i, v) {
        const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
        for (int k = 0; eq && k < plan.n; k++) {
            char pair[96];
            if (plan.items[k].status != RV_VAR_INJECT || strlen(plan.items[k].name) != (size_t)(eq - kv) ||
                strncmp(plan.items[k].name, kv, (size_t)(eq - kv)) != 0)
                continue;
            snprintf(pair, sizeof(pair), "%s=%s", plan.items[k].name, plan.items[k].value);
            if (strcmp(pair, kv) != 0) {
                rv_log(RV_INFO, "exec: %s now (was %s): the container's limits changed", pair, kv);
                json_array_set_new(pairs, i, json_string(pair));
            }
            break;
        }
    }
}

int rv_shim_exec(const struct rv_config *cfg, const struct rv_args *a, struct rv_error *err)
{
    cleanup_json json_t *rec = NULL, *proc = NULL;
    json_t *pairs;
    cleanup_free char *text = NULL, *out = NULL, *dup = NULL;
    cleanup_close int dfd = -1;
    struct stat st;
    size_t len;
    json_t *env;
    char *dir, *base;

    if (!a->process || !a->id)
        return 0;
    if (rv_state_read(cfg, a->id, "env", &rec, err) < 0)
        return errno == ENOENT ? 0 : -1;
    /* {"env": [...], ...}; a bare array from resview 0.1.0 */
    pairs = json_is_object(rec) ? json_object_get(rec, "env") : rec;
    if (!json_is_array(pairs))
        return rv_fail(err, 0, "record of container variables: expected an array");
    if (json_is_object(rec))
        refresh_pairs(cfg, rec, a->id, pairs);
    dup = strdup(a->process);
    if (!dup)
        return rv_fail(err, ENOMEM, "exec");
    base = basename(dup);
    dir = dirname(strdupa(a->process));
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return rv_fail(err, errno, "exec: open `%s`", dir);
    if (rv_read_file_at(dfd, base, RV_SPEC_MAX, &text, &len, &st, err) < 0 ||
        rv_json_parse(text, len, "process.json", &proc, err) < 0)
        return rv_wrap(err, "exec");
    if (!json_is_object(proc))
        return rv_fail(err, 0, "exec: `%s`: expected a JSON object", a->process);
    env = rv_json_array_at(proc, "env", "exec: process env", err);
    if (!env || rv_env_add_missing(env, pairs, err) < 0 || rv_json_dump(proc, &out, &len, err) < 0)
        return -1;
    /* the engine's file for one exec: not kept, not durable */
    return rv_write_atomic_at(dfd, base, out, len, &st, 0, err);
}
