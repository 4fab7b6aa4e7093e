/* cmd_doctor.c - `resview doctor`: check the installation end to end and say
 * what to fix. Exit 1 when something is broken (FAIL), 0 otherwise (warnings
 * included). */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/chain.h"
#include "resview/fuse.h"
#include "resview/fuse_held.h"
#include "resview/cli.h"
#include "resview/engine.h"
#include "resview/json.h"
#include "resview/lxcfs.h"
#include "resview/nri.h"
#include "resview/repair.h"
#include "resview/seccomp.h"
#include "resview/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>

struct report {
    int fails, warns;
};

static void RV_PRINTF(3, 4) say(struct report *r, const char *level, const char *fmt, ...)
{
    va_list ap;

    if (strcmp(level, "FAIL") == 0)
        r->fails++;
    else if (strcmp(level, "warn") == 0)
        r->warns++;
    printf("%-5s ", level);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

struct unknown_ctx {
    struct report *r;
    const char *profile;
};

/* rv_seccomp_unknown_names callback: runc and crun skip a name libseccomp
 * does not know, so the rule silently does nothing. */
static void say_unknown(void *ud, const char *arch, const char *name)
{
    struct unknown_ctx *u = ud;

    say(u->r, "warn", "seccomp: %s: unknown syscall `%s` in `%s` or the FUSE additions: its rule "
        "has no effect there", arch, name, u->profile);
}

static bool executable(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static void check_binaries(struct report *r, const struct rv_config *cfg)
{
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

    if (n <= 0)
        return;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    if (rv_snprintf(path, sizeof(path), "%s/resview-runtime", self) < 0)
        return;
    if (executable(path))
        say(r, "ok", "runtime shim `%s`", path);
    else
        say(r, "FAIL", "runtime shim `%s` missing: run install.sh (or make install)", path);
    if (executable(cfg->hook_path))
        say(r, "ok", "hook `%s`", cfg->hook_path);
    else
        say(r, "FAIL", "hook `%s` (hook.path) missing or not executable: install it or fix hook.path",
            cfg->hook_path);
}

static void check_config(struct report *r, const struct rv_config *cfg)
{
    struct rv_config fresh;
    struct rv_error err = { 0 };
    char next[PATH_MAX];

    if (rv_config_load(&fresh, &err) < 0) {
        say(r, "FAIL", "configuration: %s; fix the file (the binaries refuse to edit containers)", err.msg);
        return;
    }
    if (fresh.path[0])
        say(r, "ok", "configuration `%s`", fresh.path);
    else
        say(r, "ok", "configuration: built-in defaults (no %s)", RV_CONFIG_DEFAULT);
    for (int i = 0; i < fresh.n_warnings; i++)
        say(r, "warn", "configuration: %s", fresh.warnings[i]);
    if (rv_chain_next(cfg, next, sizeof(next), &err) < 0)
        say(r, "FAIL", "%s", err.msg);
    else
        say(r, "ok", "next runtime: `%s`", next);
}

/* The lxcfs process serving root: without --enable-cfs a CPU quota does not
 * change the CPU views (only cpusets do). */
static void check_lxcfs_flags(struct report *r, const char *root)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    bool found = false, cfs = false;

    if (!d)
        return;
    while (!found && (de = readdir(d))) {
        char path[64], args[4096];
        size_t len = 0;
        ssize_t n;
        if (de->d_name[0] < '0' || de->d_name[0] > '9' ||
            rv_snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name) < 0)
            continue;
        /* /proc files have no size: rv_read_file_at does not apply */
        cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        while (len < sizeof(args) - 1 && (n = read(fd, args + len, sizeof(args) - 1 - len)) > 0)
            len += (size_t)n;
        args[len] = '\0';
        const char *argv0 = strrchr(args, '/') ? strrchr(args, '/') + 1 : args;
        if (strcmp(argv0, "lxcfs") == 0) {
            bool serves = false, has_cfs = false;
            for (size_t i = 0; i < len; i += strlen(args + i) + 1) {
                if (strcmp(args + i, root) == 0)
                    serves = true;
                if (strcmp(args + i, "--enable-cfs") == 0)
                    has_cfs = true;
            }
            if (serves) {
                found = true;
                cfs = has_cfs;
            }
        }
    }
    closedir(d);
    if (found && !cfs)
        say(r, "warn", "lxcfs on `%s` runs without --enable-cfs: the CPU views ignore CPU quotas "
            "(only cpusets count); add --enable-cfs to its command line", root);
    else if (found)
        say(r, "ok", "lxcfs on `%s` runs with --enable-cfs (CPU quotas shape the CPU views)", root);
}

