/* cmd_node.c - `resview node`: the agent of the Kubernetes DaemonSet
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
 *              still has the entry; remove the binaries once nothing uses them
 *   ready      the readiness probe
 *
 * When the pod ends nothing on the node is changed: the runtime entry, the
 * binaries and the configuration stay (a rollout must not restart containerd
 * twice); only LXCFS stops, and the next agent's `watch` heals the views. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/cri.h"
#include "resview/engine.h"
#include "resview/hostexec.h"
#include "resview/json.h"
#include "resview/lxcfs.h"
#include "resview/node.h"
#include "resview/state.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#ifndef RV_VERSION
#define RV_VERSION "0.1.0"
#endif

#define CRI_TIMEOUT_MS 5000
#define RESTART_WAIT_S 120
#define LXCFS_WAIT_S 30
#define RESTART_GUARD_S 600     /* at most one restart per configuration in this time */

struct node {
    const struct rv_config *cfg;
    char restart[PATH_MAX];     /* systemd | systemd:UNIT | none | command:PATH */
    const char *ctd_config;
    const char *cri_socket;
    bool set_default;
    bool uninstall;
    const char *prefix;
    char payload[PATH_MAX];
    const char *lxcfs_bin;
    const char *lxcfs_dir;
    const char *rv_config;
    const char *lock_path;
    pid_t host_pid;             /* whose namespaces are the host's: 1 */
    char runtime_path[PATH_MAX];
    char hook_path[PATH_MAX];
};

static volatile sig_atomic_t stopping;
static sigset_t agent_signals;

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void say(const char *fmt, ...) RV_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    va_list ap;
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;

    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    printf("%s ", ts);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Sleep up to ms; a SIGTERM/SIGINT ends the agent. SIGCHLD stays pending for
 * the main loop. Returns false when the agent is to stop. */
static bool nap(long ms)
{
    sigset_t stop;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    siginfo_t si;

    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int sig = sigtimedwait(&stop, &si, &ts);
    if (sig == SIGTERM || sig == SIGINT)
        stopping = 1;
    return !stopping;
}

/* --- options ------------------------------------------------------------ */

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static int check_restart(const char *r)
{
    if (strcmp(r, "none") == 0 || strcmp(r, "systemd") == 0)
        return 0;
    if (strncmp(r, "systemd:", 8) == 0 && r[8] && strspn(r + 8, "abcdefghijklmnopqrstuvwxyz"
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@:") == strlen(r + 8))
        return 0;
    if (strncmp(r, "command:", 8) == 0 && r[8] == '/')
        return 0;
    return -1;
}

static int parse_bool(const char *what, const char *v, bool *out)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || !*v)
        *out = false;
    else {
        fprintf(stderr, "resview node: %s: expected true or false, not `%s`\n", what, v);
        return -1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: resview node run|install|configure|uninstall|ready [OPTIONS]\n"
        "  run          the DaemonSet's agent: install, configure, run LXCFS and `resview watch`\n"
        "  install      copy the binaries into PREFIX/versions/ and switch PREFIX/current\n"
        "  configure    write containerd's resview runtime entry; restart only if needed\n"
        "  uninstall    restore containerd's configuration; remove the binaries once unused\n"
        "  ready        readiness: binaries intact, LXCFS live, runtime entry in use\n"
        "options (environment variable in brackets; the DaemonSet sets them from its ConfigMap):\n"
        "  --restart MODE             systemd | systemd:UNIT | none | command:/HOST/PATH\n"
        "                             [RESVIEW_NODE_RESTART, default systemd]\n"
        "  --containerd-config FILE   [RESVIEW_NODE_CONTAINERD_CONFIG, /etc/containerd/config.toml]\n"
        "  --cri-socket PATH          [RESVIEW_NODE_CRI_SOCKET, /run/containerd/containerd.sock]\n"
        "  --set-as-default           also make resview containerd's default runtime\n"
        "                             [RESVIEW_NODE_SET_AS_DEFAULT=true]\n"
        "  --uninstall                run: uninstall instead [RESVIEW_NODE_MODE=uninstall]\n"
        "  --prefix DIR               host directory of the binaries (/opt/resview)\n"
        "  --payload DIR              the binaries to install (default: the image's)\n"
        "  --lxcfs PATH               LXCFS binary (/usr/bin/lxcfs)\n"
        "  --lxcfs-dir DIR            LXCFS mount point; its parent is the pod's\n"
        "                             Bidirectional volume (/var/lib/resview/lxcfs)\n"
        "  --resview-config FILE      resview's configuration on the host (/etc/resview/config.json)\n"
        "  --lock FILE                one agent per node (/run/resview/node.lock)\n"
        "  --host-pid PID             the process whose namespaces and root are the host's, where\n"
        "                             restarts run [RESVIEW_NODE_HOST_PID, default 1]\n");
}

