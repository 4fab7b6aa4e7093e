/* nri_sync.c - Synchronize: at each registration the runtime names every
 * pod and container it has. A container created while no plugin of ours was
 * registered started bare: no variables (they can only be given at create)
 * and no views. Each running one that resview serves (the same decision as
 * at CreateContainer: rv_nri_adjust, its pod's runtime handler and the
 * opt-outs included) and that has no
 * record gets a views record (as the hook writes it, naming the process, its
 * mount namespace and its root) and repair attaches the views (repair.c:
 * the process pinned by its start time, the views resolved inside its root
 * by the injector, in bounded children). That work runs in a child of the
 * plugin once the answer is sent, so the runtime never waits for it, nor do
 * the calls that follow. Each such container is said once: in the log, and
 * in a file RV_NRI_SYNC_FILE of its record that doctor lists. */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/hook.h"
#include "resview/inject.h"
#include "resview/log.h"
#include "resview/metrics.h"
#include "resview/proc.h"
#include "resview/repair.h"
#include "resview/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#define SYNC_MAX 4096   /* containers looked at per registration */
#define SYNC_MSGS_MAX 64   /* messages of one synchronization kept (then decided) */

struct sync_one {
    char id[128];
    pid_t pid;
};

struct rv_nri_sync {
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest **msgs;   /* until the last one */
    size_t n_msgs;
    struct sync_one *c;
    size_t n;
};

static const nri_pod *pod_of(const struct rv_nri_sync *s, const char *id)
{
    for (size_t m = 0; m < s->n_msgs; m++)
        for (size_t i = 0; i < s->msgs[m]->n_pods; i++)
            if (s->msgs[m]->pods[i]->id && strcmp(s->msgs[m]->pods[i]->id, id) == 0)
                return s->msgs[m]->pods[i];
    return NULL;
}

/* Whether resview gives c its views: running, a process, and the edit of
 * CreateContainer would (a runtime handler served, not opted out, LXCFS on). */
static bool served(struct rv_nri_plugin *p, const nri_pod *pod, const nri_container *c)
{
    struct rv_nri_adjustment a;
    struct rv_error err;
    bool yes;

    if (c->state != NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING || c->pid == 0 ||
        !c->id || !rv_safe_name(c->id) || strlen(c->id) >= sizeof(((struct sync_one *)0)->id) || !pod)
        return false;
    yes = rv_nri_adjust(p, pod, c, &a, &err) == 0 && a.res.lxcfs_on;
    rv_nri_adjustment_free(&a);
    return yes;
}

/* The last message came: the containers to look at, from all of them. */
static void decide(struct rv_nri_plugin *p, struct rv_nri_sync *s)
{
    size_t total = 0, skipped = 0;

    for (size_t m = 0; m < s->n_msgs; m++)
        total += s->msgs[m]->n_containers;
    s->c = calloc(total < SYNC_MAX ? total + 1 : SYNC_MAX, sizeof(*s->c));
    for (size_t m = 0; m < s->n_msgs && s->c; m++) {
        for (size_t i = 0; i < s->msgs[m]->n_containers; i++) {
            const nri_container *c = s->msgs[m]->containers[i];
            if (!served(p, pod_of(s, c->pod_sandbox_id ?: ""), c)) {
                skipped++;
                continue;
            }
            if (s->n == SYNC_MAX)
                break;
            snprintf(s->c[s->n].id, sizeof(s->c[s->n].id), "%s", c->id);
            s->c[s->n++].pid = (pid_t)c->pid;
        }
    }
    rv_log(RV_INFO, "NRI: Synchronize: %zu containers, %zu running that resview serves (those without "
           "a record get their views), %zu others left alone", total, s->n, skipped);
    for (size_t m = 0; m < s->n_msgs; m++)
        nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(s->msgs[m], NULL);
    free(s->msgs);
    s->msgs = NULL;
    s->n_msgs = 0;
    p->sync_ready = s->n > 0;
}

int rv_nri_sync_take(struct rv_nri_plugin *p, const void *msg)
{
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest *req = (void *)msg, **m;
    struct rv_nri_sync *s = p->sync;

    if (!s) {
        if (!(s = p->sync = calloc(1, sizeof(*s))))
            return -1;
    }
    if (s->c) {   /* a new synchronization: the last one's list is done with */
        free(s->c);
        s->c = NULL;
        s->n = 0;
    }
    if (!(m = realloc(s->msgs, (s->n_msgs + 1) * sizeof(*m))))
        return -1;
    s->msgs = m;
    s->msgs[s->n_msgs++] = req;
    if (!req->more || s->n_msgs >= SYNC_MSGS_MAX)
        decide(p, s);
    return 0;
}

void rv_nri_sync_free(struct rv_nri_plugin *p)
{
    struct rv_nri_sync *s = p->sync;

    if (!s)
        return;
    for (size_t m = 0; m < s->n_msgs; m++)
        nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(s->msgs[m], NULL);
    free(s->msgs);
    free(s->c);
    free(s);
    p->sync = NULL;
    p->sync_ready = false;
}

