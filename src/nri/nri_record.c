/* nri_record.c - what `resview doctor` and the node agent's readiness ask
 * about NRI, without protobuf: whether the runtime's NRI socket accepts a
 * connection (non-blocking, bounded), and the plugin's registration record,
 * STATE_DIR/nri-plugin.json, which the plugin writes once the runtime has
 * configured it and removes when the connection ends or it is stopped. The
 * record names the plugin's pid with its start time (/proc/PID/stat), so a
 * record left by a killed plugin is told from a live one even when the pid
 * was reused. */
#define _GNU_SOURCE
#include "resview/json.h"
#include "resview/nri.h"
#include "resview/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
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

int rv_nri_record_write(const struct rv_config *cfg, const char *socket_path, const char *runtime,
                        struct rv_error *err)
{
    cleanup_json json_t *js = NULL;
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1;
    unsigned long long start = 0;
    struct stat st = { .st_mode = 0644, .st_uid = 0, .st_gid = 0 };

    if (start_time(getpid(), &start) < 0)
        return rv_fail(err, errno, "NRI: the plugin's own start time (/proc/self/stat)");
    js = json_pack("{s:i, s:I, s:s, s:s, s:I}", "pid", (int)getpid(), "start", (json_int_t)start,
                   "socket", socket_path, "runtime", runtime, "since", (json_int_t)time(NULL));
    if (!js || !(text = json_dumps(js, JSON_COMPACT)))
        return rv_fail(err, ENOMEM, "NRI: the registration record");
    if (rv_mkdir_p(cfg->state_dir, 0755, err) < 0)
        return -1;
    if ((dfd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return rv_fail(err, errno, "open `%s`", cfg->state_dir);
    st.st_uid = geteuid();
    st.st_gid = getegid();
    return rv_write_atomic_at(dfd, RV_NRI_RECORD, text, strlen(text), &st, 0, err);
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
