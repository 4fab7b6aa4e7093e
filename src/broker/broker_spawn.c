/* broker_spawn.c - the shim starts a FUSE container's broker (broker.h).
 *
 *   shim ──fork──► A: setsid, fork ──► B, A exits (B is nobody's child we wait for)
 *   B: pidfd of the shim (which becomes the next runtime), a socket of its own
 *      name bound and listening, "P <path>" on the pipe; fds 3 and 4, stdio on
 *      /dev/null, every other inherited fd closed (engines such as
 *      containerd-shim wait for the runtime's stdio to close); exec of this
 *      binary as RV_BROKER_NAME.
 *   shim: reads the path, then EOF (the pipe is close-on-exec: EOF means B's
 *      exec succeeded), writes listenerPath and execs the runtime, which can
 *      connect at once: B listened before it said so.
 * Exec rather than keep running the fork: a fresh address space without the
 * shim's heap (its RSS is what each FUSE container costs), and `ps` shows
 * what it is. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/log.h"
#include "resview/state.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

static int broker_dir(const struct rv_config *cfg, char *dir, size_t size, struct rv_error *err)
{
    struct stat st;

    if (rv_snprintf(dir, size, "%s/%s", cfg->state_dir, RV_BROKER_DIR) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir");
    if (rv_mkdir_p(dir, 0700, err) < 0)
        return -1;
    /* runtimes connect as root; nobody else may put a socket there */
    if (lstat(dir, &st) < 0)
        return rv_fail(err, errno, "`%s`", dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return rv_fail(err, 0, "`%s` must be a directory of its own user, mode 0700", dir);
    return 0;
}

/* The pid a socket name carries: <id>.<pid>.sock. */
static pid_t socket_pid(const char *name)
{
    size_t n = strlen(name), end, start;
    long pid = 0;

    if (n < 8 || strcmp(name + n - 5, ".sock") != 0)
        return 0;
    end = start = n - 5;
    while (start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9')
        start--;
    if (start == end || end - start > 9 || start < 2 || name[start - 1] != '.')
        return 0;
    for (size_t i = start; i < end; i++)
        pid = pid * 10 + (name[i] - '0');
    return (pid_t)pid;
}

/* The broker listening on path: this binary run as RV_BROKER_NAME with
 * --socket path. */
static bool broker_at(pid_t pid, const char *path)
{
    char p[64], cmd[1024];
    const char *base;
    cleanup_close int fd = -1;
    ssize_t n;

    snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || (n = read(fd, cmd, sizeof(cmd) - 1)) <= 0)
        return false;
    cmd[n] = '\0';
    base = strrchr(cmd, '/');
    if (strcmp(base ? base + 1 : cmd, RV_BROKER_NAME) != 0)
        return false;
    for (const char *a = cmd; a < cmd + n; a += strlen(a) + 1)
        if (strcmp(a, "--socket") == 0)
            return a + 9 < cmd + n && strcmp(a + 9, path) == 0;
    return false;
}

/* A socket a broker listens on: the broker its name carries the pid of, or
 * (a broker started again for exec sessions binds the old name) one that
 * accepts a connection. */
static bool socket_live(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    const char *name = strrchr(path, '/');
    pid_t pid = socket_pid(name ? name + 1 : path);
    cleanup_close int s = -1;

    if (pid && broker_at(pid, path))
        return true;
    if (rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) < 0)
        return false;
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
}

bool rv_broker_serves(const struct rv_config *cfg, const char *id, const char *path)
{
    char dir[PATH_MAX];
    size_t dl, il = strlen(id);

    if (rv_snprintf(dir, sizeof(dir), "%s/%s/", cfg->state_dir, RV_BROKER_DIR) < 0)
        return false;
    dl = strlen(dir);
    /* one of our names for this container: <dir>/<id, maybe cut>.<pid>.sock */
    if (strncmp(path, dir, dl) != 0 || strchr(path + dl, '/') || !socket_pid(path + dl) ||
        strncmp(path + dl, id, strcspn(path + dl, ".") < il ? strcspn(path + dl, ".") : il) != 0)
        return false;
    return socket_live(path);
}

/* Count the sockets in dir; with unlink_stale, remove those of brokers that
 * were killed (a broker removes its own at exit). */
