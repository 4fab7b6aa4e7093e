/* hook.c - resview-hook: LXCFS views for a starting container. */
#define _GNU_SOURCE
#include "resview/hook.h"
#include "resview/bounded.h"
#include "enroot_env.h"
#include "syscalls.h"
#include "resview/envvars.h"
#include "resview/limits.h"
#include "resview/log.h"
#include "resview/metrics.h"
#include "resview/proc.h"
#include "resview/spec.h"
#include "resview/state.h"
#include "resview/viewhold.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

int rv_hook_parse_state(const char *text, size_t len, struct rv_hook_state *st,
                        struct rv_error *err)
{
    cleanup_json json_t *root = NULL;
    json_t *id, *pid, *bundle;

    memset(st, 0, sizeof(*st));
    if (rv_json_parse(text, len, "state", &root, err) < 0)
        return -1;
    if (!json_is_object(root))
        return rv_fail(err, 0, "state: expected a JSON object");
    id = json_object_get(root, "id");
    pid = json_object_get(root, "pid");
    bundle = json_object_get(root, "bundle");
    if (!json_is_string(id) || !rv_safe_name(json_string_value(id)) ||
        rv_snprintf(st->id, sizeof(st->id), "%s", json_string_value(id)) < 0)
        return rv_fail(err, 0, "state: id: expected a container id");
    if (!json_is_integer(pid) || json_integer_value(pid) <= 0 ||
        json_integer_value(pid) > INT32_MAX)
        return rv_fail(err, 0, "state: pid: expected a positive integer");
    st->pid = (pid_t)json_integer_value(pid);
    if (!json_is_string(bundle) || json_string_value(bundle)[0] != '/' ||
        rv_snprintf(st->bundle, sizeof(st->bundle), "%s", json_string_value(bundle)) < 0)
        return rv_fail(err, 0, "state: bundle: expected an absolute path");
    return 0;
}

int rv_hook_rootfs(json_t *spec, const char *bundle, char *out, size_t size,
                   struct rv_error *err)
{
    return rv_hook_rootfs_path(json_string_value(rv_json_path(spec, "root.path")), bundle, out,
                               size, err);
}

int rv_hook_rootfs_path(const char *p, const char *bundle, char *out, size_t size,
                        struct rv_error *err)
{
    char joined[PATH_MAX];

    if (!p || !*p)
        return rv_fail(err, 0, "config.json: root.path: expected a path");
    if (rv_snprintf(joined, sizeof(joined), "%s%s%s", p[0] == '/' ? "" : bundle,
                    p[0] == '/' ? "" : "/", p) < 0)
        return rv_fail(err, ENAMETOOLONG, "config.json: root.path");
    /* Resolved on the host: the container's namespace sees the same path
     * until pivot_root, and the injector resolves it without symlinks. */
    if (!realpath(joined, out))
        return rv_fail(err, errno, "rootfs `%s`", joined);
    if (strlen(out) >= size)
        return rv_fail(err, ENAMETOOLONG, "rootfs `%s`", joined);
    return 0;
}

/* A user's record is at most RV_USER_RECORD_MAX bytes (repair removes larger
 * ones unread): what repair does not read goes first when it is too long (a
 * long rootfs path, many reasons). */
static int user_write(const struct rv_config *cfg, json_t *rec, char *name, size_t size,
                      struct rv_error *err)
{
    static const char *const optional[] = { "skipped", "why", "rootfs", "lxcfs_root" };

    for (size_t i = 0;; i++) {
        if (rv_state_user_write(cfg, rec, name, size, err) == 0)
            return 0;
        if (err->errnum != EFBIG || i == sizeof(optional) / sizeof(optional[0]))
            return -1;
        json_object_del(rec, optional[i]);
    }
}