static void check_lxcfs(struct report *r, const struct rv_config *cfg)
{
    struct rv_lxcfs lx;
    struct rv_error err = { 0 };

    if (rv_lxcfs_discover(cfg->lxcfs_root, 2000, &lx, &err) < 0) {
        say(r, "FAIL", "LXCFS check: %s", err.msg);
        return;
    }
    if (!lx.live) {
        say(r, cfg->lxcfs_required ? "FAIL" : "warn",
            "LXCFS on `%s` is not live (%s): containers start with the host's /proc%s; "
            "start lxcfs (systemctl start lxcfs), then `resview repair`",
            cfg->lxcfs_root, lx.why, cfg->lxcfs_required ? " - no, lxcfs.required refuses them" : "");
        return;
    }
    char files[1024] = "";
    size_t o = 0;
    for (unsigned i = 0; i < lx.n && i < RV_LXCFS_FILES_MAX; i++) {
        int k = snprintf(files + o, sizeof(files) - o, "%s%s", i ? " " : "", lx.files[i]);
        if (k < 0 || (size_t)k >= sizeof(files) - o)
            break;
        o += (size_t)k;
    }
    say(r, "ok", "LXCFS live on `%s`: %u files answer (%s)", cfg->lxcfs_root, lx.n, files);
    check_lxcfs_flags(r, cfg->lxcfs_root);
}

/* A view whose read hangs is a node-wide fault: a container (an LXCFS
 * pod's own included) whose views are served from inside itself, or any
 * view that does not answer within a bound. Reads in bounded children. */
static void check_views(struct report *r, const struct rv_config *cfg)
{
    char *text = NULL, *line, *save = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    if (!mem) {
        say(r, "warn", "views: %s", strerror(errno));
        return;
    }
    rv_views_check(cfg, RV_VIEWS_READ_MS, 5000, mem);
    fclose(mem);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "fault    ", 9) == 0)
            say(r, "FAIL", "views: %s", line + 9);
        else if (strncmp(line, "stale    ", 9) == 0)
            say(r, "warn", "views: %s", line + 9);
        else
            say(r, "ok", "%s", line);
    }
    free(text);
}