static int scan(const char *dir, bool unlink_stale, unsigned *live, unsigned *stale)
{
    struct dirent *de;
    int dfd;
    DIR *d;

    *live = *stale = 0;
    if (!(d = opendir(dir)))
        return -1;
    dfd = dirfd(d);
    while ((de = readdir(d))) {
        char path[PATH_MAX];
        int tmp_pid;
        /* a broker that died between its bind and its rename */
        if (unlink_stale && sscanf(de->d_name, ".%d.tmp", &tmp_pid) == 1 && tmp_pid > 0 &&
            kill(tmp_pid, 0) < 0 && errno == ESRCH) {
            unlinkat(dfd, de->d_name, 0);
            continue;
        }
        if (!socket_pid(de->d_name) || rv_snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0)
            continue;
        if (socket_live(path)) {
            (*live)++;
        } else {
            (*stale)++;
            if (unlink_stale)
                unlinkat(dfd, de->d_name, 0);
        }
    }
    closedir(d);
    return 0;
}

int rv_broker_count(const struct rv_config *cfg, unsigned *live, unsigned *stale)
{
    char dir[PATH_MAX];

    if (rv_snprintf(dir, sizeof(dir), "%s/%s", cfg->state_dir, RV_BROKER_DIR) < 0)
        return -1;
    return scan(dir, false, live, stale);
}

void rv_broker_sweep(const char *dir)
{
    unsigned live, stale;
    scan(dir, true, &live, &stale);
}

int rv_broker_revive(const struct rv_config *cfg, const char *id, struct rv_error *err)
{
    cleanup_json json_t *rec = NULL;
    char path[PATH_MAX];
    const char *sock;

    if (!id || !rv_safe_name(id))
        return 0;
    if (rv_state_read(cfg, id, RV_BROKER_RECORD, &rec, err) < 0)
        return errno == ENOENT ? 0 : -1;
    sock = json_string_value(json_object_get(rec, "socket"));
    if (!sock)
        return rv_fail(err, 0, "FUSE record: no socket");
    if (rv_broker_serves(cfg, id, sock))
        return 0;
    if (rv_broker_spawn(cfg, id, sock, json_object_get(rec, "volumes"), path, sizeof(path), err) < 0)
        return -1;
    rv_log(RV_WARN, "fuse: the container's broker was gone: another one started on %s for this "
           "exec (earlier processes' mount calls still get ENOSYS)", sock);
    return 0;
}

/* <socket path without .sock>.exit: what a broker did at exit. */
static int exit_note_path(const char *sock, char *out, size_t size)
{
    size_t n = strlen(sock);

    if (n < 5 || strcmp(sock + n - 5, ".sock") != 0)
        return -1;
    return rv_snprintf(out, size, "%.*s.exit", (int)(n - 5), sock);
}

void rv_broker_exit_note(const char *sock, const char *text)
{
    char path[PATH_MAX];
    int fd;

    if (exit_note_path(sock, path, sizeof(path)) < 0)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (write(fd, text, strlen(text)) < 0) {
        /* the log has it too */
    }
    close(fd);
}

void rv_broker_report(const struct rv_config *cfg, const char *id)
{
    cleanup_json json_t *rec = NULL;
    struct rv_error err;
    char path[PATH_MAX], note[256] = "";
    const char *sock;
    long deadline = rv_now_ms() + RV_BROKER_EXIT_WAIT_MS;

    if (rv_state_read(cfg, id, RV_BROKER_RECORD, &rec, &err) < 0 ||
        !(sock = json_string_value(json_object_get(rec, "socket"))) ||
        exit_note_path(sock, path, sizeof(path)) < 0)
        return;
    /* it exits once every process of the container has */
    while (socket_live(sock) && rv_now_ms() < deadline)
        usleep(10000);
    if (socket_live(sock)) {
        rv_log(RV_WARN, "delete: the FUSE broker on %s is still running %d ms after its "
               "container was deleted (a request blocked on a file system?)", sock,
               RV_BROKER_EXIT_WAIT_MS);
        return;
    }
    if (rv_read_small(path, note, sizeof(note)) < 0)
        return;
    unlink(path);
    rv_log(RV_WARN, "delete: the FUSE broker %s at exit: %s (profiles/README.md \"The broker's life\": a tenant's file "
           "system that did not answer)", sock, note);
}