json_t *rv_views_record(const struct rv_inject *req, const char *status, const char *why)
{
    json_t *rec, *wanted, *mounted, *skipped;

    char root_id[64];

    snprintf(root_id, sizeof(root_id), "%u:%u:%llu", major(req->root_dev), minor(req->root_dev),
             (unsigned long long)req->root_ino);
    rec = json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:I}", "pid", (json_int_t)req->pid, "start_time",
                    (json_int_t)req->start_time, "rootfs", req->rootfs, "root_id", root_id,
                    "lxcfs_root", req->lxcfs_root, "status", status, "time", (json_int_t)time(NULL));
    wanted = json_array();
    mounted = json_array();
    skipped = json_object();
    if (!rec || !wanted || !mounted || !skipped) {
        json_decref(rec);
        json_decref(wanted);
        json_decref(mounted);
        json_decref(skipped);
        return NULL;
    }
    for (unsigned i = 0; i < req->n; i++) {
        const struct rv_view *v = &req->views[i];
        json_array_append_new(wanted, json_string(v->dst));
        if (v->state == RV_VIEW_MOUNTED || v->state == RV_VIEW_PRESENT)
            json_array_append_new(mounted, json_string(v->dst));
        else if (v->why[0])
            json_object_set_new(skipped, v->dst, json_string(v->why));
    }
    json_object_set_new(rec, "wanted", wanted);
    json_object_set_new(rec, "mounted", mounted);
    json_object_set_new(rec, "skipped", skipped);
    if (req->want_mntns)
        json_object_set_new(rec, "mntns", json_integer((json_int_t)req->want_mntns));
    if (why && *why)
        json_object_set_new(rec, "why", json_string(why));
    return rec;
}

/* The state on stdin, at most RV_HOOK_STATE_MAX bytes: read into room that
 * grows as it comes (a runtime's is a few hundred bytes; a mapping of the
 * whole 1 MiB costs an mmap, a page fault and an munmap on every start). */