/* <dir of our executable>/../lib/resview/payload */
static void default_payload(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n > 0) {
        exe[n] = '\0';
        char *d = dirname(exe);
        if (rv_snprintf(out, size, "%s/../lib/resview/payload", d) >= 0)
            return;
    }
    snprintf(out, size, "/usr/local/lib/resview/payload");
}

/* --- steps -------------------------------------------------------------- */

static int take_lock(const struct node *n, struct rv_error *err)
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
        say("waiting for the node lock `%s`, held by process %s (another resview node agent on "
            "this node)", n->lock_path, holder[0] ? holder : "?");
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            if (errno != EWOULDBLOCK || !nap(500)) {
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

static int step_install(const struct node *n, struct rv_error *err)
{
    char id[RV_NODE_ID_MAX];
    bool changed;

    if (rv_node_install(n->prefix, n->payload, RV_VERSION, id, sizeof(id), &changed, err) < 0)
        return -1;
    say("binaries: `%s/current` -> versions/%s%s", n->prefix, id, changed ? " (switched)" : " (unchanged)");
    int pruned = rv_node_prune(n->prefix, err);
    if (pruned > 0)
        say("binaries: removed %d old version(s) nothing executes", pruned);
    return 0;
}

static int our_config_text(const struct node *n, char *out, size_t size)
{
    return rv_snprintf(out, size, "{\n  \"lxcfs\": { \"root\": \"%s\" }\n}\n", n->lxcfs_dir);
}

/* resview's own configuration on the host: lxcfs.root must be our mount. */
static int step_resview_config(const struct node *n, struct rv_error *err)
{
    char ours[PATH_MAX + 64], dir[PATH_MAX], base[PATH_MAX];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;

    if (our_config_text(n, ours, sizeof(ours)) < 0)
        return rv_fail(err, ENAMETOOLONG, "--lxcfs-dir");
    if (rv_engine_read(n->rv_config, &text, &len, &exists, err) < 0)
        return -1;
    if (exists && len == strlen(ours) && memcmp(text, ours, len) == 0)
        return 0;
    if (exists) {
        struct rv_config c;
        if (rv_config_load_file(&c, n->rv_config, err) < 0)
            return rv_wrap(err, "resview's configuration");
        if (strcmp(c.lxcfs_root, n->lxcfs_dir) != 0)
            return rv_fail(err, 0, "`%s` exists and sets lxcfs.root to `%s`, but LXCFS is mounted "
                           "on `%s` here: set lxcfs.root to `%s` in that file (or remove it)",
                           n->rv_config, c.lxcfs_root, n->lxcfs_dir, n->lxcfs_dir);
        say("configuration: `%s` is the operator's; its lxcfs.root is ours", n->rv_config);
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
    if (rv_write_atomic_at(dfd, basename(base), ours, strlen(ours), &st, err) < 0)
        return rv_wrap(err, "`%s`", n->rv_config);
    say("configuration: wrote `%s` (lxcfs.root = `%s`)", n->rv_config, n->lxcfs_dir);
    return 0;
}

/* Detach whatever an earlier LXCFS left on our mount point: a dead FUSE
 * mount answers ENOTCONN to everything, and a new LXCFS cannot mount over it
 * usefully. MNT_DETACH needs no answer from the dead daemon. */
static int lxcfs_clear(const struct node *n, struct rv_error *err)
{
    for (int i = 0; i < 16; i++) {
        if (umount2(n->lxcfs_dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
            say("lxcfs: detached a mount left on `%s` by an earlier LXCFS", n->lxcfs_dir);
            continue;
        }
        if (errno == EINVAL || errno == ENOENT)
            return 0;
        return rv_fail(err, errno, "detach the old mount on `%s`", n->lxcfs_dir);
    }
    return rv_fail(err, EBUSY, "`%s`: too many stacked mounts", n->lxcfs_dir);
}

/* Start argv as our child. host_cgroupns: in the host's cgroup namespace
 * (pid 1's): LXCFS reads /proc/PID/cgroup of other pods' processes, which
 * only names host paths there (on cgroup v2 pods get a namespace of their own). */
static pid_t spawn(char *const argv[], bool host_cgroupns, struct rv_error *err)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        return rv_fail(err, errno, "fork");
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);   /* outside a pod nothing else would stop it */
        if (host_cgroupns) {
            int ns = open("/proc/1/ns/cgroup", O_RDONLY | O_CLOEXEC);
            if (ns >= 0 && setns(ns, CLONE_NEWCGROUP) < 0)
                fprintf(stderr, "resview node: warning: enter the host's cgroup namespace: %s\n",
                        strerror(errno));
            if (ns >= 0)
                close(ns);
        }
        execv(argv[0], argv);
        fprintf(stderr, "resview node: exec `%s`: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

static pid_t lxcfs_start(const struct node *n, struct rv_error *err)
{
    char pidfile[PATH_MAX];
    long deadline;
    pid_t pid;

    if (lxcfs_clear(n, err) < 0 || rv_mkdir_p(n->lxcfs_dir, 0755, err) < 0)
        return -1;
    if (rv_snprintf(pidfile, sizeof(pidfile), "%s.pid", n->lxcfs_dir) < 0)
        return rv_fail(err, ENAMETOOLONG, "--lxcfs-dir");
    char *argv[] = { (char *)n->lxcfs_bin, "-f", "-l", "--enable-cfs", "-p", pidfile,
                     (char *)n->lxcfs_dir, NULL };
    if ((pid = spawn(argv, true, err)) < 0)
        return -1;
    deadline = now_ms() + LXCFS_WAIT_S * 1000L;
    for (;;) {
        struct rv_lxcfs lx;
        int status;
        if (rv_lxcfs_discover(n->lxcfs_dir, 1000, &lx, err) == 0 && lx.live) {
            say("lxcfs: pid %d answers on `%s`", (int)pid, n->lxcfs_dir);
            return pid;
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            return rv_fail(err, 0, "LXCFS (`%s`) exited with status %d before answering", n->lxcfs_bin,
                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (now_ms() > deadline || !nap(50)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return rv_fail(err, ETIMEDOUT, "LXCFS did not answer on `%s`", n->lxcfs_dir);
        }
    }
}

static pid_t watch_start(const struct node *n, struct rv_error *err)
{
    char *argv[] = { "/proc/self/exe", "watch", NULL };
    if (strcmp(n->rv_config, RV_CONFIG_DEFAULT) != 0)
        setenv("RESVIEW_CONFIG", n->rv_config, 1);
    pid_t pid = spawn(argv, false, err);
    if (pid > 0)
        say("watch: pid %d repairs views whenever LXCFS comes back", (int)pid);
    return pid;
}

/* --- containerd --------------------------------------------------------- */

static const char *json_str(json_t *o, const char *const *path)
{
    for (; *path && o; path++)
        o = json_object_get(o, *path);
    return json_string_value(o);
}

/* Whether the running containerd has what we want: 1 yes, 0 no (why), -1 it
 * does not answer (err). */
static int effective(const struct node *n, char *why, size_t size, struct rv_error *err)
{
    static const char *const bin_path[] = { "containerd", "runtimes", "resview", "options",
                                            "BinaryName", NULL };
    static const char *const entry_path[] = { "containerd", "runtimes", "resview", "runtimeType", NULL };
    static const char *const dflt_path[] = { "containerd", "defaultRuntimeName", NULL };
    cleanup_json json_t *c = NULL;

    if (rv_cri_config(n->cri_socket, CRI_TIMEOUT_MS, &c, err) < 0)
        return -1;
    const char *bin = json_str(c, bin_path), *dflt = json_str(c, dflt_path);
    bool has_entry = json_str(c, entry_path) != NULL, is_default = dflt && strcmp(dflt, "resview") == 0;
    if (n->uninstall) {
        if (has_entry || is_default) {
            snprintf(why, size, "the running containerd still has the resview runtime%s",
                     is_default ? " as its default" : "");
            return 0;
        }
        return 1;
    }
    if (!bin || strcmp(bin, n->runtime_path) != 0) {
        snprintf(why, size, "the running containerd has %s%s%s", bin ? "BinaryName `" : "no resview runtime",
                 bin ? bin : "", bin ? "` for the resview runtime" : "");
        return 0;
    }
    if (n->set_default && !is_default) {
        snprintf(why, size, "the running containerd's default runtime is `%s`, not resview", dflt ? dflt : "?");
        return 0;
    }
    return 1;
}

static uint64_t file_hash(const char *path)
{
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    struct rv_error e;
    uint64_t h = 0xcbf29ce484222325ull;

    if (rv_engine_read(path, &text, &len, &exists, &e) < 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A restart that did not bring the entry in is not repeated for the same
 * file within RESTART_GUARD_S, also not by the next agent (a crash-looping
 * pod must not restart containerd again and again). */
static bool restart_guarded(const struct node *n, uint64_t hash, bool record)
{
    char path[PATH_MAX], line[64];
    uint64_t h;
    long long when;

    snprintf(path, sizeof(path), "%s", n->lock_path);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), ".restarted");
    if (record) {
        cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        snprintf(line, sizeof(line), "%016" PRIx64 " %lld\n", hash, (long long)time(NULL));
        return fd >= 0 && write(fd, line, strlen(line)) > 0;
    }
    if (rv_read_small(path, line, sizeof(line)) < 0 || sscanf(line, "%" SCNx64 " %lld", &h, &when) != 2)
        return false;
    return h == hash && time(NULL) - when < RESTART_GUARD_S;
}

static int restart_containerd(const struct node *n, struct rv_error *err)
{
    char unit[PATH_MAX];
    char *argv[4] = { NULL };

    if (strncmp(n->restart, "command:", 8) == 0) {
        argv[0] = (char *)n->restart + 8;
    } else {
        snprintf(unit, sizeof(unit), "%s", n->restart[7] == ':' ? n->restart + 8 : "containerd");
        argv[0] = "systemctl";
        argv[1] = "restart";
        argv[2] = unit;
    }
    say("containerd: restarting it on the host (restart mode %s): %s%s%s", n->restart, argv[0],
        argv[1] ? " restart " : "", argv[1] ? unit : "");
    int r = rv_host_exec(n->host_pid, argv, RESTART_WAIT_S * 1000, err);
    if (r < 0)
        return -1;
    if (r != 0)
        return rv_fail(err, 0, "`%s` exited with status %d", argv[0], r);
    return 0;
}

/* After the file is right: make the running containerd use it. Returns 0 when
 * it does, -1 (err) when it does not (yet); *restarted counts restarts. */
static int ensure_effective(const struct node *n, unsigned *restarted, struct rv_error *err)
{
    char why[512] = "";
    long deadline = now_ms() + RESTART_WAIT_S * 1000L;
    int r;

    while ((r = effective(n, why, sizeof(why), err)) < 0) {
        if (now_ms() > deadline)
            return rv_wrap(err, "containerd does not answer");
        if (!nap(1000))
            return rv_fail(err, EINTR, "stopped");
    }
    if (r == 1) {
        say("containerd: runs with the configuration wanted; not restarted");
        return 0;
    }
    uint64_t hash = file_hash(n->ctd_config);
    if (strcmp(n->restart, "none") == 0)
        return rv_fail(err, 0, "%s; restart mode none: restart containerd on this node yourself "
                       "(systemctl restart containerd; k3s: systemctl restart k3s or k3s-agent; rke2: "
                       "systemctl restart rke2-server or rke2-agent) - this agent waits for it", why);
    if (restart_guarded(n, hash, false))
        return rv_fail(err, 0, "%s, although it was restarted for this configuration less than %d "
                       "minutes ago: is `%s` the file containerd reads? (k3s and rke2 generate "
                       "theirs: use restart mode none and their config.toml.tmpl)", why,
                       RESTART_GUARD_S / 60, n->ctd_config);
    say("containerd: %s", why);
    restart_guarded(n, hash, true);
    long t0 = now_ms();
    if (restart_containerd(n, err) < 0)
        return -1;
    (*restarted)++;
    deadline = now_ms() + RESTART_WAIT_S * 1000L;
    for (;;) {
        char name[64], version[64];
        struct rv_error e;
        r = -1;
        if (rv_cri_version(n->cri_socket, CRI_TIMEOUT_MS, name, sizeof(name), version, sizeof(version), &e) == 0 &&
            (r = effective(n, why, sizeof(why), &e)) == 1) {
            say("containerd: %s %s answers on `%s` %ld ms after the restart, with the configuration "
                "wanted", name, version, n->cri_socket, now_ms() - t0);
            return 0;
        }
        if (r == 0)
            return rv_fail(err, 0, "containerd was restarted but %s: is `%s` the file containerd reads?",
                           why, n->ctd_config);
        if (now_ms() > deadline)
            return rv_fail(err, ETIMEDOUT, "containerd does not answer on `%s` %d s after the restart: %s",
                           n->cri_socket, RESTART_WAIT_S, e.msg);
        if (!nap(100))
            return rv_fail(err, EINTR, "stopped");
    }
}

static void engine_opts(const struct node *n, struct rv_engine_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->config = n->ctd_config;
    o->runtime_path = n->runtime_path;
    o->hook_path = n->hook_path;
    o->set_default = n->set_default;
    o->uninstall = n->uninstall;
}

static int step_containerd(const struct node *n, unsigned *restarted, struct rv_error *err)
{
    struct rv_engine_opts o;

    if (!n->uninstall && access(n->ctd_config, F_OK) < 0)
        return rv_fail(err, errno, "`%s` (containerd's configuration)%s", n->ctd_config,
                       errno == ENOENT ? ": containerd runs on built-in defaults; write them "
                       "first (containerd config default > FILE) or set containerdConfig" : "");
    engine_opts(n, &o);
    if (rv_engine_apply(&rv_engine_containerd, &o, err) < 0)
        return -1;
    fflush(stdout);
    return ensure_effective(n, restarted, err);
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
static unsigned containers_in_use(const struct node *n)
{
    unsigned count = 0;
    rv_state_foreach(n->cfg, count_record, &count);
    return count;
}

/* Remove the binaries and our configuration file once nothing uses them. */
static int uninstall_files(const struct node *n, bool *done, struct rv_error *err)
{
    char ours[PATH_MAX + 64];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    unsigned used = containers_in_use(n);

    *done = false;
    if (used) {
        say("uninstall: %u container(s) started through resview still exist; binaries stay in `%s` "
            "until they are gone", used, n->prefix);
        return 0;
    }
    if (rv_node_remove(n->prefix, err) < 0) {
        if (err->errnum == EBUSY) {
            say("uninstall: %s; binaries stay for now", err->msg);
            return 0;
        }
        return -1;
    }
    say("uninstall: removed the binaries from `%s`", n->prefix);
    if (our_config_text(n, ours, sizeof(ours)) >= 0 &&
        rv_engine_read(n->rv_config, &text, &len, &exists, err) == 0 && exists &&
        len == strlen(ours) && memcmp(text, ours, len) == 0) {
        if (unlink(n->rv_config) < 0)
            return rv_fail(err, errno, "remove `%s`", n->rv_config);
        say("uninstall: removed `%s` (the agent had written it)", n->rv_config);
    }
    *done = true;
    return 0;
}

/* --- readiness ---------------------------------------------------------- */

static int node_ready(const struct node *n)
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
    if (rv_engine_read(n->ctd_config, &text, &len, &exists, &err) < 0)
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
    r = effective(n, why, sizeof(why), &err);
    printf("containerd: %s\n", r == 1 ? (n->uninstall ? "runs without resview" : "runs the resview entry")
           : r == 0 ? why : err.msg);
    ok &= r == 1;
    printf("%s\n", ok ? "ready" : "not ready");
    return ok ? 0 : 1;
}

/* --- the agent ---------------------------------------------------------- */

struct children {
    pid_t lxcfs, watch;
    long lxcfs_retry, watch_retry;   /* when to start again (ms) */
};

/* watch first: it waits for the LXCFS mount to appear (a mount table event)
 * and repairs the moment it answers, so a new LXCFS heals running pods
 * without waiting for this agent to notice. */
static void start_children(const struct node *n, struct children *ch)
{
    struct rv_error err = { 0 };

    if (!ch->watch && now_ms() >= ch->watch_retry) {
        pid_t p = watch_start(n, &err);
        if (p < 0) {
            say("watch: %s", err.msg);
            ch->watch_retry = now_ms() + 5000;
        } else {
            ch->watch = p;
        }
    }
    if (!ch->lxcfs && now_ms() >= ch->lxcfs_retry) {
        pid_t p = lxcfs_start(n, &err);
        if (p < 0) {
            say("lxcfs: %s; trying again in 5 s", err.msg);
            ch->lxcfs_retry = now_ms() + 5000;
        } else {
            ch->lxcfs = p;
        }
    }
}

static void reap(struct children *ch)
{
    int status;
    pid_t p;

    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (p == ch->lxcfs) {
            say("lxcfs: pid %d ended (status %d); starting a new one", (int)p, code);
            ch->lxcfs = 0;
            ch->lxcfs_retry = now_ms() + 1000;
        } else if (p == ch->watch) {
            say("watch: pid %d ended (status %d); starting it again", (int)p, code);
            ch->watch = 0;
            ch->watch_retry = now_ms() + 1000;
        }
    }
}

static void stop_children(const struct node *n, struct children *ch, bool detach)
{
    pid_t *all[] = { &ch->watch, &ch->lxcfs };
    struct rv_error err;

    for (size_t i = 0; i < 2; i++)
        if (*all[i] > 0)
            kill(*all[i], SIGTERM);
    for (size_t i = 0; i < 2; i++) {
        if (*all[i] <= 0)
            continue;
        for (int t = 0; t < 100 && waitpid(*all[i], NULL, WNOHANG) == 0; t++)
            usleep(50 * 1000);
        kill(*all[i], SIGKILL);
        waitpid(*all[i], NULL, 0);
        *all[i] = 0;
    }
    if (detach && lxcfs_clear(n, &err) < 0)
        say("lxcfs: %s", err.msg);
}

static int node_run(const struct node *n)
{
    struct children ch = { 0 };
    struct rv_error err = { 0 };
    unsigned restarted = 0;
    bool configured = false, files_done = false;
    long t0 = now_ms(), next_try = 0;
    int lock;

    say("resview node agent %s: %s (restart mode %s, containerd `%s`, CRI `%s`)", RV_VERSION,
        n->uninstall ? "uninstall" : "install", n->restart, n->ctd_config, n->cri_socket);
    if ((lock = take_lock(n, &err)) < 0) {
        say("%s", err.msg);
        return stopping ? 0 : 1;
    }
    (void)lock;
    if (!n->uninstall) {
        /* without binaries nothing else makes sense: retry until they are in */
        while (step_install(n, &err) < 0 || step_resview_config(n, &err) < 0) {
            say("install: %s; trying again in 30 s", err.msg);
            if (!nap(30000))
                return 0;
        }
    }
    /* uninstall keeps LXCFS and watch for the containers that still have views */
    if (!n->uninstall || containers_in_use(n))
        start_children(n, &ch);
    while (!stopping) {
        siginfo_t si;
        struct timespec tick = { 1, 0 };

        if (!configured && now_ms() >= next_try) {
            if (step_containerd(n, &restarted, &err) == 0) {
                configured = true;
                say("node %s in %ld ms (containerd restarted %u time%s by this agent)",
                    n->uninstall ? "uninstalled from containerd" : "ready", now_ms() - t0, restarted,
                    restarted == 1 ? "" : "s");
            } else if (!stopping) {
                say("containerd: %s; trying again in %d s", err.msg, strcmp(n->restart, "none") ? 30 : 5);
                next_try = now_ms() + (strcmp(n->restart, "none") ? 30000 : 5000);
            }
        }
        if (n->uninstall && configured && !files_done && now_ms() >= next_try) {
            if (uninstall_files(n, &files_done, &err) < 0)
                say("uninstall: %s", err.msg);
            if (files_done) {
                char pidfile[PATH_MAX];
                stop_children(n, &ch, true);
                if (rv_snprintf(pidfile, sizeof(pidfile), "%s.pid", n->lxcfs_dir) >= 0)
                    unlink(pidfile);
                rmdir(n->lxcfs_dir);
                say("uninstall: done; nothing of resview is left on this node");
            }
            next_try = now_ms() + 10000;
        }
        int sig = sigtimedwait(&agent_signals, &si, &tick);
        if (sig == SIGTERM || sig == SIGINT)
            stopping = 1;
        reap(&ch);
        if (!stopping && !(n->uninstall && files_done) && (!n->uninstall || ch.lxcfs || ch.watch))
            start_children(n, &ch);
    }
    say("stopping: LXCFS and watch end; the node's configuration and binaries stay");
    stop_children(n, &ch, false);
    return 0;
}

int rv_cmd_node(const struct rv_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "restart", required_argument, NULL, 'r' },
        { "containerd-config", required_argument, NULL, 'c' },
        { "cri-socket", required_argument, NULL, 's' },
        { "set-as-default", no_argument, NULL, 'd' },
        { "uninstall", no_argument, NULL, 'u' },
        { "prefix", required_argument, NULL, 'p' },
        { "payload", required_argument, NULL, 'P' },
        { "lxcfs", required_argument, NULL, 'l' },
        { "lxcfs-dir", required_argument, NULL, 'L' },
        { "resview-config", required_argument, NULL, 'C' },
        { "lock", required_argument, NULL, 'k' },
        { "host-pid", required_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct node n = {
        .cfg = cfg,
        .ctd_config = env_or("RESVIEW_NODE_CONTAINERD_CONFIG", "/etc/containerd/config.toml"),
        .cri_socket = env_or("RESVIEW_NODE_CRI_SOCKET", "/run/containerd/containerd.sock"),
        .prefix = "/opt/resview",
        .lxcfs_bin = "/usr/bin/lxcfs",
        .lxcfs_dir = "/var/lib/resview/lxcfs",
        .rv_config = RV_CONFIG_DEFAULT,
        .lock_path = "/run/resview/node.lock",
    };
    const char *mode = env_or("RESVIEW_NODE_MODE", "install");
    const char *host_pid = env_or("RESVIEW_NODE_HOST_PID", "1");
    uint64_t hp;
    const char *sub;
    int c;

    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    sub = argv[1];
    snprintf(n.restart, sizeof(n.restart), "%s", env_or("RESVIEW_NODE_RESTART", "systemd"));
    if (parse_bool("RESVIEW_NODE_SET_AS_DEFAULT", env_or("RESVIEW_NODE_SET_AS_DEFAULT", "false"),
                   &n.set_default) < 0)
        return 2;
    if (strcmp(mode, "install") != 0 && strcmp(mode, "uninstall") != 0) {
        fprintf(stderr, "resview node: RESVIEW_NODE_MODE: expected install or uninstall, not `%s`\n", mode);
        return 2;
    }
    n.uninstall = strcmp(mode, "uninstall") == 0;
    default_payload(n.payload, sizeof(n.payload));
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': snprintf(n.restart, sizeof(n.restart), "%s", optarg); break;
        case 'c': n.ctd_config = optarg; break;
        case 's': n.cri_socket = optarg; break;
        case 'd': n.set_default = true; break;
        case 'u': n.uninstall = true; break;
        case 'p': n.prefix = optarg; break;
        case 'P': snprintf(n.payload, sizeof(n.payload), "%s", optarg); break;
        case 'l': n.lxcfs_bin = optarg; break;
        case 'L': n.lxcfs_dir = optarg; break;
        case 'C': n.rv_config = optarg; break;
        case 'k': n.lock_path = optarg; break;
        case 'H': host_pid = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (rv_parse_u64(host_pid, &hp) < 0 || hp == 0 || hp > INT32_MAX) {
        fprintf(stderr, "resview node: host pid `%s`: expected a process id\n", host_pid);
        return 2;
    }
    n.host_pid = (pid_t)hp;
    if (check_restart(n.restart) < 0) {
        fprintf(stderr, "resview node: restart mode `%s`: expected systemd, systemd:UNIT, none or "
                "command:/ABSOLUTE/PATH\n", n.restart);
        return 2;
    }
    if (n.prefix[0] != '/' || n.lxcfs_dir[0] != '/' || n.ctd_config[0] != '/' || n.cri_socket[0] != '/') {
        fprintf(stderr, "resview node: --prefix, --lxcfs-dir, --containerd-config and --cri-socket "
                "must be absolute paths\n");
        return 2;
    }
    if (rv_snprintf(n.runtime_path, sizeof(n.runtime_path), "%s/current/bin/resview-runtime", n.prefix) < 0 ||
        rv_snprintf(n.hook_path, sizeof(n.hook_path), "%s/current/bin/resview-hook", n.prefix) < 0) {
        fprintf(stderr, "resview node: --prefix is too long\n");
        return 2;
    }
    sigemptyset(&agent_signals);
    sigaddset(&agent_signals, SIGTERM);
    sigaddset(&agent_signals, SIGINT);
    sigaddset(&agent_signals, SIGCHLD);
    sigprocmask(SIG_BLOCK, &agent_signals, NULL);

    struct rv_error err = { 0 };
    unsigned restarted = 0;
    if (strcmp(sub, "run") == 0)
        return node_run(&n);
    if (strcmp(sub, "ready") == 0)
        return node_ready(&n);
    if (strcmp(sub, "install") == 0 || strcmp(sub, "configure") == 0 || strcmp(sub, "uninstall") == 0) {
        bool done = false;
        if (strcmp(sub, "uninstall") == 0)
            n.uninstall = true;
        if (take_lock(&n, &err) < 0)
            goto fail;
        if (strcmp(sub, "install") == 0) {
            if (step_install(&n, &err) < 0 || step_resview_config(&n, &err) < 0)
                goto fail;
            return 0;
        }
        if (step_containerd(&n, &restarted, &err) < 0)
            goto fail;
        if (n.uninstall && uninstall_files(&n, &done, &err) < 0)
            goto fail;
        return 0;
    }
    fprintf(stderr, "resview node: unknown step `%s`\n", sub);
    usage(stderr);
    return 2;
fail:
    fprintf(stderr, "resview node %s: %s\n", sub, err.msg);
    return 1;
}