int rv_broker_exit_notes(const struct rv_config *cfg, char *last, size_t size)
{
    char dir[PATH_MAX], path[PATH_MAX + 256], note[200];
    struct dirent *de;
    int n = 0;
    DIR *d;

    *last = '\0';
    if (rv_snprintf(dir, sizeof(dir), "%s/%s", cfg->state_dir, RV_BROKER_DIR) < 0 || !(d = opendir(dir)))
        return -1;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".exit") != 0 ||
            rv_snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0 ||
            rv_read_small(path, note, sizeof(note)) < 0)
            continue;
        n++;
        rv_snprintf(last, size, "%.*s: %s", (int)(l - 5), de->d_name, note);
    }
    closedir(d);
    return n;
}

static void say(int fd, const char *fmt, ...) RV_PRINTF(2, 3);
static void say(int fd, const char *fmt, ...)
{
    char buf[PATH_MAX + 256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1) < 0) {
        /* the shim will time out */
    }
}

/* In B. Never returns. */
static void broker_child(const struct rv_config *cfg, const char *id, const char *dir,
                         const char *want, json_t *volumes, pid_t shim, int pipe_w)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char path[sizeof(sa.sun_path)], level[8], suffix[32], max[16], max_node[16], held[PATH_MAX];
    char *argv[24 + 2 * RV_BROKER_MAX_VOLUMES];
    json_t *v;
    size_t i;
    int argc = 0;
    int sock, rt, null, hi, room;
    sigset_t all;

    rt = rv_pidfd_open(shim, 0);
    if (rt < 0) {
        say(pipe_w, "E pidfd_open: %s\n", strerror(errno));
        _exit(1);
    }
    /* <id>.<pid>.sock; the pid makes it unique among live brokers, the id (cut
     * to what fits in a socket address) tells people whose it is. A broker
     * started again for exec sessions takes the name the container knows. */
    snprintf(suffix, sizeof(suffix), ".%d.sock", (int)getpid());
    room = (int)sizeof(path) - 1 - (int)strlen(dir) - 1 - (int)strlen(suffix);
    if (want) {
        if (rv_snprintf(path, sizeof(path), "%s", want) < 0) {
            say(pipe_w, "E socket path `%s` too long\n", want);
            _exit(1);
        }
    } else if (room < 8) {
        say(pipe_w, "E state_dir `%s` is too long for a socket address (%zu bytes at most)\n",
            cfg->state_dir, sizeof(path) - 1);
        _exit(1);
    } else {
        snprintf(path, sizeof(path), "%s/%.*s%s", dir, room < 32 ? room : 32, id, suffix);
    }
    /* Bound and listening under a temporary name first, then renamed: the
     * name appears only once it accepts (another broker's sweep takes a
     * socket that refuses connections for a dead one's), and replaces a dead
     * broker's socket of the same name in one step. */
    if (rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/.%d.tmp", dir, (int)getpid()) < 0) {
        say(pipe_w, "E state_dir `%s` is too long for a socket address\n", cfg->state_dir);
        _exit(1);
    }
    sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(sa.sun_path);
    if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(sock, 64) < 0 ||
        rename(sa.sun_path, path) < 0) {
        say(pipe_w, "E socket `%s`: %s\n", path, strerror(errno));
        unlink(sa.sun_path);
        _exit(1);
    }
    say(pipe_w, "P %s\n", path);

    /* fds 3 and 4, stdio on /dev/null, nothing else inherited */
    hi = fcntl(pipe_w, F_DUPFD_CLOEXEC, 100);
    sock = fcntl(sock, F_DUPFD_CLOEXEC, 101);
    rt = fcntl(rt, F_DUPFD_CLOEXEC, 102);
    null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (hi < 0 || sock < 0 || rt < 0 || null < 0 || dup2(sock, RV_BROKER_LISTEN_FD) < 0 ||
        dup2(rt, RV_BROKER_RUNTIME_FD) < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
        dup2(null, 2) < 0) {
        say(hi >= 0 ? hi : pipe_w, "E file descriptors: %s\n", strerror(errno));
        _exit(1);
    }
    rv_close_range(RV_BROKER_RUNTIME_FD + 1, (unsigned)hi - 1, 0);
    rv_close_range((unsigned)hi + 1, ~0u, 0);
    if (chdir("/") < 0) {
        /* "/" exists */
    }
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    snprintf(level, sizeof(level), "%d", (int)cfg->log_level);
    snprintf(max, sizeof(max), "%u", cfg->fuse_max_mounts);
    snprintf(max_node, sizeof(max_node), "%u", cfg->fuse_max_mounts_node);
    if (rv_snprintf(held, sizeof(held), "%s/%s", dir, RV_HELD_FILE) < 0)
        held[0] = '\0';   /* the broker refuses mounts and says why */