static int read_stdin(char **out, size_t *len, struct rv_error *err)
{
    cleanup_free char *buf = NULL;
    size_t have = 0, cap = 0;

    for (;;) {
        if (have == cap) {
            size_t ncap = cap ? 2 * cap : 4096;
            char *n;
            if (cap == RV_HOOK_STATE_MAX + 1)
                return rv_fail(err, 0, "state on stdin is larger than %u bytes", RV_HOOK_STATE_MAX);
            ncap = ncap < RV_HOOK_STATE_MAX + 1 ? ncap : RV_HOOK_STATE_MAX + 1;
            if (!(n = realloc(buf, ncap)))
                return rv_fail(err, ENOMEM, "read the state");
            buf = n;
            cap = ncap;
        }
        ssize_t r = read(STDIN_FILENO, buf + have, cap - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rv_fail(err, errno, "read the state from stdin");
        if (r == 0)
            break;
        have += (size_t)r;
    }
    buf[have] = '\0';   /* have < cap: the last read had room and found the end */
    *len = have;
    *out = move_ptr(buf);
    return 0;
}

struct hook_job {
    struct rv_lxcfs lx;
    struct rv_inject req;
    const char *root_path;      /* handed over by the shim (hook.h); NULL: read the spec */
    volatile bool probing;      /* the child is asking LXCFS, nothing else */
    bool lxcfs_stuck;           /* an earlier probe still waits for LXCFS: do not ask */
    int self_served;            /* rv_lxcfs_ns_check(): nonzero, no views (self_why) */
    char self_why[320];
    bool hung;                  /* LXCFS did not answer in time (else: down) */
    int ask;                    /* asked watch for its set (rv_viewhold_ask); -1 not */
    bool vouch_only;            /* no probe of our own: views only where watch vouches */
    int timeout_ms;             /* the bounded child's; 0: RV_HOOK_TIMEOUT_MS */
    enum rv_metric outcome;     /* for the node's counters (metrics.h) */
};

/* The set watch holds of the LXCFS mounted at lxcfs.root (its device from
 * the kernel's attributes: no round trip), kept for the clones; true when
 * watch saw that LXCFS answer within RV_VIEWHOLD_FRESH_MS: then it is live. */
static bool vouched(struct hook_job *job)
{
    struct rv_inject *req = &job->req;
    cleanup_close int fd = -1;
    struct statx sx;

    if (job->ask < 0 || req->legacy_bind ||
        (fd = open(req->lxcfs_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        rv_statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &sx) < 0)
        return false;
    /* asked as the hook started: by now watch has answered (its descriptor
     * is our 3, rv_run_bounded_fd) */
    rv_viewhold_take(3, makedev(sx.stx_dev_major, sx.stx_dev_minor), &req->held);
    req->have_held = req->held.dev != 0;
    if (!req->have_held || req->held.answered_ms > RV_VIEWHOLD_FRESH_MS)
        return false;
    job->lx.live = job->lx.mounted = true;
    job->lx.dev = req->held.dev;
    return true;
}

/* In the bounded child: find the live LXCFS files, then inject them. */
static int hook_child(void *arg)
{
    struct hook_job *job = arg;
    struct rv_inject *req = &job->req;
    struct stat rs;
    int r;

    /* The rootfs's identity, for a later repair even if LXCFS hangs below
     * (here: the rootfs may be on FUSE too, e.g. enroot's fuse-overlayfs). */
    if (stat(req->rootfs, &rs) == 0) {
        req->root_dev = rs.st_dev;
        req->root_ino = rs.st_ino;
    }
    if (rv_inject_check_host_ns(req) < 0)
        return 1;
    if (job->lxcfs_stuck && !job->vouch_only)   /* (vouch_only probes nothing) */
        return 0;
    /* watch vouches that LXCFS answered a moment ago: ask it nothing (from
     * here on nothing is a FUSE request: viewhold.h) */
    if (!vouched(job)) {
        if (job->vouch_only) {
            snprintf(job->lx.why, sizeof(job->lx.why), "`resview watch` does not vouch for the LXCFS "
                     "at `%s` (no answer from it within %d ms)", req->lxcfs_root, RV_VIEWHOLD_FRESH_MS);
            return 0;
        }
        job->probing = true;
        rv_lxcfs_probe_ex(req->lxcfs_root, false, &job->lx);
        job->probing = false;
    }
    if (!job->lx.live)
        return 0;
    req->live_dev = job->lx.dev;
    /* never into the namespace where the LXCFS that serves them runs (the
     * pid files only: a container being created holds no LXCFS unless it
     * joined a namespace that has one; without a scan it allocates nothing,
     * as this child must not) */
    {
        struct rv_lxcfs_servers srv;
        rv_lxcfs_servers_find(req->lxcfs_root, job->lx.dev, false, &srv);
        job->self_served = rv_lxcfs_ns_check(&srv, req->pid, job->self_why, sizeof(job->self_why));
        if (job->self_served)
            return 0;
    }
    r = rv_inject_run(req) < 0 ? 1 : 0;
    if (req->have_held)   /* not taken: it ended before the clones */
        rv_viewhold_close(&req->held);
    return r;
}

/* Record the views for repair: in containers/<id>/, or, for a hook that is
 * not root on the host (enroot as a user, a rootless engine's), in root's
 * users/ where repair checks the record against the kernel before acting on
 * it (nothing repairs from the user's own state_dir). */
static void record(const struct rv_config *cfg, const char *id, const struct rv_inject *req,
                   const char *status, const char *why)
{
    struct rv_error err;
    cleanup_json json_t *rec = rv_views_record(req, status, why);
    char name[64];

    if (!rec) {
        rv_log(RV_WARN, "record the views: out of memory");
        return;
    }
    if (rv_host_root() || !req->want_mntns) {
        if (rv_state_write(cfg, id, RV_VIEWS_FILE, rec, &err) < 0)
            rv_log(RV_WARN, "record the views: %s", err.msg);
    } else if (user_write(cfg, rec, name, sizeof(name), &err) < 0) {
        rv_log(RV_WARN, "record the views for `resview repair` (not root on the host): %s", err.msg);
    } else {
        rv_log(RV_DEBUG, "views recorded as %s/users/%s", cfg->host_state_dir, name);
    }
}

/* The container's mount namespace, for its record (repair.c) */
static void note_mntns(struct rv_inject *req)
{
    char ns[64];
    struct stat st;

    snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)req->pid);
    if (stat(ns, &st) == 0)
        req->want_mntns = st.st_ino;
}

