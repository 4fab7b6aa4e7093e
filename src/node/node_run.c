/* node_run.c - the steps of `resview node` (node_agent.h): the agent of the
 * Kubernetes DaemonSet
 * (hooks/kubernetes/), run inside the node image as a privileged, hostPID pod
 * whose hostPath volumes show the host's directories at their own paths.
 *
 *   run        the DaemonSet's container: everything below, then supervise
 *              LXCFS and `resview watch` until the pod ends
 *   install    binaries into PREFIX/versions/…, switch PREFIX/current; write
 *              /etc/resview/config.json (lxcfs.root) if there is none
 *   configure  containerd's `resview` runtime entry, and a restart only when
 *              the running containerd (CRI Status) lacks it
 *   uninstall  restore containerd's file, restart if the running containerd
 *              still has the entry (containerd 2.x: once no pod of the
 *              runtime class runs); remove the binaries once nothing uses them
 *   ready      the readiness probe
 *
 * NRI mode (RESVIEW_NODE_MODE=nri): run installs and supervises LXCFS and
 * watch as above, and `resview nri` on the node's NRI socket instead of
 * configure: containerd's files are neither written nor read, containerd is
 * never restarted; ready checks the plugin's registration record.
 *
 * When the pod ends nothing on the node is changed: the runtime entry, the
 * binaries and the configuration stay (a rollout must not restart containerd
 * twice); only LXCFS stops, and the next agent's `watch` heals the views. */
#define _GNU_SOURCE
#include "cri.h"
#include "resview/engine.h"
#include "resview/lxcfs.h"
#include "resview/node.h"
#include "resview/node_agent.h"
#include "resview/node_containerd.h"
#include "resview/nri.h"
#include "resview/proc.h"
#include "resview/repair.h"
#include "resview/state.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef RV_VERSION
#define RV_VERSION "0.1.0"
#endif

/* --- steps -------------------------------------------------------------- */

static int take_lock(const struct rv_node_settings *n, struct rv_error *err)
{
    char dir[PATH_MAX], holder[32] = "";
    int fd;

    snprintf(dir, sizeof(dir), "%s", n->lock_path);
    if (rv_mkdir_p(dirname(dir), 0755, err) < 0)
        return -1;
    fd = open(n->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return rv_fail(err, errno, "open the node lock `%s`", n->lock_path);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        ssize_t r = pread(fd, holder, sizeof(holder) - 1, 0);
        holder[r > 0 ? r : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        rv_node_say("waiting for the node lock `%s`, held by process %s (another resview node agent "
                    "on this node)", n->lock_path, holder[0] ? holder : "?");
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            if (errno != EWOULDBLOCK || !rv_node_nap(500)) {
                close(fd);
                return rv_fail(err, errno == EWOULDBLOCK ? EINTR : errno, "node lock `%s`",
                               n->lock_path);
            }
        }
    }
    snprintf(holder, sizeof(holder), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, holder, strlen(holder), 0) < 0) {
        /* the pid is only for the message above */
    }
    return fd;   /* held until we exit */
}

static int step_install(const struct rv_node_settings *n, struct rv_error *err)
{
    char id[RV_NODE_ID_MAX];
    bool changed;

    if (rv_node_install(n->prefix, n->payload, RV_VERSION, id, sizeof(id), &changed, err) < 0)
        return -1;
    rv_node_say("binaries: `%s/current` -> versions/%s%s", n->prefix, id, changed ? " (switched)" : " (unchanged)");
    int pruned = rv_node_prune(n->prefix, err);
    if (pruned > 0)
        rv_node_say("binaries: removed %d old version(s) nothing executes", pruned);
    return 0;
}

static int our_config_text(const struct rv_node_settings *n, char *out, size_t size)
{
    return rv_node_config_text(&n->ctd, n->lxcfs_dir, out, size);   /* with gpu.runtime: node_containerd.c */
}

