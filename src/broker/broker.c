/* broker.c - the FUSE broker of one container (broker.h): a supervisor and
 * a worker, both this binary run as RV_BROKER_NAME.
 *
 * The supervisor, one thread, one poll loop over:
 *   - the listening socket: the runtime connects and sends the container's
 *     state (JSON: listenerMetadata, state.id, state.pid) with the seccomp
 *     notify fd of a process (runc: init and every exec, during create and
 *     exec; crun: connects before it forks and sends at start when
 *     noNewPrivileges is set); it keeps a copy of each and hands it to the
 *     worker;
 *   - the worker's records (the FUSE mounts it made) and its pidfd;
 *   - pidfds of the runtime (the process that started us, which became the
 *     next runtime) and of the container's init.
 * The worker polls the notify fds and answers each notification itself
 * (broker_req.c: setns into the caller's mount namespace needs a
 * single-threaded process; it goes back to its own afterwards). A request
 * costs no fork: on this kind of VM a fork costs milliseconds, a wakeup
 * microseconds. A worker that stays inside one request for STUCK_MS (a
 * tenant's file system that does not answer, memory that a tenant's
 * userfaultfd holds) is replaced, not waited for: the supervisor marks it
 * retired and starts another one, which takes over every notify fd and the
 * list of mounts; the retired one exits once its request returns. Only that
 * caller waits on the blocked file system, as it would on the kernel.
 *
 * The supervisor exits when the container is gone: every notify fd hung up
 * (the kernel reports POLLHUP when a filter has no tasks left), init dead,
 * no connection waiting for a payload; or, if nothing ever connected, soon
 * after the runtime exited (a create that failed). Workers die with it
 * (parent-death signal). A killed broker leaves the container's mounts
 * working; its later mount/umount calls get ENOSYS from the kernel. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/json.h"
#include "resview/log.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#define MAX_NOTIFY 1024          /* runc: one per exec'd process still alive */
#define MAX_CONNS 16
#define MAX_WORKERS 8            /* the current one and those replaced but still blocked */
#define STUCK_MS 2000
#define PAYLOAD_MAX (4u << 20)   /* the runtime's state JSON (annotations included) */
#define CONN_FDS 4
#define NO_RUNTIME_GRACE_MS 1000

struct conn {
    int fd;
    char *buf;
    size_t len;
    int fds[CONN_FDS];
    int nfds;
};

/* Shared between the supervisor and the workers (MAP_SHARED). */
struct slot {
    atomic_llong busy_since;   /* ms (CLOCK_MONOTONIC) a request started; 0 idle */
    atomic_int retired;
    pid_t pid;                 /* 0: free */
};

