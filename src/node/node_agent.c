/* node_agent.c - the node agent as a process: log lines, signals, and the
 * supervision of LXCFS and `resview watch` (node_agent.h). */
#define _GNU_SOURCE
#include "resview/node_agent.h"
#include "hostexec.h"
#include "resview/lxcfs.h"
#include "resview/nri.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#define LXCFS_WAIT_S 30

static volatile sig_atomic_t stopping;
static sigset_t agent_signals;

void rv_node_say(const char *fmt, ...)
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

void rv_node_signals_block(void)
{
    sigemptyset(&agent_signals);
    sigaddset(&agent_signals, SIGTERM);
    sigaddset(&agent_signals, SIGINT);
    sigaddset(&agent_signals, SIGCHLD);
    sigprocmask(SIG_BLOCK, &agent_signals, NULL);
}

static void wait_set(const sigset_t *set, long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    siginfo_t si;
    int sig = sigtimedwait(set, &si, &ts);

    if (sig == SIGTERM || sig == SIGINT)
        stopping = 1;
}

bool rv_node_nap(long ms)
{
    sigset_t stop;

    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    wait_set(&stop, ms);
    return !stopping;
}

void rv_node_wait(long ms)
{
    wait_set(&agent_signals, ms);
}

bool rv_node_stopping(void)
{
    return stopping;
}

int rv_node_lxcfs_clear(const char *dir, struct rv_error *err)
{
    for (int i = 0; i < 16; i++) {
        if (umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
            rv_node_say("lxcfs: detached a mount left on `%s` by an earlier LXCFS", dir);
            continue;
        }
        if (errno == EINVAL || errno == ENOENT)
            return 0;
        return rv_fail(err, errno, "detach the old mount on `%s`", dir);
    }
    return rv_fail(err, EBUSY, "`%s`: too many stacked mounts", dir);
}

/* Start argv as our child, with our signals unblocked. host_cgroupns: in the
 * host's cgroup namespace (pid 1's): LXCFS reads /proc/PID/cgroup of other
 * pods' processes, which names host paths only there (on cgroup v2 a pod has
 * a namespace of its own). */
