/* broker.c - the FUSE broker's event loop (broker.h).
 *
 * One process, one thread, one poll loop over:
 *   - the listening socket: the runtime connects and sends the container's
 *     state (JSON: listenerMetadata, state.id, state.pid) with the seccomp
 *     notify fd of a process (runc: init and every exec, during create and
 *     exec; crun: connects before it forks and sends at start when
 *     noNewPrivileges is set);
 *   - each notify fd: a notification is handed to a forked child
 *     (broker_req.c), which needs a single-threaded process for setns and can
 *     be left behind if a tenant's file system blocks it; at most
 *     MAX_CHILDREN at a time, and an umount that must see whether its mount
 *     is busy (no MNT_DETACH) runs alone;
 *   - the children's results (one pipe) and their pidfds;
 *   - pidfds of the runtime (the process that started us, which became the
 *     next runtime) and of the container's init.
 * It exits when the container is gone: every notify fd hung up (the kernel
 * reports POLLHUP when a filter has no tasks left), init dead, no connection
 * waiting for a payload; or, if nothing ever connected, soon after the runtime
 * exited (a create that failed). A broker that is killed leaves the
 * container's mounts working; its later mount/umount calls get ENOSYS from
 * the kernel. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/json.h"
#include "resview/log.h"
#include "resview/mountreq.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define MAX_NOTIFY 1024          /* runc: one per exec'd process still alive */
#define MAX_CONNS 16
#define MAX_CHILDREN 16           /* requests being worked on */
#define MAX_KIDS 64               /* ... and children that answered but have not exited yet */
#define MAX_MOUNTS 65536
#define PAYLOAD_MAX (4u << 20)   /* the runtime's state JSON (annotations included) */
#define CONN_FDS 4
#define NO_RUNTIME_GRACE_MS 1000
#define LOG_REFUSALS 20          /* refusals logged one by one, then every 1000th */

struct conn {
    int fd;
    char *buf;
    size_t len;
    int fds[CONN_FDS];
    int nfds;
};

struct child {
    pid_t pid;
    int pidfd, nfd;
    uint64_t id;            /* the notification it answers */
    bool exclusive;
    bool done;              /* its answer is out (DONE record); it may still be exiting */
};

static struct {
    const char *id, *socket;
    bool allow_other;
    int listen_fd, runtime_pidfd, init_pidfd, hostproc;
    pid_t init_pid;
    bool runtime_gone, init_gone, ever_connected;
    int notify[MAX_NOTIFY];
    int n_notify;
    struct conn conns[MAX_CONNS];
    int n_conns;
    struct child kids[MAX_KIDS];
    int n_kids, n_active;
    bool exclusive_running;
    bool has_deferred;
    struct rv_seccomp_notif deferred;
    int deferred_nfd;
    enum rv_broker_call deferred_call;
    int results[2];
    struct rv_broker_mount *mounts;
    size_t n_mounts;
    unsigned long served, refused;
} B;

static void conn_close(int i)
{
    struct conn *c = &B.conns[i];

    close(c->fd);
    for (int k = 0; k < c->nfds; k++)
        close(c->fds[k]);
    free(c->buf);
    B.conns[i] = B.conns[--B.n_conns];
}

static bool is_notify_fd(int fd)
{
    char p[64], link[64];
    ssize_t n;

    snprintf(p, sizeof(p), "self/fd/%d", fd);
    n = readlinkat(B.hostproc, p, link, sizeof(link) - 1);
    if (n <= 0)
        return false;
    link[n] = '\0';
    return strcmp(link, "anon_inode:seccomp notify") == 0;
}