/* resview's own configuration on the host: lxcfs.root must be our mount. */
static int step_resview_config(const struct rv_node_settings *n, struct rv_error *err)
{
    char ours[PATH_MAX + 64], dir[PATH_MAX], base[PATH_MAX];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;

    /* NRI mode: nothing to chain (the adjustment is in the spec before any
     * runtime handler runs), and containerd's files are not read */
    if (!n->nri && rv_node_gpu_refresh(&n->ctd, err) < 0)
        return rv_wrap(err, "containerd's configuration");
    if (our_config_text(n, ours, sizeof(ours)) < 0)
        return rv_fail(err, ENAMETOOLONG, "--lxcfs-dir");
    if (rv_engine_read(n->rv_config, &text, &len, &exists, err) < 0)
        return -1;
    if (exists && len == strlen(ours) && memcmp(text, ours, len) == 0)
        return 0;
    if (exists && !rv_node_config_agents(text, len, n->lxcfs_dir)) {
        struct rv_config c;
        if (rv_config_load_file(&c, n->rv_config, err) < 0)
            return rv_wrap(err, "resview's configuration");
        if (strcmp(c.lxcfs_root, n->lxcfs_dir) != 0)
            return rv_fail(err, 0, "`%s` exists and sets lxcfs.root to `%s`, but LXCFS is mounted "
                           "on `%s` here: set lxcfs.root to `%s` in that file (or remove it)",
                           n->rv_config, c.lxcfs_root, n->lxcfs_dir, n->lxcfs_dir);
        rv_node_say("configuration: `%s` is the operator's; its lxcfs.root is ours", n->rv_config);
        if (n->ctd.gpu->runtime[0] && strcmp(c.gpu_runtime, n->ctd.gpu->runtime) != 0)
            rv_node_say("configuration: NVIDIA's runtime `%s` is on this node but `%s` does not chain to it: "
                        "GPU containers started through resview get no GPU; add \"gpu\": {\"runtime\": \"%s\"}",
                        n->ctd.gpu->runtime, n->rv_config, n->ctd.gpu->runtime);
        return 0;
    }
    snprintf(dir, sizeof(dir), "%s", n->rv_config);
    snprintf(base, sizeof(base), "%s", n->rv_config);
    if (rv_mkdir_p(dirname(dir), 0755, err) < 0)
        return -1;
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st = { .st_mode = 0644, .st_uid = 0, .st_gid = 0 };
    if (dfd < 0)
        return rv_fail(err, errno, "open `%s`", dir);
    if (rv_write_atomic_at(dfd, basename(base), ours, strlen(ours), &st,
                           RV_WRITE_DURABLE | RV_WRITE_SWEEP, err) < 0)
        return rv_wrap(err, "`%s`", n->rv_config);
    bool gpu = strstr(ours, "\"gpu\"") != NULL;
    rv_node_say("configuration: wrote `%s` (lxcfs.root = `%s`%s%s%s)", n->rv_config, n->lxcfs_dir,
                gpu ? "; gpu.runtime = `" : "", gpu ? n->ctd.gpu->runtime : "", gpu ? "`" : "");
    return 0;
}

/* --- uninstall ---------------------------------------------------------- */

static int count_record(const char *id, void *arg)
{
    (void)id;
    (*(unsigned *)arg)++;
    return 0;
}

/* Containers that resview started and that were not deleted yet: the shim
 * and runc are called again for them (kill, delete), and their views are
 * resview's. */
static unsigned containers_in_use(const struct rv_node_settings *n)
{
    unsigned count = 0;
    rv_state_foreach(n->cfg, count_record, &count);
    return count;
}

/* Whether our own container runs through resview: with resview as
 * containerd's default runtime, the uninstall agent's own pod (and a Job
 * running `resview node uninstall`) was created through it, and containerd
 * runs the runtime binary again to stop it: removing the binaries now would
 * leave this pod impossible to stop. Our container is the last component of
 * our cgroup path (cgroupfs: …/POD/ID; systemd: …/cri-containerd-ID.scope);
 * the runc v2 shim keeps the runtime options of each task, BinaryName
 * included, in STATE/io.containerd.runtime.v2.task/k8s.io/ID/options.json,
 * STATE being the directory of the CRI socket. Or NVIDIA's runtime, the
 * default, ran resview next (its toolkit 1.13 copies runc's entry, without
 * pod_annotations: the pod's resview.io annotations (opt-outs) did not reach resview, which
 * recorded it): *recorded. Sets what (for the message). */