/* After the bounded child: log, record, and the exit code. */
static int finish_views(const struct rv_config *cfg, const char *id, struct hook_job *job,
                        const struct rv_error *err)
{
    char why[RV_ERRMSG_MAX + 64];

    if (job->req.n_failed == job->req.n && job->req.n && !job->lx.live && !job->lx.why[0])
        snprintf(job->lx.why, sizeof(job->lx.why), "LXCFS at `%s` does not answer: %s",
                 cfg->lxcfs_root, err->msg);
    if (job->req.gone) {
        rv_log(RV_WARN, "LXCFS views: %s; nothing recorded", job->req.error);
        job->outcome = RV_M_NOVIEWS_GONE;
        return 0;
    }
    job->outcome = RV_M_NOVIEWS_HOST_NS;
    if (job->req.host_ns) {
        rv_log(cfg->lxcfs_required ? RV_ERROR : RV_WARN, "LXCFS views: %s; nothing recorded",
               job->req.error);
        return cfg->lxcfs_required ? 1 : 0;
    }
    if ((!job->lx.live || job->self_served) && !job->req.start_time) {
        char path[64];
        cleanup_close int piddir = -1;
        snprintf(path, sizeof(path), "/proc/%d", (int)job->req.pid);
        piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir < 0 || rv_pid_start_time(piddir, &job->req.start_time) < 0) {
            rv_log(RV_WARN, "LXCFS views: process %d is gone; nothing recorded", (int)job->req.pid);
            job->outcome = RV_M_NOVIEWS_GONE;
            return 0;
        }
    }
    if (job->lx.live && job->self_served) {
        rv_log(RV_WARN, "LXCFS views: %s", job->self_why);
        for (unsigned i = 0; i < job->req.n; i++)
            job->req.views[i].state = RV_VIEW_TODO;
        record(cfg, id, &job->req, "refused", job->self_why);
        job->outcome = RV_M_NOVIEWS_LXCFS_NS;
        return 0;
    }
    if (!job->lx.live) {
        rv_log(cfg->lxcfs_required ? RV_ERROR : RV_WARN,
               "LXCFS is down (%s): the container starts with the host's /proc values; "
               "`resview repair` attaches the views once LXCFS answers", job->lx.why);
        for (unsigned i = 0; i < job->req.n; i++)
            job->req.views[i].state = RV_VIEW_TODO;
        record(cfg, id, &job->req, "lxcfs-down", job->lx.why);
        job->outcome = job->hung ? RV_M_NOVIEWS_LXCFS_HUNG : RV_M_NOVIEWS_LXCFS_DOWN;
        return cfg->lxcfs_required ? 1 : 0;
    }
    if (job->req.error[0] || job->req.n_failed) {
        const char *first = "";
        for (unsigned i = 0; i < job->req.n && !*first; i++)
            if (job->req.views[i].state == RV_VIEW_FAILED)
                first = job->req.views[i].why;
        snprintf(why, sizeof(why), "%s%s%s", job->req.error, *job->req.error && *first ? "; " : "",
                 first);
        rv_log(cfg->lxcfs_required ? RV_ERROR : RV_WARN, "LXCFS views: %u failed: %s",
               job->req.n_failed, why);
        record(cfg, id, &job->req, job->req.n_mounted ? "partial" : "failed", why);
        job->outcome = job->req.n_mounted ? RV_M_VIEWS_PARTIAL : RV_M_NOVIEWS_FAILED;
        return cfg->lxcfs_required ? 1 : 0;
    }
    for (unsigned i = 0; i < job->req.n; i++)
        if (job->req.views[i].state == RV_VIEW_SKIPPED &&
            strcmp(job->req.views[i].why, "not offered by LXCFS") != 0)
            rv_log(RV_WARN, "LXCFS view /%s skipped: %s", job->req.views[i].dst,
                   job->req.views[i].why);
    rv_log(RV_DEBUG, "LXCFS views: %u mounted (%u cloned from files watch holds), %u already "
           "there, %u skipped (pid %d, rootfs `%s` found as the %s)", job->req.n_mounted,
           job->req.n_held, job->req.n_present, job->req.n_skipped,
           (int)job->req.pid, job->req.rootfs, job->req.root_how ? job->req.root_how : "?");
    record(cfg, id, &job->req, "ok", NULL);
    job->outcome = RV_M_VIEWS_OK;
    return 0;
}