static void check_kernel(struct report *r)
{
    struct statfs sf;

    if (statfs("/sys/fs/cgroup", &sf) == 0) {
        if (sf.f_type == CGROUP2_SUPER_MAGIC)
            say(r, "ok", "cgroup v2 (unified)");
        else if (statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
            say(r, "ok", "cgroup v1 (hybrid: cgroup2 at /sys/fs/cgroup/unified)");
        else
            say(r, "ok", "cgroup v1 (legacy)");
    } else
        say(r, "warn", "/sys/fs/cgroup: %s: limits of ancestors cannot be read", strerror(errno));
}

/* A kernel call the broker needs: ENOSYS means the kernel lacks it. */
static bool kernel_has(long r)
{
    return r >= 0 || errno != ENOSYS;
}

static void check_fuse_profile(struct report *r, const struct rv_config *cfg)
{
    char prof[PATH_MAX];
    cleanup_json json_t *sc = NULL;
    struct rv_error err = { 0 };
    struct unknown_ctx u = { r, prof };
    size_t unknown = 0;

    if (rv_seccomp_default_path(cfg, prof, sizeof(prof), &err) < 0 ||
        rv_seccomp_load(prof, &sc, &err) < 0) {
        say(r, "warn", "FUSE for a container without a seccomp profile (Kubernetes pods by "
            "default) will fail: %s; install the profiles (install.sh) or set "
            "fuse.seccomp_profile", err.msg);
        return;
    }
    say(r, "ok", "seccomp profile for FUSE containers that have none: `%s`", prof);
    /* every name in it and in the FUSE additions, for each architecture */
    if (rv_seccomp_unknown_names(sc, true, say_unknown, &u, &unknown, &err) < 0)
        say(r, "warn", "seccomp profile `%s`: %s", prof, err.msg);
    else if (unknown == 0)
        say(r, "ok", "every syscall name in `%s` and in the FUSE additions is known to "
            "libseccomp for its architectures", prof);
}

/* The FUSE file systems the node's brokers made that the kernel still holds
 * (the node-wide cap), and the containers that hold most. */
static void check_fuse_held(struct report *r, const struct rv_config *cfg)
{
    struct rv_held h;
    struct rv_held_top top[3];
    struct rv_error err = { 0 };
    char path[PATH_MAX], most[3 * (RV_HELD_ID_MAX + 16)] = "";
    size_t n, o = 0;
    unsigned held;
    int ctl;

    if (rv_snprintf(path, sizeof(path), "%s/fuse/%s", cfg->state_dir, RV_HELD_FILE) < 0 ||
        access(path, F_OK) < 0)
        return;   /* no broker has made one yet */
    if (rv_held_open(&h, path, false, &err) < 0) {
        say(r, "warn", "FUSE file systems held: %s", err.msg);
        return;
    }
    if (rv_held_lock(&h) < 0) {
        say(r, "warn", "FUSE file systems held: `%s` is busy", path);
        rv_held_close(&h);
        return;
    }
    if ((ctl = rv_fusectl_open()) >= 0) {
        rv_held_prune(&h, ctl, NULL);
        close(ctl);
    }
    held = rv_held_count(&h, NULL);
    n = rv_held_top(&h, top, 3);
    rv_held_unlock(&h);
    rv_held_close(&h);
    for (size_t i = 0; i < n && o < sizeof(most); i++)
        o += (size_t)snprintf(most + o, sizeof(most) - o, "%s%s %u", i ? ", " : "; most: ",
                              top[i].id, top[i].count);
    say(r, held >= cfg->fuse_max_mounts_node ? "warn" : "ok",
        "FUSE file systems held on the node: %u of %u (fuse.max_mounts_node)%s", held,
        cfg->fuse_max_mounts_node, most);
}

/* FUSE through the broker (profiles/README.md "What the next runtime and the kernel must do"):
 * the policy, the kernel, the next
 * runtime, the FUSE runtime name, running brokers. */
static void check_fuse(struct report *r, const struct rv_config *cfg)
{
    const char *level = cfg->fuse_allowed ? "FAIL" : "info";
    struct rv_seccomp_notif_sizes_probe { uint16_t notif, resp, data; } sizes;
    struct rv_fuse_runtime rt;
    struct rv_error err = { 0 };
    char next[PATH_MAX], self[PATH_MAX], link[PATH_MAX + 32], yama[16];
    unsigned live, stale;
    struct stat st;
    ssize_t n;
    int pidfd;

    if (!cfg->fuse_allowed) {
        say(r, "info", "FUSE: off (fuse.allowed is false): every request is refused");
    } else {
        char ns[RV_MAX_FUSE_NAMESPACES * 66] = "";
        size_t o = 0;
        for (int i = 0; i < cfg->n_fuse_namespaces && o < sizeof(ns); i++)
            o += (size_t)snprintf(ns + o, sizeof(ns) - o, "%s%s", i ? ", " : "", cfg->fuse_namespaces[i]);
        say(r, "ok", "FUSE: allowed for the annotation %s=\"true\" and the runtime %s%s%s%s; "
            "allow_other %s", RV_ANN_FUSE, RV_FUSE_RUNTIME_NAME,
            cfg->n_fuse_namespaces ? " in the Kubernetes namespaces " : "",
            cfg->n_fuse_namespaces ? ns : "", cfg->n_fuse_namespaces ? "" : " (any namespace)",
            cfg->fuse_allow_other ? "allowed (fuse.allow_other)" : "refused");
    }
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 ||
        syscall(SYS_seccomp, RV_SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
        say(r, level, "FUSE: the kernel has no seccomp user notification (%s): the broker "
            "cannot work (Linux >= 5.6 needed)", strerror(errno));
    else if ((pidfd = rv_pidfd_open(getpid(), 0)) < 0 ||
             !kernel_has(rv_pidfd_getfd(pidfd, 0, 0)) || !kernel_has(rv_fsopen(NULL, 0)) ||
             !kernel_has(rv_openat2(-1, NULL, NULL)))
        say(r, level, "FUSE: the kernel lacks pidfd_getfd, fsopen or openat2 (Linux >= 5.6 "
            "needed): the broker cannot work");
    else
        say(r, "ok", "FUSE: the kernel has seccomp user notification, pidfd_getfd, fsopen, openat2");
    if (rv_read_small("/proc/sys/kernel/yama/ptrace_scope", yama, sizeof(yama)) == 0 &&
        strcmp(yama, "3") == 0)
        say(r, level, "FUSE: kernel.yama.ptrace_scope is 3: the broker cannot read a caller's "
            "arguments or take its /dev/fuse (set it to 2 or less)");
    if (stat("/dev/fuse", &st) < 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != makedev(RV_FUSE_MAJOR, RV_FUSE_MINOR))
        say(r, level, "FUSE: /dev/fuse (c 10:229) missing on the host: modprobe fuse");
    else if ((st.st_mode & 0006) != 0006)
        say(r, "warn", "FUSE: /dev/fuse is mode %04o: containers with a user namespace of their "
            "own get this node bound in and cannot open it (udev makes it 0666)",
            st.st_mode & 07777);
    if (cfg->fuse_allowed) {
        if (rv_chain_next(cfg, next, sizeof(next), &err) == 0 &&
            rv_fuse_runtime_probe(cfg, next, &rt, &err) == 0)
            say(r, rt.notify ? "ok" : "FAIL", "FUSE: next runtime `%s`: %s%s", next, rt.why,
                rt.notify ? "" : ": it cannot hand mount calls to the broker (runc >= 1.1, "
                "crun >= 0.19)");
        check_fuse_profile(r, cfg);
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        if (rv_snprintf(link, sizeof(link), "%s/%s", self, RV_FUSE_RUNTIME_NAME) >= 0) {
            if (lstat(link, &st) == 0)
                say(r, "ok", "FUSE runtime name `%s` (register it with an engine to grant FUSE "
                    "to every container it starts)", link);
            else
                say(r, "info", "no FUSE runtime name `%s` (install.sh makes it)", link);
        }
    }
    check_fuse_held(r, cfg);
    if (rv_broker_count(cfg, &live, &stale) == 0)
        say(r, stale ? "warn" : "ok", "FUSE brokers: %u running (one per FUSE container)%s", live,
            stale ? ", and sockets of brokers that were killed: their containers' mount calls "
                    "get ENOSYS until they restart" : "");
    {
        char last[320];
        int notes = rv_broker_exit_notes(cfg, last, sizeof(last));
        if (notes > 0)
            say(r, "warn", "FUSE: %d brokers aborted a tenant's FUSE connections or left a blocked "
                "worker when their container ended, and no delete collected the note (last: %s; "
                "<state_dir>/fuse/*.exit, remove them once read)", notes, last);
    }
}

static void check_dirs(struct report *r, const struct rv_config *cfg)
{
    char dir[PATH_MAX];
    struct stat st;

    if (stat(cfg->state_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        say(r, "FAIL", "state_dir `%s` is not a directory", cfg->state_dir);
    else
        say(r, "ok", "state directory `%s`%s", cfg->state_dir,
            stat(cfg->state_dir, &st) == 0 ? "" : " (created on first use)");
    if (rv_snprintf(dir, sizeof(dir), "%s", cfg->log_file) >= 0 && strrchr(dir, '/')) {
        char *s = strrchr(dir, '/');
        if (s != dir)
            *s = '\0';
        if (access(dir, W_OK) != 0)
            say(r, "warn", "log directory `%s` not writable: errors only reach stderr", dir);
        else
            say(r, "ok", "log file `%s`", cfg->log_file);
    }
}

static void check_engine(struct report *r, const struct rv_engine *e, const char *path, bool named)
{
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    char detail[512] = "", exe[PATH_MAX] = "";
    struct rv_error err = { 0 };

    if (!path)
        path = e->default_config;
    if (rv_engine_read(path, &text, &len, &exists, &err) < 0) {
        say(r, "FAIL", "%s: %s", e->name, err.msg);
        return;
    }
    if (!exists) {
        if (named)
            say(r, "FAIL", "%s: `%s` does not exist: resview configure --engine=%s", e->name, path, e->name);
        return;
    }
    int st = rv_engine_status(e, text, len, detail, sizeof(detail), exe, sizeof(exe), &err);
    if (st < 0)
        say(r, "FAIL", "%s: `%s`: %s; the engine cannot read it either, fix it", e->name, path, err.msg);
    else if (st == 0)
        say(r, named ? "FAIL" : "info", "%s: `%s` has no resview entry: resview configure --engine=%s",
            e->name, path, e->name);
    else if (exe[0] && !executable(exe))
        say(r, "FAIL", "%s: `%s` runs `%s`, which is missing or not executable: install it "
            "(install.sh) or run resview configure --engine=%s again", e->name, path, exe, e->name);
    else
        say(r, "ok", "%s: `%s`: %s", e->name, path, detail);
}

/* NRI's containers created while the plugin was away (nri_sync.c): each
 * named, for as long as its record lasts */
struct nri_sync_seen {
    struct report *r;
    const struct rv_config *cfg;
};

static int nri_sync_one(const char *id, void *arg)
{
    struct nri_sync_seen *s = arg;
    cleanup_json json_t *doc = NULL;
    struct rv_error err;
    char t[32] = "?";

    if (rv_state_read(s->cfg, id, RV_NRI_SYNC_FILE, &doc, &err) < 0)
        return 0;
    time_t when = (time_t)json_integer_value(json_object_get(doc, "time"));
    struct tm tm;
    if (when > 0)
        strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&when, &tm));
    say(s->r, "warn", "NRI: container %s was created while resview's plugin was not registered: views "
        "given at its re-registration (%s); its variables are missing until it is re-created", id, t);
    return 0;
}

/* NRI: whether the runtime has it on (its socket accepts a connection: a
 * non-blocking connect, never a wait on the runtime), and whether resview's
 * plugin is registered and serving: its record names a live process, and
 * the runtime is talking to it now (rv_nri_serving: the connection is up,
 * no call left waiting longer than the runtime waits). Neither is needed by
 * the runtime-class mode: information, not a problem. The socket: --nri-socket,
 * else the plugin's record's, else NRI's default. */
static void check_nri(struct report *r, const struct rv_config *cfg, const char *sock_opt)
{
    struct rv_nri_registration reg;
    struct rv_error err = { 0 };
    char why[256], since[32] = "?";
    int rec = rv_nri_record_read(cfg, &reg, &err);
    const char *sock = sock_opt ? sock_opt : rec > 0 ? reg.socket : RV_NRI_SOCKET_DEFAULT;
    int probe = rv_nri_socket_probe(sock, 500, why, sizeof(why));
    bool on = probe == 1;

    if (on)
        say(r, "ok", "NRI: the runtime's socket `%s` accepts connections (NRI is on)", sock);
    else if (probe == 2)
        say(r, "warn", "NRI: the runtime's socket `%s` is there, but %s: plugins cannot register now",
            sock, why);
    else
        say(r, "info", "NRI: `%s`: %s: the runtime has no NRI on here (containerd 1.6 has none, 1.7 "
            "has it off by default); resview works through its runtime entry", sock, why);
    if (rec == RV_NRI_REG_LIVE) {
        time_t t = (time_t)reg.since;
        struct tm tm;
        long long at;
        char state[512];
        int serving = rv_nri_serving(cfg, &reg, 60000, &at, why, sizeof(why));   /* capped: the request timeout */
        rv_nri_serving_say(serving, at, why, state, sizeof(state));
        if (reg.since > 0)
            strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        if (serving == RV_NRI_SERVING)
            say(r, "ok", "NRI: resview's plugin (pid %d) registered with %s on `%s` since %s, %s: every "
                "container created gets its adjustment", reg.pid, reg.runtime, reg.socket, since, state);
        else
            say(r, "warn", "NRI: resview's plugin (pid %d) on `%s` is not serving: %s; containers are "
                "created without its adjustment until it registers again", reg.pid, reg.socket, state);
    } else if (rec == RV_NRI_REG_STALE) {
        say(r, on ? "warn" : "info", "NRI: resview's plugin is not registered: the plugin (pid %d) that "
            "registered on `%s` is gone without removing its record (killed); containers are created "
            "without its adjustment until it runs again", reg.pid, reg.socket);
    } else if (rec < 0) {
        say(r, "warn", "NRI: resview's plugin: %s", err.msg);
    } else {
        say(r, "info", "NRI: resview's plugin is not registered%s", on ? " (`resview nri`, or the "
            "DaemonSet's NRI variant, registers it)" : "");
    }
    char trouble[640];
    if (rv_nri_sync_trouble(cfg, sock, trouble, sizeof(trouble)) == 1)
        say(r, "warn", "NRI: resview's plugin on `%s` cannot register: %s (hooks/kubernetes/README.md: "
            "NRI's Synchronize and large environments)", sock, trouble);
    struct nri_sync_seen seen = { r, cfg };
    rv_state_foreach(cfg, nri_sync_one, &seen);
}

int rv_cmd_doctor(const struct rv_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "engine", required_argument, NULL, 'e' },
        { "config", required_argument, NULL, 'c' },
        { "nri-socket", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const struct rv_engine *engine = NULL;
    const char *config = NULL, *nri_socket = NULL;
    struct report r = { 0, 0 };
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'e':
            if (!(engine = rv_engine_find(optarg))) {
                fprintf(stderr, "resview doctor: unknown engine `%s`\n", optarg);
                return 2;
            }
            break;
        case 'c': config = optarg; break;
        case 'n': nri_socket = optarg; break;
        case 'h':
            printf("usage: resview doctor [--engine=NAME [--config PATH]] [--nri-socket PATH]\n");
            return 0;
        default:
            fprintf(stderr, "usage: resview doctor [--engine=NAME [--config PATH]] [--nri-socket PATH]\n");
            return 2;
        }
    }
    if (config && !engine) {
        fprintf(stderr, "resview doctor: --config goes with --engine\n");
        return 2;
    }
    say(&r, "info", "resview %s", RV_VERSION);
    check_binaries(&r, cfg);
    check_config(&r, cfg);
    check_dirs(&r, cfg);
    check_lxcfs(&r, cfg);
    check_views(&r, cfg);
    check_kernel(&r);
    check_fuse(&r, cfg);
    if (engine)
        check_engine(&r, engine, config, true);
    else
        for (size_t i = 0; rv_engines[i]; i++)
            check_engine(&r, rv_engines[i], NULL, false);
    check_nri(&r, cfg, nri_socket);
    printf("%d problem(s), %d warning(s)\n", r.fails, r.warns);
    return r.fails ? 1 : 0;
}
