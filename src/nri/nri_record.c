/* nri_record.c - what `resview doctor` and the node agent's readiness ask
 * about NRI, without protobuf: whether the runtime's NRI socket accepts a
 * connection (non-blocking, bounded), and the plugin's registration record,
 * STATE_DIR/nri-plugin.json, which the plugin writes once the runtime has
 * configured it and removes when the connection ends or it is stopped. The
 * record names the plugin's pid with its start time (/proc/PID/stat), so a
 * record left by a killed plugin is told from a live one even when the pid
 * was reused, and the inode of its end of the connection: whether the
 * runtime still talks to it is the kernel's word (sock_diag), with the
 * instance's status (rv_nri_lock) for a call read and not answered. */
#define _GNU_SOURCE
#include "resview/json.h"
#include "resview/nri.h"
#include "resview/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int rv_nri_record_path(const struct rv_config *cfg, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/%s", cfg->state_dir, RV_NRI_RECORD);
}

static int start_time(int pid, unsigned long long *start)
{
    char dir[32];
    int fd, r;

    snprintf(dir, sizeof(dir), "/proc/%d", pid);
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    r = rv_pid_start_time(fd, start);
    close(fd);
    return r;
}

long long rv_nri_clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lexically: an absolute path with no `.`, `..` or repeated `/` (for a
 * directory that does not exist yet, so has no real path). */
static int lexical(const char *path, char *out, size_t size)
{
    char cwd[PATH_MAX], buf[2 * PATH_MAX];
    size_t n = 0;

    if (path[0] != '/') {
        if (!getcwd(cwd, sizeof(cwd)) || rv_snprintf(buf, sizeof(buf), "%s/%s", cwd, path) < 0)
            return -1;
    } else if (rv_snprintf(buf, sizeof(buf), "%s", path) < 0) {
        return -1;
    }
    for (const char *p = buf; *p;) {
        while (*p == '/')
            p++;
        size_t k = strcspn(p, "/");
        if (k == 0 || (k == 1 && p[0] == '.')) {
            /* nothing */
        } else if (k == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[--n] != '/')
                ;
        } else {
            if (n + 1 + k >= size)
                return -1;
            out[n++] = '/';
            memcpy(out + n, p, k);
            n += k;
        }
        p += k;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    return 0;
}

int rv_nri_socket_identity(const char *socket_path, char *out, size_t size)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(socket_path, '/'), *name = slash ? slash + 1 : socket_path;

    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return lexical(socket_path, out, size);
    /* there, the socket's own real path (a link to it is the same socket) */
    if (realpath(socket_path, real))
        return rv_snprintf(out, size, "%s", real) < 0 ? -1 : 0;
    if (rv_snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - socket_path) : 1,
                    slash ? socket_path : ".") < 0)
        return -1;
    if (!dir[0])
        strcpy(dir, "/");
    /* the directory's real path (symlinks: /var/run is /run), else as written */
    if (!realpath(dir, real) && lexical(dir, real, sizeof(real)) < 0)
        return -1;
    return rv_snprintf(out, size, "%s/%s", strcmp(real, "/") == 0 ? "" : real, name) < 0 ? -1 : 0;
}

/* FNV-1a of the socket's identity (rv_nri_socket_identity): its lock file's
 * name, the same for every spelling of one socket */
static int lock_path(const struct rv_config *cfg, const char *socket_path, char *out, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    char id[PATH_MAX];

    if (rv_nri_socket_identity(socket_path, id, sizeof(id)) < 0)
        return -1;
    for (const unsigned char *c = (const unsigned char *)id; *c; c++)
        h = (h ^ *c) * 0x100000001b3ULL;
    return rv_snprintf(out, size, "%s/nri-%016llx.lock", cfg->state_dir, (unsigned long long)h);
}

int rv_nri_lock(const struct rv_config *cfg, const char *socket_path, int *fd_out,
                struct rv_nri_status **st_out, struct rv_error *err)
{
    char path[PATH_MAX];
    cleanup_close int fd = -1;
    struct rv_nri_status now = { .magic = RV_NRI_STATUS_MAGIC }, *st;