#define ARG(s) (argv[argc++] = (char *)(s))
    ARG(RV_BROKER_NAME), ARG("--id"), ARG(id), ARG("--socket"), ARG(path);
    ARG("--allow-other"), ARG(cfg->fuse_allow_other ? "1" : "0"), ARG("--max-mounts"), ARG(max);
    ARG("--max-mounts-node"), ARG(max_node), ARG("--held"), ARG(held);
    ARG("--log-file"), ARG(cfg->log_file), ARG("--log-level"), ARG(level);
    json_array_foreach(volumes, i, v)
        if (json_is_string(v) && i < RV_BROKER_MAX_VOLUMES)
            ARG("--volume"), ARG(json_string_value(v));
    ARG(NULL);
#undef ARG
    char *envp[] = { (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     NULL };
    execve("/proc/self/exe", argv, envp);
    say(hi, "E exec /proc/self/exe: %s\n", strerror(errno));
    unlink(path);
    _exit(1);
}

int rv_broker_spawn(const struct rv_config *cfg, const char *id, const char *want,
                    json_t *volumes, char *path, size_t size, struct rv_error *err)
{
    char dir[PATH_MAX], msg[PATH_MAX + 512];
    size_t have = 0;
    long deadline;
    int p[2], st;
    pid_t a, shim = getpid();

    if (!id || !rv_safe_name(id))
        return rv_fail(err, 0, "FUSE broker: the container id is not a valid file name");
    if (broker_dir(cfg, dir, sizeof(dir), err) < 0)
        return rv_wrap(err, "FUSE broker");
    if (pipe2(p, O_CLOEXEC) < 0)
        return rv_fail(err, errno, "FUSE broker: pipe");
    a = fork();
    if (a < 0) {
        close(p[0]);
        close(p[1]);
        return rv_fail(err, errno, "FUSE broker: fork");
    }
    if (a == 0) {
        close(p[0]);
        if (setsid() < 0) {
            /* already a session leader: cannot be, we are a fresh child */
        }
        pid_t b = fork();
        if (b != 0)
            _exit(b < 0 ? 1 : 0);
        broker_child(cfg, id, dir, want, volumes, shim, p[1]);
    }
    close(p[1]);
    while (waitpid(a, &st, 0) < 0 && errno == EINTR) {
    }
    deadline = rv_now_ms() + RV_BROKER_READY_TIMEOUT_MS;
    for (;;) {
        ssize_t r;
        if (rv_wait_readable(p[0], deadline) == 0) {
            close(p[0]);
            return rv_fail(err, 0, "FUSE broker: not ready after %d ms", RV_BROKER_READY_TIMEOUT_MS);
        }
        r = read(p[0], msg + have, sizeof(msg) - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        if (have == sizeof(msg) - 1)
            break;
    }
    close(p[0]);
    msg[have] = '\0';
    char *e = strstr(msg, "E ");
    if (e && (e == msg || e[-1] == '\n')) {
        e[strcspn(e, "\n")] = '\0';
        return rv_fail(err, 0, "FUSE broker: %s", e + 2);
    }
    if (strncmp(msg, "P ", 2) != 0 || !strchr(msg, '\n'))
        return rv_fail(err, 0, "FUSE broker: did not start");
    *strchr(msg, '\n') = '\0';
    if (rv_snprintf(path, size, "%s", msg + 2) < 0)
        return rv_fail(err, ENAMETOOLONG, "FUSE broker: socket path");
    return 0;
}