/* A whole payload: check it names our container, keep its notify fd. */
static void conn_payload(struct conn *c, json_t *st)
{
    json_t *fds = json_object_get(st, "fds"), *state = json_object_get(st, "state"), *v;
    const char *meta = json_string_value(json_object_get(st, "metadata"));
    const char *id = json_string_value(json_object_get(state, "id"));
    json_int_t pid = json_integer_value(json_object_get(state, "pid"));
    size_t i;
    int idx = -1, fd;

    if (!meta || strcmp(meta, B.id) != 0 || !id || strcmp(id, B.id) != 0) {
        rv_log(RV_WARN, "fuse broker: a runtime sent the state of another container (metadata "
               "`%.80s`, id `%.80s`): ignored", meta ? meta : "", id ? id : "");
        return;
    }
    json_array_foreach(fds, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), "seccompFd") == 0)
            idx = (int)i;
    if (idx < 0 || idx >= c->nfds || pid <= 0 || pid > INT32_MAX) {
        rv_log(RV_WARN, "fuse broker: state without a seccomp fd or pid: ignored");
        return;
    }
    fd = c->fds[idx];
    if (!is_notify_fd(fd)) {
        rv_log(RV_WARN, "fuse broker: the fd sent is not a seccomp notify fd: ignored");
        return;
    }
    if (B.init_pid == 0) {
        B.init_pid = (pid_t)pid;
        B.init_pidfd = rv_pidfd_open(B.init_pid, 0);
        B.init_gone = B.init_pidfd < 0;
    } else if (B.init_pid != (pid_t)pid) {
        rv_log(RV_WARN, "fuse broker: a runtime sent init pid %lld, not %d: ignored",
               (long long)pid, (int)B.init_pid);
        return;
    }
    if (B.n_notify == MAX_NOTIFY) {
        rv_log(RV_WARN, "fuse broker: more than %d processes with their own filter: the newest "
               "gets ENOSYS for mount", MAX_NOTIFY);
        return;
    }
    B.notify[B.n_notify++] = fd;
    c->fds[idx] = c->fds[--c->nfds];   /* kept: not closed with the connection */
    rv_log(RV_DEBUG, "fuse broker: notify fd of pid %lld (init %d), %d in use",
           (long long)json_integer_value(json_object_get(st, "pid")), (int)B.init_pid, B.n_notify);
}

/* Read what is there; 1 when the connection is done (payload handled, EOF or
 * error), 0 to wait for more. */
static int conn_read(struct conn *c)
{
    char cbuf[CMSG_SPACE(sizeof(int) * CONN_FDS)];
    struct iovec iov;
    struct msghdr msg;
    struct cmsghdr *cm;
    ssize_t r;

    for (;;) {
        if (!c->buf && !(c->buf = malloc(PAYLOAD_MAX + 1)))
            return 1;
        if (c->len == PAYLOAD_MAX)
            return 1;
        iov.iov_base = c->buf + c->len;
        iov.iov_len = PAYLOAD_MAX - c->len;
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        r = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN ? 0 : 1;
        for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t k = 0; k < n; k++) {
                int fd;
                memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
                if (c->nfds < CONN_FDS)
                    c->fds[c->nfds++] = fd;
                else
                    close(fd);
            }
        }
        if (r == 0)
            return 1;
        c->len += (size_t)r;
        /* runc's `run` keeps the connection open: parse as soon as it is whole */
        size_t e = c->len;
        while (e > 0 && (c->buf[e - 1] == '\n' || c->buf[e - 1] == ' '))
            e--;
        if (e > 0 && c->buf[e - 1] == '}') {
            cleanup_json json_t *st = NULL;
            struct rv_error err;
            if (rv_json_parse(c->buf, c->len, "runtime state", &st, &err) == 0) {
                if (json_is_object(st))
                    conn_payload(c, st);
                return 1;
            }
        }
    }
}

static void accept_all(void)
{
    for (;;) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        int fd = accept4(B.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        /* only root (the runtime) may hand us a container; the directory is 0700 too */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid() ||
            B.n_conns == MAX_CONNS) {
            close(fd);
            continue;
        }
        B.ever_connected = true;
        memset(&B.conns[B.n_conns], 0, sizeof(B.conns[0]));
        B.conns[B.n_conns++].fd = fd;
    }
}

static void mounts_add(const struct rv_broker_mount *m)
{
    if (B.n_mounts % 256 == 0) {
        struct rv_broker_mount *nm = realloc(B.mounts, (B.n_mounts + 256) * sizeof(*nm));
        if (!nm)
            return;
        B.mounts = nm;
    }
    B.mounts[B.n_mounts++] = *m;
}