/* Every candidate view, injected by the bounded child; then log and record. */
static int run_views(const struct rv_config *cfg, const char *id, struct hook_job *job)
{
    struct rv_error err = { 0 };
    bool stale;
    pid_t stuck = rv_state_lxcfs_stuck(cfg, &stale);
    int status, r;

    for (size_t i = 0; i < rv_lxcfs_ncandidates; i++)
        rv_inject_add(&job->req, rv_lxcfs_candidates[i], rv_lxcfs_candidates[i]);
    /* an earlier hook's probe still waits for LXCFS: so would ours (the child
     * then only notes the rootfs) */
    job->lxcfs_stuck = stuck != 0;
    r = rv_run_bounded_fd(0, job->ask, hook_child, job, job->timeout_ms ? job->timeout_ms : RV_HOOK_TIMEOUT_MS,
                          &status, &err);
    if (job->ask >= 0)
        close(job->ask);
    job->ask = -1;
    if (r < 0) {
        job->req.n_failed = job->req.n;
        job->hung = job->probing;
        if (job->lx.live)
            snprintf(job->req.error, sizeof(job->req.error), "%s", err.msg);
        /* left behind asking LXCFS (not on the container's own files): mark it */
        if (job->probing && rv_bounded_left_behind())
            rv_state_lxcfs_mark(cfg, rv_bounded_left_behind());
    } else if (stale && job->lx.live) {
        rv_state_lxcfs_unmark(cfg);
    }
    if (stuck && !job->lx.why[0])
        snprintf(job->lx.why, sizeof(job->lx.why), "LXCFS at `%s` does not answer (process %d, "
                 "an earlier probe, still waits for it)", cfg->lxcfs_root, (int)stuck);
    job->hung = job->hung || stuck;
    status = finish_views(cfg, id, job, &err);
    /* a start the hook fails (lxcfs.required) is refused, whatever the cause */
    rv_metrics_add(cfg->host_state_dir, status && cfg->lxcfs_required && job->outcome != RV_M_VIEWS_OK
                                            ? RV_M_NOVIEWS_REQUIRED : job->outcome);
    return status;
}

static int hook_oci_job(struct rv_config *cfg, struct hook_job *job)
{
    struct rv_error err = { 0 };
    struct rv_hook_state st;
    cleanup_free char *text = NULL;
    size_t len = 0;
    int r;

    if (read_stdin(&text, &len, &err) < 0 || rv_hook_parse_state(text, len, &st, &err) < 0) {
        rv_log(RV_ERROR, "%s", err.msg);
        return 1;
    }
    rv_log_set_id(st.id);
    job->req.pid = st.pid;
    job->req.replace_foreign = true;
    /* a rootless engine's container: recorded in users/, by its namespace */
    if (!rv_host_root())
        note_mntns(&job->req);
    job->req.legacy_bind = getenv("RESVIEW_LEGACY_BIND") && strcmp(getenv("RESVIEW_LEGACY_BIND"), "1") == 0;
    if (job->root_path) {
        /* the shim decided: views on, and where the rootfs is */
        r = rv_hook_rootfs_path(job->root_path, st.bundle, job->req.rootfs,
                                sizeof(job->req.rootfs), &err);
    } else {
        struct rv_spec spec;
        if (rv_spec_load(&spec, st.bundle, NULL, &err) < 0) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
        r = rv_spec_request(spec.root, RV_ANN_LXCFS, "RESVIEW_LXCFS", &err);
        if (r == -2) {
            rv_log(RV_ERROR, "%s", err.msg);
            rv_spec_free(&spec);
            return 1;
        }
        if (r == 0) {
            rv_log(RV_DEBUG, "LXCFS views: off for this container");
            rv_metrics_add(cfg->host_state_dir, RV_M_NOVIEWS_OPTED_OUT);
            rv_spec_free(&spec);
            return 0;
        }
        r = rv_hook_rootfs(spec.root, st.bundle, job->req.rootfs, sizeof(job->req.rootfs), &err);
        rv_spec_free(&spec);
    }
    if (r < 0 ||
        rv_snprintf(job->req.lxcfs_root, sizeof(job->req.lxcfs_root), "%s", cfg->lxcfs_root) < 0) {
        rv_log(RV_ERROR, "%s", r < 0 ? err.msg : "lxcfs.root: path too long");
        return 1;
    }
    return run_views(cfg, st.id, job);
}

/* enroot hooks.d: ENROOT_PID (the container's process), ENROOT_ROOTFS (its
 * rootfs, not pivoted yet), ENROOT_ENVIRON (a file of "K=V" lines the
 * container starts with; hooks append to it). Our own environment is the
 * job's (pyxis starts enroot with it, then copies the container's over it):
 * see enroot_env.h. Views as for OCI, then the resource variables computed
 * from the container's cgroups, for what neither environment sets. */
