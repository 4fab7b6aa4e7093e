/* fuse_probe.c - can the next runtime hand a FUSE container's mount calls
 * to the broker? runc >= 1.1 and crun >= 1.9 answer `features` (runtime-spec
 * features.md): linux.seccomp.actions has SCMP_ACT_NOTIFY (runc 1.1 added it
 * together with listenerPath), supportedFlags may have
 * SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (runc >= 1.2 with a kernel that has
 * it). Older crun has no `features`; its `--version` says "crun version X.Y"
 * and "+SECCOMP": listenerPath since 0.19, the flag since 1.6. crun's
 * `features` (1.9 to 1.28 at least) has no supportedFlags at all, which the
 * runtime-spec reads as "unknown", not "none": the flags then come from the
 * version rule (crun's `--version`; any other runtime, none). Anything else
 * cannot be trusted to pass the fd, and a FUSE request is refused.
 *
 * A runtime's `features` costs an exec of it (~10 ms for runc): the answer is
 * cached in <state_dir>/fuse/ under the identity of the runtime binary
 * (device, inode, size, modification time), so only the first FUSE container
 * after an install or upgrade pays it; state_dir is on /run, so a reboot
 * (another kernel) asks again. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/fuse.h"
#include "resview/json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUT_MAX (1u << 20)

/* Run `path arg`, stdout into *out (NUL-terminated); its exit status, or -1. */
static int run_capture(const char *path, const char *arg, char **out)
{
    cleanup_free char *buf = malloc(PROBE_OUT_MAX + 1);
    long deadline;
    size_t have = 0;
    int p[2], st = -1;
    pid_t pid;

    *out = NULL;
    if (!buf || pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        execl(path, path, arg, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    deadline = rv_now_ms() + PROBE_TIMEOUT_MS;
    for (;;) {
        ssize_t r;
        if (rv_wait_readable(p[0], deadline) == 0) {
            kill(pid, SIGKILL);
            break;
        }
        r = read(p[0], buf + have, PROBE_OUT_MAX - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (have += (size_t)r) == PROBE_OUT_MAX)
            break;
    }
    close(p[0]);
    kill(pid, SIGKILL);   /* a runtime that keeps writing or hangs */
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    buf[have] = '\0';
    *out = move_ptr(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool kernel_at_least(unsigned major, unsigned minor)
{
    struct utsname u;
    unsigned a, b;

    return uname(&u) == 0 && sscanf(u.release, "%u.%u", &a, &b) == 2 &&
           (a > major || (a == major && b >= minor));
}

/* crun's version rule: listenerPath since 0.19, the flag since 1.6 (and a
 * kernel >= 5.19). False when text is not crun's `--version`. */
static bool crun_version(const char *text, unsigned *major, unsigned *minor, bool *notify,
                         bool *wait_killable)
{
    if (!text || sscanf(text, "crun version %u.%u", major, minor) != 2)
        return false;
    *notify = *major > 0 || *minor >= 19;
    *wait_killable = (*major > 1 || (*major == 1 && *minor >= 6)) && kernel_at_least(5, 19);
    return true;
}

/* `features`; *flags_unknown: it has SCMP_ACT_NOTIFY but no supportedFlags. */
static void from_features(json_t *f, struct rv_fuse_runtime *rt, bool *flags_unknown)
{
    json_t *sc = rv_json_path(f, "linux.seccomp");
    json_t *flags = json_object_get(sc, "supportedFlags");

    *flags_unknown = false;
    if (!json_is_true(json_object_get(sc, "enabled"))) {
        snprintf(rt->why, sizeof(rt->why), "`features`: seccomp not enabled");
        return;
    }
    rt->notify = rv_json_array_has_string(json_object_get(sc, "actions"), "SCMP_ACT_NOTIFY");
    rt->wait_killable = rt->notify && rv_json_array_has_string(flags, RV_SECCOMP_FLAG_WAIT_KILLABLE);
    *flags_unknown = rt->notify && !json_is_array(flags);
    snprintf(rt->why, sizeof(rt->why), "`features`: %s%s",
             rt->notify ? "SCMP_ACT_NOTIFY" : "no SCMP_ACT_NOTIFY",
             rt->wait_killable ? ", " RV_SECCOMP_FLAG_WAIT_KILLABLE : "");
}

static void from_version(const char *text, struct rv_fuse_runtime *rt)
{
    unsigned major, minor;

    if (!crun_version(text, &major, &minor, &rt->notify, &rt->wait_killable)) {
        snprintf(rt->why, sizeof(rt->why), "no `features` and not crun's `--version`");
        return;
    }
    if (!strstr(text, "+SECCOMP")) {
        rt->notify = rt->wait_killable = false;
        snprintf(rt->why, sizeof(rt->why), "crun %u.%u built without seccomp", major, minor);
        return;
    }
    snprintf(rt->why, sizeof(rt->why), "crun %u.%u%s", major, minor,
             !rt->notify ? ": no listenerPath before 0.19" : "");
}

static void ask(const char *next, struct rv_fuse_runtime *rt)
{
    cleanup_free char *out = NULL;
    cleanup_json json_t *f = NULL;
    struct rv_error e;
    bool flags_unknown;

    if (run_capture(next, "features", &out) == 0 &&
        rv_json_parse(out, strlen(out), "features", &f, &e) == 0 && json_is_object(f)) {
        from_features(f, rt, &flags_unknown);
        free(move_ptr(out));
        if (flags_unknown) {
            /* no supportedFlags: unknown, so crun's version rule; any other
             * runtime (runc 1.1 lists none and has none), no flag */
            unsigned major, minor;
            bool notify;
            if (run_capture(next, "--version", &out) == 0 &&
                crun_version(out, &major, &minor, &notify, &rt->wait_killable))
                snprintf(rt->why, sizeof(rt->why), "`features`: SCMP_ACT_NOTIFY, no supportedFlags; crun %u.%u%s",
                         major, minor, rt->wait_killable ? ": " RV_SECCOMP_FLAG_WAIT_KILLABLE : "");
            else
                snprintf(rt->why, sizeof(rt->why), "`features`: SCMP_ACT_NOTIFY, no supportedFlags");
        }
        return;
    }
    free(move_ptr(out));
    if (run_capture(next, "--version", &out) == 0 && out) {
        from_version(out, rt);
        return;
    }
    snprintf(rt->why, sizeof(rt->why), "`%s features` and `--version` failed", next);
}

int rv_fuse_runtime_probe(const struct rv_config *cfg, const char *next, struct rv_fuse_runtime *rt,
                          struct rv_error *err)
{
    char dir[PATH_MAX], name[160], text[400];
    cleanup_close int dfd = -1;
    struct stat st;
    unsigned n, k;
    int off = 0;

    memset(rt, 0, sizeof(*rt));
    if (stat(next, &st) < 0)
        return rv_fail(err, errno, "FUSE: next runtime `%s`", next);
    snprintf(name, sizeof(name), "runtime-%jx-%jx-%jx-%jx.%09ld", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino, (uintmax_t)st.st_size, (uintmax_t)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec);
    if (rv_snprintf(dir, sizeof(dir), "%s/%s", cfg->state_dir, RV_BROKER_DIR) >= 0 &&
        rv_mkdir_p(dir, 0700, err) == 0)
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd >= 0) {
        cleanup_free char *cached = NULL;
        size_t len;
        if (rv_read_file_at(dfd, name, sizeof(text), &cached, &len, NULL, err) == 0 &&
            sscanf(cached, "%u %u %n", &n, &k, &off) == 2 && off > 0) {
            rt->notify = n == 1;
            rt->wait_killable = k == 1;
            snprintf(rt->why, sizeof(rt->why), "%s (cached)", cached + off);
            return 0;
        }
    }
    ask(next, rt);
    snprintf(text, sizeof(text), "%d %d %s", rt->notify, rt->wait_killable, rt->why);
    if (dfd >= 0 && rv_write_atomic_at(dfd, name, text, strlen(text), NULL, RV_WRITE_SWEEP, err) < 0) {
        /* no cache: the next FUSE start asks again */
    }
    return 0;
}