/* The views record of a container the hook never saw: its process (pid and
 * start time), its mount namespace and its root as they are now (statx
 * without sync: the root may be on a tenant's FUSE, nothing is asked of it),
 * rootfs "" (the process's root), every candidate view wanted. 1 written,
 * 0 there is a record already (repair's and watch's), -1 (err). */
static int record_one(const struct rv_config *cfg, const struct sync_one *one, struct rv_inject *req,
                      struct rv_error *err)
{
    char path[64];
    struct statx sx;
    struct stat ns;
    cleanup_close int piddir = -1;
    cleanup_json json_t *rec = NULL, *note = NULL;

    if (rv_state_exists(cfg, one->id))
        return 0;
    memset(req, 0, sizeof(*req));
    req->pid = one->pid;
    snprintf(path, sizeof(path), "/proc/%d", (int)one->pid);
    if ((piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        rv_pid_start_time(piddir, &req->start_time) < 0)
        return rv_fail(err, errno, "process %d is gone", (int)one->pid);
    if (fstatat(piddir, "ns/mnt", &ns, 0) < 0)
        return rv_fail(err, errno, "process %d: its mount namespace", (int)one->pid);
    req->want_mntns = ns.st_ino;
    if (statx(piddir, "root", AT_STATX_DONT_SYNC, STATX_INO, &sx) < 0)
        return rv_fail(err, errno, "process %d: its root", (int)one->pid);
    req->root_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    req->root_ino = sx.stx_ino;
    snprintf(req->lxcfs_root, sizeof(req->lxcfs_root), "%s", cfg->lxcfs_root);
    for (size_t i = 0; i < rv_lxcfs_ncandidates; i++)
        rv_inject_add(req, rv_lxcfs_candidates[i], rv_lxcfs_candidates[i]);
    rec = rv_views_record(req, "pending", "created while resview's NRI plugin was not registered");
    note = json_pack("{s:I, s:i, s:s}", "time", (json_int_t)time(NULL), "pid", (int)one->pid, "why",
                     "created while resview's NRI plugin was not registered: views given at its "
                     "re-registration; its variables are missing until it is re-created");
    if (!rec || !note)
        return rv_fail(err, ENOMEM, "the record");
    if (rv_state_write(cfg, one->id, RV_NRI_SYNC_FILE, note, err) < 0 ||
        rv_state_write(cfg, one->id, RV_VIEWS_FILE, rec, err) < 0)
        return -1;
    return 1;
}

/* In the child: record each unrecorded container, say it, then repair them. */
static void sync_child(const struct rv_config *cfg, const struct rv_nri_sync *s)
{
    static struct rv_inject req;   /* large */
    char **ids = calloc(s->n + 1, sizeof(*ids));
    struct rv_repair_opts o = { .wait_ms = 2000 };
    struct rv_repair_stats st;
    struct rv_error err;
    FILE *out = fopen("/dev/null", "we");

    for (size_t i = 0; i < s->n && ids; i++) {
        int r = record_one(cfg, &s->c[i], &req, &err);
        rv_log_set_id(s->c[i].id);
        if (r != 0)   /* started bare while we were away (repair counts its views given now) */
            rv_metrics_addv(cfg->host_state_dir, (struct rv_metric_inc[]){ { RV_M_NOVIEWS_NRI_AWAY, 1 },
                                                                          { RV_M_NOVARS_NRI_AWAY, 1 } }, 2);
        if (r < 0)
            rv_log(RV_WARN, "NRI: created while the plugin was not registered, and no views given: %s", err.msg);
        if (r == 1) {
            rv_log(RV_WARN, "NRI: created while the plugin was not registered (pid %d): its views are "
                   "given now, at re-registration; its variables are missing until it is re-created",
                   (int)s->c[i].pid);
            ids[o.n_ids++] = (char *)s->c[i].id;
        }
    }
    rv_log_set_id("-");
    o.ids = ids;
    if (o.n_ids > 0 && out && rv_repair(cfg, &o, &st, out, &err) < 0)
        rv_log(RV_WARN, "NRI: the views of %d containers created while the plugin was not registered: "
               "%s (repair or watch gives them later)", o.n_ids, err.msg);
    else if (o.n_ids > 0 && out)
        rv_log(RV_INFO, "NRI: views given to %u of %d containers created while the plugin was not "
               "registered (%u failed)", st.repaired, o.n_ids, st.failed);
    free(ids);
    if (out)
        fclose(out);
}

void rv_nri_sync_start(struct rv_nri_plugin *p, const int *close_fds)
{
    pid_t pid;
    int status;

    if (!p->sync || p->sync->n == 0)
        return;
    /* a grandchild: nobody waits for it, nothing of the plugin's waits on it */
    if ((pid = fork()) < 0) {
        rv_log(RV_WARN, "NRI: Synchronize: fork: %s (repair or watch gives their views later)",
               strerror(errno));
        return;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        for (; *close_fds >= 0; close_fds++)
            close(*close_fds);
        if (fork() == 0) {
            sync_child(p->cfg, p->sync);
            _exit(0);
        }
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}