static bool own_container_through_resview(const struct rv_node_settings *n, char *what, size_t size, bool *recorded)
{
    char cg[8192], id[128] = "", path[PATH_MAX], state[PATH_MAX];
    const char *at = cg;
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    struct rv_error err;
    struct rv_cgroup_line l;

    if (rv_read_small("/proc/self/cgroup", cg, sizeof(cg)) < 0)
        at = NULL;
    while (!id[0] && rv_cgroup_next(&at, &l)) {
        const char *last = l.valid ? memrchr(l.path, '/', l.path_len) : NULL, *end;
        if (!last)
            continue;
        last++;
        size_t k = (size_t)(l.path + l.path_len - last);
        if (k >= 15 && strncmp(last, "cri-containerd-", 15) == 0)
            last += 15, k -= 15;
        if ((end = memmem(last, k, ".scope", 6)))
            k = (size_t)(end - last);
        if (k == 64 && strspn(last, "0123456789abcdef") >= 64)
            snprintf(id, sizeof(id), "%.64s", last);
    }
    *recorded = id[0] && rv_state_exists(n->cfg, id);
    if (*recorded) {
        snprintf(what, size, "resview's record of container %.12s", id);
        return true;
    }
    if (!id[0] || rv_snprintf(state, sizeof(state), "%s", n->ctd.cri_socket) < 0 ||
        rv_snprintf(path, sizeof(path), "%s/io.containerd.runtime.v2.task/k8s.io/%s/options.json",
                    dirname(state), id) < 0 ||
        rv_engine_read(path, &text, &len, &exists, &err) < 0 || !exists)
        return false;
    snprintf(what, size, "%s", path);
    return strstr(text, "resview-runtime") != NULL;
}

/* Remove the binaries and our configuration file once nothing uses them.
 * *last: the count of containers in use said last time (said again only
 * when it changes). */
static int uninstall_files(const struct rv_node_settings *n, bool *done, unsigned *last, struct rv_error *err)
{
    char ours[PATH_MAX + 64];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    unsigned used = containers_in_use(n), said = *last;
    char what[PATH_MAX];
    bool recorded = false;

    *done = false;
    *last = used;
    if (used <= 1 && own_container_through_resview(n, what, sizeof(what), &recorded) &&
        used == (recorded ? 1u : 0u)) {
        if (said != UINT_MAX)
            rv_node_say("uninstall: this agent's own container runs through resview (`%s`: it was created "
                        "while resview was containerd's default runtime, or NVIDIA's runtime ran resview "
                        "next), and containerd needs the runtime to stop it: binaries stay in `%s`; "
                        "containerd no longer uses resview for new pods, so once this pod is created again "
                        "(kubectl -n resview-system rollout restart ds/resview-node) the new one removes them",
                        what, n->prefix);
        *last = UINT_MAX;
        return 0;
    }
    if (used) {
        if (used != said)
            rv_node_say("uninstall: %u container(s) started through resview still exist; binaries stay "
                        "in `%s` until they are gone", used, n->prefix);
        return 0;
    }
    if (rv_node_remove(n->prefix, err) < 0) {
        if (err->errnum == EBUSY) {
            rv_node_say("uninstall: %s; binaries stay for now", err->msg);
            return 0;
        }
        return -1;
    }
    rv_node_say("uninstall: removed the binaries from `%s`", n->prefix);
    if (our_config_text(n, ours, sizeof(ours)) >= 0 &&
        rv_engine_read(n->rv_config, &text, &len, &exists, err) == 0 && exists &&
        rv_node_config_agents(text, len, n->lxcfs_dir)) {
        if (unlink(n->rv_config) < 0)
            return rv_fail(err, errno, "remove `%s`", n->rv_config);
        rv_node_say("uninstall: removed `%s` (the agent had written it)", n->rv_config);
    }
    *done = true;
    return 0;
}

/* --- healing without NRI ------------------------------------------------ */

/* While the plugin cannot register, containers start without resview's
 * edit: neither variables nor hook. The runtime's CRI names the running
 * ones; those resview serves (decided as at CreateContainer and at
 * Synchronize: rv_nri_would_serve) and without a record get one and their views
 * (rv_nri_heal, Synchronize's own healing), each said once. */
int rv_node_heal(const struct rv_node_settings *n, int timeout_ms, unsigned *healed, struct rv_error *err)
{
    struct rv_cri_running *c = NULL;
    struct rv_host host;
    size_t cnt = 0, k = 0;
    const char **ids;
    pid_t *pids;

    *healed = 0;
    if (rv_cri_running(n->ctd.cri_socket, timeout_ms, &c, &cnt, err) < 0)
        return -1;
    rv_host_defaults(&host);
    struct rv_nri_plugin p = { .cfg = n->cfg, .host = &host, .socket = n->nri_socket,
                               .hook_missing = access(n->cfg->hook_path, X_OK) != 0, .lock_fd = -1 };
    ids = calloc(cnt + 1, sizeof(*ids));
    pids = calloc(cnt + 1, sizeof(*pids));
    if (!ids || !pids) {
        free(ids);
        free(pids);
        rv_cri_running_free(c, cnt);
        return rv_fail(err, ENOMEM, "heal");
    }
    for (size_t i = 0; i < cnt; i++) {
        struct rv_nri_seen seen = { .id = c[i].id, .pod = c[i].pod, .handler = c[i].handler,
                                    .pid = (uint32_t)c[i].pid, .pod_ann = (const char *const *)c[i].pod_ann,
                                    .ann = (const char *const *)c[i].ann, .env = (const char *const *)c[i].env };
        if (rv_nri_would_serve(&p, &seen)) {
            ids[k] = c[i].id;
            pids[k++] = c[i].pid;
        }
    }
    *healed = rv_nri_heal(n->cfg, ids, pids, k, true);
    free(ids);
    free(pids);
    rv_cri_running_free(c, cnt);
    return 0;
}