    if (lock_path(cfg, socket_path, path, sizeof(path)) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir `%s` or the socket's path `%s`", cfg->state_dir,
                       socket_path);
    if (rv_mkdir_p(cfg->state_dir, 0755, err) < 0)
        return -1;
    if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
        return rv_fail(err, errno, "open `%s`", path);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        struct rv_nri_status other = { 0 };
        if (errno != EWOULDBLOCK)
            return rv_fail(err, errno, "lock `%s`", path);
        if (pread(fd, &other, sizeof(other), 0) == (ssize_t)sizeof(other) && other.pid > 0 &&
            memcmp(other.magic, RV_NRI_STATUS_MAGIC, sizeof(other.magic)) == 0)
            return rv_fail(err, EBUSY, "another `resview nri` (pid %d) serves `%s` (it holds `%s`)",
                           (int)other.pid, socket_path, path);
        return rv_fail(err, EBUSY, "another `resview nri` serves `%s` (it holds `%s`)", socket_path, path);
    }
    unsigned long long start = 0;
    if (start_time(getpid(), &start) < 0)
        return rv_fail(err, errno, "NRI: the plugin's own start time (/proc/self/stat)");
    now.pid = (int32_t)getpid();
    now.start = start;
    if (ftruncate(fd, 0) < 0 || pwrite(fd, &now, sizeof(now), 0) != (ssize_t)sizeof(now))
        return rv_fail(err, errno ? errno : EIO, "write `%s`", path);
    st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (st == MAP_FAILED)
        return rv_fail(err, errno, "mmap `%s`", path);
    *st_out = st;
    *fd_out = move_fd(fd);
    return 0;
}

/* The record's own lock: writes and removals, each a moment */
static int record_lock_path(const struct rv_config *cfg, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/nri-plugin.lock", cfg->state_dir);
}

/* The inode of the socket fd */
static unsigned long long sock_ino(int fd)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