static int hook_enroot_job(struct rv_config *cfg, struct hook_job *job)
{
    const char *pid_s = getenv("ENROOT_PID"), *rootfs = getenv("ENROOT_ROOTFS");
    const char *environ_file = getenv("ENROOT_ENVIRON");
    cleanup_json json_t *cenv = NULL, *jenv = NULL, *have = NULL, *spec = NULL;
    struct rv_error err = { 0 };
    uint64_t pid;
    char id[64];
    int lx_on, env_on, gomaxprocs;

    if (!pid_s || rv_parse_u64(pid_s, &pid) < 0 || pid == 0 || pid > INT32_MAX || !rootfs ||
        !*rootfs || !environ_file || !*environ_file) {
        rv_log(RV_ERROR, "--enroot: ENROOT_PID, ENROOT_ROOTFS and ENROOT_ENVIRON must be set");
        return 1;
    }
    snprintf(id, sizeof(id), "enroot-%u", (unsigned)pid);
    rv_log_set_id(id);
    if (rv_enroot_environ_read(environ_file, &cenv, &err) < 0) {
        rv_log(RV_ERROR, "--enroot: %s", err.msg);
        return 1;
    }
    /* the requests come from the environments (no annotations) */
    jenv = rv_enroot_job_env(environ);
    have = jenv ? json_deep_copy(cenv) : NULL;
    if (!have || json_array_extend(have, jenv) < 0) {
        rv_log(RV_ERROR, "--enroot: out of memory");
        return 1;
    }
    lx_on = rv_enroot_request(jenv, cenv, "RESVIEW_LXCFS", &err);
    env_on = lx_on == -2 ? -2 : rv_enroot_request(jenv, cenv, "RESVIEW_ENV", &err);
    gomaxprocs = env_on == -2 ? -2 : rv_enroot_request(jenv, cenv, RV_ENV_GOMAXPROCS, &err);
    if (lx_on == -2 || env_on == -2 || gomaxprocs == -2) {
        rv_log(RV_ERROR, "--enroot: %s", err.msg);
        return 1;
    }
    if (env_on == 1 || (env_on < 0 && cfg->env_enabled)) {
        struct rv_host host;
        struct rv_limits lim;
        struct rv_env_plan plan;
        unsigned added;
        /* the container's variables first: NVIDIA_VISIBLE_DEVICES is the image's */
        spec = json_pack("{s:{s:O}}", "process", "env", have);
        rv_host_defaults(&host);
        snprintf(host.self_cgroup, sizeof(host.self_cgroup), "/proc/%u/cgroup", (unsigned)pid);
        host.cg_rule = RV_CG_OWN;
        if (!spec || rv_limits_compute(spec, &host, cfg->rounding, false, &lim, &err) < 0 ||
            (rv_env_plan(cfg, &lim, have, gomaxprocs, &plan),
             rv_enroot_append(environ_file, &plan, have, &added, &err)) < 0) {
            rv_log(RV_ERROR, "--enroot: variables: %s", spec ? err.msg : "out of memory");
            return 1;
        }
        rv_log(RV_INFO, "enroot: %u variables added (cpus=%u: %s)", added, lim.cpus, lim.cpus_why);
    }
    if (lx_on == 0) {
        rv_log(RV_DEBUG, "LXCFS views: off for this container");
        rv_metrics_add(cfg->host_state_dir, RV_M_NOVIEWS_OPTED_OUT);
        return 0;
    }
    job->req.pid = (pid_t)pid;
    job->req.replace_foreign = true;
    job->req.in_its_ns = true;   /* enroot runs its hooks in the container's namespaces */
    /* The container is its mount namespace: under pyxis the process enroot
     * names (`sh -c 'kill -STOP $$'`) ends as soon as the job's tasks have
     * joined it; repair finds the namespace through them. */
    note_mntns(&job->req);
    if (!realpath(rootfs, job->req.rootfs) ||
        rv_snprintf(job->req.lxcfs_root, sizeof(job->req.lxcfs_root), "%s", cfg->lxcfs_root) < 0) {
        rv_log(RV_ERROR, "--enroot: rootfs `%s`: %s", rootfs, strerror(errno));
        return 1;
    }
    return run_views(cfg, id, job);
}

/* A job in memory shared with the bounded child (see bounded.h), watch's set
 * asked for now and taken in the child: watch answers meanwhile
 * (viewhold.h). NULL: no memory (errno). */