/* The agent's pass: in a grandchild (nothing waits for it; SIGALRM ends it
 * after 60 s whatever it waits on), so that the loop never hangs. */
static void heal_start(const struct rv_node_settings *n)
{
    pid_t pid = fork();
    int status;

    if (pid < 0) {
        rv_node_say("nri: heal: fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        if (fork() == 0) {
            struct rv_error err = { 0 };
            unsigned healed;
            sigset_t all;
            signal(SIGALRM, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sigfillset(&all);
            sigprocmask(SIG_UNBLOCK, &all, NULL);
            alarm(60);
            if (rv_node_heal(n, RV_NODE_HEAL_TIMEOUT_MS, &healed, &err) < 0)
                rv_node_say("nri: the containers created while the plugin cannot register: %s (again in "
                            "%ld s)", err.msg, n->heal_ms / 1000);
            else if (healed)
                rv_node_say("nri: %u container%s started without resview's variables (created while the "
                            "plugin could not register): views given through the CRI; the log names them",
                            healed, healed == 1 ? "" : "s");
            _exit(0);
        }
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* --- readiness ---------------------------------------------------------- */

/* NRI mode: whether our plugin is registered on the node's socket and
 * serving (its record names a live process and that socket, and the runtime
 * talks to it now: rv_nri_serving, which waits at most the runtime's request
 * timeout on a call not yet read). 1 yes, 0 no; why says which. Asked every second by the
 * agent and by every probe: the socket is looked at (stat), never connected
 * to (containerd would log each one). */
static int nri_registered(const struct rv_node_settings *n, char *why, size_t size)
{
    struct rv_nri_registration reg;
    struct rv_error err = { 0 };
    struct stat st;
    char trouble[640];
    int r = rv_nri_record_read(n->cfg, &reg, &err);

    if (r == RV_NRI_REG_LIVE && strcmp(reg.socket, n->nri_socket) == 0) {
        char detail[256], state[512];
        long long at;
        int serving = rv_nri_serving(n->cfg, &reg, 60000, &at, detail, sizeof(detail));
        rv_nri_serving_say(serving, at, detail, state, sizeof(state));
        snprintf(why, size, "plugin (pid %d) registered with %s on `%s`, %s", reg.pid, reg.runtime,
                 reg.socket, state);
        return serving == RV_NRI_SERVING;
    }
    if (r < 0)
        snprintf(why, size, "%s", err.msg);
    else if (r == RV_NRI_REG_LIVE)
        snprintf(why, size, "the plugin (pid %d) registered on `%s`, not on `%s`", reg.pid, reg.socket,
                 n->nri_socket);
    else if (rv_nri_sync_trouble(n->cfg, n->nri_socket, trouble, sizeof(trouble)) == 1)
        snprintf(why, size, "the plugin is not registered on `%s`: %s", n->nri_socket, trouble);
    else if (stat(n->nri_socket, &st) == 0 && S_ISSOCK(st.st_mode))
        snprintf(why, size, "the plugin is not registered (yet) on `%s` (its log says why)", n->nri_socket);
    else
        snprintf(why, size, "the plugin is not registered: no socket `%s` (is NRI on in containerd? "
                 "1.7: [plugins.\"io.containerd.nri.v1.nri\"] disable = false; 2.x: on by default)",
                 n->nri_socket);
    return 0;
}

int rv_node_ready(const struct rv_node_settings *n)
{
    struct rv_error err = { 0 };
    char why[1024] = "", detail[256], exe[PATH_MAX];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists, ok = true;
    int r;

    if (!n->uninstall) {
        r = rv_node_intact(n->prefix, n->payload, RV_VERSION, why, sizeof(why), &err);
        printf("binaries:   %s\n", r == 1 ? "intact" : r == 0 ? why : err.msg);
        ok &= r == 1;
        struct rv_lxcfs lx;
        if (rv_lxcfs_discover(n->lxcfs_dir, 2000, &lx, &err) < 0)
            snprintf(lx.why, sizeof(lx.why), "%s", err.msg);
        printf("lxcfs:      %s\n", lx.live ? "live" : lx.why);
        ok &= lx.live;
    }
    {
        /* LXCFS runs in this namespace: a view here is a node-wide deadlock */
        char targets[512];
        int own = rv_lxcfs_views_in_ns(0, targets, sizeof(targets));
        if (own > 0)
            printf("agent:      %d LXCFS view%s in the agent's own mount namespace, where LXCFS runs "
                   "(%s): its reads of /proc would wait for itself\n", own, own == 1 ? "" : "s", targets);
        ok &= own <= 0;
        /* every container's views answer within a bound (a read in a bounded child) */
        ok &= rv_views_check(n->cfg, RV_VIEWS_READ_MS, 3000, stdout) == 0;
    }
    if (n->nri) {
        /* containerd's configuration is not ours in this mode: not even read */
        r = nri_registered(n, why, sizeof(why));
        printf("nri:        %s\n", why);
        ok &= r == 1;
        printf("%s\n", ok ? "ready" : "not ready");
        return ok ? 0 : 1;
    }
    if (rv_engine_read(n->ctd.config, &text, &len, &exists, &err) < 0)
        r = -1;
    else
        r = rv_engine_status(&rv_engine_containerd, text, len, detail, sizeof(detail), exe, sizeof(exe), &err);
    if (n->uninstall) {
        printf("config.toml: %s\n", r == 0 ? "no resview entry" : r == 1 ? "still has the resview entry" : err.msg);
        ok &= r == 0;
    } else {
        bool good = r == 1 && strcmp(exe, n->runtime_path) == 0;
        printf("config.toml: %s\n", good ? "resview entry present" : r == 1 ? detail : r == 0 ?
               "no resview entry" : err.msg);
        ok &= good;
    }
    r = rv_node_containerd_effective(&n->ctd, why, sizeof(why), &err);
    printf("containerd: %s\n", r == 1 ? (n->uninstall ? "runs without resview" : "runs the resview entry")
           : r == 0 || r == 3 ? why : err.msg);
    /* uninstall: a restart that waits for the runtime class's pods is all that can be done now */
    ok &= r == 1 || (n->uninstall && r == 3);
    printf("%s\n", ok ? "ready" : "not ready");
    return ok ? 0 : 1;
}

/* --- the agent ---------------------------------------------------------- */

int rv_node_run(const struct rv_node_settings *n)
{
    struct rv_node_children ch = {
        .lxcfs_bin = n->lxcfs_bin, .lxcfs_dir = n->lxcfs_dir,
        .rv_config = strcmp(n->rv_config, RV_CONFIG_DEFAULT) ? n->rv_config : NULL,
        .nri_socket = n->nri ? n->nri_socket : NULL, .hook_path = n->hook_path,
    };
    struct rv_error err = { 0 };
    unsigned restarted = 0, in_use = 0;
    bool configured = false, files_done = false;
    long t0 = rv_now_ms(), next_try = 0;
    bool none = strcmp(n->ctd.restart, "none") == 0;
    int nri_said = -1;
    long next_heal = rv_now_ms() + n->heal_ms;   /* the plugin's first registration first */
    char waiting[sizeof(err.msg)] = "";

    if (n->nri)
        rv_node_say("resview node agent %s: NRI mode (the plugin on `%s`; containerd's configuration "
                    "is not touched, containerd not restarted)", RV_VERSION, n->nri_socket);
    else
        rv_node_say("resview node agent %s: %s (restart mode %s, containerd `%s`, CRI `%s`)", RV_VERSION,
                    n->uninstall ? "uninstall" : "install", n->ctd.restart, n->ctd.config, n->ctd.cri_socket);
    if (take_lock(n, &err) < 0) {
        rv_node_say("%s", err.msg);
        return rv_node_stopping() ? 0 : 1;
    }
    if (!n->uninstall) {
        /* without binaries nothing else makes sense: retry until they are in */
        while (step_install(n, &err) < 0 || step_resview_config(n, &err) < 0) {
            rv_node_say("install: %s; trying again in 30 s", err.msg);
            if (!rv_node_nap(30000))
                return 0;
        }
    }
    /* uninstall keeps LXCFS and watch for the containers that still have views */
    bool supervise = !n->uninstall || containers_in_use(n);
    while (!rv_node_stopping()) {
        if (supervise)
            rv_node_children_start(&ch);
        if (n->nri) {
            /* said when it changes: registered, or not (the runtime restarting) */
            char why[PATH_MAX + 256];
            int reg = nri_registered(n, why, sizeof(why));
            if (reg != nri_said && reg && nri_said == -1)
                rv_node_say("node ready in %ld ms (NRI mode: %s)", rv_now_ms() - t0, why);
            else if (reg != nri_said && (reg || nri_said == 1))
                rv_node_say("nri: %s", why);
            nri_said = nri_said == -1 && !reg ? -1 : reg;
            configured = true;
            if (!reg && rv_now_ms() >= next_heal) {
                heal_start(n);
                next_heal = rv_now_ms() + n->heal_ms;
            }
        }
        if (!configured && rv_now_ms() >= next_try) {
            int r = rv_node_containerd_apply(&n->ctd, &restarted, &err);
            if (r == 0) {
                configured = true;
                rv_node_say("node %s in %ld ms (containerd restarted %u time%s by this agent)",
                            n->uninstall ? "uninstalled from containerd" : "ready", rv_now_ms() - t0,
                            restarted, restarted == 1 ? "" : "s");
            } else if (r == 1) {
                /* uninstall: the restart waits for the runtime class's pods; said when that changes */
                if (strcmp(waiting, err.msg) != 0)
                    rv_node_say("containerd: %s", err.msg);
                snprintf(waiting, sizeof(waiting), "%s", err.msg);
                next_try = rv_now_ms() + 2000;
            } else if (!rv_node_stopping()) {
                rv_node_say("containerd: %s; trying again in %d s", err.msg, none ? 5 : 30);
                next_try = rv_now_ms() + (none ? 5000 : 30000);
            }
        }
        if (!n->uninstall && !n->nri && configured && rv_node_containerd_changed(&n->ctd)) {
            /* containerd's files changed (NVIDIA's toolkit installed, upgraded, removed): read
             * them again, chain accordingly, and put the entry back if it was lost */
            rv_node_say("containerd: its configuration changed; reading it again");
            if (step_resview_config(n, &err) < 0)
                rv_node_say("configuration: %s", err.msg);
            configured = false;
            next_try = 0;
            continue;
        }
        if (n->uninstall && configured && !files_done && rv_now_ms() >= next_try) {
            if (uninstall_files(n, &files_done, &in_use, &err) < 0)
                rv_node_say("uninstall: %s", err.msg);
            if (files_done) {
                char pidfile[PATH_MAX];
                rv_node_children_stop(&ch, true);
                supervise = false;
                if (rv_snprintf(pidfile, sizeof(pidfile), "%s.pid", n->lxcfs_dir) >= 0)
                    unlink(pidfile);
                rmdir(n->lxcfs_dir);
                rv_node_say("uninstall: done; nothing of resview is left on this node");
            }
            next_try = rv_now_ms() + 2000;
        }
        rv_node_wait(1000);
        rv_node_children_reap(&ch);
    }
    rv_node_say("stopping: LXCFS%s and watch end; the node's configuration and binaries stay",
                n->nri ? ", the NRI plugin" : "");
    rv_node_children_stop(&ch, false);
    return 0;
}

/* --- one step ----------------------------------------------------------- */

/* install, configure or uninstall, once, under the node lock. */
int rv_node_step(const struct rv_node_settings *n, const char *step)
{
    struct rv_error err = { 0 };
    unsigned restarted = 0, in_use = 0;
    bool done = false;

    if (take_lock(n, &err) < 0)
        goto fail;
    if (strcmp(step, "install") == 0) {
        if (step_install(n, &err) < 0 || step_resview_config(n, &err) < 0)
            goto fail;
        return 0;
    }
    if (n->nri) {
        printf("resview node %s: NRI mode: containerd's configuration is not touched\n", step);
        return 0;
    }
    int r = rv_node_containerd_apply(&n->ctd, &restarted, &err);
    if (r < 0)
        goto fail;
    if (r == 1)   /* uninstall: the file is restored, the restart waits (err says for what) */
        printf("resview node %s: containerd: %s; run this again once they are gone\n", step, err.msg);
    if (n->uninstall && uninstall_files(n, &done, &in_use, &err) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "resview node %s: %s\n", step, err.msg);
    return 1;
}