int rv_nri_record_write(const struct rv_config *cfg, const char *socket_path, const char *runtime, int sfd,
                        long long timeout_ms, char **text_out, struct rv_error *err)
{
    cleanup_json json_t *js = NULL;
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1, lfd = -1;
    unsigned long long start = 0;
    struct stat st = { .st_mode = 0644, .st_uid = 0, .st_gid = 0 };
    struct rv_nri_registration old;
    struct rv_error e;
    char lpath[PATH_MAX];

    if (start_time(getpid(), &start) < 0)
        return rv_fail(err, errno, "NRI: the plugin's own start time (/proc/self/stat)");
    js = json_pack("{s:i, s:I, s:s, s:s, s:I, s:I, s:I}", "pid", (int)getpid(), "start", (json_int_t)start,
                   "socket", socket_path, "runtime", runtime, "since", (json_int_t)time(NULL),
                   "ino", (json_int_t)sock_ino(sfd), "timeout_ms", (json_int_t)timeout_ms);
    if (!js || !(text = json_dumps(js, JSON_COMPACT)))
        return rv_fail(err, ENOMEM, "NRI: the registration record");
    if (rv_mkdir_p(cfg->state_dir, 0755, err) < 0)
        return -1;
    if ((dfd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return rv_fail(err, errno, "open `%s`", cfg->state_dir);
    if (record_lock_path(cfg, lpath, sizeof(lpath)) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir `%s`", cfg->state_dir);
    if ((lfd = open(lpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 || flock(lfd, LOCK_EX) < 0)
        return rv_fail(err, errno, "lock `%s`", lpath);
    /* another live plugin's (on another socket): not ours to replace */
    if (rv_nri_record_read(cfg, &old, &e) == RV_NRI_REG_LIVE && old.pid != getpid())
        return rv_fail(err, EBUSY, "the record is the plugin's of pid %d (on `%s`)", old.pid, old.socket);
    st.st_uid = geteuid();
    st.st_gid = getegid();
    if (rv_write_atomic_at(dfd, RV_NRI_RECORD, text, strlen(text), &st, 0, err) < 0)
        return -1;
    *text_out = move_ptr(text);
    return 0;
}

void rv_nri_record_drop(const char *path, const char *lpath, const char *text)
{
    char buf[4096];
    size_t want = strlen(text);
    ssize_t n = 0;
    int lfd = open(lpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC), fd;

    /* only the signals' handler and the plugin's loop call this, one at a time */
    if (lfd >= 0)
        flock(lfd, LOCK_EX);
    if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
        n = read(fd, buf, sizeof(buf));
        close(fd);
    }
    if (n >= 0 && (size_t)n == want && memcmp(buf, text, want) == 0)
        unlink(path);
    if (lfd >= 0)
        close(lfd);
}

int rv_nri_record_read(const struct rv_config *cfg, struct rv_nri_registration *reg, struct rv_error *err)
{
    char path[PATH_MAX];
    cleanup_free char *text = NULL;
    cleanup_json json_t *js = NULL;
    size_t len;
    unsigned long long now_start;
    json_int_t pid, start;
    const char *sock, *rt;

    memset(reg, 0, sizeof(*reg));
    if (rv_nri_record_path(cfg, path, sizeof(path)) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir `%s`", cfg->state_dir);
    if (rv_read_file_at(AT_FDCWD, path, 4096, &text, &len, NULL, err) < 0)
        return err->errnum == ENOENT ? RV_NRI_REG_NONE : -1;
    if (rv_json_parse(text, len, path, &js, err) < 0)
        return -1;
    if (json_unpack(js, "{s:I, s:I, s:s, s:s}", "pid", &pid, "start", &start, "socket", &sock,
                    "runtime", &rt) < 0 || pid <= 0 || pid > INT_MAX)
        return rv_fail(err, EINVAL, "`%s`: not a registration record (pid, start, socket, runtime)", path);
    reg->pid = (int)pid;
    reg->start = (unsigned long long)start;
    if (json_is_integer(json_object_get(js, "ino")))
        reg->ino = (unsigned long long)json_integer_value(json_object_get(js, "ino"));
    if (json_is_integer(json_object_get(js, "timeout_ms")))
        reg->timeout_ms = (long long)json_integer_value(json_object_get(js, "timeout_ms"));
    if (json_is_integer(json_object_get(js, "since")))
        reg->since = (long long)json_integer_value(json_object_get(js, "since"));
    snprintf(reg->socket, sizeof(reg->socket), "%s", sock);
    snprintf(reg->runtime, sizeof(reg->runtime), "%s", rt);
    /* the same process: its pid and its start time */
    if (start_time(reg->pid, &now_start) < 0 || now_start != reg->start)
        return RV_NRI_REG_STALE;
    return RV_NRI_REG_LIVE;
}

int rv_nri_socket_probe(const char *path, int timeout_ms, char *why, size_t size)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    cleanup_close int fd = -1;
    int e = 0;

    if (stat(path, &st) < 0) {
        snprintf(why, size, "%s", errno == ENOENT ? "no such socket" : strerror(errno));
        return 0;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(why, size, "not a socket");
        return 0;
    }
    if (rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) < 0) {
        snprintf(why, size, "the path is too long for a Unix socket");
        return 0;
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
        snprintf(why, size, "socket: %s", strerror(errno));
        return 0;
    }
    /* a Unix socket connects at once or fails at once (EAGAIN: the backlog
     * is full); the poll is for EINPROGRESS, which no kernel here returns */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
        return 1;
    e = errno;
    if (e == EINPROGRESS) {
        struct pollfd p = { fd, POLLOUT, 0 };
        socklen_t l = sizeof(e);
        if (poll(&p, 1, timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) == 0 && e == 0)
            return 1;
        if (e == EINPROGRESS)
            e = ETIMEDOUT;
    }
    if (e == ECONNREFUSED) {
        snprintf(why, size, "nothing listens on it (connection refused)");
        return 0;
    }
    snprintf(why, size, "%s", e == EAGAIN ? "it does not accept now (its backlog is full)" : strerror(e));
    return 2;
}

/* The kernel's word on the Unix socket ino (sock_diag, in our network
 * namespace): 1 found (*shut: the peer closed it; *rq: bytes unread), 0 no
 * such socket, -1 no answer. */
static int diag(unsigned long long ino, unsigned *shut, unsigned *rq)
{
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req r;
    } req = {
        .nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
        .r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = (unsigned)ino,
               .udiag_show = UDIAG_SHOW_RQLEN, .udiag_cookie = { ~0u, ~0u } },
    };
    struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
    struct timeval tv = { 1, 0 };
    long buf[2048];
    cleanup_close int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    ssize_t n;

    *shut = *rq = 0;
    if (fd < 0 || ino == 0 || ino > UINT32_MAX)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0 ||
        (n = recv(fd, buf, sizeof(buf), 0)) < 0)
        return -1;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *e = NLMSG_DATA(h);
            return e->error == -ENOENT ? 0 : -1;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
            continue;
        struct unix_diag_msg *m = NLMSG_DATA(h);
        if (m->udiag_ino != (unsigned)ino)
            continue;
        int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
        for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
            if (a->rta_type == UNIX_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
                *shut = *(uint8_t *)RTA_DATA(a);
            else if (a->rta_type == UNIX_DIAG_RQLEN && RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen))
                *rq = ((struct unix_diag_rqlen *)RTA_DATA(a))->udiag_rqueue;
        }
        return 1;
    }
    return -1;
}