static struct hook_job *job_new(const struct rv_config *cfg)
{
    struct hook_job *job = rv_shared_alloc(sizeof(*job));

    if (!job)
        return NULL;
    if (rv_viewhold_path(cfg, job->req.holder, sizeof(job->req.holder)) < 0)
        job->req.holder[0] = '\0';
    job->ask = rv_viewhold_ask(job->req.holder);
    return job;
}

/* Its end: a set not taken (no views to mount) closed; the memory kept
 * where a child left behind may still finish a request into it. */
static void job_end(struct hook_job *job)
{
    if (job->ask >= 0)
        close(job->ask);
    if (!rv_bounded_left_behind())
        rv_shared_free(job, sizeof(*job));
}

/* Run one hook mode with its job. */
static int with_shared_job(struct rv_config *cfg, int (*mode)(struct rv_config *, struct hook_job *),
                           const char *root_path)
{
    struct hook_job *job = job_new(cfg);
    int r;

    if (!job) {
        rv_log(RV_ERROR, "shared memory: %s", strerror(errno));
        return 1;
    }
    job->root_path = root_path;
    r = mode(cfg, job);
    job_end(job);
    return r;
}

int rv_hook_views_started(const struct rv_config *cfg, const char *id, pid_t pid,
                          unsigned long long start)
{
    struct hook_job *job = job_new(cfg);
    struct rv_error err;
    int r = 0;

    if (!job) {
        rv_log(RV_WARN, "LXCFS views: shared memory: %s; none given", strerror(errno));
        return 0;
    }
    job->vouch_only = true;
    job->timeout_ms = RV_VIEWS_STARTED_TIMEOUT_MS;
    job->req.replace_foreign = true;
    /* nothing looked up through a tenant's FUSE (a volume under /sys), no
     * mount at a target asked what it is: nothing here waits on a tenant */
    job->req.check_mounts = job->req.trusted_root = true;
    /* the process's root (pivoted), known by its identity */
    if (rv_inject_of_pid(&job->req, pid, &err) < 0)
        rv_log(RV_WARN, "LXCFS views: %s; none given", err.msg);
    else if (start && job->req.start_time != start)
        rv_log(RV_WARN, "LXCFS views: process %d is not the container's (started at %llu, "
               "its runtime says %llu); none given", (int)pid, job->req.start_time, start);
    else if (rv_snprintf(job->req.lxcfs_root, sizeof(job->req.lxcfs_root), "%s", cfg->lxcfs_root) < 0)
        rv_log(RV_WARN, "LXCFS views: lxcfs.root: path too long; none given");
    else
        r = run_views(cfg, id, job);
    job_end(job);
    return r;
}

int rv_hook_main(int argc, char **argv)
{
    struct rv_config cfg;
    struct rv_error err;

    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: resview-hook                 OCI hook (prestart or createRuntime): state JSON on\n"
               "                                    stdin, the container's config.json for the rest\n"
               "       resview-hook --rootfs=PATH   the same, root.path handed over by resview-runtime\n"
               "       resview-hook --enroot        enroot hook: ENROOT_PID, ENROOT_ROOTFS, ENROOT_ENVIRON\n");
        return 0;
    }
    rv_log_init("hook", NULL);
    if (rv_config_load(&cfg, &err) < 0) {
        rv_log(RV_ERROR, "%s (using built-in defaults)", err.msg);
        rv_config_defaults(&cfg);
    }
    rv_log_init("hook", &cfg);
    rv_log_stderr_fallback();
    rv_log_config_warnings(&cfg);
    if (argc > 1 && strcmp(argv[1], "--enroot") == 0)
        return with_shared_job(&cfg, hook_enroot_job, NULL);
    if (argc > 1 && strncmp(argv[1], RV_HOOK_ARG_ROOTFS, strlen(RV_HOOK_ARG_ROOTFS)) == 0 &&
        argv[1][strlen(RV_HOOK_ARG_ROOTFS)] && argc == 2)
        return with_shared_job(&cfg, hook_oci_job, argv[1] + strlen(RV_HOOK_ARG_ROOTFS));
    if (argc > 1) {
        rv_log(RV_ERROR, "unknown arguments (see resview-hook --help)");
        return 2;
    }
    return with_shared_job(&cfg, hook_oci_job, NULL);
}