static void mounts_remove(const struct rv_broker_mount *m)
{
    for (size_t i = 0; i < B.n_mounts; i++)
        if (B.mounts[i].mnt_id == m->mnt_id) {
            B.mounts[i] = B.mounts[--B.n_mounts];
            return;
        }
}

static void answer_now(int nfd, const struct rv_seccomp_notif *n, int error, const char *what);

/* A child's answer is out: the next request may start (an umount that runs
 * alone need not wait for it to finish exiting). */
static void kid_done(pid_t pid)
{
    for (int i = 0; i < B.n_kids; i++)
        if (B.kids[i].pid == pid && !B.kids[i].done) {
            B.kids[i].done = true;
            B.n_active--;
            if (B.kids[i].exclusive)
                B.exclusive_running = false;
        }
}

static void reap(int i)
{
    struct child k = B.kids[i];

    waitpid(k.pid, NULL, WNOHANG);
    close(k.pidfd);
    if (!k.done) {
        /* died without a word (killed): the caller must not wait forever */
        struct rv_seccomp_notif n = { .id = k.id };
        kid_done(k.pid);
        answer_now(k.nfd, &n, -EPERM, "request child died");
    }
    B.kids[i] = B.kids[--B.n_kids];
}

static void log_refusal(int error, const char *what)
{
    if (++B.refused <= LOG_REFUSALS || B.refused % 1000 == 0)
        rv_log(RV_INFO, "fuse broker: refused (%s, %lu so far): %s", strerror(-error), B.refused,
               what);
}