/* Whether pid is in our network namespace (where sock_diag looks) */
static bool same_netns(int pid)
{
    char path[64];
    struct stat a, b;

    snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
    return stat(path, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

/* The status of reg's instance, if it is reg's process's */
static int status_read(const struct rv_config *cfg, const struct rv_nri_registration *reg,
                       struct rv_nri_status *st)
{
    char path[PATH_MAX];
    cleanup_close int fd = -1;

    if (lock_path(cfg, reg->socket, path, sizeof(path)) < 0 ||
        (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        pread(fd, st, sizeof(*st), 0) != (ssize_t)sizeof(*st) ||
        memcmp(st->magic, RV_NRI_STATUS_MAGIC, sizeof(st->magic)) != 0 || st->pid != reg->pid ||
        st->start != reg->start)
        return -1;
    return 0;
}

int rv_nri_serving(const struct rv_config *cfg, const struct rv_nri_registration *reg, int wait_ms,
                   long long *since_ms, char *why, size_t size)
{
    long long timeout = reg->timeout_ms > 0 ? reg->timeout_ms : 2000;
    struct rv_nri_status st, st2;
    unsigned shut = 0, rq = 0;
    bool kernel = reg->ino && same_netns(reg->pid);
    int d = kernel ? diag(reg->ino, &shut, &rq) : -1;
    bool have = status_read(cfg, reg, &st) == 0;

    *since_ms = 0;
    why[0] = '\0';
    if (d == 0 || (d == 1 && shut)) {
        snprintf(why, size, "%s", d == 0 ? "its end of the connection is gone" : "the runtime's end is closed");
        return RV_NRI_CLOSED;
    }
    if (have && st.busy_ms && rv_nri_clock_ms() - st.busy_ms > timeout) {
        *since_ms = st.busy_ms;
        snprintf(why, size, "a call read then is not answered after %lld ms; the runtime waits %lld ms",
                 rv_nri_clock_ms() - st.busy_ms, timeout);
        return RV_NRI_HUNG;
    }
    if (d == 1 && rq) {
        /* a call the plugin has not read: wait for it to be read */
        long end = rv_now_ms() + (wait_ms < timeout ? wait_ms : timeout);
        while (rv_now_ms() < end) {
            struct timespec ts = { 0, 50 * 1000000L };
            nanosleep(&ts, NULL);
            if (diag(reg->ino, &shut, &rq) != 1 || shut)
                return rv_nri_serving(cfg, reg, 0, since_ms, why, size);
            if (!rq || (have && status_read(cfg, reg, &st2) == 0 && st2.answered != st.answered))
                return RV_NRI_SERVING;
        }
        *since_ms = have ? st.last_ms : 0;
        snprintf(why, size, "a call sent to it has waited unread for %d ms or more; the runtime waits %lld ms",
                 wait_ms < timeout ? wait_ms : (int)timeout, timeout);
        return RV_NRI_HUNG;
    }
    if (!kernel)
        snprintf(why, size, "%s", reg->ino ? "its connection is in another network namespace: not looked at"
                                           : "the record names no connection");
    else if (d < 0)
        snprintf(why, size, "the kernel's socket diagnostics (sock_diag) did not answer: its connection "
                 "not looked at");
    return RV_NRI_SERVING;
}

void rv_nri_serving_say(int state, long long since_ms, const char *why, char *out, size_t size)
{
    char t[40] = "?";

    if (since_ms > 0) {
        time_t s = (time_t)(since_ms / 1000);
        struct tm tm;
        strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&s, &tm));
    }
    if (state == RV_NRI_CLOSED)
        snprintf(out, size, "connection closed by the runtime (%s)", why);
    else if (state == RV_NRI_HUNG)
        snprintf(out, size, "not answering since %s (%s)", t, why);
    else
        snprintf(out, size, "serving%s%s%s", why[0] ? " (" : "", why, why[0] ? ")" : "");
}

int rv_nri_sync_trouble(const struct rv_config *cfg, const char *socket_path, char *out, size_t size)
{
    char path[PATH_MAX], at[40] = "?", next[64] = "";
    cleanup_close int fd = -1;
    struct rv_nri_status st;
    unsigned long long start;

    out[0] = '\0';
    if (lock_path(cfg, socket_path, path, sizeof(path)) < 0 ||
        (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        pread(fd, &st, sizeof(st), 0) != (ssize_t)sizeof(st) ||
        memcmp(st.magic, RV_NRI_STATUS_MAGIC, sizeof(st.magic)) != 0 || st.pid <= 0 ||
        start_time(st.pid, &start) < 0 || start != st.start || st.sync_closed == 0)
        return 0;
    time_t t = (time_t)(st.sync_closed_ms / 1000);
    struct tm tm;
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    long long left = st.retry_ms - rv_nri_clock_ms();
    if (left > 0)
        snprintf(next, sizeof(next), "; it registers again in %lld s", (left + 999) / 1000);
    snprintf(out, size, "the runtime closed its connection during Synchronize %llu times in a row (%llu in all; "
             "the last at %s, after %u messages naming %u containers): containers created meanwhile start "
             "without variables or views%s", (unsigned long long)st.sync_closed,
             (unsigned long long)st.sync_closed_total, at, st.sync_msgs, st.sync_containers, next);
    return 1;
}