static pid_t spawn(char *const argv[], bool host_cgroupns, struct rv_error *err)
{
    pid_t pid = rv_fork_child(err);

    if (pid == 0) {
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

static pid_t lxcfs_start(const struct rv_node_children *ch, struct rv_error *err)
{
    char pidfile[PATH_MAX];
    long deadline;
    pid_t pid;

    int n;

    if (rv_node_lxcfs_clear(ch->lxcfs_dir, err) < 0 || rv_mkdir_p(ch->lxcfs_dir, 0755, err) < 0)
        return -1;
    /* LXCFS runs in our mount namespace and reads /proc there: views in it
     * (a pod created through resview before its opt-out, an older agent's)
     * would have it read through a dead LXCFS, or through itself, and hang */
    if ((n = rv_lxcfs_detach_own_views(err)) < 0)
        return -1;
    if (n > 0)
        rv_node_say("lxcfs: detached %d LXCFS view%s from the agent's own mount namespace "
                    "(LXCFS must not read its own views)", n, n == 1 ? "" : "s");
    if (rv_snprintf(pidfile, sizeof(pidfile), "%s.pid", ch->lxcfs_dir) < 0)
        return rv_fail(err, ENAMETOOLONG, "--lxcfs-dir");
    char *argv[] = { (char *)ch->lxcfs_bin, "-f", "-l", "--enable-cfs", "-p", pidfile,
                     (char *)ch->lxcfs_dir, NULL };
    if ((pid = spawn(argv, true, err)) < 0)
        return -1;
    deadline = rv_now_ms() + LXCFS_WAIT_S * 1000L;
    for (;;) {
        struct rv_lxcfs lx;
        int status;
        if (rv_lxcfs_discover(ch->lxcfs_dir, 1000, &lx, err) == 0 && lx.live) {
            rv_node_say("lxcfs: pid %d answers on `%s`", (int)pid, ch->lxcfs_dir);
            return pid;
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            return rv_fail(err, 0, "LXCFS (`%s`) exited with status %d before answering", ch->lxcfs_bin,
                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (rv_now_ms() > deadline || !rv_node_nap(50)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return rv_fail(err, ETIMEDOUT, "LXCFS did not answer on `%s`", ch->lxcfs_dir);
        }
    }
}

static pid_t watch_start(const struct rv_node_children *ch, struct rv_error *err)
{
    char self[PATH_MAX] = "/proc/self/exe";
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *argv[] = { self, "watch", NULL };

    if (n > 0)
        self[n] = '\0';   /* by name: `ps` shows resview, not exe */

    if (ch->rv_config)
        setenv("RESVIEW_CONFIG", ch->rv_config, 1);
    pid_t pid = spawn(argv, false, err);
    if (pid > 0)
        rv_node_say("watch: pid %d repairs views whenever LXCFS comes back", (int)pid);
    return pid;
}

static pid_t nri_start(const struct rv_node_children *ch, struct rv_error *err)
{
    char self[PATH_MAX] = "/proc/self/exe";
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *argv[] = { self, "nri", "--socket", (char *)ch->nri_socket, "--hook", (char *)ch->hook_path, NULL };

    if (n > 0)
        self[n] = '\0';
    if (ch->rv_config)
        setenv("RESVIEW_CONFIG", ch->rv_config, 1);
    pid_t pid = spawn(argv, false, err);
    if (pid > 0)
        rv_node_say("nri: pid %d, the NRI plugin on `%s` (hook `%s`)", (int)pid, ch->nri_socket,
                    ch->hook_path);
    return pid;
}

void rv_node_children_start(struct rv_node_children *ch)
{
    struct rv_error err = { 0 };
    pid_t p;

    if (!ch->watch && rv_now_ms() >= ch->watch_retry) {
        if ((p = watch_start(ch, &err)) < 0) {
            rv_node_say("watch: %s", err.msg);
            ch->watch_retry = rv_now_ms() + 5000;
        } else {
            ch->watch = p;
        }
    }
    if (ch->nri_socket && !ch->nri && rv_now_ms() >= ch->nri_retry) {
        if ((p = nri_start(ch, &err)) < 0) {
            rv_node_say("nri: %s", err.msg);
            ch->nri_retry = rv_now_ms() + 5000;
        } else {
            ch->nri = p;
        }
    }
    if (!ch->lxcfs && rv_now_ms() >= ch->lxcfs_retry) {
        if ((p = lxcfs_start(ch, &err)) < 0) {
            rv_node_say("lxcfs: %s; trying again in 5 s", err.msg);
            ch->lxcfs_retry = rv_now_ms() + 5000;
        } else {
            ch->lxcfs = p;
        }
    }
}

void rv_node_children_reap(struct rv_node_children *ch)
{
    int status;
    pid_t p;

    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (p == ch->lxcfs) {
            rv_node_say("lxcfs: pid %d ended (status %d); starting a new one", (int)p, code);
            ch->lxcfs = 0;
            ch->lxcfs_retry = rv_now_ms() + 1000;
        } else if (p == ch->watch) {
            rv_node_say("watch: pid %d ended (status %d); starting it again", (int)p, code);
            ch->watch = 0;
            ch->watch_retry = rv_now_ms() + 1000;
        } else if (p == ch->nri) {
            rv_node_say("nri: pid %d ended (status %d); starting it again", (int)p, code);
            ch->nri = 0;
            ch->nri_retry = rv_now_ms() + 1000;
        }
    }
}

void rv_node_children_stop(struct rv_node_children *ch, bool detach)
{
    /* the plugin first: containers created after it are created unchanged */
    pid_t *all[] = { &ch->nri, &ch->watch, &ch->lxcfs };
    struct rv_error err;

    for (size_t i = 0; i < 3; i++)
        if (*all[i] > 0)
            kill(*all[i], SIGTERM);
    for (size_t i = 0; i < 3; i++) {
        bool gone = false;
        if (*all[i] <= 0)
            continue;
        for (int t = 0; t < 100 && !gone; t++) {
            pid_t r = waitpid(*all[i], NULL, WNOHANG);
            gone = r == *all[i] || r < 0;
            if (!gone)
                usleep(50 * 1000);
        }
        if (!gone) {   /* never signal a pid already reaped: it may be another process now */
            kill(*all[i], SIGKILL);
            waitpid(*all[i], NULL, 0);
        }
        *all[i] = 0;
    }
    if (detach && rv_node_lxcfs_clear(ch->lxcfs_dir, &err) < 0)
        rv_node_say("lxcfs: %s", err.msg);
}

/* --- settings ----------------------------------------------------------- */

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static int parse_bool(const char *what, const char *v, bool *out, struct rv_error *err)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || !*v)
        *out = false;
    else
        return rv_fail(err, 0, "%s: expected true or false, not `%s`", what, v);
    return 0;
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

int rv_node_settings_init(struct rv_node_settings *n, const struct rv_config *cfg,
                          struct rv_error *err)
{
    static struct rv_node_gpu gpu;
    const char *mode = env_or("RESVIEW_NODE_MODE", "install");
    bool nri = strcmp(mode, "nri") == 0;
    int gpu_mode = rv_node_gpu_mode_parse(env_or("RESVIEW_NODE_GPU_CONTAINERS", "gpu"));

    *n = (struct rv_node_settings){
        .cfg = cfg,
        .ctd.config = env_or("RESVIEW_NODE_CONTAINERD_CONFIG", "/etc/containerd/config.toml"),
        .ctd.cri_socket = env_or("RESVIEW_NODE_CRI_SOCKET", "/run/containerd/containerd.sock"),
        .ctd.restart = env_or("RESVIEW_NODE_RESTART", "systemd"),
        .prefix = "/opt/resview",
        .lxcfs_bin = "/usr/bin/lxcfs",
        .lxcfs_dir = "/var/lib/resview/lxcfs",
        .rv_config = RV_CONFIG_DEFAULT,
        .lock_path = "/run/resview/node.lock",
        .host_pid = env_or("RESVIEW_NODE_HOST_PID", "1"),
        .nri_socket = env_or("RESVIEW_NODE_NRI_SOCKET", RV_NRI_SOCKET_DEFAULT),
    };
    if (parse_bool("RESVIEW_NODE_SET_AS_DEFAULT", env_or("RESVIEW_NODE_SET_AS_DEFAULT", "false"),
                   &n->ctd.set_default, err) < 0)
        return -1;
    const char *heal = env_or("RESVIEW_NODE_HEAL_S", "30");
    char *end;
    long heal_s = strtol(heal, &end, 10);
    if (!heal[0] || *end || heal_s < 1 || heal_s > 3600)
        return rv_fail(err, 0, "RESVIEW_NODE_HEAL_S: expected seconds, 1 to 3600, not `%s`", heal);
    n->heal_ms = heal_s * 1000;
    if (strcmp(mode, "install") != 0 && strcmp(mode, "uninstall") != 0 && !nri)
        return rv_fail(err, 0, "RESVIEW_NODE_MODE: expected install, nri or uninstall, not `%s`", mode);
    n->uninstall = strcmp(mode, "uninstall") == 0;
    n->nri = nri;
    if (gpu_mode < 0)
        return rv_fail(err, 0, "RESVIEW_NODE_GPU_CONTAINERS: expected gpu, all or none, not `%s`",
                       getenv("RESVIEW_NODE_GPU_CONTAINERS"));
    n->ctd.gpu_mode = (enum rv_node_gpu_mode)gpu_mode;
    n->ctd.gpu = &gpu;
    default_payload(n->payload, sizeof(n->payload));
    return 0;
}

int rv_node_settings_check(struct rv_node_settings *n, struct rv_error *err)
{
    uint64_t hp;

    if (rv_parse_u64(n->host_pid, &hp) < 0 || hp == 0 || hp > INT32_MAX)
        return rv_fail(err, 0, "host pid `%s`: expected a process id", n->host_pid);
    n->ctd.host_pid = (pid_t)hp;
    if (n->nri && n->uninstall)
        n->nri = false;   /* `resview node uninstall` with the NRI overlay's values: uninstall */
    if (n->nri && n->ctd.set_default)
        return rv_fail(err, 0, "RESVIEW_NODE_SET_AS_DEFAULT=true makes resview containerd's default runtime: "
                       "it goes with RESVIEW_NODE_MODE=install, not nri (which leaves containerd's "
                       "configuration alone)");
    if (n->nri && n->nri_socket[0] != '/')
        return rv_fail(err, 0, "the NRI socket `%s`: expected an absolute path", n->nri_socket);
    if (!rv_node_restart_valid(n->ctd.restart))
        return rv_fail(err, 0, "restart mode `%s`: expected systemd, systemd:UNIT, none or "
                       "command:/ABSOLUTE/PATH", n->ctd.restart);
    if (n->prefix[0] != '/' || n->lxcfs_dir[0] != '/' || n->ctd.config[0] != '/' || n->ctd.cri_socket[0] != '/')
        return rv_fail(err, 0, "--prefix, --lxcfs-dir, --containerd-config and --cri-socket "
                       "must be absolute paths");
    if (rv_snprintf(n->runtime_path, sizeof(n->runtime_path), "%s/current/bin/resview-runtime", n->prefix) < 0 ||
        rv_snprintf(n->hook_path, sizeof(n->hook_path), "%s/current/bin/resview-hook", n->prefix) < 0 ||
        rv_snprintf(n->guard, sizeof(n->guard), "%s.restarted", n->lock_path) < 0 ||
        rv_snprintf(n->nv_record, sizeof(n->nv_record), "%s.nvidia", n->lock_path) < 0)
        return rv_fail(err, 0, "--prefix or --lock is too long");
    n->ctd.runtime_path = n->runtime_path;
    n->ctd.hook_path = n->hook_path;
    n->ctd.guard = n->guard;
    n->ctd.nv_record = n->nv_record;
    n->ctd.uninstall = n->uninstall;
    return 0;
}