/* Refusals that need no look at the caller's memory (flags in registers). */
static void answer_now(int nfd, const struct rv_seccomp_notif *n, int error, const char *what)
{
    struct rv_seccomp_notif_resp resp = { .id = n->id, .error = error };
    char line[128];

    if (ioctl(nfd, RV_SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
        return;   /* the caller is gone */
    snprintf(line, sizeof(line), "%s (tid %u)", what, n->pid);
    log_refusal(error, line);
}

static void drain_results(void)
{
    struct rv_broker_result r;

    while (read(B.results[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
        r.what[sizeof(r.what) - 1] = '\0';
        if (r.event == RV_EV_MOUNTED) {
            mounts_add(&r.mount);
        } else if (r.event == RV_EV_UNMOUNTED) {
            mounts_remove(&r.mount);
        } else {
            kid_done(r.child);
            if (r.error == 0 || r.error == 1) {
                B.served++;
                rv_log(RV_DEBUG, "fuse broker: %s", r.what);
            } else {
                log_refusal(r.error, r.what);
            }
        }
    }
}

/* A request child keeps only what it needs: a child stuck on a tenant's file
 * system must not hold the listening socket or other processes' notify fds (a listener that stays open would make their mount
 * calls wait instead of failing with ENOSYS once the broker is gone). */
static void child_close_others(int keep_nfd)
{
    close(B.listen_fd);
    close(B.runtime_pidfd);
    if (B.init_pidfd >= 0)
        close(B.init_pidfd);
    close(B.results[0]);
    for (int i = 0; i < B.n_conns; i++) {
        close(B.conns[i].fd);
        for (int k = 0; k < B.conns[i].nfds; k++)
            close(B.conns[i].fds[k]);
    }
    for (int i = 0; i < B.n_kids; i++)
        close(B.kids[i].pidfd);
    for (int i = 0; i < B.n_notify; i++)
        if (B.notify[i] != keep_nfd)
            close(B.notify[i]);
}

static void start_child(int nfd, const struct rv_seccomp_notif *n, enum rv_broker_call call,
                        bool exclusive)
{
    struct rv_broker_ctx ctx = { nfd, B.hostproc, B.allow_other, B.mounts, B.n_mounts,
                                 B.results[1] };
    pid_t pid = fork();

    if (pid == 0) {
        child_close_others(nfd);
        rv_broker_handle(&ctx, n, call);
        _exit(0);
    }
    if (pid < 0) {
        answer_now(nfd, n, -EAGAIN, "fork");
        return;
    }
    B.kids[B.n_kids] = (struct child){ .pid = pid, .pidfd = rv_pidfd_open(pid, 0), .nfd = nfd,
                                       .id = n->id, .exclusive = exclusive };
    B.n_kids++;
    B.n_active++;
    B.exclusive_running = exclusive;
}

/* One notification: cheap refusals here, the rest in a child. */
static void dispatch(int nfd)
{
    struct rv_seccomp_notif n;
    enum rv_broker_call call;
    bool exclusive;
    int r;

    memset(&n, 0, sizeof(n));
    if (ioctl(nfd, RV_SECCOMP_IOCTL_NOTIF_RECV, &n) < 0)
        return;   /* ENOENT: the caller was killed meanwhile */
    call = rv_broker_call(n.data.arch, n.data.nr);
    switch (call) {
    case RV_CALL_MOUNT: {
        struct rv_mount_flags fl;
        if ((r = rv_mountreq_flags(n.data.args[3], &fl)) < 0)
            return answer_now(nfd, &n, r, "mount: flags (bind, move, remount, propagation or unknown)");
        exclusive = false;
        break;
    }
    case RV_CALL_UMOUNT2:
        if ((r = rv_mountreq_umount_flags(n.data.args[1])) < 0)
            return answer_now(nfd, &n, r, "umount2: flags");
        exclusive = !(n.data.args[1] & MNT_DETACH);
        break;
    case RV_CALL_UMOUNT:
        exclusive = true;
        break;
    default:
        return answer_now(nfd, &n, -ENOSYS, "unexpected system call");
    }
    if (exclusive && B.n_active > 0) {
        B.has_deferred = true;
        B.deferred = n;
        B.deferred_nfd = nfd;
        B.deferred_call = call;
        return;
    }
    start_child(nfd, &n, call, exclusive);
}

static void notify_remove(int i)
{
    if (B.has_deferred && B.deferred_nfd == B.notify[i])
        B.has_deferred = false;   /* its caller is gone with the filter */
    close(B.notify[i]);
    B.notify[i] = B.notify[--B.n_notify];
}

static bool container_gone(void)
{
    return B.runtime_gone && B.n_conns == 0 && B.n_notify == 0 && !B.has_deferred &&
           (B.init_pidfd < 0 || B.init_gone);
}

static int loop(void)
{
    struct pollfd pfd[4 + MAX_CONNS + MAX_KIDS + MAX_NOTIFY];
    int conn_at, kid_at, notify_at, n, timeout;
    bool may_dispatch;

    for (;;) {
        if (container_gone()) {
            /* a connection may still sit in the backlog */
            accept_all();
            if (B.n_conns == 0)
                return 0;
        }
        n = 0;
        /* not the results pipe: records are read at every wake (a child's are
         * all in before its exit wakes us), so a request costs two wakes */
        pfd[n++] = (struct pollfd){ .fd = -1 };
        pfd[n++] = (struct pollfd){ .fd = B.n_conns < MAX_CONNS ? B.listen_fd : -1, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = B.runtime_gone ? -1 : B.runtime_pidfd, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = B.init_gone ? -1 : B.init_pidfd, .events = POLLIN };
        conn_at = n;
        for (int i = 0; i < B.n_conns; i++)
            pfd[n++] = (struct pollfd){ .fd = B.conns[i].fd, .events = POLLIN };
        kid_at = n;
        for (int i = 0; i < B.n_kids; i++)
            pfd[n++] = (struct pollfd){ .fd = B.kids[i].pidfd, .events = POLLIN };
        notify_at = n;
        may_dispatch = !B.exclusive_running && !B.has_deferred && B.n_active < MAX_CHILDREN &&
                       B.n_kids < MAX_KIDS;
        for (int i = 0; i < B.n_notify; i++)
            pfd[n++] = (struct pollfd){ .fd = B.notify[i], .events = may_dispatch ? POLLIN : 0 };
        /* nothing ever connected and the runtime is gone: a failed create */
        timeout = B.runtime_gone && !B.ever_connected ? NO_RUNTIME_GRACE_MS : -1;
        int r = poll(pfd, (nfds_t)n, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rv_log(RV_ERROR, "fuse broker: poll: %s", strerror(errno));
            return 1;
        }
        if (r == 0) {
            accept_all();
            if (!B.ever_connected) {
                rv_log(RV_INFO, "fuse broker: the runtime exited without connecting (create "
                       "failed?): exiting");
                return 0;
            }
            continue;
        }
        /* results first: a mount is recorded before its caller can ask to undo it */
        drain_results();
        if (pfd[2].revents)
            B.runtime_gone = true;
        if (pfd[3].revents)
            B.init_gone = true;
        for (int i = B.n_kids - 1; i >= 0; i--)
            if (pfd[kid_at + i].revents)
                reap(i);
        drain_results();
        for (int i = B.n_notify - 1; i >= 0; i--) {
            short ev = pfd[notify_at + i].revents;
            if ((ev & POLLIN) && !B.has_deferred && !B.exclusive_running &&
                B.n_active < MAX_CHILDREN && B.n_kids < MAX_KIDS)
                dispatch(B.notify[i]);
            else if (ev & (POLLHUP | POLLERR | POLLNVAL))
                notify_remove(i);
        }
        if (B.has_deferred && B.n_active == 0 && B.n_kids < MAX_KIDS) {
            B.has_deferred = false;
            start_child(B.deferred_nfd, &B.deferred, B.deferred_call, true);
        }
        for (int i = B.n_conns - 1; i >= 0; i--)
            if (pfd[conn_at + i].revents && conn_read(&B.conns[i]))
                conn_close(i);
        if (pfd[1].revents)
            accept_all();
    }
}

int rv_broker_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "id", required_argument, NULL, 'i' },
        { "socket", required_argument, NULL, 's' },
        { "allow-other", required_argument, NULL, 'a' },
        { "log-file", required_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' },
        { NULL, 0, NULL, 0 },
    };
    struct rv_config cfg;
    int c, rc;

    rv_config_defaults(&cfg);
    cfg.log_file[0] = '\0';
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'i': B.id = optarg; break;
        case 's': B.socket = optarg; break;
        case 'a': B.allow_other = strcmp(optarg, "1") == 0; break;
        case 'f': snprintf(cfg.log_file, sizeof(cfg.log_file), "%s", optarg); break;
        case 'l': cfg.log_level = (enum rv_level)atoi(optarg); break;
        default: return 2;
        }
    }
    if (!B.id || !B.socket || !rv_safe_name(B.id)) {
        fprintf(stderr, "%s: started by resview-runtime only\n", RV_BROKER_NAME);
        return 2;
    }
    rv_log_init("fuse-broker", &cfg);
    rv_log_set_id(B.id);
    signal(SIGPIPE, SIG_IGN);
    B.listen_fd = RV_BROKER_LISTEN_FD;
    B.runtime_pidfd = RV_BROKER_RUNTIME_FD;
    B.init_pidfd = -1;
    B.hostproc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (B.hostproc < 0 || pipe2(B.results, O_CLOEXEC | O_NONBLOCK) < 0) {
        rv_log(RV_ERROR, "fuse broker: %s", strerror(errno));
        unlink(B.socket);
        return 1;
    }
    /* children block on a full pipe rather than lose a record; the loop never
     * blocks; room for every record MAX_KIDS children can write */
    fcntl(B.results[1], F_SETFL, 0);
    fcntl(B.results[1], F_SETPIPE_SZ, (int)(4 * MAX_KIDS * sizeof(struct rv_broker_result)));
    fcntl(B.listen_fd, F_SETFL, fcntl(B.listen_fd, F_GETFL) | O_NONBLOCK);
    rv_log(RV_INFO, "fuse broker: listening on %s", B.socket);
    rc = loop();
    /* our own socket name: no other broker uses it */
    unlink(B.socket);
    rv_log(RV_INFO, "fuse broker: container gone, exiting (%lu calls served, %lu refused, %d "
           "requests still running)", B.served, B.refused, B.n_active);
    return rc;
}