static struct {
    const char *id, *socket, *held_path;
    char metrics_dir[PATH_MAX];
    bool allow_other;
    unsigned max_mounts, max_mounts_node;
    char *volumes[RV_BROKER_MAX_VOLUMES];
    size_t n_volumes;
    struct rv_vol_id vol_ids[RV_BROKER_MAX_VOLUMES];
    size_t n_vol_ids;
    struct rv_held held;       /* the node's table; fd -1: unavailable */
    int fusectl;
    char key[RV_HELD_ID_MAX];
    struct rv_broker_shared *shared;
    int mntns;                 /* the container's mount namespace, held until we exit */
    int userns;                /* its user namespace when not ours, held likewise; else -1 */
    char cg_join[2][PATH_MAX]; /* cgroup.procs of the container's memory and pids cgroups */
    unsigned long saturated;   /* requests answered EAGAIN: every worker blocked */
    unsigned aborted;          /* FUSE connections aborted with requests waiting */
    bool ended;                /* init exiting or gone: connections aborted */
    int listen_fd, runtime_pidfd, init_pidfd, hostproc, home_mntns;
    pid_t init_pid;
    bool runtime_gone, init_gone, ever_connected;
    int notify[MAX_NOTIFY];
    int n_notify;
    struct conn conns[MAX_CONNS];
    int n_conns;
    struct slot *slots;        /* MAX_WORKERS */
    int worker;                /* slot of the current worker, -1: none */
    int worker_ctl;            /* socket to the current worker: new notify fds */
    int pidfds[MAX_WORKERS];
    int records[2];
    struct rv_mount_set mounts;   /* the supervisor's copy */
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

static int send_fd(int sock, int fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))], c = 'n';
    struct iovec iov = { &c, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- worker */

static struct {
    int slot, ctl;
    int notify[MAX_NOTIFY];
    int n_notify;
    struct rv_held held;
    struct rv_broker_ctx ctx;
} W;

static bool others_busy(void)
{
    for (int i = 0; i < MAX_WORKERS; i++)
        if (i != W.slot && B.slots[i].pid && atomic_load(&B.slots[i].busy_since))
            return true;
    return false;
}

static void worker_take_fd(void)
{
    char cbuf[CMSG_SPACE(sizeof(int))], c;
    struct iovec iov = { &c, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    ssize_t r = recvmsg(W.ctl, &msg, MSG_CMSG_CLOEXEC);

    if (r <= 0)
        _exit(0);   /* the supervisor is gone or retired us */
    W.n_notify = (int)rv_msg_take_fds(&msg, W.notify, (unsigned)W.n_notify, MAX_NOTIFY);
}

static void worker_serve(int nfd)
{
    struct rv_seccomp_notif n;
    struct slot *me = &B.slots[W.slot];

    memset(&n, 0, sizeof(n));
    atomic_store(&me->busy_since, rv_now_ms());
    if (ioctl(nfd, RV_SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) {
        W.ctx.notify_fd = nfd;
        W.ctx.others_busy = others_busy();
        if (rv_broker_handle(&W.ctx, &n) < 0)
            _exit(1);   /* could not go home: the supervisor starts another worker */
    }
    /* else ENOENT: the caller was killed meanwhile */
    atomic_store(&me->busy_since, 0);
}

static void worker_loop(void)
{
    struct pollfd pfd[1 + MAX_NOTIFY];
    int polled;

    for (;;) {
        if (atomic_load(&B.slots[W.slot].retired))
            _exit(0);
        pfd[0] = (struct pollfd){ .fd = W.ctl, .events = POLLIN };
        polled = W.n_notify;
        for (int i = 0; i < polled; i++)
            pfd[1 + i] = (struct pollfd){ .fd = W.notify[i], .events = POLLIN };
        if (poll(pfd, (nfds_t)(1 + polled), -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        /* Entries i < polled answer for W.notify[i]: new descriptors are
         * taken only after (a new one in a slot whose hangup was just read
         * would be closed at once). Backwards, so that the last one moved
         * into a closed one's place has been seen already. */
        for (int i = polled - 1; i >= 0; i--) {
            if (pfd[1 + i].revents & POLLIN) {
                if (atomic_load(&B.slots[W.slot].retired))
                    _exit(0);   /* our replacement polls these now */
                worker_serve(W.notify[i]);
            } else if (pfd[1 + i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                close(W.notify[i]);
                W.notify[i] = W.notify[--W.n_notify];
            }
        }
        if (pfd[0].revents)
            worker_take_fd();
    }
}

/* The container's cgroup.procs (joined for each request) and ours. */
static void worker_cgroups(struct rv_broker_ctx *ctx)
{
    char own[2][PATH_MAX];

    for (int i = 0; i < 2; i++) {
        ctx->cg_join[i] = ctx->cg_home[i] = -1;
        if (!B.cg_join[i][0])
            continue;
        ctx->cg_join[i] = open(B.cg_join[i], O_WRONLY | O_CLOEXEC);
        if (ctx->cg_join[i] < 0)
            rv_log(RV_WARN, "fuse broker: `%s`: %s: the container's mounts are not charged to "
                   "it", B.cg_join[i], strerror(errno));
    }
    if (rv_broker_cgroups("/proc/self/cgroup", own) == 0)
        for (int i = 0; i < 2; i++)
            if (own[i][0] && ctx->cg_join[i] >= 0)
                ctx->cg_home[i] = open(own[i], O_WRONLY | O_CLOEXEC);
}

/* Start a worker in a free slot with every notify fd and the mounts so far. */
static void worker_start(void)
{
    int sp[2], slot = -1;
    pid_t pid, sup = getpid();

    for (int i = 0; i < MAX_WORKERS && slot < 0; i++)
        if (!B.slots[i].pid)
            slot = i;
    if (slot < 0) {
        rv_log(RV_WARN, "fuse broker: %d workers blocked in requests: no new one until one "
               "returns", MAX_WORKERS);
        return;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return;
    atomic_store(&B.slots[slot].busy_since, 0);
    atomic_store(&B.slots[slot].retired, 0);
    pid = fork();
    if (pid == 0) {
        /* dies with the supervisor: a killed broker is gone as a whole */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != sup)
            _exit(0);
        close(sp[0]);
        close(B.listen_fd);
        close(B.runtime_pidfd);
        if (B.init_pidfd >= 0)
            close(B.init_pidfd);
        close(B.records[0]);
        for (int i = 0; i < B.n_conns; i++) {
            close(B.conns[i].fd);
            for (int k = 0; k < B.conns[i].nfds; k++)
                close(B.conns[i].fds[k]);
        }
        for (int i = 0; i < MAX_WORKERS; i++)
            if (B.pidfds[i] >= 0)
                close(B.pidfds[i]);
        if (B.worker_ctl >= 0)
            close(B.worker_ctl);
        W.slot = slot;
        W.ctl = sp[1];
        memcpy(W.notify, B.notify, sizeof(int) * (size_t)B.n_notify);
        W.n_notify = B.n_notify;
        /* a lock of our own on the node's table (flock locks belong to an
         * open file description, which fork shares) */
        W.held = B.held;
        if (W.held.fd >= 0 && rv_held_reopen(&W.held) < 0)
            W.held.fd = -1;
        W.ctx = (struct rv_broker_ctx){ .hostproc = B.hostproc, .home_mntns = B.home_mntns,
                                        .container_mntns = B.mntns,
                                        .container_userns = B.userns, .allow_other = B.allow_other,
                                        .max_mounts = B.max_mounts,
                                        .max_mounts_node = B.max_mounts_node, .mounts = &B.mounts,
                                        .record_fd = B.records[1], .vol_ids = B.vol_ids,
                                        .n_vol_ids = B.n_vol_ids,
                                        .held = W.held.fd >= 0 ? &W.held : NULL,
                                        .fusectl = B.fusectl, .key = B.key, .shared = B.shared,
                                        .metrics_dir = B.metrics_dir };
        worker_cgroups(&W.ctx);
        worker_loop();
    }
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        return;
    }
    B.slots[slot].pid = pid;
    B.pidfds[slot] = rv_pidfd_open(pid, 0);
    if (B.worker_ctl >= 0)
        close(B.worker_ctl);
    B.worker_ctl = sp[0];
    B.worker = slot;
}

/* The current worker has been inside one request too long: retire it (it
 * exits when the request returns) and start another. */
static void worker_check(void)
{
    long long since;

    if (B.worker < 0 || !(since = atomic_load(&B.slots[B.worker].busy_since)) ||
        rv_now_ms() - since < STUCK_MS)
        return;
    rv_log(RV_WARN, "fuse broker: worker %d inside one request for %lld ms (a file system that "
           "does not answer?): replaced", (int)B.slots[B.worker].pid, rv_now_ms() - since);
    atomic_store(&B.slots[B.worker].retired, 1);
    close(B.worker_ctl);
    B.worker_ctl = -1;
    B.worker = -1;
    worker_start();
}

/* A worker ended: the current one (it could not go home, or was killed), or
 * a retired one whose blocked request returned. Either way, if no worker
 * serves now, one is started in the slot that came free. */
static void worker_reap(int slot)
{
    waitpid(B.slots[slot].pid, NULL, WNOHANG);
    close(B.pidfds[slot]);
    B.pidfds[slot] = -1;
    B.slots[slot].pid = 0;
    if (slot == B.worker) {
        close(B.worker_ctl);
        B.worker_ctl = -1;
        B.worker = -1;
    }
    if (B.worker < 0 && B.n_notify > 0) {
        worker_start();
        if (B.worker >= 0 && B.saturated)
            rv_log(RV_INFO, "fuse broker: a worker serves again (%lu requests were answered "
                   "EAGAIN meanwhile)", B.saturated);
        B.saturated = 0;
    }
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Every worker is blocked inside a request (a tenant's file system that
 * does not answer): nobody else would answer this container's mount calls,
 * which would then wait for as long as those requests do. Answer them
 * EAGAIN here until a worker is free again. The receive is bounded (a
 * retired worker back from its request may have taken the notification). */
static void answer_saturated(int nfd)
{
    struct itimerval t = { .it_value = { .tv_sec = 0, .tv_usec = 100000 } }, off = { 0 };
    struct rv_seccomp_notif n;
    struct rv_seccomp_notif_resp resp = { 0 };
    int r;

    memset(&n, 0, sizeof(n));
    setitimer(ITIMER_REAL, &t, NULL);
    r = ioctl(nfd, RV_SECCOMP_IOCTL_NOTIF_RECV, &n);
    setitimer(ITIMER_REAL, &off, NULL);
    if (r < 0)
        return;
    resp.id = n.id;
    resp.error = -EAGAIN;
    ioctl(nfd, RV_SECCOMP_IOCTL_NOTIF_SEND, &resp);
    rv_broker_count_answer(B.metrics_dir, rv_broker_call(n.data.arch, n.data.nr), -EAGAIN);
    if (B.saturated++ % 1000 == 0)
        rv_log(RV_WARN, "fuse broker: all %d workers are blocked inside requests (a file system "
               "that does not answer?): mount calls answered EAGAIN until one returns (%lu so "
               "far)", MAX_WORKERS, B.saturated);
}

static void drain_records(void)
{
    struct rv_broker_record r;

    while (read(B.records[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
        if (r.event == RV_EV_MOUNTED)
            rv_mount_set_add(&B.mounts, &r.mount);
        else
            rv_mount_set_remove(&B.mounts, &r.mount);
    }
}

/* ------------------------------------------------------------ supervisor */

/* cgroup.procs of the memory and pids cgroups (v1) or the one cgroup (v2)
 * of a process, from its /proc/PID/cgroup. */
int rv_broker_cgroups(const char *file, char out[2][PATH_MAX])
{
    char text[8192];

    if (rv_read_small(file, text, sizeof(text)) < 0)
        return -1;
    return rv_mountreq_cgroups(text, "/sys/fs/cgroup",
                               access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0, out) < 0
               ? -1 : 0;
}

/* The container's mount namespace and cgroups, from its init as the runtime
 * handed it over: the namespace is held until we exit (a caller must be in
 * that one, broker_req.c's enter), the cgroups are
 * where the workers charge their work. Checked against the pidfd after
 * reading: the files were those of init, not of a process that reused its
 * pid. */
static void container_of_init(void)
{
    struct stat mine, theirs;
    char p[64];
    int ns, userns;

    snprintf(p, sizeof(p), "%d/ns/mnt", (int)B.init_pid);
    ns = openat(B.hostproc, p, O_RDONLY | O_CLOEXEC);
    snprintf(p, sizeof(p), "%d/ns/user", (int)B.init_pid);
    userns = openat(B.hostproc, p, O_RDONLY | O_CLOEXEC);
    if (userns >= 0 && (stat("/proc/self/ns/user", &mine) < 0 || fstat(userns, &theirs) < 0 ||
                        (mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino))) {
        close(userns);
        userns = -1;   /* ours: the container has no user namespace of its own */
    }
    snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)B.init_pid);
    if (rv_broker_cgroups(p, B.cg_join) < 0)
        rv_log(RV_WARN, "fuse broker: the cgroups of init %d are unknown: its mounts are not "
               "charged to the container", (int)B.init_pid);
    if (B.init_pidfd < 0 || rv_pidfd_send_signal(B.init_pidfd, 0) < 0) {
        if (ns >= 0)
            close(ns);
        if (userns >= 0)
            close(userns);
        B.cg_join[0][0] = B.cg_join[1][0] = '\0';
        return;
    }
    B.mntns = ns;
    B.userns = userns;
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
    /* crun's exec (1.8) sends state.pid 0: the init we know already */
    if (idx < 0 || idx >= c->nfds || pid < 0 || pid > INT32_MAX || (pid == 0 && B.init_pid == 0)) {
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
        container_of_init();
    } else if (pid != 0 && B.init_pid != (pid_t)pid) {
        rv_log(RV_WARN, "fuse broker: a runtime sent init pid %lld, not %d: ignored",
               (long long)pid, (int)B.init_pid);
        return;
    }
    if (B.n_notify == MAX_NOTIFY) {
        rv_log(RV_WARN, "fuse broker: more than %d processes with their own filter: the newest "
               "gets ENOSYS for its mount calls", MAX_NOTIFY);
        return;
    }
    B.notify[B.n_notify++] = fd;
    c->fds[idx] = c->fds[--c->nfds];   /* kept: not closed with the connection */
    if (B.worker < 0 || send_fd(B.worker_ctl, fd) < 0)
        worker_start();
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
        c->nfds = (int)rv_msg_take_fds(&msg, c->fds, (unsigned)c->nfds, CONN_FDS);
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

/* Whether the container's init is exiting (PF_EXITING among the flags of
 * /proc/PID/stat). A pid namespace's init that exits waits for every other
 * process of the namespace, so its pidfd says nothing while one of them
 * waits on a FUSE connection: this does. Its pid is not reused before it is
 * reaped. */
static bool init_exiting(void)
{
    char p[32], text[1024], *r;
    unsigned long flags;

    snprintf(p, sizeof(p), "/proc/%d/stat", (int)B.init_pid);
    if (rv_read_small(p, text, sizeof(text)) < 0 || !(r = strrchr(text, ')')))
        return false;
    /* ") S ppid pgrp session tty_nr tpgid flags" */
    return sscanf(r + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x4);
}

/* Workers still inside a request now. */
static unsigned blocked_workers(void)
{
    unsigned n = 0;

    for (int i = 0; i < MAX_WORKERS; i++)
        if (B.slots[i].pid && atomic_load(&B.slots[i].busy_since))
            n++;
    return n;
}

/* The container ended (its init is gone, or every process). A FUSE
 * connection we made for it may still have waiters, ours among them (a
 * request blocked on a tenant's daemon whose descriptor lives on somewhere)
 * and the container's own processes, which then cannot exit: abort, through
 * fusectl, the connection of every file system we made for it that the
 * kernel still holds (the node's table: detached ones too), each known by
 * its fusectl directory's inode, not by its device number alone (which the
 * kernel hands out again). Counts those that had requests waiting. */
static void abort_connections(void)
{
    bool locked;

    if (B.held.fd < 0 || B.fusectl < 0)
        return;
    /* the lock is best effort: the entries are checked one by one */
    locked = rv_held_lock(&B.held) == 0;
    for (uint32_t i = 0; i < B.held.t->n && i < RV_HELD_CAPACITY; i++) {
        const struct rv_held_entry *e = &B.held.t->e[i];
        char p[64], waiting[32] = "";
        uint64_t ino;
        int fd;
        if (strncmp(e->id, B.key, RV_HELD_ID_MAX) != 0 || rv_held_ino(B.fusectl, e->dev, &ino) < 0 ||
            ino != e->ino)
            continue;
        snprintf(p, sizeof(p), "%u/waiting", e->dev);
        if ((fd = openat(B.fusectl, p, O_RDONLY | O_CLOEXEC)) >= 0) {
            if (read(fd, waiting, sizeof(waiting) - 1) < 0)
                waiting[0] = '\0';
            close(fd);
        }
        snprintf(p, sizeof(p), "%u/abort", e->dev);
        if ((fd = openat(B.fusectl, p, O_WRONLY | O_CLOEXEC)) < 0)
            continue;
        if (write(fd, "1", 1) == 1 && atoi(waiting) > 0)
            B.aborted++;
        close(fd);
    }
    if (locked)
        rv_held_unlock(&B.held);
}

/* Say what was done at the end: in the log, and when requests were still
 * waiting or a worker was blocked, in <socket>.exit for the shim's delete
 * and `resview doctor`. */
static void exit_report(void)
{
    unsigned blocked = blocked_workers();
    char line[256];

    abort_connections();   /* again: a mount may have been made after init exited */
    rv_log(B.aborted || blocked ? RV_WARN : RV_INFO,
           "fuse broker: container gone, exiting: %zu FUSE mounts of its own were left (their "
           "connections aborted), %u with requests still waiting, %u workers were blocked in "
           "a request", B.mounts.n, B.aborted, blocked);
    if ((B.aborted || blocked) &&
        rv_snprintf(line, sizeof(line), "aborted=%u blocked=%u mounts=%zu\n", B.aborted, blocked,
                    B.mounts.n) >= 0)
        rv_broker_exit_note(B.socket, line);
}

static bool container_gone(void)
{
    return B.runtime_gone && B.n_conns == 0 && B.n_notify == 0 &&
           (B.init_pidfd < 0 || B.init_gone);
}

static int loop(void)
{
    struct pollfd pfd[4 + MAX_CONNS + MAX_WORKERS + MAX_NOTIFY];
    int conn_at, worker_at, notify_at, n, timeout, polled_notify;

    for (;;) {
        if (container_gone()) {
            /* a connection may still sit in the backlog */
            accept_all();
            if (B.n_conns == 0)
                return 0;
        }
        n = 0;
        pfd[n++] = (struct pollfd){ .fd = B.records[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = B.n_conns < MAX_CONNS ? B.listen_fd : -1, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = B.runtime_gone ? -1 : B.runtime_pidfd, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = B.init_gone ? -1 : B.init_pidfd, .events = POLLIN };
        conn_at = n;
        for (int i = 0; i < B.n_conns; i++)
            pfd[n++] = (struct pollfd){ .fd = B.conns[i].fd, .events = POLLIN };
        worker_at = n;
        for (int i = 0; i < MAX_WORKERS; i++)
            pfd[n++] = (struct pollfd){ .fd = B.pidfds[i], .events = POLLIN };
        /* only hangups: the worker answers (we do only when every one is blocked) */
        notify_at = n;
        for (int i = 0; i < B.n_notify; i++)
            pfd[n++] = (struct pollfd){ .fd = B.notify[i], .events = B.worker < 0 ? POLLIN : 0 };
        /* nothing ever connected and the runtime is gone: a failed create */
        /* a tick for stuck workers and for the container's end */
        timeout = B.runtime_gone && !B.ever_connected              ? NO_RUNTIME_GRACE_MS
                  : B.worker >= 0 || (B.init_pid > 0 && !B.ended) ? STUCK_MS / 2
                                                                    : -1;
        polled_notify = B.n_notify;
        int r = poll(pfd, (nfds_t)n, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rv_log(RV_ERROR, "fuse broker: poll: %s", strerror(errno));
            return 1;
        }
        if (r == 0 && B.runtime_gone && !B.ever_connected) {
            accept_all();
            if (!B.ever_connected) {
                rv_log(RV_INFO, "fuse broker: the runtime exited without connecting (create "
                       "failed?): exiting");
                return 0;
            }
        }
        drain_records();
        worker_check();
        if (pfd[2].revents)
            B.runtime_gone = true;
        if (pfd[3].revents)
            B.init_gone = true;
        if (!B.ended && B.init_pid > 0 && (B.init_gone || init_exiting())) {
            /* the container ends: nothing may wait on its file systems */
            B.ended = true;
            drain_records();
            abort_connections();
        }
        for (int i = 0; i < MAX_WORKERS; i++)
            if (pfd[worker_at + i].revents)
                worker_reap(i);
        for (int i = polled_notify - 1; i >= 0; i--) {
            /* POLLIN was asked for only without a worker; one may have started since */
            if (pfd[notify_at + i].revents & POLLIN && B.worker < 0)
                answer_saturated(B.notify[i]);
            else if (pfd[notify_at + i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                close(B.notify[i]);
                B.notify[i] = B.notify[--B.n_notify];
            }
        }
        for (int i = B.n_conns - 1; i >= 0; i--)
            if (pfd[conn_at + i].revents && conn_read(&B.conns[i]))
                conn_close(i);
        if (pfd[1].revents)
            accept_all();
    }
}

/* The identity of each volume's source as the spec names it, once, before
 * the container runs: a symlink is the link itself (it is never a mount's
 * root, so no FUSE mount goes there), never where it points later. */
static void volumes_identify(void)
{
    struct stat st;

    for (size_t i = 0; i < B.n_volumes; i++) {
        cleanup_close int fd = open(B.volumes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
            continue;
        B.vol_ids[B.n_vol_ids].dev = st.st_dev;
        B.vol_ids[B.n_vol_ids++].ino = st.st_ino;
    }
}

/* The node's table of FUSE file systems, and fusectl to check it against.
 * Without them no mount is made: the caps could not hold. */
static void held_open(void)
{
    struct rv_error err = { 0 };

    B.held.fd = -1;
    rv_held_key(B.id, B.key);
    if ((B.fusectl = rv_fusectl_open()) < 0)
        rv_log(RV_WARN, "fuse broker: fusectl: %s: FUSE mounts are refused (their count could "
               "not be kept)", strerror(errno));
    else if (!B.held_path || !*B.held_path || rv_held_open(&B.held, B.held_path, true, &err) < 0)
        rv_log(RV_WARN, "fuse broker: the node's table of FUSE file systems: %s: FUSE mounts are "
               "refused (their count could not be kept)", err.msg[0] ? err.msg : "no path");
}

/* The lock that makes a container's mounts one at a time, whichever worker
 * serves them: robust (a worker that dies holding it gives it up). */
static int shared_init(void)
{
    pthread_mutexattr_t a;
    int r;

    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) ||
        pthread_mutex_init(&B.shared->mount_lock, &a);
    pthread_mutexattr_destroy(&a);
    return r ? -1 : 0;
}

int rv_broker_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "id", required_argument, NULL, 'i' },
        { "socket", required_argument, NULL, 's' },
        { "allow-other", required_argument, NULL, 'a' },
        { "log-file", required_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' },
        { "max-mounts", required_argument, NULL, 'm' },
        { "volume", required_argument, NULL, 'v' },
        { "max-mounts-node", required_argument, NULL, 'n' },
        { "held", required_argument, NULL, 'h' },
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
        case 'm': B.max_mounts = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'n': B.max_mounts_node = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'h': B.held_path = optarg; break;
        case 'v':
            if (B.n_volumes < RV_BROKER_MAX_VOLUMES)
                B.volumes[B.n_volumes++] = optarg;
            break;
        default: return 2;
        }
    }
    if (!B.id || !B.socket || !rv_safe_name(B.id)) {
        fprintf(stderr, "%s: started by resview-runtime only\n", RV_BROKER_NAME);
        return 2;
    }
    rv_log_init("fuse-broker", &cfg);
    rv_broker_metrics_dir(B.held_path, B.metrics_dir, sizeof(B.metrics_dir));
    rv_log_set_id(B.id);
    signal(SIGPIPE, SIG_IGN);
    B.listen_fd = RV_BROKER_LISTEN_FD;
    B.runtime_pidfd = RV_BROKER_RUNTIME_FD;
    B.init_pidfd = B.worker_ctl = B.worker = B.mntns = B.userns = B.fusectl = -1;
    B.held.fd = -1;
    if (B.max_mounts == 0)
        B.max_mounts = RV_FUSE_MAX_MOUNTS_DEFAULT;
    if (B.max_mounts_node == 0 || B.max_mounts_node > RV_HELD_CAPACITY)
        B.max_mounts_node = RV_FUSE_MAX_MOUNTS_NODE_DEFAULT;
    {
        struct sigaction sa = { .sa_handler = on_alarm };   /* no SA_RESTART */
        sigaction(SIGALRM, &sa, NULL);
    }
    for (int i = 0; i < MAX_WORKERS; i++)
        B.pidfds[i] = -1;
    B.hostproc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    B.home_mntns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    B.slots = mmap(NULL, sizeof(struct slot) * MAX_WORKERS, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    B.shared = mmap(NULL, sizeof(*B.shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (B.hostproc < 0 || B.home_mntns < 0 || B.slots == MAP_FAILED || B.shared == MAP_FAILED ||
        shared_init() < 0 || pipe2(B.records, O_CLOEXEC | O_NONBLOCK) < 0) {
        rv_log(RV_ERROR, "fuse broker: %s", strerror(errno));
        unlink(B.socket);
        return 1;
    }
    /* the worker blocks on a full pipe rather than lose a record; we never block */
    fcntl(B.records[1], F_SETFL, 0);
    fcntl(B.listen_fd, F_SETFL, fcntl(B.listen_fd, F_GETFL) | O_NONBLOCK);
    volumes_identify();
    held_open();
    rv_log(RV_INFO, "fuse broker: listening on %s (%zu volumes a FUSE mount may go on, at most %u "
           "FUSE file systems held, %u on the node)", B.socket, B.n_volumes, B.max_mounts,
           B.max_mounts_node);
    {
        /* sockets of brokers killed earlier: off the container's start path */
        char dir[PATH_MAX], *slash;
        if (rv_snprintf(dir, sizeof(dir), "%s", B.socket) >= 0 && (slash = strrchr(dir, '/'))) {
            *slash = '\0';
            rv_broker_sweep(dir);
        }
    }
    rc = loop();
    /* our own socket name: no other broker uses it */
    unlink(B.socket);
    drain_records();
    exit_report();
    return rc;
}
